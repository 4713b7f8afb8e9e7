"""The capacity search's growth (``search.Hunt._next_knee``): with ``Design.flat`` (a
design the simulation compares, not xwatch's) a load far under the objective on a
flat curve steps up with the margin, bounded by ``GROWTH``; without it (xwatch's),
along a slope of 1, at least doubled; a steep rise is followed either way; the lowest
rate missing with confidence ends the search at once. Exact rates against
hand-worked numbers."""

from __future__ import annotations

import dataclasses
import math

from xwatch.core.analysis.capacity import knee, loads
from xwatch.core.analysis.capacity import search as cap

STEP = cap.TARGET ** knee.HALF  # 1.1 ** 0.45


def _next(runs: dict[float, list[float]], flat: bool = True) -> float | None:
    d = dataclasses.replace(loads.NOW, flat=flat)
    s = cap.Search("d", "native", dedicated=True)
    hunt = cap.Hunt(10.0, 25.0, 800.0, [s], lows=False, design=d)
    for r, vs in runs.items():
        for v in vs:
            s.add(r, v, 0.01)
    hunt.judge()
    return s.next


def test_one_load_steps_with_the_margin_squared_bounded_by_growth() -> None:
    # 4.5 ms at 25 req/s: (10 / 4.5) ** 2 = 4.94 times, bounded by 4: 100
    assert _next({25.0: [4.5]}) == 100.0
    # before: along a slope of 1, (10 / 4.5) x 1.1 ** 0.45: 58.0
    assert _next({25.0: [4.5]}, flat=False) == cap.nice(25.0 * 10.0 / 4.5 * STEP)
    # 7 ms: (10 / 7) ** 2 x 1.1 ** 0.45 = 2.13 times: 53.3 (before: doubled, 50)
    assert _next({25.0: [7.0]}) == cap.nice(25.0 * (10.0 / 7.0) ** 2 * STEP) == 53.3
    assert _next({25.0: [7.0]}, flat=False) == 50.0
    # 8.5 ms: (10 / 8.5) ** 2 = 1.38 times: at least doubled, 50, as before
    assert _next({25.0: [8.5]}) == 50.0


def test_a_curve_on_its_floor_grows_with_the_rise_it_shows() -> None:
    # 4.5 then 4.6 ms from 25 to 100 req/s: a rise of 0.016, flatter than 0.5, so the
    # knee goes along 0.5: 100 x (10 / 4.6) ** 2 = 473, bounded by 4 times: 400
    assert _next({25.0: [4.5], 100.0: [4.6]}) == 400.0
    # before: along 1: 100 x 10 / 4.6 x 1.1 ** 0.45 = 227
    assert _next({25.0: [4.5], 100.0: [4.6]}, flat=False) == cap.nice(
        100.0 * 10.0 / 4.6 * STEP)
    # a rise of 0.8 (under 1) is followed as it is: 100 x (10 / y) ** (1 / 0.8) x
    # 1.1 ** 0.45 = 280 (before: along 1, 230)
    y = 1.5 * 4.0 ** 0.8
    want = 100.0 * (10.0 / y) ** (1.0 / 0.8) * STEP
    assert _next({25.0: [1.5], 100.0: [y]}) == cap.nice(want) == 280.0
    assert _next({25.0: [1.5], 100.0: [y]}, flat=False) == cap.nice(100.0 * 10.0 / y * STEP)


def test_a_steep_rise_is_followed_to_its_knee_as_before() -> None:
    # a rise of 3 from 25 to 50: the knee at 50 x (10 / y) ** (1 / 3), then 1.1 ** 0.45
    y = 1.0 * 2.0 ** 3
    k = 50.0 * (10.0 / y) ** (1.0 / 3.0)
    assert _next({25.0: [1.0], 50.0: [y]}) == _next({25.0: [1.0], 50.0: [y]}, flat=False) \
        == cap.nice(max(k * STEP, 50.0 * STEP))
    assert math.isclose(knee.rise([25.0, 50.0], [0.0, math.log(y)], [1, 1], 10.0,
                                  knee.FLAT), 3.0)


def test_the_lowest_rate_missing_with_confidence_ends_at_once() -> None:
    assert not loads.NOW.flat  # xwatch's growth: along a slope of 1
    # over the objective at the lowest rate: run again (its first look is on two runs)
    assert _next({25.0: [19.8]}) == 25.0
    # two runs, the variance pooled with the other searches' loads near the objective
    s, o1, o2 = (cap.Search(x, "xsched") for x in "xyz")
    hunt = cap.Hunt(10.0, 25.0, 800.0, [s, o1, o2], lows=False)
    for v in (19.8, 19.5):
        s.add(25.0, v, 0.01)
    for o, vs in ((o1, (7.3, 7.5, 7.2)), (o2, (8.0, 8.2, 7.9))):
        for v in vs:
            o.add(25.0, v, 0.01)
    hunt.judge()
    assert s.status == cap.BELOW and s.next is None and s.runs == 2
    assert s.reason == "even 25 req/s misses"
