"""A small braille scatter for plain text (the headless advise frontier, the Markdown
report): 2x4 dots per character, points with their interval bars, a horizontal
reference line. Pure; no terminal library."""

from __future__ import annotations

import math
from collections.abc import Sequence

_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row][col]
#: an interval end further than this factor from every estimate is cut at the plot's
#: edge: a race's first looks can give a noisy candidate [0, 1e13] ms, which would
#: leave every point in one corner (and a 5% margin below 0 ms on the axis)
SPAN = 4.0


def readable(estimates: Sequence[float], also: Sequence[float] = ()) -> tuple[float, float]:
    """The range a plot of positive values shows: the estimates (and ``also``, e.g. the
    SLO line) widened by ``SPAN`` either way; interval ends outside are cut to it."""
    vals = [v for v in (*estimates, *also) if math.isfinite(v) and v > 0]
    if not vals:
        return -math.inf, math.inf
    return min(vals) / SPAN, max(vals) * SPAN


def cut(v: float | None, lo: float, hi: float) -> float | None:
    """``v`` within [lo, hi] (None and NaN stay as they are)."""
    return v if v is None or v != v else min(hi, max(lo, v))


def scatter(points: Sequence[tuple[str, float, float, float | None, float | None,
                                   float | None, float | None]],
            hline: float | None = None, width: int = 60, height: int = 14,
            xlabel: str = "", ylabel: str = "") -> list[str]:
    """``points``: (mark, x, y, x_lo, x_hi, y_lo, y_hi); each point is drawn as its
    interval cross with its mark (one character) beside it; interval ends beyond
    ``readable`` are cut at the edge (a note says so). Lines of text."""
    xr = readable([p[1] for p in points])
    yr = readable([p[2] for p in points], [hline] if hline is not None else [])
    clipped = [(m, x, y, cut(xl, *xr), cut(xh, *xr), cut(yl, *yr), cut(yh, *yr))
               for m, x, y, xl, xh, yl, yh in points]
    was_cut = any(a != b for p, q in zip(points, clipped) for a, b in zip(p[3:], q[3:])
                  if a is not None and a == a)
    points = clipped
    xs = [v for _, x, _, xl, xh, _, _ in points for v in (x, xl, xh) if v is not None
          and math.isfinite(v)]
    ys = [v for _, _, y, _, _, yl, yh in points for v in (y, yl, yh) if v is not None
          and math.isfinite(v)] + ([hline] if hline is not None else [])
    if not xs or not ys:
        return []
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    positive = x0 >= 0, y0 >= 0  # a margin never takes an axis of ms or rates below 0
    x0, x1 = (x0 - 1, x1 + 1) if x1 == x0 else (x0 - (x1 - x0) * 0.05, x1 + (x1 - x0) * 0.05)
    y0, y1 = (y0 - 1, y1 + 1) if y1 == y0 else (y0 - (y1 - y0) * 0.05, y1 + (y1 - y0) * 0.05)
    x0, y0 = (max(0.0, x0) if positive[0] else x0), (max(0.0, y0) if positive[1] else y0)
    dw, dh = width * 2, height * 4
    dots = [[0] * width for _ in range(height)]
    marks: dict[tuple[int, int], str] = {}

    def dot(x: float, y: float) -> tuple[int, int]:
        cx = min(dw - 1, max(0, int((x - x0) / (x1 - x0) * (dw - 1))))
        cy = min(dh - 1, max(0, int((y1 - y) / (y1 - y0) * (dh - 1))))
        dots[cy // 4][cx // 2] |= _BITS[cy % 4][cx % 2]
        return cx, cy

    if hline is not None:
        for i in range(0, dw, 2):
            dot(x0 + (x1 - x0) * i / (dw - 1), hline)
    for mark, x, y, xl, xh, yl, yh in points:
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        for a, b in ((xl, xh),):
            if a is not None and b is not None and math.isfinite(a) and math.isfinite(b):
                for i in range(21):
                    dot(a + (b - a) * i / 20, y)
        if yl is not None and yh is not None and math.isfinite(yl) and math.isfinite(yh):
            for i in range(21):
                dot(x, yl + (yh - yl) * i / 20)
        cx, cy = dot(x, y)
        col = min(width - 1, cx // 2 + 1)
        marks[(cy // 4, col)] = mark
    lines = []
    for r in range(height):
        row = "".join(marks.get((r, c), chr(0x2800 + dots[r][c])) for c in range(width))
        label = f"{y1 - (y1 - y0) * r / (height - 1):8.2f} " if r in (0, height - 1) else " " * 9
        lines.append(label + "│" + row)
    lines.append(" " * 9 + "└" + "─" * width)
    lines.append(" " * 10 + f"{x0:<.0f}".ljust(width - 10) + f"{x1:>10.0f}")
    if xlabel or ylabel:
        lines.append(" " * 10 + f"x: {xlabel}; y: {ylabel}")
    if was_cut:
        lines.append(" " * 10 + f"(intervals reaching beyond {SPAN:g}x the estimates are cut "
                     "at the edge; the table has them)")
    return lines
