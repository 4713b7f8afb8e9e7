"""The dashboard's session controller: what the keys do to the live session, through
the plan driver it holds (``plans.driver``: the runner, and the session's host,
``core.host``: the session, telemetry, noise floors, signals, the answer, the export
and the kept session, as headless plans have them). It starts the session, runs what
the keys ask, each phase one ``Driver.step`` (started, watched to its end by the
runner as headless phases are: ``x``/``m`` switching the mode, ``r`` rerunning,
calibrate's four phases ``C``, the A/B repeated ``a``, advise's race ``A``), exports (``s``),
controls XSched and MPS live (``k``) and quits (``q``, ctrl+c, SIGTERM/SIGHUP: every
workload stopped, telemetry stopped, the session kept). It tells the app what to show
by notifications and by messages (``PlanSaid``, ``ShowTab``), as harlequin's workers
post theirs."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any

from textual.app import App
from textual.message import Message

from xwatch.core import model as M
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import PhaseSnapshot
from xwatch.core.modes import registry
from xwatch.core.modes.base import NATIVE, ModeBackend
from xwatch.core.modes.base import label as mode_label
from xwatch.core.modes.contract import Control
from xwatch.core.plans.calibrate import CALIBRATED, calibrate_steps
from xwatch.core.plans.driver import STOPPED, Driver, Race, Step, Stopped
from xwatch.core.plans.options import DEFAULT_BUDGET_MIN
from xwatch.core.plans.runner import OWN_ENDINGS, REFUSED, Ending, Runner
from xwatch.errors import XwatchError


class PlanSaid(Message):
    """A line of the plan's story (the race's rounds and standings): the Logs tab."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ShowTab(Message):
    """A run ended whose answer a tab shows (``compare``)."""

    def __init__(self, tab: str) -> None:
        super().__init__()
        self.tab = tab


class DashboardObserver:
    """The driver's observer in the dashboard: what the plan says is posted to the app
    as a message, a phase's end and a mode that would not start are notifications;
    no ticks (the app redraws from its own 1 Hz tick)."""

    ticks = False

    def __init__(self, app: App[int]) -> None:
        self.app = app

    def say(self, text: str) -> None:
        self.app.post_message(PlanSaid(text))

    def warn(self, text: str) -> None:
        self.app.notify(text, severity="error", markup=False)

    def tick(self, phase: PhaseSnapshot) -> None:
        pass

    def refused(self, err: XwatchError) -> None:
        self.app.notify(str(err), title=err.title, severity="error", timeout=12,
                        markup=False)

    def phase_ended(self, phase: PhaseSnapshot, telemetry: M.Telemetry | None,
                    ending: Ending) -> None:
        """Its own end (planned, every workload exited): what the keys do next; stopped
        or replaced, and failed: why it failed (a mode that would not start was told
        by ``refused``)."""
        if ending == REFUSED:
            return
        if ending in OWN_ENDINGS:
            keys = ", ".join(f"{m.key} = {m.label} on/off" for m in registry.modes() if m.key)
            self.app.notify(f"phase {phase.name} {phase.status}: {keys}, r = rerun, s = "
                            "snapshot", title="Phase complete", timeout=10)
        elif phase.status == "failed" and phase.error:
            self.app.notify(str(phase.error), title=f"Phase {phase.name} failed",
                            severity="error", timeout=15, markup=False)


class SessionController:
    """The live session of one dashboard (see the module); ``driver`` is None in replay."""

    def __init__(self, app: App[int], driver: Driver | None,
                 replay_source: str | None = None) -> None:
        self.app = app
        self.driver = driver
        self.replay_source = replay_source
        self.quitting = False
        self.hangup = False
        self.last_export: Path | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def session(self) -> Session | None:
        return self.driver.session if self.driver is not None else None

    @property
    def runner(self) -> Runner | None:
        return self.driver.runner if self.driver is not None else None

    @property
    def phase_s(self) -> float:
        """Planned measured seconds of a phase (inf: until stopped, ``--duration 0``)."""
        assert self.driver is not None
        return self.driver.opts.phase_s(self.driver.scen)

    # ------------------------------------------------------------ start-up
    def start(self) -> None:
        """The session: kept (unless --no-keep), its runner, the signals, the telemetry
        (in a thread) and the first phase (unless ``autostart`` is off)."""
        assert self.driver is not None
        app, driver = self.app, self.driver
        driver.host.catch_signals(self._on_signal)
        driver.live_answer = True  # the Compare tab's answer, settled as each phase ends
        if driver.opts.keep:
            from xwatch.core.export import sessions

            try:
                driver.host.begin_keeping(sys.argv[:])
            except OSError as e:
                app.notify(f"sessions folder not writable ({e}): this session will not be "
                           "kept; press s to snapshot", title="Session not kept",
                           severity="warning", timeout=15, markup=False)
            lost = [e for e in sessions.listing(driver.opts.sessions_dir)
                    if e.state == "interrupted"]
            if lost:
                app.notify(f"{len(lost)} interrupted session(s) found (xwatch was killed): "
                           f"`xwatch sessions --recover {len(lost) and 'all'}` rebuilds them "
                           "from their events", title="Interrupted session", timeout=20,
                           markup=False)
        driver.open()
        app.run_worker(self._start_telemetry, thread=True, exit_on_error=False,
                       group="telemetry", description="starting telemetry")

    def autostart(self) -> None:
        assert self.driver is not None
        if self.driver.opts.autostart:
            self.start_phase(self.driver.opts.mode)

    def _start_telemetry(self) -> None:
        """The sampler, then this machine's recorded noise floors for the scenario (every
        mode): one-run comparisons in the Compare tab are judged against them."""
        assert self.driver is not None and self.driver.session is not None
        host = self.driver.host
        host.start_telemetry()
        found = host.load_floors(registry.names())
        if found:
            self.driver.session.log("xwatch", "info", "noise floors: " + "; ".join(
                f.describe() for f in found.values()))

    def _on_signal(self, sig: int) -> None:
        if sig == signal.SIGHUP:
            # the terminal is gone: stop everything, then leave without trying to
            # restore a screen nobody can see (writes to a dead tty would block)
            self.hangup = True
        self.spawn(self.quit())

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run a coroutine on this loop, keeping a reference until it is done."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def not_live(self) -> bool:
        """True (and said) in replay, and while quitting: nothing may start."""
        if self.driver is None:
            self.app.notify("replay: nothing runs here (start `xwatch run` for live "
                            "workloads)", severity="warning")
            return True
        return self.quitting

    # ------------------------------------------------------------ phases
    def start_phase(self, mode: str) -> None:
        self.spawn(self._run_phase(mode))

    async def _run_phase(self, mode: str) -> None:
        """One phase in ``mode``, through the driver to its end (``Driver.step``)."""
        assert self.driver is not None
        try:
            await self.driver.step(Step(mode))
        except Exception as e:  # a mode that would not start is the observer's
            self.app.notify(f"{type(e).__name__}: {e}", title="Phase failed to start",
                            severity="error", timeout=12)

    def switch(self, mode: str) -> None:
        """``x``/``m``: ``mode`` on, or back to native."""
        if self.not_live():
            return
        assert self.runner is not None
        cur = self.runner.phase.mode if self.runner.phase else NATIVE
        new = NATIVE if cur == mode else mode
        reason = self.runner.can_run(new)
        if reason:
            self.app.notify(reason, title=f"{mode_label(new)} not available",
                            severity="warning", timeout=10, markup=False)
            return
        self.app.notify(f"restarting every workload in {new.upper()} mode", timeout=4)
        self.start_phase(new)

    def restart(self) -> None:
        if self.not_live():
            return
        assert self.runner is not None and self.driver is not None
        mode = self.runner.phase.mode if self.runner.phase else self.driver.opts.mode
        self.app.notify(f"restarting every workload ({mode})", timeout=4)
        self.start_phase(mode)

    def calibrate(self) -> None:
        """HIGH alone native, alone XSched, together native, together XSched (one after
        the other, each the scenario's duration); the Compare tab shows the split."""
        if self.not_live():
            return
        assert self.runner is not None and self.driver is not None
        scen = self.driver.scen
        reason = self.runner.can_run(CALIBRATED)
        if reason:
            self.app.notify(reason, title=f"Calibrate needs {mode_label(CALIBRATED)}",
                            severity="warning", timeout=10, markup=False)
            return
        try:
            steps = calibrate_steps(scen)
        except XwatchError as e:
            self.app.notify(str(e), title=e.title, severity="warning", markup=False)
            return
        self.app.notify(f"calibrate: 4 phases of {scen.duration_s:g} s; the Compare tab "
                        "shows the split", timeout=6)
        self.spawn(self._calibrate(steps))

    async def _calibrate(self, steps: list[Step]) -> None:
        assert self.driver is not None
        for step in steps:
            if await self.driver.step(step, duration_s=self.driver.scen.duration_s) \
                    is STOPPED:  # the user started something else
                return
        self.app.post_message(ShowTab("compare"))

    def repeat_ab(self, rounds: int = 3) -> None:
        """``a``: the last two modes run (the last A/B), ``rounds`` more times each,
        interleaved A B A B, so the Compare tab's answer has intervals over runs."""
        if self.not_live():
            return
        assert self.session is not None
        modes: list[str] = []
        for p in reversed(self.session.phases):
            if p.mode not in modes and not p.calibrate:
                modes.append(p.mode)
            if len(modes) == 2:
                break
        if len(modes) < 2:
            self.app.notify("no A/B yet: run a second mode first (x, m), then a repeats the "
                            "pair", title="Nothing to repeat", severity="warning", timeout=8)
            return
        b, a = modes
        self.app.notify(f"A/B: {mode_label(a)} and {mode_label(b)}, {rounds} more runs each, "
                        f"interleaved ({2 * rounds} phases of {self.phase_s:g} s)", timeout=8)
        self.spawn(self._repeat_ab([a, b] * rounds))

    async def _repeat_ab(self, modes: list[str]) -> None:
        assert self.driver is not None
        for mode in modes:
            if await self.driver.step(Step(mode)) is STOPPED:  # the user started another
                return
        self.app.post_message(ShowTab("compare"))

    def advise(self) -> None:
        """``A``: race native and the mechanisms configured here (MPS, XSched) to the
        cheapest setting that meets the scenario's SLO with confidence, phase after
        phase (20-minute budget); the Compare tab shows the race and its answer. With
        ``--gpus``, each round spreads its candidates over those GPUs (``plans.box``)."""
        if self.not_live():
            return
        from xwatch.core.plans.advise import make_race, objective, race_modes

        assert self.runner is not None and self.driver is not None
        runner, scen, driver = self.runner, self.driver.scen, self.driver
        skipped = {m: why for m in race_modes()[1:] if (why := runner.can_run(m))}
        modes = [m for m in race_modes() if m not in skipped]
        try:
            rc = make_race(scen, objective(scen, None), modes, [], runner.configured(),
                           DEFAULT_BUDGET_MIN, 0, skipped, say=driver.observer.say)
        except XwatchError as e:
            self.app.notify(str(e), title=e.title, severity="warning", timeout=10,
                            markup=False)
            return
        self.app.notify(f"advise: {len(rc.cands)} candidates ({', '.join(modes)}), rounds "
                        f"of {self.phase_s:g} s phases, budget {DEFAULT_BUDGET_MIN:g} min; "
                        "the Compare tab shows the race", timeout=8)
        def settle(session: Session) -> None:
            session.advice = rc.advice()

        self.spawn(self._race(rc, settle))

    def capacity(self) -> None:
        """``K``: search, for native and the mechanisms configured here, the highest load
        of the SLO workload that meets the scenario's SLO with confidence beside the
        lower-priority work, and the SLO workload and the rest alone (20-minute budget);
        the Compare tab shows the progress and the answer."""
        if self.not_live():
            return
        from xwatch.core.plans.advise import race_modes
        from xwatch.core.plans.capacity import make_run
        from xwatch.core.plans.options import Options

        assert self.runner is not None and self.driver is not None
        runner, scen, driver = self.runner, self.driver.scen, self.driver
        skipped = {m: why for m in race_modes()[1:] if (why := runner.can_run(m))}
        modes = [m for m in race_modes() if m not in skipped]
        try:
            cr = make_run(scen, Options(budget_min=DEFAULT_BUDGET_MIN), modes, skipped,
                          runner.configured(), say=driver.observer.say)
        except XwatchError as e:
            self.app.notify(str(e), title=e.title, severity="warning", timeout=10,
                            markup=False)
            return
        self.app.notify(f"capacity: {len(cr.hunt.searches)} searches ({', '.join(modes)}), "
                        f"{cr.obj.workload} from {cr.lo:g} to {cr.hi:g} req/s, budget "
                        f"{DEFAULT_BUDGET_MIN:g} min; the Compare tab shows the progress",
                        timeout=8)
        def settle(session: Session) -> None:
            session.capacity = cr.record_of()

        self.spawn(self._race(cr, settle))

    async def _race(self, rc: Race, settle: Callable[[Session], None]) -> None:
        """Run a race (advise's, capacity's) round by round, its live record kept up to
        date by the driver; ``settle`` writes its final record on the session."""
        assert self.driver is not None and self.session is not None
        driver, session = self.driver, self.session

        async def run(rnd: int, step: Step) -> Phase | Stopped | None:
            return await driver.step(step, rnd)

        finished = await driver.race(rc, run, live=True)
        settle(session)
        if finished:
            self.app.post_message(ShowTab("compare"))

    # ------------------------------------------------------------ the session
    async def export(self) -> None:
        """``s``: the snapshot taken now (its answer as it stands), written with its
        reports in a thread (``SessionHost.prepared``, ``write``)."""
        session, driver = self.session, self.driver
        if session is None or driver is None:
            if self.replay_source:
                self.app.notify(f"replay: the snapshot is already on disk "
                                f"({self.replay_source})")
            return
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        target = Path(driver.opts.export or ".") / f"xwatch-{driver.scen.name}-{stamp}"
        prep = driver.host.prepared()
        self.app.notify(f"writing snapshot to {target} …", timeout=3)
        self.app.run_worker(lambda: self._write_export(prep, target), thread=True,
                            exit_on_error=False, group="export", description="export")

    def _write_export(self, prep: Any, target: Path) -> None:
        assert self.driver is not None
        try:
            path = self.driver.host.write(prep, target)
        except Exception as e:
            self.app.call_from_thread(self.app.notify, f"{type(e).__name__}: {e}",
                                      title="Snapshot not written", severity="error",
                                      markup=False)
            return
        self.last_export = path
        self.app.call_from_thread(self.app.notify,
                                  f"{path}\n(+ events.csv.gz, report.md, report.html)",
                                  title="Snapshot written", timeout=10, markup=False)

    def control(self) -> None:
        """``k``: live control of the running phase's mode (XSched's, MPS's), in its
        control screen."""
        if self.not_live():
            return
        assert self.runner is not None and self.driver is not None
        phase = self.runner.phase
        names = [w.name for w in self.driver.scen.workloads]
        live = phase is not None and phase.t_end is None
        backend = self.runner.backends.get(phase.mode) if live and phase else None
        mode = registry.find(backend.mode) if backend is not None else None
        controls = backend.controls() if backend is not None else None
        if backend is None or mode is None or mode.control_screen is None or controls is None:
            first = next(m for m in registry.modes() if m.control_screen and m.key)
            ready = self.runner.backends.get(first.name) is not None
            self.app.notify(f"live control works while an {first.label} phase runs (press "
                            f"{first.key} first)" if ready else
                            (self.runner.can_run(first.name) or ""),
                            title=f"{first.label} control", severity="warning", timeout=8,
                            markup=False)
            return
        screen = registry.load_ref(mode.control_screen)
        self.app.push_screen(screen(names, controls),
                             lambda req: self._on_control(backend, mode.label, req))

    def _on_control(self, backend: ModeBackend, title: str, req: Control | None) -> None:
        if req is not None:
            self.spawn(self._do_control(backend, title, req))

    async def _do_control(self, backend: ModeBackend, title: str, req: Control) -> None:
        try:
            self.app.notify(await backend.control(req), title=title, timeout=6)
        except XwatchError as e:
            self.app.notify(str(e), title=e.title, severity="error", timeout=12, markup=False)

    async def quit(self) -> None:
        """Stop every workload and the telemetry, keep the session, leave."""
        if self.quitting:
            return
        self.quitting = True
        driver = self.driver
        if driver is not None:
            if driver.runner is not None:
                self.app.notify("stopping workloads…", timeout=5)
            # with no planned end (--duration 0), quitting is the planned end
            phase = driver.runner.phase if driver.runner is not None else None
            planned = self.phase_s == float("inf") and phase is not None \
                and phase.t_measure is not None
            await driver.close(planned_end=planned)
        if self.hangup:
            os._exit(128 + signal.SIGHUP)
        self.app.exit(0)

    def kill_now(self) -> None:
        """A crash or an abrupt exit: nothing may survive us."""
        if self.runner is not None:
            self.runner.kill_now()
