"""Phase control shared by the headless CLI and the dashboard.

The runner owns the order of things for one phase: prepare the mode (XSched:
start xserver, build its environment), start the workloads, watch the phase to its
end (``watch``, the one phase-end loop of the headless plans and the dashboard:
its planned end, every workload exited, none ready in time, a stop, a new phase),
stop everything, and tear the mode down. It never prints and never touches the UI;
callers read ``session.snapshot()``.

A phase runs in one mode, or split (``compare --layout split``): each copy in its own
mode (``copy_modes``), on GPUs of its own. Each mode's copies then start from that
mode's scrubbed environment plus its backend's variables, each backend (one xserver,
one MPS daemon: ``modes.neighbours`` says why no more) serves only its own copies (MPS's
daemon sees only their GPUs), and each copy's isolation is proven against its own
mode: a native copy maps no shim and is no MPS client, an XSched copy is engaged, an
MPS copy is a client.

While a phase runs, a watchdog (every ``WATCH_S``) marks stalled workloads and
asks the mode backend whether it is still healthy: a dead xserver fails the
phase at once, with the reason, and stops its workloads (they cannot recover
without a scheduler).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from msgspec.structs import replace

from xwatch.core import model as M
from xwatch.core.analysis.saturation import saturation
from xwatch.core.engine.launch import build_launch
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.live.workload import WorkloadRun
from xwatch.core.engine.snapshot import ALIVE, CaptureSnapshot
from xwatch.core.engine.supervisor import Supervisor
from xwatch.core.engine.worker.trace import TRACE_DIR_ENV
from xwatch.core.modes import isolation, registry
from xwatch.core.modes.base import NATIVE, ModeBackend, label, split_name
from xwatch.errors import ModeError
from xwatch.scenario import Scenario, Workload

if TYPE_CHECKING:
    from xwatch.core.plans.options import Backends

__all__ = ["NATIVE", "ModeBackend", "Runner"]
#: why a phase's watch ended (``Runner.watch``): it stopped the phase itself at its
#: planned end, once every workload exited, or when none became ready in time; or the
#: phase was stopped (``stop``, the watchdog failing it, a quit), or replaced by another;
#: ``refused``: its mode would not start, it was never watched (``Driver.step``)
Ending = Literal["planned", "exited", "no-start", "stopped", "replaced", "refused"]
PLANNED: Ending = "planned"
EXITED: Ending = "exited"
NO_START: Ending = "no-start"
STOPPED: Ending = "stopped"
REPLACED: Ending = "replaced"
REFUSED: Ending = "refused"
#: the watch itself ended the phase (its own end, not a stop or a new phase)
OWN_ENDINGS: tuple[Ending, ...] = (PLANNED, EXITED, NO_START)
WATCH_S = 0.5
LOADING_S = 0.25  # a loading phase's watch looks this often (``Runner._pause``)
#: a watchdog tick this much later than planned means xwatch itself did not run
PAUSE_S = 1.0

class Runner:
    """Starts and stops phases of a scenario's workload set."""

    def __init__(self, scenario: Scenario, session: Session | None = None,
                 backends: Backends | None = None, startup_timeout_s: float = 600.0) -> None:
        self.scenario = scenario
        self.session = session or Session(scenario)
        self.supervisor = Supervisor()
        #: the backend of each mode configured here (absent or None: not configured)
        self.backends: dict[str, ModeBackend | None] = \
            dict(backends.configured) if backends is not None else {}
        self._unavailable = dict(backends.unavailable) if backends is not None else {}
        self.startup_timeout_s = startup_timeout_s
        self.phase: Phase | None = None
        #: the backends the running phase entered (a split phase: one per mode)
        self._entered: list[ModeBackend] = []
        self._lock = asyncio.Lock()
        self._watchdog: asyncio.Task[None] | None = None
        self._failing: asyncio.Task[None] | None = None
        #: the start of the fork server of a mode whose workloads have their own
        self._mode_warm: dict[str, asyncio.Task[None]] = {}

    def configured(self) -> Backends:
        """The backends configured here now, and why the others cannot run."""
        from xwatch.core.plans.options import Backends

        return Backends({m: b for m, b in self.backends.items() if b is not None},
                        dict(self._unavailable))

    def can_run(self, mode: str) -> str | None:
        """None if ``mode`` can start, else the reason it cannot."""
        if mode == NATIVE:
            return None
        declared = registry.find(mode)
        if declared is None:
            return f"unknown mode {mode!r}: one of {', '.join(registry.names())}"
        if declared.backend_factory is not None and self.backends.get(mode) is None:
            return self._unavailable.get(mode) or declared.unavailable
        return None

    def _own_fork_server(self, mode: str) -> ModeBackend | None:
        """``mode``'s backend where its workloads fork from a server of their own."""
        b = self.backends.get(mode)
        return b if b is not None and b.own_fork_server else None

    def _install_libs(self) -> list[str]:
        """Library folders of the configured modes (each scrubbed from the others')."""
        return [lib for b in self.backends.values() if b is not None
                for lib in b.scrubbed_libraries()]

    def _clean_bases(self, phase: Phase, modes: tuple[str, ...]) -> dict[str, dict[str, str]]:
        """Each mode's starting environment: the user's minus the other modes' traces
        (a split phase: one per mode of its copies); what was removed is recorded."""
        private = isolation.private_dir(self.session.scratch_dir)
        out: dict[str, dict[str, str]] = {}
        removed = isolation.self_cleaned(os.environ)
        for mode in modes:
            cleaned = isolation.clean_env(os.environ, mode, self._install_libs(), private)
            cleaned.env.pop(isolation.SELF_CLEANED_ENV, None)
            out[mode] = cleaned.env
            removed += [r for r in cleaned.as_record() if r not in removed]
        phase.isolation = isolation.record(phase.mode, removed, out)
        for r in removed:
            self.session.log("xwatch", "warning", f"{phase.name}: removed {r['name']} from "
                             f"the workloads' environment: {r['why']}")
        return out

    async def _enter(self, phase: Phase, modes: tuple[str, ...]) -> dict[str, dict[str, str]]:
        """Enter each non-native mode's backend; each workload's mode variables. A
        backend that fails leaves every one entered and fails the phase."""
        mode_env: dict[str, dict[str, str]] = {}
        for mode in modes:
            backend = self.backends.get(mode)
            if backend is None:
                continue
            self._entered.append(backend)
            try:
                envs = await backend.enter(phase)
            except Exception as e:
                await self._leave_all(phase)
                self.session.log("xwatch", "error", f"{label(mode)} mode failed to start: {e}")
                phase.error = str(e)
                phase.finish("failed")
                raise
            mode_env.update({k: v for k, v in envs.items() if phase.in_mode(mode, k)})
        return mode_env

    async def _leave_all(self, phase: Phase) -> None:
        entered, self._entered = self._entered, []
        for backend in entered:
            await backend.leave(phase)

    async def start_phase(self, mode: str, only: tuple[str, ...] | None = None,
                          prefix: str | None = None,
                          copy_modes: Mapping[str, str] | None = None,
                          workloads: Sequence[Workload] | None = None) -> Phase:
        """Start every workload (or those named in ``only``) in ``mode``; with
        ``copy_modes`` (a split phase) each copy in its own mode (``mode`` is then
        ignored: the phase's mode names them all, ``native+xsched``); ``workloads``:
        this phase's own (the scenario's with another rate: a capacity probe), else the
        scenario's."""
        async with self._lock:
            if self.phase is not None and self.phase.t_end is None:
                await self._stop_locked(planned_end=False)
            modes = tuple(m for m in registry.names() if m in set(copy_modes.values())) \
                if copy_modes else (mode,)
            for m in modes:
                reason = self.can_run(m)
                if reason:
                    raise ModeError(reason, title=f"{label(m)} not available")
            if copy_modes:
                mode = split_name(modes)
            phase = self.session.new_phase(mode, only, prefix, copy_modes, workloads)
            wls = self.scenario.workloads if workloads is None else tuple(workloads)
            self.phase = phase
            bases = self._clean_bases(phase, modes)
            if len(modes) > 1 or self._own_fork_server(modes[0]) is None:
                self._warm_forkserver(phase, bases.get(NATIVE) or bases[modes[0]])
            for m in modes:  # a mode's own fork server before its daemon (they overlap),
                # and its preflight's probes started as its workloads (XSched's)
                await self._warm_mode_server(phase, m, bases[m])
            mode_env = await self._enter(phase, modes)
            phase.stages["daemon"] = time.monotonic()  # MPS/XSched: the daemon answers
            if not self._entered:
                phase.stages["mode"] = phase.stages["daemon"]  # native: nothing to settle
            phase.gate_shut = bool(self._entered)  # until its preflight passed (settle)
            trace = {TRACE_DIR_ENV: self.session.trace_dir}  # built-in workers: captures
            top = max(w.priority_value for w in wls)
            specs = [build_launch(w, {**(mode_env.get(w.name) or {}),
                                      **(trace if w.model is not None else {})},
                                  base_env=bases[phase.mode_of(w.name)],
                                  top=w.priority_value == top,
                                  gate=self.scenario.start_together)
                     for w in wls if w.name in phase.runs]
            await self.supervisor.start(phase, specs)
            if self._entered:
                try:
                    for backend in self._entered:
                        await backend.settle(phase)  # the workloads load meanwhile
                except Exception as e:
                    self.session.log("xwatch", "error", f"{label(backend.mode)} mode failed "
                                     f"to start: {e}; stopping its workloads")
                    phase.error = str(e)
                    await self.supervisor.stop(planned_end=False)
                    await self._leave_all(phase)
                    phase.finish("failed")
                    raise
                phase.stages["mode"] = time.monotonic()  # the mode is settled
                phase.gate_shut = False
                phase.release_gate(phase.stages["mode"])  # those already warm were held
            self._watchdog = asyncio.create_task(self._watch(phase))
            return phase

    def _warm_forkserver(self, phase: Phase, base: dict[str, str]) -> None:
        """Start the fork server beside this phase's mode (its imports overlap the MPS
        daemon and the preflights), for the built-in workers of this and later phases;
        and, with an XSched install, XSched's own (``_warm_xsched``)."""
        models = [w.model for w in self.scenario.workloads if w.model is not None]
        first = next((w for w in self.scenario.workloads
                      if w.model is not None and w.name in phase.runs), None)
        if first is None:
            return
        log = os.path.join(self.session.scratch_dir, "forkserver.log")
        self.supervisor.warm_forkserver(
            build_launch(first, base_env=base, gate=self.scenario.start_together), models, log)
        for mode in list(self.backends):
            own = self._own_fork_server(mode)
            if own is not None and mode not in self._mode_warm:
                self._mode_warm[mode] = asyncio.create_task(
                    self._warm_own(own, first, models, log))

    async def _warm_mode_server(self, phase: Phase, mode: str, base: dict[str, str]) -> None:
        """Before a phase enters a mode whose workloads fork from a server of their own
        (XSched's): that server with the environment its workloads get (``zygote``), if
        no earlier phase started it (it needs no daemon: its imports overlap the
        daemon's start), and the backend's probes started as its workloads: the
        preflight forks them from that server, from ``base`` (issue 58 goal 4)."""
        backend = self.backends.get(mode)
        if backend is None:
            return
        backend.start_probes_as_workloads(base, self.supervisor.server_for)
        if not backend.own_fork_server:
            return
        pending = self._mode_warm.get(mode)  # started beside an earlier phase
        if pending is not None and not pending.done():
            with contextlib.suppress(Exception):
                await pending
        first = next((w for w in self.scenario.workloads
                      if w.model is not None and w.name in phase.runs
                      and phase.mode_of(w.name) == mode), None)
        if first is None:
            return
        with contextlib.suppress(Exception):
            env = await backend.fork_env(first)
            if env is not None:  # (None: HIP's preloaded shim, an old install: exec'd)
                self.supervisor.warm_forkserver(
                    build_launch(first, env, base_env=base, gate=self.scenario.start_together),
                    [w.model for w in self.scenario.workloads if w.model is not None],
                    os.path.join(self.session.scratch_dir, "forkserver.log"), wait=True)

    async def _warm_own(self, backend: ModeBackend, first: Workload, models: list[str],
                        log: str) -> None:
        """Start the fork server of a mode's phases whose workloads have their own
        (XSched's, issue 58 goal 4): the environment its workloads get (XSched: the
        shim's library folder and ``XSCHED_*``, read after the fork: ``zygote``), started
        beside the first phase so that the mode's first phase forks its copies too.
        Nothing is started where the backend cannot say it beforehand."""
        with contextlib.suppress(Exception):
            env = await backend.fork_env(first)
            if env is None:
                return
            self.supervisor.warm_forkserver(build_launch(
                first, env, base_env=self._base(backend.mode),
                gate=self.scenario.start_together),
                models, log, wait=True)

    def _base(self, mode: str) -> dict[str, str]:
        """``mode``'s starting environment before one of its phases (``_clean_bases``,
        unrecorded): what a fork server for its later phases starts from."""
        private = isolation.private_dir(self.session.scratch_dir)
        base = isolation.clean_env(os.environ, mode, self._install_libs(), private).env
        base.pop(isolation.SELF_CLEANED_ENV, None)
        return base

    async def _watch(self, phase: Phase) -> None:
        """Stalls, the isolation proof and backend health, until the phase ends."""
        proved: set[str] = set()
        last = time.monotonic()
        while phase.t_end is None and phase.t_stop is None:
            await asyncio.sleep(WATCH_S)
            now = time.monotonic()
            phase.release_gate(now)  # the start gate's time limit
            gap, last = now - last - WATCH_S, now
            if gap > PAUSE_S:  # xwatch itself was stopped (SIGSTOP) or starved
                phase.excuse_pause(gap)
                continue  # the pipes are read on this loop: judge after they were
            phase.check_stalls(now)
            reason = next((r for b in self._entered if (r := b.failure())), None)
            for run in phase.runs.values():
                if run.spec.name not in proved and run.state in ALIVE and run.pid:
                    proved.add(run.spec.name)
                    reason = self._prove(phase, run) or reason
            if reason and phase.t_stop is None:
                phase.error = reason
                phase.annotations.append(
                    M.Annotation(t=round(now - phase.t_start, 3), text=reason, kind="failure"))
                self.session.log("xwatch", "error", f"phase {phase.name} failed: {reason}; "
                                 "stopping its workloads")
                self._failing = asyncio.create_task(
                    self.stop_phase(planned_end=False, phase=phase))
                return

    def _prove(self, phase: Phase, run: WorkloadRun) -> str | None:
        """Read which scheduler libraries a running workload mapped; the reason the
        phase must fail (a shim in a native or MPS copy), else None. The copy's own
        mode's backend gets the evidence (XSched: engaged; MPS: a client)."""
        assert run.pid is not None
        mode = phase.mode_of(run.spec.name)
        libs = isolation.scheduler_libraries(run.pid, self._install_libs())
        verdict = isolation.verdict(mode, libs)
        proof = M.Proof(pid=run.pid, verdict=verdict, libraries=libs or [],
                        t=round(time.monotonic() - phase.t_start, 3))
        self._record_proof(phase, run.spec.name, proof)
        backend = next((b for b in self._entered if b.mode == mode), None)
        if backend is not None:
            backend.on_running(run, libs)
        if verdict == "unverified":
            self.session.log("xwatch", "warning", f"{run.spec.name}: could not read "
                             f"/proc/{run.pid}/maps: isolation unverified")
        if verdict != "shim-mapped" or libs is None:
            return None
        origin = isolation.shim_origin(run.pid, libs[0], run.spec.env)
        self._record_proof(phase, run.spec.name, replace(proof, origin=origin))
        text = isolation.failure_text(mode, run.spec.name, run.pid, libs, origin)
        self.session.log("xwatch", "error", text)
        return text

    @staticmethod
    def _record_proof(phase: Phase, name: str, proof: M.Proof) -> None:
        iso = phase.isolation or M.Isolation(mode=phase.mode)
        phase.isolation = replace(iso, workloads={**iso.workloads, name: proof})

    def request_capture(self, seconds: float) -> CaptureSnapshot | None:
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
        """Stop the current phase (when ``phase`` is given: only if it is still the
        current one and no one stopped it meanwhile)."""
        async with self._lock:
            if phase is not None and (phase is not self.phase or phase.t_end is not None):
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
        for backend in self._entered:  # its evidence read while the workloads still run
            await backend.last_look(p)
        await self.supervisor.stop(planned_end=planned_end)
        await self._leave_all(p)
        p.stages.setdefault("mode_left", time.monotonic())  # MPS/XSched: daemon stopped
        if p.t_end is None:
            p.finish()
        self._flag_saturation(p)

    def _flag_saturation(self, p: Phase) -> None:
        """A server that did not keep up with its offered load (``analysis.saturation``):
        an annotation of the phase and a warning, once."""
        now = time.monotonic()
        for name, r in p.runs.items():
            if r.spec.server is None or any(
                    a.kind == "saturated" and a.workload == name for a in p.annotations):
                continue
            msg = saturation(r.snapshot(now))
            if msg:
                end = p.t_stop if p.t_stop is not None else now
                p.annotations.append(M.Annotation(t=round(end - p.t_start, 3),
                                                  text=f"{name}: {msg}", kind="saturated",
                                                  workload=name))
                self.session.log("xwatch", "warning", f"{name}: {msg}")

    async def run_phase(self, mode: str, duration_s: float, tick_s: float = 1.0,
                        on_tick: Callable[[Phase], None] | None = None,
                        stop: asyncio.Event | None = None,
                        only: tuple[str, ...] | None = None, prefix: str | None = None,
                        copy_modes: Mapping[str, str] | None = None) -> Phase:
        """Start one phase (``start_phase``) and ``watch`` it to its end."""
        phase = await self.start_phase(mode, only, prefix, copy_modes)
        await self.watch(phase, duration_s, tick_s, on_tick, stop)
        return phase

    async def watch(self, phase: Phase, duration_s: float, tick_s: float = 1.0,
                    on_tick: Callable[[Phase], None] | None = None,
                    stop: asyncio.Event | None = None) -> Ending:
        """Watch a started phase to its end, and stop it: its planned end (server
        workloads drained first), every workload exited, no workload ready within
        ``startup_timeout_s``, or ``stop`` set; a phase stopped by someone else (the
        watchdog failing it, a quit) or replaced by a new phase ends the watch too.
        ``on_tick(phase)`` about every ``tick_s``, and once more at the end. Returns
        why it ended (``Ending``). The one phase-end loop of the headless plans and the
        dashboard alike."""
        stop = stop or asyncio.Event()
        planned = False
        ending: Ending = STOPPED
        ticked = time.monotonic()
        exits: asyncio.Future[None] | None = None  # every workload exited (stopped too)
        try:
            while self.phase is phase and phase.t_end is None:
                exits = await self._pause(phase, duration_s, tick_s, stop, exits)
                now = time.monotonic()
                exited = self.all_exited()
                end = self.planned_end_reached(duration_s, now)
                if on_tick is not None and (now - ticked >= tick_s - 0.05 or exited or end
                                            or phase.t_stop is not None):
                    ticked = now
                    on_tick(phase)
                if stop.is_set() or phase.t_stop is not None or self.phase is not phase:
                    break
                if exited:
                    ending = EXITED
                    break
                if end:
                    planned = phase.t_measure is not None
                    if planned:
                        ending = PLANNED
                        await self._drain(phase, stop)
                    else:
                        ending = NO_START
                        self.session.log("xwatch", "error",
                                         f"no workload became ready within "
                                         f"{self.startup_timeout_s:.0f} s")
                    break
        finally:
            if exits is not None and not exits.cancel() and not exits.cancelled():
                exits.exception()  # retrieved: never logged as "never retrieved"
            if self.phase is phase and phase.t_end is None:
                await self.stop_phase(planned_end=planned, phase=phase)
            if stop.is_set() and not planned and phase.status == "done" \
                    and duration_s < float("inf"):
                # stopped (a signal) before its planned end: not a run of its setting
                phase.status = "stopped"
                phase.cut_short = (
                    f"stopped after {phase.elapsed_s(time.monotonic()):.1f} of "
                    f"{duration_s:g} s" if phase.t_measure is not None else
                    "stopped before any workload was ready")
        return REPLACED if self.phase is not phase else ending

    async def _pause(self, phase: Phase, duration_s: float, tick_s: float,
                     stop: asyncio.Event,
                     exits: asyncio.Future[None] | None) -> asyncio.Future[None] | None:
        """Until the watch must look again: a quarter second while the phase loads (its
        workloads' "ready" may reach us up to a read pause after it was sent, and the
        start-up time limit counts); once measuring, until the planned end exactly, the
        last workload's exit (a stop, a failure, a new phase: all of them stop the
        workloads), ``stop``, or ``tick_s`` at most (polling at 4 Hz cost the dashboard
        more than its 1 Hz tick). ``exits``: the wait for every exit, made once."""
        waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(stop.wait())]
        timeout = min(tick_s, LOADING_S)
        if phase.t_measure is not None:
            if exits is None:
                exits = asyncio.ensure_future(self.supervisor.wait_all())
            if not exits.done():  # else every process ended, their states not all final
                waits.append(exits)
                left = phase.t_measure + duration_s - time.monotonic()
                timeout = max(0.0, min(left, tick_s))
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waits[0].cancel()
        return exits

    async def _drain(self, p: Phase, stop: asyncio.Event) -> None:
        """Server workloads with ``drain_s``: at the planned end their load generators
        (SIGUSR1) send no new request and wait for those in flight, up to ``drain_s``,
        so that every request sent is measured, as vLLM's bench serve does."""
        runs = [r for r in p.runs.values() if r.spec.server is not None and r.spec.drain_s
                and r.pid is not None and r.state in ALIVE]
        for r in runs:
            assert r.pid is not None
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(r.pid, signal.SIGUSR1)
        if runs:
            self.session.log("xwatch", "info", "draining " + ", ".join(
                f"{r.spec.name} (up to {r.spec.drain_s:g} s)" for r in runs))
        deadline = time.monotonic() + max((r.spec.drain_s for r in runs), default=0.0)
        while time.monotonic() < deadline and not stop.is_set() and any(
                r.state in ALIVE and not (r.drain and r.drain[1]) for r in runs):
            for r in runs:
                if r.deliver_pending is not None:
                    r.deliver_pending()  # the drain's end held back by the reader
            await asyncio.sleep(0.1)

    def kill_now(self) -> None:
        for warm in self._mode_warm.values():
            warm.cancel()
        self.supervisor.kill_now()
        for backend in self._entered:
            backend.kill_now()
