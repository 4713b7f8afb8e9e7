"""The requests cut at the measured end (``engine.live.unfinished``): which the
schedule says were cut, their waits as censored latencies, and a server's TTFT for
them, each against numbers worked out by hand."""

from __future__ import annotations

import pytest

from xwatch.core.engine.live.unfinished import censored, cut, cut_ttft, limit


def test_the_cut_requests_are_those_past_the_counted_and_the_holes() -> None:
    # 10 req/s, uniform: request i is due at 0.1 (i - 1) s; by 0.95 s, ten were due
    got = cut(0.0, 10.0, "uniform", 0, 1.0, 0.95, max_seq=7, holes={3, 5}, limit=None)
    assert [i for i, _ in got] == [3, 5, 8, 9, 10]
    assert [t for _, t in got] == pytest.approx([0.2, 0.4, 0.7, 0.8, 0.9])
    assert cut(0.0, 10.0, "uniform", 0, 1.0, 0.95, max_seq=7, holes=set(), limit=8) == \
        [(8, pytest.approx(0.7))]
    assert limit(None, None) is None and limit(20, (12, False)) == 12 and limit(5, None) == 5


def test_a_wait_below_the_fastest_completed_is_raised_to_it() -> None:
    m = censored([3.0, 50.0], fastest=10.0)
    assert m.n == 2 and m.min == 10.0 and m.max == 50.0


def test_a_cut_requests_ttft_is_its_first_token_or_at_least_its_wait() -> None:
    """Three requests cut at 10 s: #4 had its first token at 9.5 s (TTFT 120 ms), #5
    had one only after the end (not known by then), #6 none: #5 and #6 enter at their
    waits, 2,000 and 500 ms; a wait under the fastest TTFT answered (800 ms) is raised."""
    known = {4: (120.0, 9.5), 5: (2100.0, 10.1)}
    m, said = cut_ttft([(4, 9.38), (5, 8.0), (6, 9.5)], 10.0, known, fastest=800.0)
    assert m.n == 3 and m.min == 120.0 and m.max == pytest.approx(2000.0)
    assert m.mean == pytest.approx((120.0 + 2000.0 + 800.0) / 3)
    assert said == "; their TTFT in its percentiles: 1 from their first token, 2 at least " \
        "their wait"
