"""The braille chart renderer (xwatch/ui/widgets/plot.py): layout, dots, colours."""

from __future__ import annotations

import math

import pytest

from xwatch.ui.widgets.plot import Figure, nice_ticks, render_figure, style_of, tick_label

BRAILLE = range(0x2800, 0x2900)


def text_rows(rows: list) -> list[str]:  # type: ignore[type-arg]
    return ["".join(s.text for s in r) for r in rows]


def dots(rows: list, color: str | None = None) -> set[tuple[int, int]]:  # type: ignore[type-arg]
    """(row, column) of every braille cell, optionally only those in ``color``."""
    want = style_of(color) if color else None
    out = set()
    for r, segs in enumerate(rows):
        col = 0
        for s in segs:
            for ch in s.text:
                if ord(ch) in BRAILLE and ord(ch) != 0x2800 and (want is None or s.style == want):
                    out.add((r, col))
                col += 1
    return out


def test_nice_ticks_are_round_and_inside() -> None:
    assert nice_ticks(0, 100, 6) == [0, 20, 40, 60, 80, 100]
    assert nice_ticks(0.3, 9.7, 5) == [2.5, 5.0, 7.5]
    assert nice_ticks(1877.3, 2252.8, 3) == [2000, 2200]
    for lo, hi, most in ((0, 1, 3), (-5, 5, 4), (0.001, 0.004, 5), (3, 3000, 8)):
        ts = nice_ticks(lo, hi, most)
        assert ts and len(ts) <= most and all(lo - 1e-9 <= t <= hi + 1e-9 for t in ts)
    assert tick_label(2.5, 2.5) == "2.5" and tick_label(40, 20) == "40"
    assert tick_label(0.05, 0.01) == "0.05"


def test_every_row_is_exactly_the_width_and_the_title_is_on_top() -> None:
    fig = Figure()
    fig.title("latency")
    fig.plot([0, 1, 2, 3], [1, 4, 2, 8], label="high p99", color="cyan")
    fig.xlabel("session s")
    for w, h in ((60, 16), (30, 8), (12, 5), (100, 40)):
        rows = render_figure(fig, w, h)
        assert len(rows) <= h
        assert all(len("".join(s.text for s in r)) <= w for r in rows)
        assert text_rows(rows)[0].strip() == "latency"[:w]
    assert text_rows(render_figure(fig, 60, 16))[-1].strip() == "session s"


def test_a_line_goes_from_bottom_left_to_top_right_in_its_colour() -> None:
    fig = Figure()
    fig.plot([0, 10], [0, 10], color="red")
    fig.xlim(0, 10)
    fig.ylim(0, 10)
    rows = render_figure(fig, 40, 14)
    red = dots(rows, "red")
    assert red == dots(rows)  # one line: every dot is red
    plot_rows = [r for r, _ in red]
    top, bottom = min(plot_rows), max(plot_rows)
    left_col = min(c for r, c in red if r == bottom)
    right_col = max(c for r, c in red if r == top)
    assert right_col > left_col and bottom > top  # rises to the right
    # the diagonal is continuous: every plot row between has a dot
    assert set(range(top, bottom + 1)) <= set(plot_rows)


def test_marks_legend_message_and_clipping() -> None:
    fig = Figure()
    fig.plot([0, 1, 2], [5, 5, 500], label="low", color="green")  # 500: far above ylim
    fig.hline(2, "red")
    fig.vline(1, "yellow")
    fig.ylim(0, 10)
    rows = render_figure(fig, 50, 14)
    txt = text_rows(rows)
    assert any("▬ low" in t for t in txt)
    assert dots(rows, "red") and dots(rows, "yellow")
    # the clipped point is drawn on the top plot row (under the title and the legend's
    # row), not lost
    assert txt[1].strip() == "▬ low"
    assert any(r == 2 for r, _ in dots(rows, "green"))
    fig.clear_figure()
    fig.text("waiting", 0.5, 0.5)
    fig.xlim(0, 1)
    fig.ylim(0, 1)
    assert any("waiting" in t for t in text_rows(render_figure(fig, 40, 10)))


def test_given_yticks_label_their_rows_and_nan_breaks_a_line() -> None:
    fig = Figure()
    fig.plot([0, 1, 2, 3], [0.0, math.nan, 2.0, 2.0], color="cyan")
    fig.yticks([0, 1, 2], ["1", "10", "100"])
    fig.ylim(-0.1, 2.1)
    txt = text_rows(render_figure(fig, 40, 12))
    labelled = [t.split("┤")[0].strip() for t in txt if "┤" in t]
    assert labelled == ["100", "10", "1"]


def test_unknown_colour_names_draw_uncoloured() -> None:
    assert style_of("orange").color is not None  # plotext's name, mapped
    assert style_of("no-such-colour").color is None


@pytest.mark.parametrize("w,h", [(3, 2), (8, 3), (9, 4)])
def test_tiny_sizes_do_not_raise(w: int, h: int) -> None:
    fig = Figure()
    fig.title("t")
    fig.plot([0, 1], [0, 1], label="x")
    rows = render_figure(fig, w, h)
    assert len(rows) <= h


def test_the_legend_never_covers_data() -> None:
    """Lines along the top-left corner (where plotext drew its legend) keep every dot;
    the legend has rows of its own, and what does not fit says how many are left."""
    fig = Figure()
    for i in range(12):
        fig.plot([0, 1, 2, 3], [10, 10, 10 - i, 0], label=f"workload-{i:02d} p99",
                 color=("cyan", "red", "green")[i % 3])
    fig.ylim(0, 10)
    rows = render_figure(fig, 60, 16)
    txt = text_rows(rows)
    legend = [t for t in txt if "▬" in t]
    assert len(legend) == 2 and txt[1:3] == legend  # under the title, two rows at most
    assert not any(0x2800 <= ord(ch) <= 0x28FF for t in legend for ch in t)  # no data there
    assert legend[-1].rstrip().endswith("more")
    shown = sum(t.count("▬") for t in legend)
    assert f"+{12 - shown} more" in legend[-1]
    # the top plot row starts with data at the left edge (the y axis, then dots)
    top = txt[3]
    assert any(0x2800 < ord(ch) <= 0x28FF for ch in top[:8])
    # one short entry: one row
    fig2 = Figure()
    fig2.plot([0, 1], [0, 1], label="high p50")
    assert sum("▬" in t for t in text_rows(render_figure(fig2, 40, 12))) == 1
