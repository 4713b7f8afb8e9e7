"""Phase control shared by the headless CLI and the dashboard.

The runner owns the order of things for one phase: prepare the mode (XSched:
start xserver, build its environment), start the workloads, decide when the
phase has reached its planned end, stop everything, and tear the mode down.
It never prints and never touches the UI; callers read ``session.snapshot()``.

While a phase runs, a watchdog (every ``WATCH_S``) marks stalled workloads and
asks the mode backend whether it is still healthy: a dead xserver fails the
phase at once, with the reason, and stops its workloads (they cannot recover
without a scheduler).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Protocol

from xwatch.core.engine.launch import build_launch
from xwatch.core.engine.session import Phase, Session
from xwatch.core.engine.supervisor import Supervisor
from xwatch.core.engine.worker.trace import TRACE_DIR_ENV
from xwatch.errors import XschedError
from xwatch.scenario import Scenario

NATIVE, XSCHED = "native", "xsched"
MODES = (NATIVE, XSCHED)
WATCH_S = 0.25


class ModeBackend(Protocol):
    """What a non-native mode (XSched) provides to the runner."""

    async def enter(self, phase: Phase) -> dict[str, dict[str, str]]:
        """Prepare the mode; return extra environment per workload name."""

    async def leave(self, phase: Phase) -> None:
        """Undo ``enter`` (stop daemons); must be safe to call twice."""

    def kill_now(self) -> None:
        """Synchronous emergency stop."""

    def failure(self) -> str | None:
        """Why the mode can no longer run this phase (xserver died), else None."""


class Runner:
    """Starts and stops phases of a scenario's workload set."""

    def __init__(self, scenario: Scenario, session: Session | None = None,
                 xsched: ModeBackend | None = None, startup_timeout_s: float = 600.0) -> None:
        self.scenario = scenario
        self.session = session or Session(scenario)
        self.supervisor = Supervisor()
        self.xsched = xsched
        self.startup_timeout_s = startup_timeout_s
        self.phase: Phase | None = None
        self._backend: ModeBackend | None = None
        self._lock = asyncio.Lock()
        self._watchdog: asyncio.Task[None] | None = None
        self._failing: asyncio.Task[None] | None = None

    def can_run(self, mode: str) -> str | None:
        """None if ``mode`` can start, else the reason it cannot."""
        if mode == XSCHED and self.xsched is None:
            return ("XSched mode needs an XSched install: pass --xsched ROOT, set XSCHED_HOME, "
                    "or set [xsched] root in the scenario")
        return None

    async def start_phase(self, mode: str, only: tuple[str, ...] | None = None,
                          prefix: str | None = None) -> Phase:
        """Start every workload (or those named in ``only``) in ``mode``."""
        async with self._lock:
            if self.phase is not None and self.phase.t_end is None:
                await self._stop_locked(planned_end=False)
            reason = self.can_run(mode)
            if reason:
                raise XschedError(reason, title="XSched not configured")
            phase = self.session.new_phase(mode, only, prefix)
            self.phase = phase
            mode_env: dict[str, dict[str, str]] = {}
            if mode == XSCHED:
                assert self.xsched is not None
                self._backend = self.xsched
                try:
                    mode_env = await self.xsched.enter(phase)
                except Exception as e:
                    await self.xsched.leave(phase)
                    self._backend = None
                    self.session.log("xwatch", "error", f"XSched mode failed to start: {e}")
                    phase.extra["error"] = str(e)
                    phase.finish("failed")
                    raise
            trace = {TRACE_DIR_ENV: self.session.trace_dir}  # built-in workers: captures
            specs = [build_launch(w, {**(mode_env.get(w.name) or {}),
                                      **(trace if w.model is not None else {})})
                     for w in self.scenario.workloads if w.name in phase.runs]
            await self.supervisor.start(phase, specs)
            self._watchdog = asyncio.create_task(self._watch(phase))
            return phase

    async def _watch(self, phase: Phase) -> None:
        """Stalls and backend health, until the phase ends."""
        while phase.t_end is None and phase.t_stop is None:
            await asyncio.sleep(WATCH_S)
            now = time.monotonic()
            phase.check_stalls(now)
            backend = self._backend
            reason = backend.failure() if backend is not None else None
            if reason and phase.t_stop is None:
                phase.extra["error"] = reason
                phase.extra.setdefault("annotations", []).append(
                    {"t": round(now - phase.t_start, 3), "text": reason, "kind": "failure"})
                self.session.log("xwatch", "error", f"phase {phase.name} failed: {reason}; "
                                 "stopping its workloads")
                self._failing = asyncio.create_task(
                    self.stop_phase(planned_end=False, phase=phase))
                return

    def request_capture(self, seconds: float) -> dict[str, Any] | None:
        """Ask the running phase's built-in workers for ``seconds`` of kernel activity."""
        p = self.phase
        if p is None or p.t_end is not None or p.t_stop is not None:
            return None
        return p.request_capture(seconds, self.session.trace_dir)

    def planned_end_reached(self, duration_s: float, now: float | None = None) -> bool:
        p = self.phase
        if p is None:
            return True
        now = time.monotonic() if now is None else now
        if p.t_measure is not None:
            return now - p.t_measure >= duration_s
        return now - p.t_start >= self.startup_timeout_s

    def all_exited(self) -> bool:
        return self.supervisor.all_exited()

    async def stop_phase(self, planned_end: bool = False, phase: Phase | None = None) -> None:
        """Stop the current phase (only if it is still ``phase``, when given)."""
        async with self._lock:
            if phase is not None and phase is not self.phase:
                return
            await self._stop_locked(planned_end)

    async def _stop_locked(self, planned_end: bool) -> None:
        p = self.phase
        if p is None:
            return
        p.stop_measuring()
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None and watchdog is not asyncio.current_task():
            watchdog.cancel()
        await self.supervisor.stop(planned_end=planned_end)
        if self._backend is not None:
            await self._backend.leave(p)
            self._backend = None
        if p.t_end is None:
            p.finish()

    async def run_phase(self, mode: str, duration_s: float, tick_s: float = 1.0,
                        on_tick: object = None, stop: asyncio.Event | None = None,
                        only: tuple[str, ...] | None = None, prefix: str | None = None
                        ) -> Phase:
        """Run one phase to its planned end (or until every workload exited,
        or ``stop`` is set). ``on_tick(phase)`` is called every ``tick_s``."""
        phase = await self.start_phase(mode, only, prefix)
        stop = stop or asyncio.Event()
        planned = False
        try:
            while True:
                wait = tick_s
                if phase.t_measure is not None:  # wake exactly at the planned end
                    left = phase.t_measure + duration_s - time.monotonic()
                    wait = max(0.0, min(tick_s, left))
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=wait)
                if callable(on_tick):
                    on_tick(phase)
                if stop.is_set() or phase.t_stop is not None:
                    break
                if self.all_exited():
                    break
                if self.planned_end_reached(duration_s):
                    planned = phase.t_measure is not None
                    if not planned:
                        self.session.log("xwatch", "error",
                                         f"no workload became ready within "
                                         f"{self.startup_timeout_s:.0f} s")
                    break
        finally:
            await self.stop_phase(planned_end=planned)
        return phase

    def kill_now(self) -> None:
        self.supervisor.kill_now()
        if self._backend is not None:
            self._backend.kill_now()
