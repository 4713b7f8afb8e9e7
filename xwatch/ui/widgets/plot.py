"""Braille line charts drawn straight into styled segments.

``Figure`` collects what a chart shows (lines, horizontal and vertical marks, ticks,
limits, a title, a centred message) through a small subset of plotext's method names,
so the chart widgets read as before; ``render_figure`` lays it out for a size and
returns one list of ``Segment`` per terminal row.

Why not plotext: plotext builds a character matrix, joins it into an ANSI string, and
rich then parses that string back into styled text (about 19 ms per chart on the H100,
a third of the dashboard's event-loop time). Drawing the dots here and cutting each row
into one segment per run of a colour does the same job in a few milliseconds.

Each terminal cell holds 2 x 4 braille dots; a cell takes the colour of the last line
drawn through it (as plotext does). Values outside the limits are clipped to the edge.
The legend takes rows of its own between the title and the plot (plotext drew it over
the top-left corner of the data).

Cost (the dashboard redraws its four charts every 2 s): the dots are ORed into one
byte per cell and the colours numbered in another (``_dots``), a row of bytes becomes
its text with one ``str.translate`` and its colour runs come from a regex, and with a
widget's style the rows come back already styled and fitted to the width, so the
widget wraps each in one ``Strip`` and Textual adds nothing to it.
tests/unit/test_plot_reference.py holds the plain per-dot renderer this one must
match cell for cell.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.color import Color, ColorParseError
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

_DOT = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))  # [column][row] within a cell
_ALIASES = {"orange": "dark_orange"}  # plotext colour names rich does not know
_STYLES: dict[str | None, Style] = {}


def style_of(color: str | None) -> Style:
    """A rich Style for a plotext-style colour name (unknown names: no colour)."""
    st = _STYLES.get(color)
    if st is None:
        try:
            st = Style(color=Color.parse(_ALIASES.get(color or "", color or "default")))
        except ColorParseError:
            st = Style()
        _STYLES[color] = st
    return st


@dataclass
class Figure:
    """What one chart shows; the widgets fill it, ``render_figure`` draws it."""

    title_text: str = ""
    lines: list[tuple[list[float], list[float], str | None, str]] = field(default_factory=list)
    hlines: list[tuple[float, str]] = field(default_factory=list)
    vlines: list[tuple[float, str]] = field(default_factory=list)
    texts: list[tuple[str, float, float]] = field(default_factory=list)
    x_lim: tuple[float, float] | None = None
    y_lim: tuple[float, float] | None = None
    y_ticks: tuple[list[float], list[str]] | None = None
    x_label: str = ""

    # the plotext names the chart widgets use
    def clear_data(self) -> None:
        self.lines, self.hlines, self.vlines, self.texts = [], [], [], []

    def clear_figure(self) -> None:
        self.clear_data()
        self.title_text, self.x_label = "", ""
        self.x_lim = self.y_lim = self.y_ticks = None

    def title(self, text: str) -> None:
        self.title_text = text

    def plot(self, xs: Sequence[float], ys: Sequence[float], label: str | None = None,
             color: str = "default", marker: str = "braille") -> None:
        self.lines.append((list(xs), list(ys), label, color))

    def hline(self, y: float, color: str = "default") -> None:
        self.hlines.append((y, color))

    def vline(self, x: float, color: str = "default") -> None:
        self.vlines.append((x, color))

    def text(self, msg: str, x: float, y: float, alignment: str = "center") -> None:
        self.texts.append((msg, x, y))

    def xlim(self, lo: float, hi: float) -> None:
        self.x_lim = (lo, hi)

    def ylim(self, lo: float, hi: float) -> None:
        self.y_lim = (lo, hi)

    def yticks(self, ticks: Sequence[float], labels: Sequence[str]) -> None:
        self.y_ticks = (list(ticks), list(labels))

    def xlabel(self, text: str) -> None:
        self.x_label = text


def nice_ticks(lo: float, hi: float, most: int) -> list[float]:
    """At most ``most`` round values (1, 2, 2.5, 5 x 10^k apart) within [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo or most < 1:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / max(1, most - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + 1e-9 * step:
        ticks.append(k * step)
        k += 1
    return ticks[:most] if ticks else [lo]


def tick_label(v: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step))) if step > 0 else 0
    if step > 0 and not math.isclose((step / 10 ** math.floor(math.log10(step))) % 1, 0,
                                     abs_tol=1e-9):
        decimals += 1  # 2.5 x 10^k
    return f"{v:.{decimals}f}"


def _limits(values: list[float], lim: tuple[float, float] | None) -> tuple[float, float]:
    if lim is not None and lim[1] > lim[0]:
        return lim
    vs = [v for v in values if math.isfinite(v)]
    lo, hi = (min(vs), max(vs)) if vs else (0.0, 1.0)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def legend_layout(entries: Sequence[tuple[str, str]], width: int, most: int
                  ) -> list[list[Segment]]:
    """The legend as at most ``most`` rows of ``▬ label`` entries in their colours,
    packed left to right; what does not fit ends in ``+N more``. No rows when there is
    nothing to name or no room."""
    if not entries or most < 1 or width < 8:
        return []
    rows: list[list[Segment]] = []
    used = 0
    row: list[Segment] = []
    for k, (label, c) in enumerate(entries):
        text = f"▬ {label}  "
        if used + len(text.rstrip()) > width and row:
            if len(rows) + 1 == most:  # the last row: say how many are left out
                left = len(entries) - k
                while row and used + len(f"+{left} more") > width:
                    used -= len(row.pop().text)
                    left += 1
                row.append(Segment(f"+{left} more", Style(dim=True)))
                rows.append(row)
                return rows
            rows.append(row)
            row, used = [], 0
        row.append(Segment(text[:width], style_of(c)))
        used += len(text)
    rows.append(row)
    return rows


# Dots are ORed into one byte per cell. A cell's dot for dot column dx, dot row dy:
_BIT = tuple(_DOT[k >> 2][k & 3] for k in range(8))  # index ((dx & 1) << 2) | (dy & 3)
_EVERY_OTHER = (0x01 | 0x04, 0x08 | 0x20)  # dot rows 0 and 2 of a cell's left, right column
# ``mask | bit`` for a whole row or column of cells at once (bytes.translate)
_OR = {bit: bytes(m | bit for m in range(256)) for bit in (*_BIT, *_EVERY_OTHER)}
# a row of masks (decoded as latin-1, one character per cell) to its braille text
_GLYPH = {m: chr(0x2800 + m) for m in range(1, 256)} | {0: " "}
_RUNS = re.compile(rb"(.)\1*", re.S)  # runs of one colour number in a row of cells


def _narrow(texts: Sequence[str]) -> bool:
    """Every character one cell wide: a row's cell length is then its length."""
    return all(cell_len(t) == len(t) for t in texts)


def render_figure(fig: Figure, width: int, height: int,
                  style: Style | None = None) -> list[list[Segment]]:
    """``fig`` laid out in ``width`` x ``height`` cells: one segment list per row.

    With ``style`` (a widget's), every segment's style is ``style`` + its own and every
    row is cut or padded with ``style`` to ``width`` cells: what
    ``Strip(row).crop_extend(0, width, style).apply_style(style)`` makes of the row,
    built once instead of through three strips."""
    add = style.__add__ if style is not None else _same
    plain = add(Style())
    bold = add(Style(bold=True))
    pad = add(style) if style is not None else None
    title = fig.title_text
    if width < 8 or height < 3:
        return _fit([[Segment(title[:width], bold)]], width, style, pad, _narrow((title,)))
    rows: list[list[Segment]] = [[Segment(title[:width].center(width), bold)]]
    x0, x1 = _limits([x for xs, _, _, _ in fig.lines for x in xs], fig.x_lim)
    y0, y1 = _limits([y for _, ys, _, _ in fig.lines for y in ys] + [y for y, _ in fig.hlines],
                     fig.y_lim)
    show_xlabel = bool(fig.x_label) and height >= 12
    plot_h = height - 1 - 2 - (1 if show_xlabel else 0)  # title, axis, tick labels, label
    # the legend has rows of its own under the title: it never covers a line
    legend_rows = legend_layout([(label, c) for _, _, label, c in fig.lines if label],
                                width, 2 if plot_h >= 12 else 1 if plot_h >= 4 else 0)
    if style is not None:
        legend_rows = [[Segment(s.text, style + s.style) for s in r] for r in legend_rows]
    plot_h -= len(legend_rows)
    # the user's strings: when all are narrow, rows are fitted by their length
    narrow = _narrow([title, fig.x_label, *(s.text for r in legend_rows for s in r),
                      *(msg for msg, _, _ in fig.texts)])
    if plot_h < 1:
        return _fit(rows, width, style, pad, narrow)
    rows += legend_rows
    # y ticks: given (a log axis) or round values, at most one every other row
    if fig.y_ticks is not None:
        yt = [(v, lab) for v, lab in zip(*fig.y_ticks) if y0 <= v <= y1]
        narrow = narrow and _narrow([lab for _, lab in yt])
    else:
        vals = nice_ticks(y0, y1, max(2, plot_h // 2 + 1))
        step = vals[1] - vals[0] if len(vals) > 1 else 1.0
        yt = [(v, tick_label(v, step)) for v in vals]
    label_w = max((len(lab) for _, lab in yt), default=1)
    plot_w = width - label_w - 2  # labels, the axis, one cell to the right
    if plot_w < 2:
        return _fit(rows, width, style, pad, narrow)
    mask, color, palette = _dots(fig, plot_w, plot_h, x0, x1, y0, y1)
    styles = [plain] + [add(style_of(c)) if c else plain for c in palette]
    # a centred message (no data) overwrites what is under it
    over: dict[int, list[str]] = {}
    for msg, tx, ty in fig.texts:
        r = min(plot_h - 1, max(0, round((y1 - ty) / (y1 - y0) * (plot_h - 1))))
        start = max(0, round((tx - x0) / (x1 - x0) * (plot_w - 1)) - len(msg) // 2)
        chars = over.get(r)
        if chars is None:
            chars = over[r] = list(mask[r * plot_w:(r + 1) * plot_w].decode("latin-1")
                                   .translate(_GLYPH))
        for j, ch in enumerate(msg[: plot_w - start]):
            chars[start + j] = ch  # past the right edge: IndexError, as it always was
            color[r * plot_w + start + j] = 0
    tick_rows = {min(plot_h - 1, max(0, round((y1 - v) / (y1 - y0) * (plot_h - 1)))): lab
                 for v, lab in yt}
    no_tick = " " * label_w + "│"
    end = [Segment(" ", pad)] if narrow and pad is not None else []  # the cell to the right
    finditer, span = _RUNS.finditer, re.Match.span
    for r in range(plot_h):
        lab = tick_rows.get(r)
        a = r * plot_w
        text = ("".join(over[r]) if r in over
                else mask[a:a + plot_w].decode("latin-1").translate(_GLYPH))
        runs = color[a:a + plot_w]
        segs = [Segment(no_tick if lab is None else lab.rjust(label_w) + "┤", plain)]
        segs += [Segment(text[i:j], styles[runs[i]]) for i, j in map(span, finditer(runs))]
        rows.append(segs + end)
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
    rows.append([Segment(" " * label_w + "└" + "".join(axis), plain), *end])
    rows.append([Segment("".join(under), plain)])
    if show_xlabel:
        rows.append([Segment(fig.x_label.center(width)[:width], plain)])
    if narrow:  # every row is already exactly ``width`` (the legend's may be longer)
        n = 1 + len(legend_rows)
        rows[1:n] = _fit(rows[1:n], width, style, pad, narrow)
        return rows
    return _fit(rows, width, style, pad, narrow)


def _same(s: Style) -> Style:
    return s


def _fit(rows: list[list[Segment]], width: int, style: Style | None, pad: Style | None,
         narrow: bool) -> list[list[Segment]]:
    """``rows`` cut or padded to ``width`` cells in ``pad`` (their styles already have
    ``style`` applied); unchanged without a style."""
    if style is None or pad is None:
        return rows
    out = []
    for row in rows:
        n = sum(len(s.text) for s in row) if narrow else -1
        if n == width:
            out.append(row)
        elif 0 <= n < width:
            out.append([*row, Segment(" " * (width - n), pad)])
        else:  # longer, or wide characters: Textual's own cut
            out.append(list(Strip(row).crop_extend(0, width, pad)))
    return out


def _dots(fig: Figure, plot_w: int, plot_h: int, x0: float, x1: float, y0: float, y1: float
          ) -> tuple[bytearray, bytearray, list[str]]:
    """The marks and lines as braille dot masks and colour numbers, one byte per cell
    (row after row), and the colours by number - 1 (0: no colour). A cell takes the
    colour of the last line drawn through it: horizontal marks, then vertical, then
    the lines in order."""
    dots_w, dots_h = plot_w * 2, plot_h * 4
    last_x, last_y = dots_w - 1, dots_h - 1
    mask = bytearray(plot_w * plot_h)
    color = bytearray(plot_w * plot_h)
    # colour number 0 is no colour; cells hold one byte
    used = [c for _, c in fig.hlines] + [c for _, c in fig.vlines] + [c for *_, c in fig.lines]
    numbers = {c: k for k, c in enumerate(dict.fromkeys(used), 1)}
    if len(numbers) > 255:
        raise ValueError(f"{len(numbers)} colours in one chart (255 at most)")
    sx = (dots_w - 1) / (x1 - x0)
    sy = (dots_h - 1) / (y1 - y0)
    bit = _BIT
    for y, c in fig.hlines:
        if y0 <= y <= y1:
            dy = min(last_y, max(0, round((y1 - y) * sy)))
            ci = numbers[c]
            a = (dy >> 2) * plot_w
            mask[a:a + plot_w] = mask[a:a + plot_w].translate(_OR[bit[dy & 3]])
            color[a:a + plot_w] = bytes((ci,)) * plot_w
    for x, c in fig.vlines:
        if x0 <= x <= x1:
            dx = min(last_x, max(0, round((x - x0) * sx)))
            ci = numbers[c]
            cx = dx >> 1
            mask[cx::plot_w] = mask[cx::plot_w].translate(_OR[_EVERY_OTHER[dx & 1]])
            color[cx::plot_w] = bytes((ci,)) * plot_h
    for xs, ys, _, c in fig.lines:
        ci = numbers[c]
        lx = ly = -1  # no previous point
        for x, y in zip(xs, ys):
            if x - x or y - y:  # NaN or infinite (``x - x`` is NaN): the line breaks
                lx = -1
                continue
            px = round((x - x0) * sx)
            px = 0 if px < 0 else last_x if px > last_x else px
            py = round((y1 - y) * sy)  # 0: the top row of dots
            py = 0 if py < 0 else last_y if py > last_y else py
            ddx, ddy = px - lx, py - ly
            if lx < 0 or (-1 <= ddx <= 1 and -1 <= ddy <= 1):  # a dot of its own or next to the last
                k = (py >> 2) * plot_w + (px >> 1)
                mask[k] |= bit[((px & 1) << 2) | (py & 3)]
                color[k] = ci
            elif not ddy:  # along a row of dots
                pair = bit[py & 3], bit[4 | (py & 3)]
                a = (py >> 2) * plot_w
                for dx in range(lx + 1, px + 1) if ddx > 0 else range(px, lx):
                    mask[a + (dx >> 1)] |= pair[dx & 1]
                    color[a + (dx >> 1)] = ci
            elif not ddx:  # along a column of dots
                four = bit[(px & 1) << 2:((px & 1) << 2) + 4]
                a = px >> 1
                for dy in range(ly + 1, py + 1) if ddy > 0 else range(py, ly):
                    mask[(dy >> 2) * plot_w + a] |= four[dy & 3]
                    color[(dy >> 2) * plot_w + a] = ci
            else:
                n = max(abs(ddx), abs(ddy))
                # the step along the longer axis is exactly one dot (``round`` of an
                # integer): only the other axis needs rounding
                if n == abs(ddx):
                    sgn = 1 if ddx > 0 else -1
                    for i in range(1, n + 1):
                        dx, dy = lx + sgn * i, ly + round(ddy * i / n)
                        k = (dy >> 2) * plot_w + (dx >> 1)
                        mask[k] |= bit[((dx & 1) << 2) | (dy & 3)]
                        color[k] = ci
                else:
                    sgn = 1 if ddy > 0 else -1
                    for i in range(1, n + 1):
                        dx, dy = lx + round(ddx * i / n), ly + sgn * i
                        k = (dy >> 2) * plot_w + (dx >> 1)
                        mask[k] |= bit[((dx & 1) << 2) | (dy & 3)]
                        color[k] = ci
            lx, ly = px, py
    return mask, color, list(numbers)
