"""The dashboard app and its factory ``make_app`` (shared by the CLI and tests).

Data flow: the runner/supervisor feed the session on this event loop; a 1 Hz tick
reads the logs and, every 2 s (at once when a state changed), takes one
``SessionSnapshot`` and hands it to every visible widget; the latency and throughput
charts redraw every 4 s, the CDF and utilization every 8 s, each only if its data
changed. Blocking work (telemetry polls, exports, xserver HTTP)
runs in threads. In replay mode the same widgets show a recorded snapshot.

This module owns the layout, the refresh and the view's keys (``ui.keys``); what
the keys do to the live session (phases, calibrate, A/B, advise, capacity, export, live
control, quit) is the ``controller.SessionController`` the app holds, over the plan
driver (``plans.driver``) that owns the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import RichLog, TabbedContent, TabPane

from xwatch.core.analysis.metric_view import (
    LATENCY,
    default_metric,
    judges,
    metric_names,
    metric_view,
)
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.modes import registry
from xwatch.core.plans.driver import Driver
from xwatch.core.plans.options import Backends, Options
from xwatch.scenario import Scenario, load_scenario
from xwatch.ui.controller import DashboardObserver, PlanSaid, SessionController, ShowTab
from xwatch.ui.fleet.panel import BoxesPanel, box_views, waiting_lines
from xwatch.ui.keys import bindings
from xwatch.ui.screens.help import HelpScreen
from xwatch.ui.widgets.charts import CdfChart, LatencyChart, ThroughputChart, UtilChart
from xwatch.ui.widgets.footer import NARROW as FOOTER_NARROW
from xwatch.ui.widgets.footer import KeysFooter
from xwatch.ui.widgets.panels import (
    AnswerPanel,
    CalibrationPanel,
    GpuPanel,
    KernelLane,
    LaneStrip,
)
from xwatch.ui.widgets.status import AlertBar, StatusLine
from xwatch.ui.widgets.tables import CompareTable, WorkloadTable

if TYPE_CHECKING:
    from xwatch.ui.fleet.run import FleetRun

LOG_STYLES = {"error": "bold red", "warning": "yellow", "stderr": "red", "info": "cyan",
              "stdout": ""}
TICK_S = 1.0  # the logs, and a look for failures and stalls: 1 Hz
#: a snapshot (every workload's statistics), the header and its clock, the alerts, the
#: table, per-GPU lines, lane, GPU panel: every 2 s (as nvitop), and at once when a
#: state changed; every widget repaints only if its content changed
TABLE_EVERY = 2
CHART_EVERY = 4  # latency and throughput charts: every 4 s (they gain 4 rows), if changed
SLOW_CHARTS = ("CdfChart", "UtilChart")  # a distribution and a 0.5 s sample: every 8 s
GC_YOUNG = 7000  # the collector's first threshold (see on_mount)


def _chart_signature(snap: SessionSnapshot) -> tuple[object, ...]:
    """Changes whenever a chart would draw something different: a new per-second row,
    a new phase or state, a new telemetry sample."""
    samples = snap.telemetry.samples if snap.telemetry is not None else []
    phases = tuple((p.index, p.status, tuple(w.state for w in p.workloads))
                   for p in snap.phases)
    return (phases, tuple(len(w.series) for p in snap.phases for w in p.workloads),
            samples[-1].t if samples else None)


class XwatchApp(App[int]):
    CSS_PATH = "xwatch.tcss"
    TITLE = "xwatch"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = bindings()

    def __init__(self, scenario: Scenario | None = None, options: Options | None = None,
                 backends: Backends | None = None, replay: SessionSnapshot | None = None,
                 replay_source: str | None = None, fleet: FleetRun | None = None) -> None:
        super().__init__()
        self.replay = replay
        self.replay_source = replay_source
        self.scenario = replay.scenario if replay is not None else scenario
        assert self.scenario is not None
        self.options = options or Options()
        #: a plan over a Ray cluster's boxes (``run --ray``: ``ui.fleet``), its task
        self.fleet = fleet
        self.fleet_task: asyncio.Task[None] | None = None
        driver = None if replay is not None or fleet is not None else Driver(
            self.scenario, self.options, backends, DashboardObserver(self))
        #: the live session's controller (in replay: one that refuses to run anything;
        #: over a fleet: one that stops the boxes' plan)
        if fleet is not None:
            from xwatch.ui.fleet.run import FleetController

            self.ctl: SessionController = FleetController(self, fleet)
        else:
            self.ctl = SessionController(self, driver, replay_source)
        #: the boxes shown as groups of GPUs: over a fleet, or a replay of one
        self.boxes_shown = fleet is not None or (
            replay is not None and any(p.box is not None for p in replay.phases))
        #: planned measured seconds of a phase (inf: until stopped, ``--duration 0``)
        self.phase_s = self.options.phase_s(self.scenario)
        self.paused = False
        #: the per-request metric the widgets show (M): first the SLO's, when that is a
        #: named metric (a server's TTFT), else the latency
        self.metric = default_metric(self.scenario)
        self.snap: SessionSnapshot | None = replay
        self._tick = 0
        self._log_seq = 0
        self._widget_errors: set[str] = set()
        self._chart_sig: tuple[object, ...] | None = None
        self._alerted: tuple[object, ...] = ()  # ``_states`` at the last snapshot
        bound = {b.key for b in bindings() if isinstance(b, Binding)}
        for mode in registry.modes():  # a mode from outside the tree: its key too
            if mode.key is not None and mode.key not in bound:
                self.bind(mode.key, f"mode_on_off({mode.name!r})",
                          description=f"{mode.label} on/off", show=False)

    @property
    def session(self) -> Session | None:
        return self.ctl.session

    @property
    def last_export(self) -> Path | None:
        """The folder of the last snapshot ``s`` wrote."""
        return self.ctl.last_export

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield StatusLine()
        yield AlertBar()
        with TabbedContent(initial="live"):
            with TabPane("Live", id="live"):
                if self.boxes_shown:
                    yield BoxesPanel()
                yield WorkloadTable()
                with Horizontal(classes="chart-row"):
                    yield LatencyChart()
                    yield ThroughputChart()
                yield LaneStrip()
                yield KernelLane()
                with Horizontal(classes="chart-row", id="second-row"):
                    yield CdfChart()
                    with Vertical(id="gpu-col"):
                        yield GpuPanel()
                        yield UtilChart()
            with TabPane("Compare", id="compare"), Vertical():
                yield AnswerPanel()
                yield CalibrationPanel()
                yield CompareTable()
            for mode in registry.modes():  # each mode's own tab (``Mode.tab``)
                if mode.tab is not None:
                    with TabPane(mode.label, id=mode.name), \
                            VerticalScroll(id=f"{mode.name}-scroll"):
                        yield registry.load_ref(mode.tab)(id=f"{mode.name}-panel")
            with TabPane("Logs", id="logs"):
                yield RichLog(highlight=False, markup=False, wrap=True, max_lines=5000)
        yield KeysFooter()

    async def on_mount(self) -> None:
        if self.replay is not None:
            self.sub_title = f"replay of {self.replay_source}"
            self.refresh_view(force_charts=True)
            for m in self.replay.messages:
                self._write_log("xwatch", m.stream, m.text)
            return
        if self.fleet is not None:
            self.fleet.out.app = self
            self.sub_title = f"{len(self.fleet.fleet.boxes)} boxes over Ray"
            self.fleet_task = asyncio.create_task(self._run_fleet(self.fleet))
            self.set_interval(TICK_S, self._on_tick)
            self.refresh_view(force_charts=True)
            return
        self.ctl.start()
        self.set_interval(TICK_S, self._on_tick)
        # the ~90k objects of start-up (modules, the DOM) never become garbage: out of
        # the collector's sight, a full collection takes a few ms instead of 20-50 ms
        self.call_after_refresh(gc.freeze)
        # a young generation of 7000 objects, not 700: a collection every ~10 s, not
        # every second, and so ten times fewer of the full ones it leads to (12 ms
        # each on the H100); cyclic garbage waits a few thousand allocations longer
        gc.set_threshold(GC_YOUNG, *gc.get_threshold()[1:])
        self.ctl.autostart()

    async def _run_fleet(self, run: FleetRun) -> None:
        """The boxes' plan (``ui.fleet.run``); its end or its failure told."""
        try:
            await run.run()
        except Exception as e:  # a titled error (a mode every box refused), or Ray's
            self.notify(f"{type(e).__name__}: {e}", title="The plan over the boxes stopped",
                        severity="error", timeout=20, markup=False)
            self._write_log("xwatch", "error", f"plan over the boxes: {e!r}")
        else:
            if run.outcome is not None and not self.ctl.quitting:
                self.notify(f"every box's phases ended (exit status {run.outcome.status}): "
                            "the answer is in the Compare tab (2)", title="Plan complete",
                            timeout=15)
        self.refresh_view(force_charts=True)

    def on_plan_said(self, message: PlanSaid) -> None:
        if self.session is not None:
            self.session.log("xwatch", "info", message.text)
        elif self.fleet is not None:
            self._write_log("xwatch", "stderr" if message.text.startswith("FAILED")
                            else "info", message.text)

    def on_show_tab(self, message: ShowTab) -> None:
        self.action_tab(message.tab)

    def on_resize(self) -> None:
        # below 30 rows the distribution/GPU row is dropped so the table and the
        # latency chart stay readable (80x24 over SSH); the data is in the tabs
        self.screen.set_class(self.size.height < 30, "compact")
        # from 50 rows the table may grow (four GPUs' copies fit unfolded at 200x60)
        self.screen.set_class(self.size.height >= 50, "tall")
        # below 100 columns the footer keeps ? Help and q Quit (the spare keys go)
        self.screen.set_class(self.size.width < FOOTER_NARROW, "narrow")

    # ------------------------------------------------------------ view
    def action_next_metric(self) -> None:
        """``M``: the next per-request metric (latency_ms, then each named metric the
        workloads report: ttft_ms, tpot_ms, ...) for the table, charts and Compare tab;
        from the SLO's metric, where the dashboard starts, to the rest."""
        if self.snap is None:
            return
        names = metric_names(self.snap)
        if self.metric not in names:  # the SLO's metric, before any request reported it
            names.append(self.metric)
        if len(names) == 1:
            self.notify("the workloads report only latency_ms (a request event may carry "
                        "more, e.g. ttft_ms and tpot_ms)", title="One metric", timeout=6)
            return
        self.metric = names[(names.index(self.metric) + 1) % len(names)
                            if self.metric in names else 0]
        self._chart_sig = None  # redraw the charts for the new metric
        self.notify(f"showing {self.metric}", timeout=3)
        self.refresh_view(force_charts=True)

    def action_scroll_table(self, rows: int) -> None:
        """``[`` / ``]``: the workload table a few rows up or down (no mouse needed when
        more workloads run than the table has rows)."""
        table = self.query_one(WorkloadTable)
        table.scroll_to(y=max(0, int(table.scroll_offset.y) + rows), animate=False)


    # ------------------------------------------------------------ refresh
    def _states(self) -> tuple[object, ...]:
        """What makes an alert: the phase, its status and error, every workload's
        state (read from the live objects, without a snapshot)."""
        runner = self.ctl.runner
        phase = runner.phase if runner is not None else None
        if phase is None:
            return ()
        return (phase.index, phase.status, phase.error,
                tuple(r.state for r in phase.runs.values()))

    def _on_tick(self) -> None:
        self._tick += 1
        states = self._states()
        if self._tick % TABLE_EVERY and states == self._alerted:
            # between snapshots, nothing failed or stalled: the logs only. The header's
            # clock moves with the snapshot, so the screen repaints once per 2 s: a
            # repaint of the clock alone cost as much as a tenth of the dashboard's CPU
            # (docs/benchmarks.md, issue 41 goal 5)
            self._logs()
            return
        self._alerted = states
        self.refresh_view(force_charts=self._tick % CHART_EVERY == 0)

    def _logs(self) -> None:
        if self.session is not None:
            for ln in self.session.logs_since(self._log_seq):
                self._write_log(ln.source, ln.stream, ln.text)
                self._log_seq = ln.seq

    def refresh_view(self, force_charts: bool = False, force_table: bool = True) -> None:
        if self.session is not None:
            self.snap = self.session.snapshot(telemetry_last=600)
            if self.options.metrics is not None:
                self.options.metrics.publish(self.snap)
            self._logs()
        elif self.fleet is not None:
            self.snap = self.fleet.snapshot() or self.snap
            self._safe("waiting", self._note_waiting)
        if self.boxes_shown:
            self._safe("boxes", self._show_boxes)
        snap = raw = self.snap
        if snap is None:
            return
        if self.metric != LATENCY:  # M: the latency widgets show the chosen metric
            snap = metric_view(snap, self.metric)
        assert self.scenario is not None
        # only what can be seen is drawn: the header and alerts always, a tab's widgets
        # when it is the active tab (switching tabs redraws at once), and every widget
        # repaints only when its content changed
        tab = self.query_one(TabbedContent).active or "live"  # "" before the first layout
        self._safe("status", lambda: self.query_one(StatusLine).show(
            snap, self.phase_s, self.replay_source, self.paused,
            metric=None if self.metric == LATENCY else self.metric + (
                " (the SLO's)" if judges(self.scenario, self.metric) else "")))
        self._safe("alerts", lambda: self.query_one(AlertBar).show(snap))
        if tab == "live" and (force_table or force_charts):
            self._safe("table", lambda: self.query_one(WorkloadTable).show(
                snap, self.query_one(LatencyChart).gpu))
            self._safe("gpu", lambda: self.query_one(GpuPanel).show(snap))
            self._safe("lane", lambda: self.query_one(LaneStrip).show(
                snap, self.query_one(LatencyChart).gpu))
            self._safe("kernels", lambda: self.query_one(KernelLane).show(snap))
        elif tab == "compare":
            self._safe("compare", lambda: self.query_one(CompareTable).show(snap))
            self._safe("calibration", lambda: self.query_one(CalibrationPanel).show(snap))
            self._safe("answer", lambda: self.query_one(AnswerPanel).show(snap))
        elif (mode := registry.find(tab)) is not None and mode.tab is not None:
            runner = self.ctl.runner
            reason = runner.can_run(tab) if runner else None
            panel: Any = self.query_one(f"#{tab}-panel")
            self._safe(tab, lambda: panel.show(snap, reason))
        if force_charts and not self.paused and tab == "live":
            sig = _chart_signature(snap)
            if sig != self._chart_sig:  # new per-second rows or samples since the last draw
                last = self._chart_sig
                slow_due = not isinstance(last, tuple) or sig[0] != last[0] or \
                    self._tick % (2 * CHART_EVERY) == 0
                self._chart_sig = sig
                for cls in (LatencyChart, ThroughputChart, CdfChart, UtilChart):
                    if cls.__name__ in SLOW_CHARTS and not slow_due:
                        continue
                    chart: Any = self.query_one(cls)
                    # throughput and utilization are the same whatever metric M shows
                    src = snap if cls in (LatencyChart, CdfChart) else raw
                    self._safe(cls.__name__, lambda chart=chart, src=src: chart.show(src))

    def _note_waiting(self) -> None:
        """Over a fleet: in every chart, a line for each box whose phase runs, until its
        numbers arrive (alone, without axes, while no phase has ended)."""
        assert self.fleet is not None
        lines = waiting_lines(self.fleet.views()) if self.fleet.outcome is None else []
        for cls in (LatencyChart, ThroughputChart, CdfChart, UtilChart):
            chart: Any = self.query_one(cls)
            chart.note(lines)

    def _show_boxes(self) -> None:
        """Each box as a group of GPUs: live over a fleet, as recorded in a replay."""
        phases = list(self.fleet.fleet.finished) if self.fleet is not None and \
            self.fleet.outcome is None else list(self.snap.phases) if self.snap else []
        views = self.fleet.views() if self.fleet is not None else box_views(phases)
        self.query_one(BoxesPanel).show(views, phases)

    def _safe(self, name: str, fn: Any) -> None:
        """A failing widget is reported once and never takes the app down."""
        try:
            fn()
        except Exception as e:
            if name not in self._widget_errors:
                self._widget_errors.add(name)
                self.notify(f"{name}: {type(e).__name__}: {e}", title="Widget error",
                            severity="error", markup=False)
                self._write_log("xwatch", "error", f"widget {name}: {e!r}")

    def _write_log(self, source: str, stream: str, text: str) -> None:
        with contextlib.suppress(Exception):
            t = Text(f"{source:>8} ", style="bold")
            t.append(text, style=LOG_STYLES.get(stream, ""))
            self.query_one(RichLog).write(t)

    # ------------------------------------------------------------ actions
    def action_mode_on_off(self, mode: str) -> None:
        """A mode's key (``x``: XSched, ``m``: MPS): that mode on/off."""
        self.ctl.switch(mode)

    def action_restart(self) -> None:
        self.ctl.restart()

    def action_calibrate(self) -> None:
        self.ctl.calibrate()

    def action_repeat_ab(self) -> None:
        self.ctl.repeat_ab()

    def action_advise(self) -> None:
        self.ctl.advise()

    def action_capacity(self) -> None:
        self.ctl.capacity()

    async def action_export(self) -> None:
        await self.ctl.export()

    def action_control(self) -> None:
        self.ctl.control()

    async def action_quit(self) -> None:
        await self.ctl.quit()

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self.refresh_view(force_charts=True)

    def on_tabbed_content_tab_activated(self, _: TabbedContent.TabActivated) -> None:
        self._chart_sig = None  # hidden charts were not kept up to date
        self.call_after_refresh(self.refresh_view, True)

    def action_chart_gpu(self) -> None:
        """Multi-GPU runs: the charts show the roll-up over every GPU, then each GPU
        in turn (its group in the table expanded and scrolled to)."""
        gpus = list(self.scenario.gpus) if self.scenario else []
        if not gpus:
            self.notify("one GPU: run with --gpus 0,1 to chart GPUs separately", timeout=4)
            return
        chart = self.query_one(LatencyChart)
        order: list[int | None] = [None, *gpus]
        chart.gpu = order[(order.index(chart.gpu) + 1) % len(order)]
        for other in (ThroughputChart, CdfChart, UtilChart):
            widget: Any = self.query_one(other)
            widget.gpu = chart.gpu
        self._chart_sig = None
        self.refresh_view(force_charts=True)

    def action_fold_gpus(self) -> None:
        """Multi-GPU runs: expand every GPU's copies in the table, or fold them to one
        line per GPU."""
        table = self.query_one(WorkloadTable)
        if not (self.scenario and len(self.scenario.gpus) > 1):
            self.notify("one GPU: the table has no GPU groups to fold", timeout=4)
            return
        table.fold = not table.folded
        self.refresh_view()

    def action_capture(self) -> None:
        """Record 2 s of GPU kernel activity in every built-in workload (torch.profiler)."""
        if self.ctl.not_live():
            return
        assert self.ctl.runner is not None
        cap = self.ctl.runner.request_capture(2.0)
        if cap is None:
            self.notify("no running built-in workload can record kernels (a phase must be "
                        "running; command workloads cannot)", title="Kernel capture",
                        severity="warning", timeout=6)
            return
        self.query_one(KernelLane).zoom = 0
        self.notify(f"kernel capture {cap.id}: {cap.seconds:g} s of "
                    f"{', '.join(cap.workloads)}; the lane appears under the charts "
                    "(its cost shows in the latency)", timeout=6)

    def action_zoom_lane(self) -> None:
        lane = self.query_one(KernelLane)
        lane.zoom = (lane.zoom + 1) % 11
        self.refresh_view(force_table=True)

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.notify("charts paused (data keeps flowing)" if self.paused else "charts resumed",
                    timeout=3)
        self.refresh_view(force_charts=not self.paused)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def on_unmount(self) -> None:
        self.ctl.kill_now()  # crash or abrupt exit: nothing may survive us


def make_app(scenario: Scenario | str | None = None, options: Options | None = None,
             replay: SessionSnapshot | None = None, replay_source: str | None = None,
             backends: Backends | None = None, fleet: FleetRun | None = None,
             **kw: Any) -> XwatchApp:
    """The one app factory (CLI and tests). ``scenario`` may be a name or path; the
    options come whole (``options``) or as their fields by name (``telemetry="off"``,
    ``autostart=False``, ``export_dir`` for ``export``, ...); the modes' backends as
    ``backends`` (``Backends.of(backend, ...)``); ``fleet``: the plan over a Ray
    cluster's boxes that the dashboard runs and shows (``ui.fleet.run``, ``run --ray``)."""
    if isinstance(scenario, str):
        scenario = load_scenario(scenario)
    if scenario is None and replay is None:
        scenario = load_scenario("demo")
    kw = {{"export_dir": "export"}.get(k, k): v for k, v in kw.items()}
    known = {f.name for f in fields(Options)}
    unknown = sorted(set(kw) - known)
    if unknown:
        raise TypeError(f"make_app: no option {', '.join(unknown)}; options: "
                        f"{', '.join(sorted(known))}")
    opts = Options(**kw) if options is None else options
    if replay is not None:  # one loaded from a file has its answer; one built may not
        from xwatch.core.analysis.answer.stored import with_answer

        replay = with_answer(replay)
    return XwatchApp(scenario, opts, backends or Backends(), replay, replay_source, fleet)


__all__ = ["XwatchApp", "make_app"]
