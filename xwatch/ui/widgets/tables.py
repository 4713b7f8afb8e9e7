"""The live workload table and the phase comparison table."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from xwatch.core.engine.session import FAILED, RUNNING, SessionSnapshot
from xwatch.ui.widgets.format import delta, ms, rate

STATE_STYLE = {RUNNING: "green", FAILED: "bold red", "finished": "cyan", "stopped": "dim",
               "stalled": "bold black on yellow"}


def _key(v: Text | str) -> object:
    return (v.plain, str(v.style)) if isinstance(v, Text) else v


class WorkloadTable(DataTable[Text | str]):
    """One row per workload: window and phase percentiles, rates, counters."""

    COLUMNS = ("workload", "state", "prio", "what", "P50", "P95", "P99", "max",
               "P99 ph", "max ph", "req/s", "target", "smp/s", "n", "late", "err")
    WIDTHS = (10, 10, 4, 20, 7, 7, 7, 7, 7, 7, 6, 6, 7, 7, 5, 4)

    def on_mount(self) -> None:
        self._last: dict[str, tuple[Text | str, ...]] = {}
        self.cursor_type = "row"
        self.zebra_stripes = True
        for c, w in zip(self.COLUMNS, self.WIDTHS):
            self.add_column(c, key=c, width=w)

    def show(self, snap: SessionSnapshot) -> None:
        p = snap.current
        if p is None:
            return
        live = p.status == "running"  # after a phase ends, the window is stale: show the phase
        for w in p.workloads:
            state = w.state + (f" {w.inflight_s:.0f}s" if w.inflight_s >= 2 else "")
            lat = w.window if live else w.phase
            row: tuple[Text | str, ...] = (
                   w.name, Text(state, style=STATE_STYLE.get(w.state, "")), w.priority_label,
                   w.description[:20], ms(lat.p50), ms(lat.p95), ms(lat.p99),
                   ms(lat.max), ms(w.phase.p99), ms(w.phase.max),
                   rate(w.window_rate if live else w.achieved_rate),
                   rate(w.target_rate) if w.target_rate else "loop",
                   rate(w.window_samples_per_s if live else w.samples_per_s), str(w.count),
                   str(w.late), Text(str(w.errors), style="red" if w.errors else ""))
            if w.name in self.rows:
                last = self._last.get(w.name, ())
                for i, (c, v) in enumerate(zip(self.COLUMNS, row)):
                    if i >= len(last) or _key(last[i]) != _key(v):
                        self.update_cell(w.name, c, v)  # only cells that changed repaint
            else:
                self.add_row(*row, key=w.name)
            self._last[w.name] = row


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
