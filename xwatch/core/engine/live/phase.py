"""One phase, live: a start of the workload set in one mode, its workload runs, its
start gate, kernel captures and what the mode recorded about it; frozen into a
``PhaseSnapshot``."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence

from msgspec.structs import replace

from xwatch.core import model as M
from xwatch.core.engine.live.workload import SessionLike, WorkloadRun
from xwatch.core.engine.snapshot import (
    ALIVE,
    FAILED,
    PENDING,
    STARTING,
    WAITING,
    WARMING,
    CaptureSnapshot,
    PhaseSnapshot,
    utc_now,
)
from xwatch.core.engine.worker.trace import load_trace, request_path
from xwatch.core.model.events import Trace
from xwatch.scenario import Scenario, Workload

#: the start gate lets the warm workloads go after this long even if another is still
#: loading (a 7B model on a slow disk); the phase's log says so
GATE_MAX_S = 600.0



class Phase:
    """One start of the workload set in one mode (native or xsched)."""

    def __init__(self, session: SessionLike, index: int, mode: str, name: str,
                 only: tuple[str, ...] | None = None,
                 copy_modes: Mapping[str, str] | None = None,
                 workloads: Sequence[Workload] | None = None) -> None:
        self.session = session
        self.index = index
        self.mode = mode
        self.name = name
        self.started_at = utc_now()
        self.ended_at: str | None = None
        self.t_start = time.monotonic()
        self.t_measure: float | None = None  # first workload ready
        self.t_stop: float | None = None  # measurement stopped (stop requested)
        self.t_end: float | None = None
        self.status = "running"
        self.runs: dict[str, WorkloadRun] = {
            w.name: WorkloadRun(self, w)
            for w in (session.scenario.workloads if workloads is None else workloads)
            if only is None or w.name in only}
        # what the mode, the plan and xwatch record about the phase (``PhaseSnapshot``'s
        # fields of the same names; the mode backends and plans write them)
        self.xsched: M.Xsched | None = None
        self.mps: M.Mps | None = None
        self.preflight: M.Preflight | None = None
        self.isolation: M.Isolation | None = None
        self.captures: list[CaptureSnapshot] = []
        self.annotations: list[M.Annotation] = []
        self.error: str | None = None
        self.setting: str | None = None
        self.setting_values: dict[str, dict[str, M.SettingValue]] | None = None
        self.calibrate: str | None = None
        #: each workload's participation verdict, by a mode from outside the tree
        self.proof: dict[str, str] = {}
        self.repeat: int | None = None
        self.step: str | None = None
        self.candidate: str | None = None
        self.cut_short: str | None = None
        #: the first attempt's end, when this phase is its one retry (``Driver.step``)
        self.retried: M.PhaseRetry | None = None
        #: a split phase: each copy's mode (``in_mode``); None: every copy in ``mode``
        self.copy_modes: dict[str, str] | None = dict(copy_modes) if copy_modes else None
        #: called for every captured output line (mode backends read the shim's log)
        self.line_watchers: list[Callable[[WorkloadRun, str, str], None]] = []
        #: phase-wide stages (``daemon``, ``mode``, ``mode_left``: monotonic), in every
        #: workload's ``stages``
        self.stages: dict[str, float] = {}
        #: the mode is not settled yet (its preflight runs beside the workloads' start):
        #: the start gate stays shut
        self.gate_shut = False

    def mode_of(self, name: str) -> str:
        """The mode workload ``name`` runs in (a split phase: its copy's own)."""
        return self.copy_modes.get(name, self.mode) if self.copy_modes else self.mode

    def in_mode(self, mode: str, name: str) -> bool:
        """Whether workload ``name`` of this phase runs in ``mode``: a mode backend
        serves only its own copies of a split phase."""
        return self.mode_of(name) == mode

    def own(self, scen: Scenario, mode: str) -> Scenario:
        """``scen`` with only the workloads that run in ``mode`` in this phase (a mode
        backend's own copies; every workload unless the phase is split)."""
        if not self.copy_modes:
            return scen
        return dataclasses.replace(scen, workloads=tuple(
            w for w in scen.workloads if self.in_mode(mode, w.name)))

    def request_capture(self, seconds: float, trace_dir: str) -> CaptureSnapshot | None:
        """Ask every built-in workload that offers it (``hello.trace``) to record
        ``seconds`` of kernel activity; the capture record, or None if none can."""
        seconds = min(10.0, max(0.5, seconds))
        cid = len(self.captures) + 1
        now = time.monotonic()
        asked = []
        for r in self.runs.values():
            if r.state not in ALIVE or not r.hello.get("trace") or r.pid is None:
                continue
            with open(request_path(trace_dir, r.pid), "w") as f:
                json.dump({"id": cid, "seconds": seconds}, f)
            try:
                os.kill(r.pid, signal.SIGUSR1)
            except ProcessLookupError:
                continue
            r.capture_grace_until = now + seconds + CAPTURE_GRACE_S
            asked.append(r.spec.name)
        if not asked:
            return None
        cap = CaptureSnapshot(id=cid, t=round(now - self.t_start, 3), seconds=seconds,
                              workloads=tuple(asked))
        self.captures.append(cap)
        self.annotations.append(M.Annotation(
            t=cap.t, text=f"kernel capture {cid} ({seconds:g} s)", kind="capture"))
        self.session.log("xwatch", "info", f"kernel capture {cid}: {seconds:g} s of "
                         + ", ".join(asked))
        return cap

    def on_trace(self, run: WorkloadRun, e: Trace) -> None:
        """A worker's trace file is ready (or its capture failed): keep it in memory."""
        at = next((i for i, c in enumerate(self.captures) if c.id == e.id), None)
        name = run.spec.name
        if at is None:  # e.g. the worker could not read the request: say it anyway
            if e.error:
                self.session.log("xwatch", "warning", f"{name}: kernel capture failed: "
                                 f"{e.error}")
            return
        cap = self.captures[at]
        if e.error or not e.path:
            err = e.error or "no trace file"
            self.captures[at] = replace(cap, errors={**cap.errors, name: err})
            self.session.log("xwatch", "warning", f"{name}: kernel capture failed: {err}")
            return
        try:
            trace = load_trace(e.path)
        except (OSError, ValueError) as err:
            self.captures[at] = replace(cap, errors={**cap.errors,
                                                     name: f"trace file unreadable: {err}"})
            return
        self.captures[at] = replace(cap, traces={**cap.traces, name: trace})
        self.session.log("xwatch", "info", f"{name}: kernel capture {cap.id}: "
                         f"{e.kernels} kernels, {e.requests} requests, "
                         f"stopping the profiler took {e.cost_s} s")

    def stop_measuring(self) -> None:
        """Requests that end after this moment are not counted."""
        if self.t_stop is None:
            self.t_stop = time.monotonic()

    def on_ready(self, t0: float) -> None:
        if self.t_measure is None or t0 < self.t_measure:
            self.t_measure = t0

    def release_gate(self, now: float) -> None:
        """The start gate: once every built-in workload of the phase is warm (or has
        ended), send each warm one SIGUSR2 so that all start measuring at once; after
        ``GATE_MAX_S`` from the first warm one, let the warm ones go without the rest."""
        waiting = [r for r in self.runs.values() if r.state == WAITING and not r.released]
        if not waiting or self.gate_shut:
            return
        loading = [r for r in self.runs.values()
                   if (r.spec.model is not None or r.spec.server is not None)
                   and r.state in (PENDING, STARTING, WARMING)]
        first = min(r.warm_t or now for r in waiting)
        if loading and now - first < GATE_MAX_S:
            return
        for r in waiting:
            r.released = True
            # the worker itself (its hello's pid): under a wrapper that does not exec,
            # the signal must not reach the wrapper, whose default action is to exit
            pid = r.hello.get("pid") if isinstance(r.hello.get("pid"), int) else r.pid
            r.stage("gate")
            if pid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGUSR2)
        held = now - first
        names = ", ".join(r.spec.name for r in waiting)
        if loading:
            self.session.log("xwatch", "warning", f"start gate: {names} start after "
                             f"{held:.0f} s without {', '.join(r.spec.name for r in loading)}"
                             " (still loading)")
        elif len(waiting) > 1 or held > 0.5:
            self.session.log("xwatch", "info", f"start gate: {names} start measuring "
                             f"together (the first waited {held:.1f} s, warm)")

    def excuse_pause(self, gap: float) -> None:
        """xwatch itself did not run for ``gap`` seconds (SIGSTOP, a starved host): the
        workloads' stall clocks move on by as much, so none is blamed for it."""
        for r in self.runs.values():
            if r.last_progress is not None:
                r.last_progress += gap
            if r.last_heartbeat is not None:
                r.last_heartbeat += gap
        self.annotations.append(M.Annotation(
            t=round(time.monotonic() - self.t_start, 3), kind="observer",
            text=f"xwatch itself did not run for {gap:.1f} s"))
        self.session.log("xwatch", "warning", f"xwatch itself did not run for {gap:.1f} s "
                         "(stopped or starved): no workload is called stalled for that time")

    def check_stalls(self, now: float) -> list[tuple[WorkloadRun, str]]:
        """Update every workload's stalled state; the ones that just stalled."""
        out = []
        for r in self.runs.values():
            why = r.check_stall(now)
            if why:
                out.append((r, why))
        return out

    def finish(self, status: str | None = None) -> None:
        if self.t_end is not None:
            return
        self.t_end = time.monotonic()
        self.ended_at = utc_now()
        cutoff = self.t_stop if self.t_stop is not None else self.t_end
        for r in self.runs.values():
            r.count_unfinished(cutoff)
        stalled = [r for r in self.runs.values() if r.stalled_since is not None]
        if status is None:
            status = "failed" if any(r.state == FAILED for r in self.runs.values()) else "done"
        if (stalled or self.error) and status == "done":
            status = "failed"
        if stalled and self.error is None:
            self.error = "; ".join(
                f"{r.spec.name} stalled since {r.stalled_since - self.t_start:.1f} s"
                for r in stalled if r.stalled_since is not None)
        self.status = status

    def elapsed_s(self, now: float) -> float:
        """Seconds measured so far (from the start while loading), up to the stop."""
        end = self.t_stop if self.t_stop is not None else self.t_end if self.t_end else now
        return end - (self.t_measure or self.t_start)

    def deliver_pending(self) -> None:
        """Take what the workloads' event pipes hold now (their readers pause up to a
        second between reads), so a snapshot of a running phase misses no request that
        ended before it: window rates would otherwise count up to a second too few."""
        if self.t_end is not None:
            return
        for r in self.runs.values():
            if r.deliver_pending is not None:
                r.deliver_pending()

    def snapshot(self, now: float) -> PhaseSnapshot:
        """The phase frozen at ``now`` (after taking what its pipes hold; ``now`` is
        then read again, so it is not before the newest request)."""
        if self.t_end is None and any(r.deliver_pending for r in self.runs.values()):
            self.deliver_pending()
            now = max(now, time.monotonic())
        return PhaseSnapshot(
            index=self.index, name=self.name, mode=self.mode, status=self.status,
            started_at=self.started_at, ended_at=self.ended_at,
            elapsed_s=self.elapsed_s(now),
            measuring=self.t_measure is not None,
            workloads=tuple(r.snapshot(now) for r in self.runs.values()),
            t_start=self.t_start, t_measure=self.t_measure,
            xsched=self.xsched, mps=self.mps, preflight=self.preflight,
            isolation=self.isolation, captures=tuple(self.captures),
            annotations=tuple(self.annotations), error=self.error, setting=self.setting,
            setting_values=self.setting_values, calibrate=self.calibrate,
            repeat=self.repeat, step=self.step, candidate=self.candidate,
            cut_short=self.cut_short, copy_modes=self.copy_modes, retried=self.retried,
            proof=dict(self.proof) or None)


CAPTURE_GRACE_S = 15.0  # for the profiler's teardown after a capture

