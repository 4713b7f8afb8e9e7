"""The fast braille renderer draws exactly what the first, plain one drew.

``_reference_render_figure`` is ``render_figure`` as it was before it was made
cheaper (per-dot closures, one list of characters and one of colours per row), kept
here verbatim as the definition of the picture. Many random figures (lines with NaN
gaps, marks, messages, given log ticks, tiny and large sizes, constant data, single
points, limits given or not) are drawn by both and compared segment by segment; the
styled rows (what the chart widgets hand Textual) are compared with what
``Strip.crop_extend(...).apply_style(...)`` made of the reference rows.
"""

from __future__ import annotations

import math
import random

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from xwatch.ui.widgets.plot import Figure, legend_layout, nice_ticks, render_figure, style_of, tick_label

_DOT = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))


def _limits(values: list[float], lim: tuple[float, float] | None) -> tuple[float, float]:
    if lim is not None and lim[1] > lim[0]:
        return lim
    vs = [v for v in values if math.isfinite(v)]
    lo, hi = (min(vs), max(vs)) if vs else (0.0, 1.0)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _reference_render_figure(fig: Figure, width: int, height: int) -> list[list[Segment]]:
    """``fig`` laid out in ``width`` x ``height`` cells: one segment list per row."""
    plain = Style()
    bold = Style(bold=True)
    if width < 8 or height < 3:
        return [[Segment(fig.title_text[:width], bold)]]
    rows: list[list[Segment]] = [[Segment(fig.title_text[:width].center(width), bold)]]
    xs_all = [x for xs, _, _, _ in fig.lines for x in xs]
    ys_all = [y for _, ys, _, _ in fig.lines for y in ys] + [y for y, _ in fig.hlines]
    x0, x1 = _limits(xs_all, fig.x_lim)
    y0, y1 = _limits(ys_all, fig.y_lim)
    show_xlabel = bool(fig.x_label) and height >= 12
    plot_h = height - 1 - 2 - (1 if show_xlabel else 0)  # title, axis, tick labels, label
    # the legend has rows of its own under the title: it never covers a line
    legend_rows = legend_layout([(label, c) for _, _, label, c in fig.lines if label],
                                width, 2 if plot_h >= 12 else 1 if plot_h >= 4 else 0)
    plot_h -= len(legend_rows)
    if plot_h < 1:
        return rows
    rows += legend_rows
    # y ticks: given (a log axis) or round values, at most one every other row
    if fig.y_ticks is not None:
        yt = [(v, lab) for v, lab in zip(*fig.y_ticks) if y0 <= v <= y1]
    else:
        vals = nice_ticks(y0, y1, max(2, plot_h // 2 + 1))
        step = vals[1] - vals[0] if len(vals) > 1 else 1.0
        yt = [(v, tick_label(v, step)) for v in vals]
    label_w = max((len(lab) for _, lab in yt), default=1)
    plot_w = width - label_w - 2  # labels, the axis, one cell to the right
    if plot_w < 2:
        return rows
    dots_w, dots_h = plot_w * 2, plot_h * 4
    mask = [[0] * plot_w for _ in range(plot_h)]
    color: list[list[str | None]] = [[None] * plot_w for _ in range(plot_h)]
    sx = (dots_w - 1) / (x1 - x0)
    sy = (dots_h - 1) / (y1 - y0)

    def dot_x(x: float) -> int:
        return min(dots_w - 1, max(0, round((x - x0) * sx)))

    def dot_y(y: float) -> int:  # 0 = top row of dots
        return min(dots_h - 1, max(0, round((y1 - y) * sy)))

    def put(dx: int, dy: int, c: str) -> None:
        cy, cx = dy >> 2, dx >> 1
        mask[cy][cx] |= _DOT[dx & 1][dy & 3]
        color[cy][cx] = c

    for y, c in fig.hlines:
        if y0 <= y <= y1:
            dy = dot_y(y)
            for dx in range(0, dots_w, 2):
                put(dx, dy, c)
    for x, c in fig.vlines:
        if x0 <= x <= x1:
            dx = dot_x(x)
            for dy in range(0, dots_h, 2):
                put(dx, dy, c)
    for xs, ys, _, c in fig.lines:
        last: tuple[int, int] | None = None
        for x, y in zip(xs, ys):
            if not (math.isfinite(x) and math.isfinite(y)):
                last = None
                continue
            px, py = dot_x(x), dot_y(y)
            if last is None:
                put(px, py, c)
            else:
                lx, ly = last
                n = max(abs(px - lx), abs(py - ly))
                for i in range(1, n + 1):
                    put(lx + round((px - lx) * i / n), ly + round((py - ly) * i / n), c)
            last = (px, py)
    chars = [[chr(0x2800 + m) if m else " " for m in row] for row in mask]
    for msg, tx, ty in fig.texts:  # a centred message (no data) overwrites what is under it
        r = min(plot_h - 1, max(0, round((y1 - ty) / (y1 - y0) * (plot_h - 1))))
        start = max(0, round((tx - x0) / (x1 - x0) * (plot_w - 1)) - len(msg) // 2)
        for j, ch in enumerate(msg[: plot_w - start]):
            chars[r][start + j], color[r][start + j] = ch, None
    tick_rows = {min(plot_h - 1, max(0, round((y1 - v) / (y1 - y0) * (plot_h - 1)))): lab
                 for v, lab in yt}
    for r in range(plot_h):
        lab = tick_rows.get(r)
        segs = [Segment((lab or "").rjust(label_w) + ("┤" if lab is not None else "│"), plain)]
        run_c, run = color[r][0], [chars[r][0]]
        for ch, cc in zip(chars[r][1:], color[r][1:]):
            if cc == run_c:
                run.append(ch)
            else:
                segs.append(Segment("".join(run), style_of(run_c) if run_c else plain))
                run_c, run = cc, [ch]
        segs.append(Segment("".join(run), style_of(run_c) if run_c else plain))
        rows.append(segs)
    # x axis: round ticks, a label under each where it fits
    vals = nice_ticks(x0, x1, max(2, plot_w // 10))
    step = vals[1] - vals[0] if len(vals) > 1 else 1.0
    axis = ["─"] * plot_w
    under = [" "] * (plot_w + label_w + 2)
    free = 0
    for v in vals:
        col = round((v - x0) / (x1 - x0) * (plot_w - 1))
        if not 0 <= col < plot_w:
            continue
        axis[col] = "┬"
        lab = tick_label(v, step)
        at = max(0, label_w + 1 + col - len(lab) // 2)
        if at >= free and at + len(lab) <= len(under):
            under[at:at + len(lab)] = lab
            free = at + len(lab) + 1
    rows.append([Segment(" " * label_w + "└" + "".join(axis), plain)])
    rows.append([Segment("".join(under), plain)])
    if show_xlabel:
        rows.append([Segment(fig.x_label.center(width)[:width], plain)])
    return rows


COLOURS = ("cyan", "red", "green", "orange", "magenta", "blue", "yellow", "white", "default",
           "", "no-such-colour")
WORDS = ("", "p99", "high p50", "a much longer workload name p99", "≤5ms", "漢字", "tab\there")
# a base style like a widget's: the chart combines every segment with it
BASE = Style(color="#e0e0e0", bgcolor="#1e1e1e")


def _value(rnd: random.Random, scale: float) -> float:
    r = rnd.random()
    if r < 0.04:
        return math.nan
    if r < 0.05:
        return rnd.choice((math.inf, -math.inf))
    if r < 0.10:
        return 0.0
    return rnd.uniform(-0.2, 1.2) * scale


def _random_figure(rnd: random.Random) -> Figure:
    fig = Figure()
    fig.title(rnd.choice((*WORDS, "latency ms, per second P50 · P99 · log")))
    scale = rnd.choice((1.0, 1e-3, 100.0, 5e4))
    shape = rnd.random()
    for k in range(rnd.choice((0, 1, 1, 2, 3, 6, 14))):
        n = rnd.choice((1, 2, 3, 30, 300, 600))
        if shape < 0.15:  # constant data
            xs = [float(i) for i in range(n)]
            ys = [scale] * n
        elif shape < 0.3:  # every line a single point
            xs, ys = [rnd.uniform(0, 300)], [_value(rnd, scale)]
        else:  # a time series with gaps, jumps and clipped spikes
            x0 = rnd.uniform(-10, 300)
            xs = [x0 + i * rnd.choice((0.5, 1.0, 1.0, 3.0)) for i in range(n)]
            ys = [_value(rnd, scale) for _ in range(n)]
            if rnd.random() < 0.2:
                xs = sorted(_value(rnd, 100) for _ in range(n))  # CDF-like: x from data
        fig.plot(xs, ys, label=rnd.choice((None, f"w{k} p99", rnd.choice(WORDS))),
                 color=rnd.choice(COLOURS))
    for _ in range(rnd.choice((0, 0, 1, 2, 5))):
        fig.hline(_value(rnd, scale), rnd.choice(COLOURS))
    for _ in range(rnd.choice((0, 0, 1, 2, 5))):
        fig.vline(rnd.uniform(-20, 320), rnd.choice(COLOURS))
    if rnd.random() < 0.2:
        fig.text(rnd.choice(("waiting", "waiting for the first phase", "no requests yet")),
                 rnd.uniform(0, 1), rnd.uniform(0, 1))
        fig.xlim(0, 1)
        fig.ylim(0, 1)
    if rnd.random() < 0.5:
        fig.xlim(*rnd.choice(((0, 300), (100, 400), (0, 1), (5, 5), (3, 1))))
    if rnd.random() < 0.7:
        top = rnd.choice((scale * 1.1, 1.0, 100.0, 0.0))
        fig.ylim(0, top)
    if rnd.random() < 0.25:  # a log axis: log10 values, labels as the latency chart makes them
        ticks = [t for t in (0.1, 1, 10, 100, 1000, 10000) if rnd.random() < 0.7]
        fig.yticks([math.log10(t) for t in ticks], [f"{t:g}" for t in ticks])
        fig.ylim(-1.1, 4.1)
    if rnd.random() < 0.5:
        fig.xlabel(rnd.choice(("session s", "ms", "漢字 s")))
    return fig


def _sizes(rnd: random.Random) -> list[tuple[int, int]]:
    return [(rnd.randint(1, 12), rnd.randint(1, 6)), (rnd.randint(8, 40), rnd.randint(3, 14)),
            (rnd.randint(40, 200), rnd.randint(10, 60)), (100, 18), (50, 18), (75, 11)]


def _draw(draw: object, *args: object) -> object:
    """The rows, or the exception (a figure neither can draw must fail the same way)."""
    try:
        return draw(*args)  # type: ignore[operator]
    except Exception as e:
        return (type(e), str(e))


def _as_tuples(rows: object) -> object:
    if isinstance(rows, tuple):
        return rows
    return [[(s.text, s.style, s.control) for s in r] for r in rows]  # type: ignore[attr-defined]


def _reference_strips(fig: Figure, width: int, height: int, style: Style) -> object:
    rows = _draw(_reference_render_figure, fig, width, height)
    if isinstance(rows, tuple):
        return rows
    return [[(s.text, s.style, s.control)
             for s in Strip(r).crop_extend(0, width, style).apply_style(style)]
            for r in rows]  # type: ignore[attr-defined]


def _check(fig: Figure, width: int, height: int, what: str, draw: object = render_figure) -> None:
    want = _as_tuples(_draw(_reference_render_figure, fig, width, height))
    assert _as_tuples(_draw(draw, fig, width, height)) == want, what
    for style in (BASE, Style()):
        got = _as_tuples(_draw(draw, fig, width, height, style))
        assert got == _reference_strips(fig, width, height, style), f"{what} styled {style}"


@pytest.mark.parametrize("seed", range(8))
def test_random_figures_draw_as_the_reference(seed: int) -> None:
    rnd = random.Random(seed)
    for k in range(30):
        fig = _random_figure(rnd)
        for w, h in _sizes(rnd):
            _check(fig, w, h, f"seed {seed} figure {k} at {w}x{h}: {fig!r}"[:2000])


def test_edge_figures_draw_as_the_reference() -> None:
    """Figures the random ones may miss: empty, a message past the right edge, limits
    with nothing between them, a line exactly along a cell's edge, a NaN limit."""
    figs = []
    fig = Figure()
    figs.append(fig)
    fig = Figure()
    fig.text("far right", 5.0, 0.5)
    fig.xlim(0, 1)
    fig.ylim(0, 1)
    figs.append(fig)
    fig = Figure()
    fig.plot([0, 1, 2], [1, 1, 1], label="flat", color="red")
    fig.hline(1, "red")
    fig.vline(1, "yellow")
    figs.append(fig)
    fig = Figure()
    fig.plot([0, 10], [0, 10], color="green")
    fig.plot([10, 0], [0, 10], color="cyan")
    fig.plot([0, 10, 10, 0], [5, 5, 5, 5], color="white")
    fig.xlim(0, 10)
    fig.ylim(0, 10)
    figs.append(fig)
    fig = Figure()
    fig.plot([0, 1], [0, math.nan])
    fig.ylim(0, math.inf)
    fig.hline(0.5)
    figs.append(fig)
    for f in figs:
        for w, h in ((8, 3), (9, 4), (20, 12), (100, 18), (150, 46)):
            _check(f, w, h, f"{f!r} at {w}x{h}")


def test_the_comparison_sees_a_single_dot() -> None:
    """A renderer that draws one dot differently fails the comparison (so the random
    tests above would catch it)."""
    fig = Figure()
    fig.plot([0, 10], [0, 10], color="red")
    fig.xlim(0, 10)
    fig.ylim(0, 10)

    def one_dot_off(f: Figure, w: int, h: int, style: Style | None = None) -> list[list[Segment]]:
        rows = render_figure(f, w, h, style)
        for i, s in enumerate(rows[3]):
            if s.text.strip() and 0x2801 <= ord(s.text.strip()[0]) <= 0x28FF:
                flipped = chr(ord(s.text.strip()[0]) ^ 0x80)
                rows[3][i] = Segment(s.text.replace(s.text.strip()[0], flipped, 1), s.style)
                return rows
        raise AssertionError("no dot on the row")

    _check(fig, 30, 12, "the real one")
    with pytest.raises(AssertionError):
        _check(fig, 30, 12, "one dot off", draw=one_dot_off)
