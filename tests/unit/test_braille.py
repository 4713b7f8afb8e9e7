"""The text scatter of advise's frontier keeps its points readable when a race's first
looks give a noisy candidate an interval of many orders of magnitude (seen on the H100:
[0.00, 9.3e13] ms), and never draws an axis of milliseconds below zero."""

from __future__ import annotations

from xwatch.core.export.render.braille import SPAN, cut, readable, scatter


def _axis(lines: list[str]) -> tuple[float, float, float, float]:
    """(y top, y bottom, x left, x right) as the plot labels them."""
    top, bottom = float(lines[0].split("│")[0]), float(lines[13].split("│")[0])
    left, right = (float(v) for v in lines[15].split())
    return top, bottom, left, right


def test_an_interval_of_many_orders_of_magnitude_is_cut_at_the_edge() -> None:
    pts = [("a", 6000.0, 16.0, 4000.0, 10000.0, 0.0, 9.3e13),
           ("b", 5500.0, 14.0, 5000.0, 6000.0, 7.0, 30.0)]
    lines = scatter(pts, hline=10.0)
    top, bottom, left, right = _axis(lines)
    assert bottom >= 0.0 and left >= 0.0  # no negative ms or samples/s
    assert top <= 16.0 * SPAN * 1.06 and right <= 6000.0 * SPAN * 1.06
    assert "cut at the edge" in lines[-1]


def test_intervals_within_reach_are_drawn_whole_and_not_noted() -> None:
    pts = [("a", 6000.0, 16.0, 5000.0, 7000.0, 12.0, 20.0)]
    lines = scatter(pts, hline=10.0)
    top, bottom, _, _ = _axis(lines)
    assert top >= 20.0 and bottom <= 10.0
    assert not any("cut at the edge" in ln for ln in lines)


def test_readable_and_cut() -> None:
    assert readable([2.0, 8.0], [10.0]) == (0.5, 40.0)
    assert cut(None, 0.5, 40.0) is None and cut(1e13, 0.5, 40.0) == 40.0
    assert cut(0.0, 0.5, 40.0) == 0.5
    nan = float("nan")
    assert cut(nan, 0.5, 40.0) != cut(nan, 0.5, 40.0)  # NaN stays NaN
    assert not any("cut at the edge" in ln for ln in
                   scatter([("a", 6000.0, 16.0, nan, nan, 12.0, 20.0)], hline=10.0))
