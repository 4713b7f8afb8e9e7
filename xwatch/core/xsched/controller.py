"""The XSched mode backend: starts and stops xserver, gives workloads their
environment, polls ``/xqueues`` into engagement evidence, and applies live control.

Interface: XSched's documented env variables, daemon and HTTP API. xwatch never
links XSched; it starts processes with the shim's environment and talks to
``xserver`` over HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import threading
import time
import weakref
from collections import deque
from typing import Any

import msgspec
from msgspec.structs import replace

from xwatch.core import model as M
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.workload import PhaseLike, WorkloadRun
from xwatch.core.engine.supervisor import child_setup
from xwatch.core.engine.worker.xsched_fork import LEAVE_MARK, switchable
from xwatch.core.modes.base import XSCHED
from xwatch.core.modes.daemon import read_lines, stop_group
from xwatch.core.modes.isolation import is_shim
from xwatch.core.modes.neighbours import Strangers, Xserver
from xwatch.core.xsched import XschedBackend
from xwatch.core.xsched.client import XserverClient, free_port, validate_config
from xwatch.core.xsched.compat import (
    check_policy,
    check_scenario,
    join,
    other_xserver,
    running_policy_note,
)
from xwatch.core.xsched.engagement import (
    SCHED_LINE,
    QueueStats,
    XserverLog,
    engagement,
    expected_ready_polls,
)
from xwatch.core.xsched.env import queue_params, xsched_env
from xwatch.core.xsched.install import XschedError, XschedInstall, find_install, workload_platform
from xwatch.core.xsched.leave.quiet import XserverQuiet, died_by_itself
from xwatch.core.xsched.meta import InstallMeta, read_meta
from xwatch.core.xsched.polling import Answer, AnswerCache, Pace, Stalls, poll_thread, queue_row, strangers
from xwatch.core.xsched.polling import Fails as _Fails
from xwatch.core.xsched.polling import Poll as _Poll
from xwatch.core.xsched.preflight import Launcher, preflight
from xwatch.errors import UsageError
from xwatch.scenario import Scenario, Workload

SAMPLES_KEPT = 3600  # /xqueues samples kept per phase
LANE_KEPT = 20000  # lane points per workload (33 min at the default 100 ms poll)


class XschedController(XschedBackend):  # its last_look: none (the poller watched)
    """The XSched mode backend: xserver lifecycle, environments, polling, control."""

    #: consecutive failed /xqueues polls, over at least this long, mean xserver is gone
    UNREACHABLE_POLLS = 5
    UNREACHABLE_S = 2.0

    def __init__(self, install: XschedInstall, scenario: Scenario,
                 poll_s: float | None = None, start_timeout_s: float = 15.0,
                 preflight: bool = True, settled_s: float | None = None) -> None:
        self.install = install
        self._left: weakref.WeakSet[WorkloadRun] = weakref.WeakSet()  # said they leave
        self.preflight = preflight
        self.scenario = scenario
        self.poll_s = poll_s if poll_s is not None else scenario.xsched.poll_ms / 1000.0
        self.pace = Pace(self.poll_s, settled_s if settled_s is not None
                         else scenario.xsched.settled_ms / 1000.0)
        self.start_timeout_s = start_timeout_s
        self.policy = scenario.xsched.policy
        self.meta: InstallMeta | None = None  # read when a phase starts (and by doctor)
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.client: XserverClient | None = None
        self.joined: Xserver | None = None  # another session's xserver, used as it runs
        self.phase: Phase | None = None
        self._poller: asyncio.Task[None] | None = None
        self._probe: asyncio.Task[None] | None = None  # the preflight, until settled
        self._readers: list[asyncio.Task[None]] = []
        self.log = XserverLog(maxlen=400)  # counts each process's XQueues as lines come
        self._failure: str | None = None
        self._stats: dict[str, QueueStats] = {}
        self._answers: AnswerCache | None = None  # the poll thread's (hits: benchmarks)
        self._table_t = 0.0  # when the per-queue table was last rebuilt
        self._box = Strangers()  # processes not of this session on its xserver, per phase
        self._stalls = Stalls()  # /xqueues outages after a process left (per phase)
        #: how the preflight starts its probes: as the phase's workloads (the runner's)
        self.launcher: Launcher | None = None

    # -- mode backend protocol
    def for_scenario(self, scenario: Scenario) -> XschedController:
        return XschedController(self.install, scenario, poll_s=self.poll_s,
                                preflight=self.preflight)

    async def enter(self, phase: Phase) -> dict[str, dict[str, str]]:
        scen = phase.own(self.scenario, XSCHED)  # split: its copies alone get the shim
        plats = {w.name: await asyncio.to_thread(workload_platform, w, scen)
                 for w in scen.workloads}
        self.install.check(set(plats.values()))
        meta = self.meta = read_meta(self.install.root)
        check_scenario(meta, scen)
        for note in meta.notes:
            self._note(note, "warning")
        envs = {w.name: xsched_env(w, self.install, plats[w.name]) for w in scen.workloads}
        self.phase = phase
        self._failure, self._box, self._stalls = None, Strangers(), Stalls()
        self.pace.reset()
        phase.xsched = M.Xsched(
            root=str(self.install.root), source=self.install.source,
            policy=self.policy, platforms=plats, env=envs,
            version=meta.version, version_source=meta.version_source,
            policy_number=check_policy(meta, self.policy),
            # unknown (None) is recorded as xwatch reads it: creatable unless known not
            policies=[M.XschedPolicy(name=p.name, number=p.number,
                                     creatable=p.creatable is not False)
                      for p in meta.policies.policies],
            policy_source=meta.policies.source, install_notes=list(meta.notes),
            params={w.name: M.QueueParams(**queue_params(w)) for w in scen.workloads},
            xserver_cmd=None, port=None, log_tail=[], samples=[],
            workloads={}, changes=[], poll_ms=round(self.poll_s * 1000),
            settled_poll_ms=round(self.pace.settled_s * 1000),
            listen="xserver listens on all interfaces (0.0.0.0) on its port, without "
                   "authentication: anyone who can reach this host can change priorities",
            xserver_exit=None,
        )
        phase.line_watchers.append(self._watch_line)
        await self._start_xserver(phase)
        self._quiet = XserverQuiet(self.log, phase, lambda n: phase.in_mode(XSCHED, n),
                                   self.joined is not None, self.proc)  # the probes' leave
        # the preflight runs beside the workloads' load (their imports take seconds;
        # the start gate holds them until it passed, and its failure stops them)
        self._probe = asyncio.create_task(preflight(
            phase, scen, self.install, self.client, plats, envs, self._note, self.launcher,
            self._quiet)) if self.preflight and self.client is not None else None
        self._poller = asyncio.create_task(self._poll_loop(phase))
        return envs

    async def fork_env(self, w: Workload) -> dict[str, str] | None:
        """``w``'s XSched environment before a phase (``zygote``); None where its copies
        are exec'd: on HIP (its shim is preloaded), or with an install whose scheduler a
        forked child cannot switch to (no ``XHintSetScheduler``, no numbered
        ``XSchedulerType``: a server started for it would only say so after its imports)."""
        plat = await asyncio.to_thread(workload_platform, w, self.scenario)
        if plat != "cuda" or switchable(self.install.lib) is not None:
            return None
        return xsched_env(w, self.install, plat)

    async def settle(self, phase: Phase) -> None:
        """Wait for the preflight, which runs beside the workloads' start (the start gate
        holds them until it passed); raise its failure, and the runner stops them. A
        shim that fails still fails the phase in the probes' seconds, not after a load."""
        probe, self._probe = self._probe, None
        if probe is not None:
            await probe

    async def leave(self, phase: Phase) -> None:
        probe, self._probe = self._probe, None
        if probe is not None:  # left before it settled: its probes are killed on the way out
            probe.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await probe
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._poller
            self._poller = None
            self._refresh_engagement(phase, final=True)
        await self._stop_xserver()
        if phase.xsched is not None:
            phase.xsched = replace(phase.xsched, log_tail=list(self.log)[-60:])

    def failure(self) -> str | None:
        """Why this phase cannot go on under XSched (xserver gone), else None."""
        return self._failure

    def on_running(self, run: WorkloadRun, libraries: list[str] | None) -> None:
        """The maps proof: a running workload without the shim mapped is not scheduled."""
        self._set_wl(run.phase, run.spec.name,
                     shim_mapped=None if libraries is None else any(map(is_shim, libraries)),
                     libraries=libraries or [])

    def _fail(self, reason: str, rc: int | None = None) -> None:
        if self._failure is not None or self.phase is None:
            return
        self._failure = reason
        xs = self.phase.xsched
        if xs is not None:
            self.phase.xsched = replace(xs, xserver_exit=M.XserverExit(
                t=round(time.monotonic() - self.phase.t_start, 3), returncode=rc,
                reason=reason))
        self._note(reason, "error")

    def kill_now(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, 9)

    # -- xserver
    def other_xserver(self) -> Xserver | None:
        """The xserver already serving this machine's XSched channel (any user's), to
        join; an XschedError saying what to do unless the scenario joins one."""
        return other_xserver(self.install.xserver, self.scenario, self._note)

    async def _join(self, phase: Phase, other: Xserver) -> None:
        """Use ``other``, another session's xserver, for this phase (``compat.join``)."""
        assert other.proc is not None
        meta = self.meta or read_meta(self.install.root)
        self.client, running, rec = await join(meta, self.scenario, other, self._note)
        self.joined, self.port, self.proc = other, other.port, None
        if phase.xsched is not None:
            phase.xsched = replace(phase.xsched, xserver_cmd=list(other.proc.argv),
                                   port=other.port, joined=rec)
        self._check_running_policy(phase, running)

    async def _start_xserver(self, phase: Phase) -> None:
        self.joined = None
        other = await asyncio.to_thread(self.other_xserver)
        if other is not None:
            return await self._join(phase, other)
        requested = self.scenario.xsched.port
        port = free_port(requested)
        if port != requested:
            self._note(f"port {requested} is taken (another xserver?); using {port}")
        argv = [str(self.install.xserver), self.policy, str(port)]
        if phase.xsched is not None:
            phase.xsched = replace(phase.xsched, xserver_cmd=argv, port=port)
        self.log.clear()
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=child_setup(15), cwd=str(self.install.root))
        except OSError as e:
            raise XschedError(f"cannot start {argv[0]}: {e}", title="xserver did not start")
        self.port = port
        self.client = XserverClient(port)
        assert self.proc.stdout is not None
        self._readers = [asyncio.create_task(read_lines(self.proc.stdout, self._on_log))]
        self._note(f"xserver started: {' '.join(argv)} (pid {self.proc.pid})")
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            if self.proc.poll() is not None:
                await asyncio.sleep(0.1)
                tail = " | ".join(list(self.log)[-5:])
                rc = self.proc.returncode
                self.proc = None
                raise XschedError(f"xserver exited with code {rc} before its HTTP API "
                                  f"answered on port {port}. Log: {tail or '(empty)'}",
                                  title="xserver did not start")
            try:
                running = await asyncio.to_thread(self.client.get_policy)
                self._check_running_policy(phase, running)
                break
            except XschedError:
                if time.monotonic() > deadline:
                    await self._stop_xserver()
                    raise XschedError(f"xserver did not answer on port {port} within "
                                      f"{self.start_timeout_s:.0f} s",
                                      title="xserver did not start")
                await asyncio.sleep(0.1)

    def _on_log(self, line: str) -> None:
        self.log.append(line)
        if self.phase is not None:
            self.phase.session.log("xserver", "stdout", line)

    async def _stop_xserver(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if (why := died_by_itself(proc, self.phase, self.log)) is not None:
            self._fail(why, proc.returncode)  # an abort its polls had not seen yet
        await stop_group(proc, ((2, 3.0), (15, 2.0), (9, 5.0)))  # SIGINT, SIGTERM, SIGKILL
        for t in self._readers:
            with contextlib.suppress(asyncio.TimeoutError, Exception):
                await asyncio.wait_for(t, 2.0)
        self._note(f"xserver stopped (exit {proc.returncode})")

    def _note(self, text: str, level: str = "info") -> None:
        if self.phase is not None:
            self.phase.session.log("xwatch", level, f"xsched: {text}")

    # -- evidence
    def _watch_line(self, run: WorkloadRun, stream: str, line: str) -> None:
        if LEAVE_MARK in line:  # the shim's lines after it are its exit (app-managed)
            self._left.add(run)
        if not (m := SCHED_LINE.search(line)) or run in self._left:
            return
        what = m.group(1)
        sched = "global" if what.startswith("global") else \
            f"local {m.group(2)}" if what.startswith("local") else "app-managed"
        self._set_wl(run.phase, run.spec.name, scheduler=sched,
                     scheduler_line=line.strip()[:300])

    @staticmethod
    def _wl_info(phase: PhaseLike, name: str) -> M.XschedWorkload:
        """The XSched evidence of workload ``name`` (an empty record the first time)."""
        assert phase.xsched is not None
        wls = phase.xsched.workloads
        info = wls.get(name)
        if info is None:
            info = wls[name] = M.XschedWorkload()
        return info

    def _set_wl(self, phase: PhaseLike, name: str, **changes: Any) -> None:
        """Replace fields of workload ``name``'s XSched evidence."""
        assert phase.xsched is not None
        phase.xsched.workloads[name] = replace(self._wl_info(phase, name), **changes)

    #: polls travel from the poll thread to the event loop in batches, at most this far
    #: apart (the lane and the panels repaint every 2 s); a failed poll or a dead
    #: xserver at once
    HANDOFF_S = 1.0

    async def _poll_loop(self, phase: Phase) -> None:
        """Polls ``/xqueues`` on a thread of its own (HTTP and decoding: no event-loop
        wake-up per poll) and folds the answers into the evidence on the loop, a batch
        at a time, so the phase's data is only ever written from the loop."""
        assert self.client is not None
        stats: dict[str, QueueStats] = {w.name: QueueStats() for w in self.scenario.workloads}
        self._stats = stats
        loop = asyncio.get_running_loop()
        inbox: deque[_Poll] = deque()  # append/popleft are atomic: the thread's hand-off
        arrived = asyncio.Event()
        stop = threading.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(arrived.set)

        cache = self._answers = AnswerCache()
        fails = _Fails()
        thread = threading.Thread(target=poll_thread, name="xsched-poll", daemon=True, args=(
            self.client, self.proc, {n: r for n, r in phase.runs.items()
                                     if phase.in_mode(XSCHED, n)}, self.pace, cache, inbox, wake, stop,
            self.HANDOFF_S, self._quiet.lock))
        thread.start()
        try:
            while True:
                await arrived.wait()
                arrived.clear()
                self._drain(phase, inbox, stats, fails)
        finally:
            stop.set()
            self._drain(phase, inbox, stats, fails)  # what was polled before the stop counts

    def _drain(self, phase: Phase, inbox: deque[_Poll], stats: dict[str, QueueStats],
               fails: _Fails) -> None:
        """Fold the polls waiting in ``inbox``, oldest first, then judge engagement."""
        if not inbox:
            return
        while inbox:
            p = inbox.popleft()
            if p.rc is not None and self.proc is not None:
                rc = p.rc
                how = f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}"
                self._fail(f"xserver (pid {self.proc.pid}) died ({how}) "
                           f"{p.t - phase.t_start:.1f} s into phase {phase.name}", rc)
            if isinstance(p.res, XschedError):  # stopped answering: say so once per outage
                if fails.count == 0:
                    fails.first = p.t
                    self._note(self._stalls.began(p.t, p.runs, p.res), "warning")
                fails.count += 1
                limit = self._stalls.limit(self.UNREACHABLE_S, p.rc is None and
                                           self.hung_or_gone() == "hung")
                if fails.count >= self.UNREACHABLE_POLLS and p.t - fails.first >= limit:
                    who = (f"xserver (pid {self.proc.pid}) is hung: alive, but its"
                           if p.rc is None and self.proc is not None else "xserver's")
                    self._fail(f"{who} HTTP API has not answered for "
                               f"{p.t - fails.first:.1f} s ({fails.count} polls), "
                               f"{p.t - phase.t_start:.1f} s into phase {phase.name}"
                               f"{self._stalls.after()}")
            elif isinstance(p.res, Exception):  # a malformed answer is recorded, not fatal
                self._note(f"/xqueues answer not understood: {p.res!r}", "warning")
            else:
                try:
                    self._ingest(phase, p.res, stats, p.t, p.runs)
                except Exception as e:
                    self._note(f"/xqueues answer not understood: {e!r}", "warning")
                fails.count = 0
                if line := self._stalls.answered(p.res, p.t):  # named once it is over
                    self._note(line, "warning")
                    phase.annotations.append(M.Annotation(t=round(p.t - phase.t_start, 3),
                                                          text=line, kind="stall"))
        self.pace.failing = fails.count > 0
        self._refresh_engagement(phase)

    def _ingest(self, phase: Phase, answer: Answer, stats: dict[str, QueueStats], t: float,
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
            lane = self._wl_info(phase, name).lane  # append-only (bounded): shared, not copied
            lane.append((tp, "suspended" if susp else "running" if ready else
                         "idle" if c.queues else "none"))
            if len(lane) > LANE_KEPT:
                del lane[: len(lane) - LANE_KEPT]
        assert phase.xsched is not None
        samples = phase.xsched.samples
        samples.append(M.XschedSample(t=round(t, 4), workloads=counts))
        if len(samples) > SAMPLES_KEPT:
            del samples[: len(samples) - SAMPLES_KEPT]
        if line := strangers(self._box, answer, t, phase, runs, self.joined is not None):
            self._note(line, "warning")  # another session joined (or this one did)

    #: the per-queue table (``XschedWorkload.queues``, for the panel and snapshots) is rebuilt at
    #: most this often; the verdicts and counters every poll
    QUEUE_TABLE_S = 1.0

    def _refresh_engagement(self, phase: Phase, final: bool = False) -> None:
        stats = self._stats
        now = time.monotonic()
        table = final or now - self._table_t >= self.QUEUE_TABLE_S
        if table:
            self._table_t = now
        settled = True
        for name, run in ((n, r) for n, r in phase.runs.items() if phase.in_mode(XSCHED, n)):
            info = self._wl_info(phase, name)
            st = stats.get(name, QueueStats())
            rec = run.rec
            expect = None  # only asked for while no ready queue was seen
            if rec.count and not st.ready:
                svc = rec.service_mean() if rec.service_n else rec.phase_moments().mean
                expect = expected_ready_polls(rec.count, svc, st.mean_gap(self.poll_s),
                                              st.active_polls)
            server = run.spec.server is not None
            status, warns = engagement(True, info.scheduler, st, rec.count,
                                       run.state == "running", expect, final, None if
                                       info.shim_mapped is msgspec.UNSET else info.shim_mapped,
                                       server, self.log.of(st.pids) if server else None)
            if status != info.status and warns:
                for w in warns:
                    self._note(f"{name}: {w}", "warning")
            if table:
                self._set_wl(phase, name, status=status, warnings=warns, stats=M.QueueStats(
                    samples=st.samples, active_polls=st.active_polls, polls=st.polls,
                    ready=st.ready, suspended=st.suspended, queues=st.queues,
                    max_queues=st.max_queues, handles=list(st.handles)),
                    queues=[queue_row(q) for q in st.latest])
            else:
                self._set_wl(phase, name, status=status, warnings=warns)
            settled = settled and (status != "pending" or run.state not in ("running", "stalled"))
        self.pace.judge(settled, phase.t_measure, now)

    # -- live control
    def _handles(self, name: str) -> tuple[int, ...]:
        st = self._stats.get(name)
        return st.handles if st else ()

    def _annotate(self, text: str, **data: Any) -> None:
        if self.phase is None:
            return
        note = M.Annotation(t=round(time.monotonic() - self.phase.t_start, 3), text=text,
                            **data)
        self.phase.annotations.append(note)
        if self.phase.xsched is not None:
            self.phase.xsched.changes.append(note)
        self._note(text)
        self.pace.changed(time.monotonic())

    async def set_priority(self, name: str, priority: int) -> int:
        """POST /hint for every queue of workload ``name``; returns queues changed."""
        if self.client is None:
            raise XschedError("XSched mode is not running")
        handles = self._handles(name)
        if not handles:
            raise XschedError(f"{name} has no XQueue yet: nothing to change")
        for h in handles:
            await asyncio.to_thread(self.client.hint_priority, h, priority)
        self._annotate(f"{name}: priority -> {priority}", workload=name, priority=priority)
        return len(handles)

    def _check_running_policy(self, phase: Phase, running: int) -> None:
        """The policy xserver reports against the one asked for: a mismatch means the
        install's header and its binaries number policies differently."""
        if phase.xsched is None:
            return
        phase.xsched = replace(phase.xsched, policy_running=running)
        want = phase.xsched.policy_number
        note = running_policy_note(self.meta, self.policy,
                                   None if want is msgspec.UNSET else want, running)
        if note:
            self._note(note, "warning")

    async def configure(self, name: str, level: int | None = None,
                        threshold: int | None = None, batch_size: int | None = None) -> int:
        """POST /config/<hex handle> for every queue of ``name`` (validated first)."""
        if self.client is None:
            raise XschedError("XSched mode is not running")
        st = self._stats.get(name)
        if not st or not st.handles:
            raise XschedError(f"{name} has no XQueue yet: nothing to configure")
        current = st.latest[0].settings() if st.latest else None
        validate_config(level, threshold, batch_size, current)
        for h in st.handles:
            await asyncio.to_thread(self.client.config, h, level, threshold, batch_size)
        vals = {k: v for k, v in (("level", level), ("threshold", threshold),
                                  ("batch_size", batch_size)) if v is not None}
        self._annotate(f"{name}: " + ", ".join(f"{k}={v}" for k, v in vals.items()),
                       workload=name, handles=[f"{h:x}" for h in st.handles], **vals)
        return len(st.handles)


def backend_from_args(root: str | None, scen: Scenario,
                      preflight: bool = True) -> XschedController | None:
    """The XSched backend if an install is configured (validated when a phase starts)."""
    inst = find_install(root, scen)
    if inst is None:
        return None
    if not inst.root.is_dir():
        raise XschedError(f"XSched root {inst.root} (from {inst.source}) is not a folder",
                          title="XSched install not found")
    ctl = XschedController(inst, scen, preflight=preflight)
    ctl.meta = read_meta(inst.root)
    check_scenario(ctl.meta, scen)  # before any phase: the policy and settings it asks
    return ctl


def backend_of(args: argparse.Namespace, scen: Scenario,
               explicit: bool) -> tuple[XschedController | None, str | None]:
    """The mode's ``backend_factory`` (``--xsched``, else XSCHED_HOME, else the
    scenario's root): asked for by name, no install is an error (a race's, advise's or
    capacity's, says so itself: ``usable_modes``)."""
    ctl = backend_from_args(args.xsched, scen, preflight=not args.no_preflight)
    if ctl is None and explicit and args.command not in ("advise", "capacity"):
        raise UsageError(f"{args.command} with XSched needs an XSched install: --xsched "
                         "ROOT or XSCHED_HOME", title="XSched not configured")
    return ctl, None if ctl is not None else "no XSched install (--xsched ROOT or XSCHED_HOME)"
