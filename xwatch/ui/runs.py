"""The runs the dashboard drives, as ``PhaseRuns``, a base of the app: a phase
started and watched to its planned end (``x``/``m`` switch the mode, ``r`` reruns),
calibrate's four phases (``C``), the A/B repeated with runs interleaved (``a``) and
advise's race (``A``), each on the app's event loop; ``_not_live`` refuses them in
replay and while quitting."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from textual.app import App

from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.modes.base import label as mode_label
from xwatch.core.plans.calibrate import calibrate_steps
from xwatch.core.plans.runner import MPS, NATIVE, XSCHED, Runner
from xwatch.errors import XwatchError
from xwatch.scenario import Scenario

PHASE_LOADING_S = 0.25  # a loading phase's watch looks this often (see _phase_pause)
PHASE_WATCH_S = 1.0  # a measuring phase's watch: at most this long between looks


class PhaseRuns(App[int]):
    """The phases, calibrate, A/B and advise; ``XwatchApp`` sets the attributes below."""

    scenario: Scenario | None
    session: Session | None
    runner: Runner | None
    replay: SessionSnapshot | None
    phase_s: float
    start_mode: str
    quitting: bool
    _phase_tasks: set[asyncio.Task[None]]

    if TYPE_CHECKING:
        def action_tab(self, tab: str) -> None: ...

    # ------------------------------------------------------------ phases
    def start_phase(self, mode: str) -> None:
        self._spawn(self._run_phase(mode))

    def _spawn(self, coro: Any) -> None:
        """Run a coroutine on this loop, keeping a reference until it is done."""
        task = asyncio.ensure_future(coro)
        self._phase_tasks.add(task)
        task.add_done_callback(self._phase_tasks.discard)

    async def _run_phase(self, mode: str) -> None:
        assert self.runner is not None and self.scenario is not None
        try:
            phase = await self.runner.start_phase(mode)
        except XwatchError as e:
            self.notify(str(e), title=e.title, severity="error", timeout=12, markup=False)
            return
        except Exception as e:
            self.notify(f"{type(e).__name__}: {e}", title="Phase failed to start",
                        severity="error", timeout=12)
            return
        await self._watch_phase(phase)

    async def _watch_phase(self, phase: Phase, duration_s: float | None = None) -> None:
        assert self.runner is not None and self.scenario is not None
        duration = self.phase_s if duration_s is None else duration_s
        planned = False
        exits: asyncio.Future[None] | None = None  # every workload exited (stopped too)
        try:
            while self.runner.phase is phase and phase.t_end is None:
                exits = await self._phase_pause(phase, duration, exits)
                if self.runner.all_exited():
                    break
                if self.runner.planned_end_reached(duration):
                    planned = phase.t_measure is not None
                    break
        finally:
            if exits is not None and not exits.cancel() and not exits.cancelled():
                exits.exception()  # retrieved: never logged as "never retrieved"
        if phase.t_end is not None and phase.status == "failed" and phase.error:
            self.notify(str(phase.error), title=f"Phase {phase.name} failed",
                        severity="error", timeout=15, markup=False)
        if self.runner.phase is phase and phase.t_end is None:
            await self.runner.stop_phase(planned_end=planned, phase=phase)
            self.notify(f"phase {phase.name} {phase.status}: x = XSched on/off, m = MPS "
                        "on/off, r = rerun, s = snapshot", title="Phase complete", timeout=10)

    async def _phase_pause(self, phase: Phase, duration: float,
                           exits: asyncio.Future[None] | None) -> asyncio.Future[None] | None:
        """Until the phase's watch must look again: a quarter second while it loads
        (its workloads' "ready" may come at any time, and the start-up time limit
        counts); once measuring, until the planned end exactly, the last workload's
        exit (a stop, a failure, a new phase: all of them stop the workloads), or
        ``PHASE_WATCH_S`` at most. Polling at 4 Hz cost more than the 1 Hz tick."""
        assert self.runner is not None
        if phase.t_measure is None:
            await asyncio.sleep(PHASE_LOADING_S)
            return exits
        if exits is None:
            exits = asyncio.ensure_future(self.runner.supervisor.wait_all())
        if exits.done():  # every process ended, their states not all final yet
            await asyncio.sleep(PHASE_LOADING_S)
            return exits
        left = phase.t_measure + duration - time.monotonic()
        await asyncio.wait((exits,), timeout=max(0.0, min(left, PHASE_WATCH_S)))
        return exits

    def action_toggle_mode(self) -> None:
        """``x``: XSched on/off."""
        self._switch(XSCHED)

    def action_toggle_mps(self) -> None:
        """``m``: MPS on/off."""
        self._switch(MPS)

    def _switch(self, mode: str) -> None:
        if self._not_live():
            return
        assert self.runner is not None
        cur = self.runner.phase.mode if self.runner.phase else NATIVE
        new = NATIVE if cur == mode else mode
        reason = self.runner.can_run(new)
        if reason:
            self.notify(reason, title=f"{mode_label(new)} not available", severity="warning",
                        timeout=10, markup=False)
            return
        self.notify(f"restarting every workload in {new.upper()} mode", timeout=4)
        self.start_phase(new)

    def action_restart(self) -> None:
        if self._not_live():
            return
        assert self.runner is not None
        mode = self.runner.phase.mode if self.runner.phase else self.start_mode
        self.notify(f"restarting every workload ({mode})", timeout=4)
        self.start_phase(mode)

    def action_calibrate(self) -> None:
        """HIGH alone native, alone XSched, together native, together XSched (one after
        the other, each the scenario's duration); the Compare tab shows the split."""
        if self._not_live():
            return
        assert self.runner is not None and self.scenario is not None
        reason = self.runner.can_run(XSCHED)
        if reason:
            self.notify(reason, title="Calibrate needs XSched", severity="warning",
                        timeout=10, markup=False)
            return
        try:
            steps = calibrate_steps(self.scenario)
        except XwatchError as e:
            self.notify(str(e), title=e.title, severity="warning", markup=False)
            return
        self.notify(f"calibrate: 4 phases of {self.scenario.duration_s:g} s; the Compare tab "
                    "shows the split", timeout=6)
        self._spawn(self._calibrate(steps))

    async def _calibrate(self, steps: list[Any]) -> None:
        assert self.runner is not None
        for step in steps:
            try:
                phase = await self.runner.start_phase(step.mode, step.only, step.role)
            except XwatchError as e:
                failed = self.runner.phase
                if failed is not None:
                    failed.calibrate = step.role
                self.notify(str(e), title=e.title, severity="error", timeout=10, markup=False)
                continue
            phase.calibrate = step.role
            await self._watch_phase(phase, self.scenario.duration_s)  # type: ignore[union-attr]
            if self.runner.phase is not phase:  # the user started something else
                return
        self.action_tab("compare")

    def action_repeat_ab(self, rounds: int = 3) -> None:
        """``a``: the last two modes run (the last A/B), ``rounds`` more times each,
        interleaved A B A B, so the Compare tab's answer has intervals over runs."""
        if self._not_live():
            return
        assert self.session is not None
        modes: list[str] = []
        for p in reversed(self.session.phases):
            if p.mode not in modes and not p.calibrate:
                modes.append(p.mode)
            if len(modes) == 2:
                break
        if len(modes) < 2:
            self.notify("no A/B yet: run a second mode first (x, m), then a repeats the pair",
                        title="Nothing to repeat", severity="warning", timeout=8)
            return
        b, a = modes
        self.notify(f"A/B: {mode_label(a)} and {mode_label(b)}, {rounds} more runs each, "
                    f"interleaved ({2 * rounds} phases of {self.phase_s:g} s)", timeout=8)
        self._spawn(self._repeat_ab([a, b] * rounds))

    async def _repeat_ab(self, modes: list[str]) -> None:
        assert self.runner is not None
        for mode in modes:
            try:
                phase = await self.runner.start_phase(mode)
            except XwatchError as e:
                self.notify(str(e), title=e.title, severity="error", timeout=10, markup=False)
                continue
            await self._watch_phase(phase)
            if self.runner.phase is not phase:  # the user started something else
                return
        self.action_tab("compare")

    def action_advise(self) -> None:
        """``A``: race native and the mechanisms configured here (MPS, XSched) to the
        cheapest setting that meets the scenario's SLO with confidence, phase after
        phase (20-minute budget); the Compare tab shows the race and its answer. With
        ``--gpus``, each round spreads its candidates over those GPUs (``plans.box``)."""
        if self._not_live():
            return
        from xwatch.core.plans.advise import DEFAULT_BUDGET_MIN, make_race, objective

        assert self.runner is not None and self.scenario is not None
        runner, session = self.runner, self.session
        assert session is not None
        skipped = {m: why for m in (MPS, XSCHED) if (why := runner.can_run(m))}
        modes = [NATIVE] + [m for m in (MPS, XSCHED) if m not in skipped]
        try:
            rc = make_race(self.scenario, objective(self.scenario, None), modes, [],
                           runner.backends.get(XSCHED), runner.backends.get(MPS),
                           DEFAULT_BUDGET_MIN, 0, skipped,
                           say=lambda text: session.log("xwatch", "info", text))
        except XwatchError as e:
            self.notify(str(e), title=e.title, severity="warning", timeout=10, markup=False)
            return
        self.notify(f"advise: {len(rc.cands)} candidates ({', '.join(modes)}), rounds of "
                    f"{self.phase_s:g} s phases, budget {DEFAULT_BUDGET_MIN:g} min; the "
                    "Compare tab shows the race", timeout=8)
        self._spawn(self._advise(rc))

    async def _advise(self, rc: Any) -> None:
        assert self.runner is not None and self.session is not None
        runner, session = self.runner, self.session
        saved = dict(runner.backends)  # each candidate brings its own backend
        try:
            while order := rc.round():
                for placed, step in order:  # on --gpus: candidates spread over the GPUs
                    if step.backend is not None:
                        runner.backends[step.mode] = step.backend
                    try:
                        phase = await runner.start_phase(step.mode, step.only)
                    except XwatchError as e:
                        self.notify(str(e), title=e.title, severity="error", timeout=8,
                                    markup=False)
                        failed = session.current
                        rc.record(placed, failed.snapshot(time.monotonic())
                                  if failed is not None and failed.mode == step.mode
                                  and failed.status == "failed" else None)
                        continue
                    phase.candidate = step.label
                    phase.setting_values = {wl: dict(kv) for wl, kv in
                                            (step.setting or {}).items()}
                    phase.step, phase.repeat = step.key, rc.rounds
                    await self._watch_phase(phase)
                    if runner.phase is not phase:  # the user started something else
                        session.advice = rc.advice()
                        return
                    rc.record(placed, phase.snapshot(time.monotonic()))
                    session.advice = rc.advice(final=False)
                if not rc.after_round():
                    break
            session.advice = rc.advice()
            self.action_tab("compare")
        finally:
            runner.backends.update(saved)

    def _not_live(self) -> bool:
        if self.replay is not None:
            self.notify("replay: nothing runs here (start `xwatch run` for live workloads)",
                        severity="warning")
            return True
        return self.quitting
