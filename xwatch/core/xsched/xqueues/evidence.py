"""What an XSched phase's workloads show of XSched, gathered into their evidence on
the event loop: the scheduler the shim says it took and its leave (their output lines),
the maps proof (``set_wl`` from the backend's ``on_running``), and ``/xqueues`` polled
on a thread of its own (``polling``) and folded in batches: each workload's queue
counters, lane and table, the phase's samples, processes not of this session, an
outage or xserver's death (which fail the phase through the backend), and each
workload's engagement verdict (``engagement``'s rules), which also sets the poll's pace.

The backend (``controller.XschedController``) owns the xserver this reads; it is seen
here only as ``Backend``: what the fold reads of it and how it says things.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import threading
import time
import weakref
from collections import deque
from typing import Any, Protocol, cast

import msgspec
from msgspec.structs import replace

from xwatch.core import model as M
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.workload import WorkloadRun
from xwatch.core.modes.neighbours import Strangers
from xwatch.core.xsched import NAME as XSCHED
from xwatch.core.xsched.client import XserverClient
from xwatch.core.xsched.engagement import (
    SCHED_LINE,
    QueueStats,
    XserverLog,
    engagement,
    expected_ready_polls,
)
from xwatch.core.xsched.fork import LEAVE_MARK
from xwatch.core.xsched.install import XschedError
from xwatch.core.xsched.rules.neighbours import Xserver
from xwatch.core.xsched.xqueues.polling import (
    Answer,
    AnswerCache,
    Fails,
    Pace,
    Poll,
    Stalls,
    poll_thread,
    queue_row,
    strangers,
)
from xwatch.scenario import Scenario

SAMPLES_KEPT = 3600  # /xqueues samples kept per phase
LANE_KEPT = 20000  # lane points per workload (33 min at the default 100 ms poll)


class XschedPhase(Protocol):
    """What the evidence writes of a phase: XSched's record (``live.phase.Phase``; a run
    reads its phase as ``PhaseLike``, which leaves each mode's record to the mode)."""

    xsched: M.Xsched | None


def of_run(run: WorkloadRun) -> XschedPhase:
    """The phase of ``run`` as the live ``Phase`` it is, with XSched's record."""
    return cast(XschedPhase, run.phase)


class Backend(Protocol):
    """What the evidence reads of the XSched backend: the xserver it polls (started
    here, or another session's joined), its log, the poll's pace, and where a note or
    the phase's failure goes."""

    scenario: Scenario
    poll_s: float
    pace: Pace
    log: XserverLog
    proc: subprocess.Popen[bytes] | None
    client: XserverClient | None
    joined: Xserver | None

    def hung_or_gone(self) -> str: ...

    def _note(self, text: str, level: str = "info") -> None: ...

    def _fail(self, reason: str, rc: int | None = None) -> None: ...


class Evidence:
    """The evidence of one XSched backend's phases, a phase at a time (see the module)."""

    #: consecutive failed /xqueues polls, over at least this long, mean xserver is gone
    UNREACHABLE_POLLS = 5
    UNREACHABLE_S = 2.0
    #: polls travel from the poll thread to the event loop in batches, at most this far
    #: apart (the lane and the panels repaint every 2 s); a failed poll or a dead
    #: xserver at once
    HANDOFF_S = 1.0
    #: the per-queue table (``XschedWorkload.queues``, for the panel and snapshots) is
    #: rebuilt at most this often; the verdicts and counters every poll
    QUEUE_TABLE_S = 1.0

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.left: weakref.WeakSet[WorkloadRun] = weakref.WeakSet()  # said they leave
        self.stats: dict[str, QueueStats] = {}  # each workload's, this phase
        self.answers: AnswerCache | None = None  # the poll thread's (hits: benchmarks)
        self._table_t = 0.0  # when the per-queue table was last rebuilt
        self._box = Strangers()  # processes not of this session on its xserver, per phase
        self._stalls = Stalls()  # /xqueues outages after a process left (per phase)

    def reset(self) -> None:
        """A new phase: no stranger and no outage seen yet."""
        self._box, self._stalls = Strangers(), Stalls()

    def watch_line(self, run: WorkloadRun, stream: str, line: str) -> None:
        """A line of a workload's output (a phase's line watcher): the scheduler the
        shim says it took, and its leave (the lines after it are its exit)."""
        if LEAVE_MARK in line:  # the shim's lines after it are its exit (app-managed)
            self.left.add(run)
        if not (m := SCHED_LINE.search(line)) or run in self.left:
            return
        what = m.group(1)
        sched = "global" if what.startswith("global") else \
            f"local {m.group(2)}" if what.startswith("local") else "app-managed"
        self.set_wl(of_run(run), run.spec.name, scheduler=sched,
                    scheduler_line=line.strip()[:300])

    @staticmethod
    def wl_info(phase: XschedPhase, name: str) -> M.XschedWorkload:
        """The XSched evidence of workload ``name`` (an empty record the first time)."""
        assert phase.xsched is not None
        wls = phase.xsched.workloads
        info = wls.get(name)
        if info is None:
            info = wls[name] = M.XschedWorkload()
        return info

    def set_wl(self, phase: XschedPhase, name: str, **changes: Any) -> None:
        """Replace fields of workload ``name``'s XSched evidence."""
        assert phase.xsched is not None
        phase.xsched.workloads[name] = replace(self.wl_info(phase, name), **changes)

    async def poll_loop(self, phase: Phase, lock: threading.Lock) -> None:
        """Polls ``/xqueues`` on a thread of its own (HTTP and decoding: no event-loop
        wake-up per poll) and folds the answers into the evidence on the loop, a batch
        at a time, so the phase's data is only ever written from the loop. ``lock``: held
        while the poll thread must send nothing (``leave.quiet``)."""
        b = self.backend
        assert b.client is not None
        stats: dict[str, QueueStats] = {w.name: QueueStats() for w in b.scenario.workloads}
        self.stats = stats
        loop = asyncio.get_running_loop()
        inbox: deque[Poll] = deque()  # append/popleft are atomic: the thread's hand-off
        arrived = asyncio.Event()
        stop = threading.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(arrived.set)

        cache = self.answers = AnswerCache()
        fails = Fails()
        thread = threading.Thread(target=poll_thread, name="xsched-poll", daemon=True, args=(
            b.client, b.proc, {n: r for n, r in phase.runs.items()
                               if phase.in_mode(XSCHED, n)}, b.pace, cache, inbox, wake, stop,
            self.HANDOFF_S, lock))
        thread.start()
        try:
            while True:
                await arrived.wait()
                arrived.clear()
                self.drain(phase, inbox, stats, fails)
        finally:
            stop.set()
            self.drain(phase, inbox, stats, fails)  # what was polled before the stop counts

    def drain(self, phase: Phase, inbox: deque[Poll], stats: dict[str, QueueStats],
              fails: Fails) -> None:
        """Fold the polls waiting in ``inbox``, oldest first, then judge engagement."""
        if not inbox:
            return
        b = self.backend
        while inbox:
            p = inbox.popleft()
            if p.rc is not None and b.proc is not None:
                rc = p.rc
                how = f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}"
                b._fail(f"xserver (pid {b.proc.pid}) died ({how}) "
                        f"{p.t - phase.t_start:.1f} s into phase {phase.name}", rc)
            if isinstance(p.res, XschedError):  # stopped answering: say so once per outage
                if fails.count == 0:
                    fails.first = p.t
                    b._note(self._stalls.began(p.t, p.runs, p.res), "warning")
                fails.count += 1
                limit = self._stalls.limit(self.UNREACHABLE_S, p.rc is None and
                                           b.hung_or_gone() == "hung")
                if fails.count >= self.UNREACHABLE_POLLS and p.t - fails.first >= limit:
                    who = (f"xserver (pid {b.proc.pid}) is hung: alive, but its"
                           if p.rc is None and b.proc is not None else "xserver's")
                    b._fail(f"{who} HTTP API has not answered for "
                            f"{p.t - fails.first:.1f} s ({fails.count} polls), "
                            f"{p.t - phase.t_start:.1f} s into phase {phase.name}"
                            f"{self._stalls.after()}")
            elif isinstance(p.res, Exception):  # a malformed answer is recorded, not fatal
                b._note(f"/xqueues answer not understood: {p.res!r}", "warning")
            else:
                try:
                    self.ingest(phase, p.res, stats, p.t, p.runs)
                except Exception as e:
                    b._note(f"/xqueues answer not understood: {e!r}", "warning")
                fails.count = 0
                if line := self._stalls.answered(p.res, p.t):  # named once it is over
                    b._note(line, "warning")
                    phase.annotations.append(M.Annotation(t=round(p.t - phase.t_start, 3),
                                                          text=line, kind="stall"))
        b.pace.failing = fails.count > 0
        self.refresh(phase)

    def ingest(self, phase: Phase, answer: Answer, stats: dict[str, QueueStats], t: float,
               runs: list[tuple[str, tuple[int, ...], str, int]]) -> None:
        """Fold one ``/xqueues`` answer into each workload's evidence, lane and samples.
        ``runs``: (name, pid, state, requests) of every workload when it was polled.
        Only the workloads' own queues count; the others' go to ``xsched.shared``."""
        counts: dict[str, M.QueueCounts] = {}
        tp = round(t - phase.t_start, 2)
        for name, pids, state, count in runs:
            if not pids:
                continue
            st = stats[name]
            c = answer.counts_of(pids)
            st.pids.update(pids)
            alive = state not in ("finished", "failed", "stopped")
            if alive:
                st.polls += 1
                if count:
                    st.active_polls += 1
                    if st.active_first is None:
                        st.active_first = t
                    st.active_last = t
            ready, susp = c.ready, c.suspended
            if c.queues:
                st.samples += 1
                st.ready += 1 if ready else 0
                st.suspended += 1 if susp else 0
                st.max_queues = max(st.max_queues, c.queues)
            if c.queues or alive:  # after the process exits, keep what was last seen
                st.queues = c.queues
            if c.queues:  # the queue table and handles: the last poll that listed any (a
                # stopping process loses its queues before it exits)
                st.handles = c.handles
                st.latest = c.latest
            counts[name] = M.QueueCounts(queues=c.queues, ready=ready, suspended=susp)
            lane = self.wl_info(phase, name).lane  # append-only (bounded): shared, not copied
            lane.append((tp, "suspended" if susp else "running" if ready else
                         "idle" if c.queues else "none"))
            if len(lane) > LANE_KEPT:
                del lane[: len(lane) - LANE_KEPT]
        assert phase.xsched is not None
        samples = phase.xsched.samples
        samples.append(M.XschedSample(t=round(t, 4), workloads=counts))
        if len(samples) > SAMPLES_KEPT:
            del samples[: len(samples) - SAMPLES_KEPT]
        b = self.backend
        if line := strangers(self._box, answer, t, phase, runs, b.joined is not None):
            b._note(line, "warning")  # another session joined (or this one did)

    def refresh(self, phase: Phase, final: bool = False) -> None:
        """Each workload's engagement verdict from its evidence so far (``final``: the
        phase's last, its queue table rebuilt); the poll pace told whether any waits."""
        b = self.backend
        stats = self.stats
        now = time.monotonic()
        table = final or now - self._table_t >= self.QUEUE_TABLE_S
        if table:
            self._table_t = now
        settled = True
        for name, run in ((n, r) for n, r in phase.runs.items() if phase.in_mode(XSCHED, n)):
            info = self.wl_info(phase, name)
            st = stats.get(name, QueueStats())
            rec = run.rec
            expect = None  # only asked for while no ready queue was seen
            if rec.count and not st.ready:
                svc = rec.service_mean() if rec.service_n else rec.phase_moments().mean
                expect = expected_ready_polls(rec.count, svc, st.mean_gap(b.poll_s),
                                              st.active_polls)
            server = run.spec.server is not None
            status, warns = engagement(True, info.scheduler, st, rec.count,
                                       run.state == "running", expect, final, None if
                                       info.shim_mapped is msgspec.UNSET else info.shim_mapped,
                                       server, b.log.of(st.pids) if server else None)
            if status != info.status and warns:
                for w in warns:
                    b._note(f"{name}: {w}", "warning")
            if table:
                self.set_wl(phase, name, status=status, warnings=warns, stats=M.QueueStats(
                    samples=st.samples, active_polls=st.active_polls, polls=st.polls,
                    ready=st.ready, suspended=st.suspended, queues=st.queues,
                    max_queues=st.max_queues, handles=list(st.handles)),
                    queues=[queue_row(q) for q in st.latest])
            else:
                self.set_wl(phase, name, status=status, warnings=warns)
            settled = settled and (status != "pending" or run.state not in ("running", "stalled"))
        b.pace.judge(settled, phase.t_measure, now)
