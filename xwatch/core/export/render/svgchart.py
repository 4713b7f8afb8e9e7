"""Tiny deterministic SVG charts for self-contained HTML reports.

Why not matplotlib: reports must be byte-for-byte reproducible (golden tests),
self-contained, and cheap to produce right after a run on a GPU box that may
lack a plotting stack; four chart types of lines and points are all we need.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf")

Point = tuple[float, float]


def _nice_max(v: float) -> float:
    if v <= 0 or not math.isfinite(v):
        return 1.0
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * exp:
            return float(m * exp)
    return float(10 * exp)


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}".rstrip("0").rstrip(".")
    return f"{v:.2f}".rstrip("0").rstrip(".")


def line_chart(title: str, series: Sequence[tuple[str, Sequence[Point]]],
               xlabel: str, ylabel: str, vlines: Sequence[tuple[float, str]] = (),
               hline: tuple[float, str] | None = None, width: int = 760, height: int = 260,
               points_only: bool = False, x_max: float | None = None,
               y_max: float | None = None, log_y: bool = False) -> str:
    """An SVG line (or scatter) chart. NaN points break lines. ``log_y``: a
    logarithmic y axis over whole decades (for series 20x apart or more)."""
    left, right, top, bottom = 60, 150, 28, 40
    pw, ph = width - left - right, height - top - bottom
    xs = [x for _, pts in series for x, y in pts if math.isfinite(y)]
    ys = [y for _, pts in series for _, y in pts if math.isfinite(y)]
    if hline:
        ys.append(hline[0])
    xmax = x_max if x_max is not None else _nice_max(max(xs, default=1.0))
    xmin = min(0.0, min(xs, default=0.0))
    ymax = y_max if y_max is not None else _nice_max(max(ys, default=1.0) * 1.05)
    pos = [y for y in ys if y > 0]
    log_y = log_y and bool(pos)
    if log_y:
        lo_dec = math.floor(math.log10(min(pos)))
        hi_dec = max(lo_dec + 1, math.ceil(math.log10(max(pos))))
        ymax = 10.0 ** hi_dec

    def sx(x: float) -> float:
        return left + (x - xmin) / ((xmax - xmin) or 1.0) * pw

    def sy(y: float) -> float:
        if log_y:
            frac = (math.log10(max(y, 10.0 ** lo_dec)) - lo_dec) / (hi_dec - lo_dec)
            return top + ph - frac * ph
        return top + ph - (y / ymax) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(title)}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="16" font-size="13" font-weight="bold">{html.escape(title)}</text>']
    ticks = [10.0 ** d for d in range(lo_dec, hi_dec + 1)] if log_y else \
        [ymax * i / 4 for i in range(5)]
    for yv in ticks:
        y = sy(yv)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" '
                   'stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(yv)}</text>')
    for i in range(6):
        xv = xmin + (xmax - xmin) * i / 5
        x = sx(xv)
        out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{_fmt(xv)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle">'
               f'{html.escape(xlabel)}</text>')
    out.append(f'<text x="14" y="{top + ph / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {top + ph / 2:.1f})">{html.escape(ylabel)}</text>')
    for xv, label in vlines:
        x = sx(xv)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#555" '
                   'stroke-dasharray="4 3"/>')
        out.append(f'<text x="{x + 3:.1f}" y="{top + 10}" fill="#555">{html.escape(label)}</text>')
    if log_y:
        out.append(f'<text x="{left + 4}" y="{top + 12}" fill="#555">log scale</text>')
    if hline:
        y = sy(hline[0])
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" '
                   'stroke="#d62728" stroke-dasharray="6 3"/>')
        out.append(f'<text x="{left + pw - 4}" y="{y - 4:.1f}" text-anchor="end" '
                   f'fill="#d62728">{html.escape(hline[1])}</text>')
    for i, (label, pts) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        if points_only:
            for x, y in pts:
                if math.isfinite(y):
                    out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4" fill="{color}"/>')
        else:
            segs: list[list[str]] = [[]]
            for x, y in pts:
                if math.isfinite(y):
                    segs[-1].append(f"{sx(x):.1f},{sy(min(y, ymax)):.1f}")
                elif segs[-1]:
                    segs.append([])
            for seg in segs:
                if len(seg) == 1:
                    out.append(f'<circle cx="{seg[0].split(",")[0]}" cy="{seg[0].split(",")[1]}" '
                               f'r="1.5" fill="{color}"/>')
                elif seg:
                    out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" '
                               f'points="{" ".join(seg)}"/>')
        ly = top + 12 + i * 16
        out.append(f'<rect x="{left + pw + 12}" y="{ly - 8}" width="10" height="10" '
                   f'fill="{color}"/>')
        out.append(f'<text x="{left + pw + 26}" y="{ly + 1}">{html.escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def lane_chart(title: str, rows: Sequence[tuple[str, Sequence[tuple[float, float]]]],
               brackets: Sequence[tuple[float, float, bool]], span: tuple[float, float],
               width: int = 760) -> str:
    """Kernel occupancy lanes: one row of busy intervals (seconds) per workload, and
    HIGH's requests as brackets under them (``True``: a slow one, drawn red)."""
    t0, t1 = span
    left, right, row_h, top = 80, 10, 18, 26
    plot_w = width - left - right
    height = top + row_h * (len(rows) + 1) + 30

    def x(t: float) -> float:
        return left + (t - t0) / (t1 - t0) * plot_w if t1 > t0 else left

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="14" font-weight="bold">{html.escape(title)}</text>']
    for i, (name, busy) in enumerate(rows):
        y = top + i * row_h
        out.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">'
                   f'{html.escape(name)}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{plot_w}" height="{row_h - 4}" '
                   'fill="#f3f3f3"/>')
        color = PALETTE[i % len(PALETTE)]
        for s, e in busy:
            w = max(0.5, x(e) - x(s))
            out.append(f'<rect x="{x(s):.2f}" y="{y}" width="{w:.2f}" height="{row_h - 4}" '
                       f'fill="{color}"/>')
    y = top + len(rows) * row_h
    out.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">requests</text>')
    for s, e, slow in brackets:
        c = "#d62728" if slow else "#555"
        out.append(f'<path d="M{x(s):.2f},{y + 2} v10 H{x(e):.2f} v-10" fill="none" '
                   f'stroke="{c}" stroke-width="{2 if slow else 1}"/>')
    ax = y + row_h + 4
    out.append(f'<line x1="{left}" y1="{ax}" x2="{left + plot_w}" y2="{ax}" stroke="#999"/>')
    for k in range(6):
        t = t0 + (t1 - t0) * k / 5
        out.append(f'<text x="{x(t):.1f}" y="{ax + 14}" text-anchor="middle">'
                   f'{_fmt((t - t0) * 1000)} ms</text>')
    out.append("</svg>")
    return "\n".join(out)
