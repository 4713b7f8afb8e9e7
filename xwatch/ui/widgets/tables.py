"""The live workload table and the phase comparison table."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable

from xwatch.core.engine.session import FAILED, RUNNING, SessionSnapshot
from xwatch.ui.widgets.format import delta, ms, rate
from xwatch.ui.widgets.lines import LinePanel

STATE_STYLE = {RUNNING: "green", FAILED: "bold red", "finished": "cyan", "stopped": "dim",
               "stalled": "bold black on yellow"}


Cell = Text | str


class WorkloadTable(LinePanel):
    """One row per workload: window and phase percentiles, rates, counters.

    Drawn through the line API (``LinePanel``): a DataTable re-renders every cell
    whenever any cell changes (every 2 s here), which made it one of the dashboard's
    costliest widgets; these rows are cut into segments once per change."""

    COLUMNS = ("workload", "state", "prio", "what", "P50", "P95", "P99", "max",
               "P99 ph", "max ph", "req/s", "target", "smp/s", "n", "late", "err")
    WIDTHS = (10, 10, 4, 20, 7, 7, 7, 7, 7, 7, 6, 6, 7, 7, 5, 4)

    COMPONENT_CLASSES = {"workload-table--header", "workload-table--even-row"}
    DEFAULT_CSS = """
    WorkloadTable { height: auto; background: $surface; color: $foreground; }
    WorkloadTable > .workload-table--header { text-style: bold; background: $panel;
                                              color: $foreground; }
    WorkloadTable > .workload-table--even-row { background: $surface-lighten-1 50%; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[str, tuple[Cell, ...]] = {}

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def row_names(self) -> list[str]:
        return list(self._rows)

    def get_cell(self, row: str, column: str) -> Cell:
        return self._rows[row][self.COLUMNS.index(column)]

    def show(self, snap: SessionSnapshot) -> None:
        p = snap.current
        if p is None:
            return
        live = p.status == "running"  # after a phase ends, the window is stale: show the phase
        for w in p.workloads:
            state = w.state + (f" {w.inflight_s:.0f}s" if w.inflight_s >= 2 else "")
            lat = w.window if live else w.phase
            self._rows[w.name] = (
                w.name, Text(state, style=STATE_STYLE.get(w.state, "")), w.priority_label,
                w.description[:20], ms(lat.p50), ms(lat.p95), ms(lat.p99),
                ms(lat.max), ms(w.phase.p99), ms(w.phase.max),
                rate(w.window_rate if live else w.achieved_rate),
                rate(w.target_rate) if w.target_rate else "loop",
                rate(w.window_samples_per_s if live else w.samples_per_s), str(w.count),
                str(w.late), Text(str(w.errors), style="red" if w.errors else ""))
        key = tuple((n, tuple((c.plain, str(c.style)) if isinstance(c, Text) else c
                              for c in row)) for n, row in self._rows.items())
        if key == self._key:
            return  # nothing changed: no repaint
        header = self.get_component_rich_style("workload-table--header")
        even = self.get_component_rich_style("workload-table--even-row")
        lines = [self._line(self.COLUMNS, header)]
        for i, row in enumerate(self._rows.values()):
            lines.append(self._line(row, even if i % 2 else None))
        self.set_lines(lines, key)

    def _line(self, cells: tuple[Cell, ...], base: Style | None) -> list[Segment]:
        """One row: every cell padded by a space each side and cut to its width."""
        out: list[Segment] = []
        for c, w in zip(cells, self.WIDTHS):
            text = c.plain if isinstance(c, Text) else c
            style = self.app.console.get_style(c.style) if isinstance(c, Text) and c.style \
                else None
            if base is not None:
                style = base + style if style is not None else base
            out.append(Segment(" " + text[:w].ljust(w) + " ", style))
        return out


class CompareTable(DataTable[str]):
    """Every finished phase side by side, with the change vs the first native phase."""

    METRICS = (("P50 ms", "p50"), ("P95 ms", "p95"), ("P99 ms", "p99"), ("max ms", "max"),
               ("mean ms", "mean"), ("req/s", "rate"), ("smp/s", "sps"))

    def on_mount(self) -> None:
        self.zebra_stripes = True
        self._shape: tuple[str, ...] = ()
        self._rows: list[list[str]] = []

    def show(self, snap: SessionSnapshot) -> None:
        phases = snap.phases
        shape = tuple(p.name + p.status for p in phases)
        base = next((p for p in phases if p.mode == "native" and p.status != "failed"),
                    phases[0] if phases else None)

        def val(p: object, name: str, key: str) -> float:
            w = p.workload(name)  # type: ignore[attr-defined]
            if w is None or w.count == 0:
                return float("nan")
            if key == "rate":
                return float(w.achieved_rate)
            if key == "sps":
                return float(w.samples_per_s)
            return float(w.phase.get(key))

        rows: list[list[str]] = []
        if base is not None:
            for wl in snap.scenario.workloads:
                for label, key in self.METRICS:
                    cells = [wl.name, label]
                    cells += [(rate if key in ("rate", "sps") else ms)(val(p, wl.name, key))
                              for p in phases]
                    cells += [delta(val(base, wl.name, key), val(p, wl.name, key))
                              for p in phases if p is not base]
                    rows.append(cells)
        if shape == self._shape and rows == self._rows:
            return  # nothing changed: no repaint
        if shape != self._shape:
            self.clear(columns=True)
            self.add_column("workload")
            self.add_column("metric")
            for p in phases:
                self.add_column(f"{p.name} ({p.status})")
            for p in phases:
                if p is not base:
                    self.add_column(f"Δ {p.name}")
            self._shape = shape
        else:
            self.clear()
        for cells in rows:
            self.add_row(*cells)
        self._rows = rows
