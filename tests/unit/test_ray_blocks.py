"""Box as a block against a known truth (xwatch/testing/fleet/ray_blocks.py; the full count is
benchmarks/stats/ray_blocks.py): runs placed over three boxes as a fleet plan places
them, one box 20% slower. The blocked intervals must keep their 95% (over every look of
a race), be far narrower than the unblocked ones, and never narrower than the values'
resolution. Fixed seeds, small counts; each bound is one that the unblocked intervals
or a wrong blocked one (the boxes' levels taken as known) miss."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from xwatch.core.analysis.stats.intervals import Interval
from xwatch.core.analysis.stats.runs import paired_interval
from xwatch.testing.fleet import ray_blocks as rb

SLOW, HEAVY, LOST, EQUAL, WHOLE = rb.CONFIGS


def test_compare_blocked_covers_where_pairs_straddle_boxes() -> None:
    # 4 runs each over 3 boxes: the pairs in the interleaved order meet the slow box
    # unevenly, and the paired interval covers the truth in ~62% of trials
    c = rb.compare_coverage(SLOW, 4, 400, seed=3)
    assert c.covered >= 0.94 * c.trials, c.covered
    assert c.covered_plain < 0.8 * c.trials, c.covered_plain


def test_compare_blocked_is_narrower_when_boxes_differ() -> None:
    c = rb.compare_coverage(HEAVY, 6, 400, seed=3)
    assert c.covered >= 0.94 * c.trials, c.covered
    assert c.half < 0.4 * c.half_plain, (c.half, c.half_plain)


def test_compare_no_narrower_than_whole_milliseconds() -> None:
    # runs 1% apart, printed in whole ms: the interval is never under +-1 ms (each side
    # is off by up to half a millisecond), and still covers
    c = rb.compare_coverage(WHOLE, 6, 200, seed=3)
    assert c.least_half >= 1.0 - 1e-9
    assert c.covered >= 0.95 * c.trials


def test_compare_wrong_blocks_undercover(monkeypatch: pytest.MonkeyPatch) -> None:
    # the same bound, held against a wrong blocked estimator: each box's mean removed,
    # then the paired t as if the boxes' levels were known (no degree of freedom spent)
    def known_levels(a: Sequence[tuple[str, float]], b: Sequence[tuple[str, float]],
                     res_a: float, res_b: float) -> Interval:
        by: dict[str, list[float]] = {}
        for k, v in [*a, *b]:
            by.setdefault(k, []).append(v)
        m = {k: sum(v) / len(v) for k, v in by.items()}
        return paired_interval([v - m[k] for k, v in a], [v - m[k] for k, v in b])

    monkeypatch.setattr(rb, "blocked_difference", known_levels)
    c = rb.compare_coverage(SLOW, 4, 400, seed=3)
    assert c.covered < 0.94 * c.trials, c.covered


def test_race_blocked_holds_over_every_look_and_is_narrower() -> None:
    for cfg in (SLOW, LOST):
        r = rb.race_coverage(cfg, 60, 8, seed=3)
        assert r.missed <= 0.05 * r.races, (cfg.name, r.missed)
        # at 4 runs the intervals of the boxes' spread were ~3x as wide
        assert r.half("slo") < 0.5 * r.half("slo_plain"), cfg.name
        assert r.half("price") < 0.5 * r.half("price_plain"), cfg.name


def test_race_equal_boxes_cost_little() -> None:
    # no box differs: the blocks' two degrees of freedom cost a little width, no coverage
    r = rb.race_coverage(EQUAL, 60, 8, seed=3)
    assert r.missed <= 0.05 * r.races
    assert r.half("slo") < 1.25 * r.half("slo_plain")
