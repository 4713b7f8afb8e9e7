"""The live workload table (grouped by GPU on several GPUs) and the phase comparison
table."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from xwatch.core.analysis.gpu.gpus import GpuGroup, gpu_groups, rollup, rollup_text
from xwatch.core.analysis.metric_view import label
from xwatch.core.analysis.stats.intervals import hist_of, percentile_interval
from xwatch.core.analysis.stats.noise import Floor, floors_in
from xwatch.core.analysis.stats.pooled import too_few
from xwatch.core.analysis.verdict import UNMEASURED, latency_change
from xwatch.core.engine.snapshot import FAILED, RUNNING, PhaseSnapshot, SessionSnapshot
from xwatch.core.engine.stats import nan_if_none, stat
from xwatch.ui.widgets.format import delta, ms, pct, rate
from xwatch.ui.widgets.lines import ScrollLinePanel

STATE_STYLE = {RUNNING: "green", FAILED: "bold red", "finished": "cyan", "stopped": "dim",
               "stalled": "bold black on yellow"}


Cell = Text | str


def _pct(v: float | None, n: int, q: float) -> Cell:
    """A percentile's cell; ``*`` (dim) where its requests are fewer than it needs:
    it is their maximum (``analysis.stats.pooled``)."""
    return Text(ms(v) + "*", style="dim") if too_few(n, q) else ms(v)


class WorkloadTable(ScrollLinePanel):
    """One row per workload: window and phase percentiles, rates, counters.

    On several GPUs (``--gpus``) the copies are grouped by GPU under a roll-up line
    each (HIGH's P99, LOW's samples/s, utilization, how many copies run), and a last
    line rolls up every GPU. When the rows would not fit (``fit_rows``) the groups
    fold to their roll-up lines; ``e`` expands or folds them all, and the GPU ``g``
    charts is always expanded and scrolled into view. Taller than its room, the
    table scrolls.

    A percentile from fewer requests than it needs (P99 from fewer than 100) is
    marked ``*``, dim: it is their maximum.

    Drawn through the line API: a DataTable re-renders every cell whenever any cell
    changes (every 2 s here), which made it one of the dashboard's costliest
    widgets; these rows are cut into segments once per change."""

    COLUMNS = ("workload", "state", "prio", "what", "P50", "P95", "P99", "max",
               "P99 ph", "max ph", "req/s", "target", "smp/s", "n", "late", "err")
    WIDTHS = (10, 10, 4, 20, 7, 7, 7, 7, 7, 7, 6, 6, 7, 7, 5, 4)
    #: the columns of the window's percentiles: under ``M`` headed by the metric's label
    LABELLED = frozenset({"P50", "P95", "P99", "max"})
    FIT_ROWS = 13  # rows that fit when the style gives no max-height in cells
    NARROW = 110  # columns: below, the 'what' column is left out
    #: columns: below, only these columns, at these widths, one space apart (80x24 over
    #: SSH keeps the rates and counts: req/s, target, smp/s, n)
    TIGHT = 100
    TIGHT_COLUMNS = {"workload": 10, "state": 8, "P50": 7, "P99": 7, "P99 ph": 7,
                     "req/s": 6, "target": 6, "smp/s": 7, "n": 6, "err": 4}

    COMPONENT_CLASSES = {"workload-table--header", "workload-table--even-row",
                         "workload-table--group"}
    DEFAULT_CSS = """
    WorkloadTable { height: auto; background: $surface; color: $foreground; }
    WorkloadTable > .workload-table--header { text-style: bold; background: $panel;
                                              color: $foreground; }
    WorkloadTable > .workload-table--even-row { background: $surface-lighten-1 50%; }
    WorkloadTable > .workload-table--group { background: $boost; color: $foreground; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[str, tuple[Cell, ...]] = {}
        #: None: fold when the rows would not fit; True/False: the user's ``e``
        self.fold: bool | None = None
        self.folded = False  # what the last show did
        self.group_lines: dict[int, str] = {}  # GPU -> its roll-up line (tests)
        self._focus: int | None = None

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def row_names(self) -> list[str]:
        return list(self._rows)

    def get_cell(self, row: str, column: str) -> Cell:
        return self._rows[row][self.COLUMNS.index(column)]

    def show(self, snap: SessionSnapshot, gpu: int | None = None) -> None:
        """``gpu``: the GPU the charts show (expanded, marked, scrolled to)."""
        p = snap.current
        if p is None:
            return
        live = p.status == "running"  # after a phase ends, the window is stale: show the phase
        for w in p.workloads:
            state = w.state + (f" {w.inflight_s:.0f}s" if w.inflight_s >= 2 else "")
            lat, n = (w.window, w.window_count) if live else (w.phase, w.phase_count)
            self._rows[w.name] = (
                w.name, Text(state, style=STATE_STYLE.get(w.state, "")), w.priority_label,
                w.description[:20], _pct(lat.p50, n, 50.0),
                _pct(lat.p95, n, 95.0), _pct(lat.p99, n, 99.0),
                ms(lat.max), _pct(w.phase.p99, w.phase_count, 99.0), ms(w.phase.max),
                rate(w.throughput.window_requests_per_s if live
                     else w.throughput.requests_per_s),
                rate(w.target_rate) if w.target_rate else "loop",
                rate(w.throughput.window_samples_per_s if live
                     else w.throughput.samples_per_s), str(w.count),
                str(w.late), Text(str(w.errors), style="red" if w.errors else ""))
        groups = gpu_groups(p, snap.telemetry, snap.window_s if live else None) \
            if len({w.gpu for w in p.workloads if w.gpu is not None}) > 1 else []
        folded = bool(groups) and (self.fold if self.fold is not None else
                                   2 + len(groups) + len(p.workloads) > self.fit_rows)
        heads = {g.gpu: _group_line(g, live, folded and g.gpu != gpu, g.gpu == gpu)
                 for g in groups}
        tail = _all_line(groups, live, snap.window_s, folded) if groups else None
        # M: the window's percentiles are a named metric's, labelled ("TTFT P50")
        named = label(snap.metric) if snap.metric else None
        heads_row = self.COLUMNS if named is None else tuple(
            f"{named} {c}" if c in self.LABELLED else c for c in self.COLUMNS)
        key = (heads_row, tuple((n, tuple((c.plain, str(c.style)) if isinstance(c, Text) else c
                                          for c in row)) for n, row in self._rows.items()),
               tuple((g, t.plain) for g, t in heads.items()), tail and tail.plain, folded,
               gpu, 0 < self.size.width < self.NARROW, 0 < self.size.width < self.TIGHT)
        focus_changed = gpu != self._focus
        self._focus, self.folded = gpu, folded
        self.group_lines = {g: t.plain for g, t in heads.items()}
        if key == self._key:
            return  # nothing changed: no repaint
        header, even, group = self._bands()
        lines: list[Text | list[Segment]] = [self._line_of(heads_row, header, head=True)]
        focus_at = 0
        if not groups:
            for i, row in enumerate(self._rows.values()):
                lines.append(self._line_of(row, even if i % 2 else None))
        else:
            for g in groups:
                if g.gpu == gpu:
                    focus_at = len(lines)
                lines.append(_on(heads[g.gpu], group))
                if not folded or g.gpu == gpu:
                    for i, w in enumerate(g.workloads):
                        lines.append(self._line_of(self._rows[w.name], even if i % 2 else None))
            assert tail is not None
            lines.append(tail)
        self.set_lines(lines, key)
        if focus_changed and gpu is not None:
            n = 1 + len(next((g.workloads for g in groups if g.gpu == gpu), ()))
            self.call_after_refresh(self.scroll_to_line, focus_at, n)

    _band_styles: tuple[Style, Style, Style] | None = None

    def _bands(self) -> tuple[Style, Style, Style]:
        """The header, even-row and group styles. Textual forgets its own cache of
        them at every repaint, and this table repaints every 2 s: each walked the
        ancestors' styles (a third of ``show``). Kept until the styles change (the
        theme, the CSS), as Textual keeps a widget's visual style."""
        if self._band_styles is None:
            self._band_styles = (self.get_component_rich_style("workload-table--header"),
                                 self.get_component_rich_style("workload-table--even-row"),
                                 self.get_component_rich_style("workload-table--group"))
        return self._band_styles

    def notify_style_update(self) -> None:
        self._band_styles = None
        super().notify_style_update()

    @property
    def fit_rows(self) -> int:
        """The rows the table may take (its max-height: 13, 10 under 30 rows, 20 from
        50): more than this, and the GPU groups fold."""
        mh = self.styles.max_height
        return int(mh.value) if mh is not None and mh.is_cells else self.FIT_ROWS

    def _line_of(self, cells: tuple[Cell, ...], base: Style | None,
                 head: bool = False) -> list[Segment]:
        """One row: every cell padded by a space each side and cut to its width; under
        110 columns without the ``what`` column (the numbers matter more); under 100,
        only ``TIGHT_COLUMNS``, a space before each. ``head``: the header, whose cells may
        take their right-hand space ("TTFT P50" over 7 cells) where there is one."""
        out: list[Segment] = []
        narrow = 0 < self.size.width < self.NARROW
        tight = 0 < self.size.width < self.TIGHT
        for i, (c, w) in enumerate(zip(cells, self.WIDTHS)):
            if narrow and i == 3:
                continue
            if tight:
                w = self.TIGHT_COLUMNS.get(self.COLUMNS[i], 0)
                if not w:
                    continue
            text = c.plain if isinstance(c, Text) else c
            style = self.app.console.get_style(c.style) if isinstance(c, Text) and c.style \
                else None
            if base is not None:
                style = base + style if style is not None else base
            pad = 0 if tight else 1
            out.append(Segment(" " + text[:w + pad].ljust(w + pad) if head else
                               " " + text[:w].ljust(w) + " " * pad, style))
        return out


def _on(t: Text, base: Style) -> Text:
    """``t`` over the background of ``base`` (the group rows' band)."""
    out = t.copy()
    out.style = base  # under the line's own colours
    out.pad_right(max(0, 250 - len(out)))  # the band runs to the right edge
    return out


def _group_line(g: GpuGroup, live: bool, folded: bool, charted: bool) -> Text:
    """A GPU's roll-up: HIGH's P99 (the window while live), LOW's samples/s, the
    utilization, the copies' states, then which device it is."""
    p99 = g.high_window_p99 if live else g.high_p99
    sps = g.low_window_samples_per_s if live else g.low_samples_per_s
    t = Text()
    t.append(("▸ " if folded else "▾ ") + f"GPU {g.gpu:<2}", style="bold yellow" if charted
             else "bold")
    t.append(f" HIGH P99 {ms(p99):>6} ms", style="bold cyan")
    t.append(f"  LOW {rate(sps):>6} smp/s")
    t.append(f"  util {pct(g.util_pct):>4}")
    running = sum(1 for w in g.workloads if w.state == RUNNING)
    odd = [f"{w.name} {w.state}" for w in g.workloads
           if w.state not in (RUNNING, "finished", "stopped")]
    if odd:  # what is wrong comes before the device's name (80 columns end about here)
        t.append("  " + ", ".join(odd), style="bold red")
    else:
        t.append(f"  {running}/{len(g.workloads)} running",
                 style="green" if running == len(g.workloads) else "")
    if charted:
        t.append("  ◀ charts", style="bold yellow")
    t.append(f"  {g.name[:24]} {g.bus_id or '?'} [{g.matched_by or 'no telemetry'}]",
             style="dim")
    return t


def _all_line(groups: list[GpuGroup], live: bool, window_s: float, folded: bool) -> Text:
    """Every GPU: the worst and best HIGH P99 (each GPU's HIGH is its own process:
    percentiles are compared, never averaged) and the LOW total."""
    r = rollup(groups, window=live)
    t = Text(f" all {len(groups)} GPUs: ", style="bold")
    t.append(rollup_text(r, ms), style="bold cyan")
    t.append(f" · LOW {rate(r.low_samples_per_s)} smp/s in all")
    t.append(f" · {'window: last ' + format(window_s, 'g') + ' s' if live else 'whole phase'}"
             f" · e: {'expand' if folded else 'fold'} · g: chart one GPU", style="dim")
    return t


class CompareTable(DataTable[str]):
    """Every phase side by side, with the change vs the first native phase.

    Percentiles carry their 95% interval; a finished phase's change carries the
    interval of the difference: one run against one run, the interval is the recorded
    noise floor's ("~": within it) or only the runs' own ("?": run-to-run noise
    unmeasured, no verdict); ``*``: fewer requests than the percentile needs, so it is
    their maximum (a difference over runs then pools them); computed once
    per finished phase, not every refresh). The table is updated cell by cell, so the
    cursor and the scroll position stay where the user put them."""

    METRICS = (("P50 ms", "p50"), ("P95 ms", "p95"), ("P99 ms", "p99"), ("max ms", "max"),
               ("mean ms", "mean"), ("req/s", "rate"), ("smp/s", "sps"))
    QS = {"p50": 50.0, "p95": 95.0, "p99": 99.0}

    def on_mount(self) -> None:
        self.zebra_stripes = True
        self._shape: tuple[str, ...] = ()
        self._rows: list[list[str]] = []
        self._diffs: dict[tuple[str, str, str, str], str] = {}
        self._floors: dict[str, Floor] = {}

    def _diff(self, base: PhaseSnapshot, p: PhaseSnapshot, name: str, key: str) -> str:
        """The change of ``key`` from ``base`` to a finished ``p``, with its interval."""
        ck = (base.name, p.name + p.status, name, key)
        if ck in self._diffs:
            return self._diffs[ck]
        q = self.QS[key]
        c = latency_change(name, q, [base], [p], self._floors, exact=True)  # this copy's
        mark = "" if c is None else " ?" if c.basis == UNMEASURED else " ~" if c.way == 0 else ""
        mark += " *" if c is not None and c.few else ""
        out = "-" if c is None else f"{c.diff.est:+.2f} [{_b(c.diff.lo)},{_b(c.diff.hi)}]{mark}"
        self._diffs[ck] = out
        return out

    def show(self, snap: SessionSnapshot) -> None:
        phases = snap.phases
        floors = floors_in(snap.noise_floors)
        if set(floors) != set(self._floors):
            self._floors = floors
            self._diffs.clear()
        shape = tuple(p.name + p.status for p in phases)
        base = next((p for p in phases if p.mode == "native" and p.status != "failed"),
                    phases[0] if phases else None)

        def val(p: PhaseSnapshot, name: str, key: str) -> float:
            w = p.workload(name)
            if w is None or w.count == 0:
                return float("nan")
            if key == "rate":
                return float(nan_if_none(w.throughput.requests_per_s))
            if key == "sps":
                return float(nan_if_none(w.throughput.samples_per_s))
            return stat(w.phase, key)

        def cell(p: PhaseSnapshot, name: str, key: str) -> str:
            v = val(p, name, key)
            if key in ("rate", "sps"):
                return rate(v)
            w = p.workload(name)
            if key in self.QS and w is not None and w.latency_hist.buckets and v == v:
                h = hist_of(w)
                iv = percentile_interval(h, self.QS[key])
                few = " *" if too_few(h.n, self.QS[key]) else ""
                return f"{ms(v)} [{_b(iv.lo)},{_b(iv.hi)}]{few}"
            return ms(v)

        def change(p: PhaseSnapshot, name: str, key: str) -> str:
            assert base is not None
            if key in self.QS and p.ended_at is not None and base.ended_at is not None:
                return self._diff(base, p, name, key)
            return delta(val(base, name, key), val(p, name, key))

        rows: list[list[str]] = []
        if base is not None:
            for wl in snap.scenario.workloads:
                for label, key in self.METRICS:
                    cells = [wl.name, label]
                    cells += [cell(p, wl.name, key) for p in phases]
                    cells += [change(p, wl.name, key) for p in phases if p is not base]
                    rows.append(cells)
        if shape == self._shape and rows == self._rows:
            return  # nothing changed: no repaint
        if shape != self._shape or len(rows) != len(self._rows):
            at, scroll = self.cursor_coordinate, self.scroll_offset
            self.clear(columns=True)
            self.add_column("workload")
            self.add_column("metric")
            for p in phases:
                self.add_column(f"{p.name} ({p.status})")
            for p in phases:
                if p is not base:
                    self.add_column(f"Δ {p.name}")
            self._shape = shape
            for cells in rows:
                self.add_row(*cells)
            if rows:  # a new phase adds columns; the user's place stays
                self.move_cursor(row=min(at.row, len(rows) - 1),
                                 column=min(at.column, len(rows[0]) - 1), animate=False)
                self.scroll_to(scroll.x, scroll.y, animate=False)
        else:  # same shape: change only the cells that changed
            for r, (old, new) in enumerate(zip(self._rows, rows)):
                for c, (a, b) in enumerate(zip(old, new)):
                    if a != b:
                        self.update_cell_at(Coordinate(r, c), b)
        self._rows = rows


def _b(v: float | None) -> str:
    """A bound of an interval, short ('open' where the data give none)."""
    return "open" if v is None or v != v else (f"{v:.2f}" if abs(v) < 100 else f"{v:.0f}")
