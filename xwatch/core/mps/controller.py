"""The MPS mode backend: a private control daemon per phase, each workload's client
environment, a preflight probe, and proof that every workload really joined.

Lifecycle per phase: ``enter`` makes ``<session tmp>/mps-<phase>/{pipe,log}``, starts
``nvidia-cuda-mps-control -f`` there (its own process group, killed with xwatch
through ``PR_SET_PDEATHSIG``), waits until it answers ``get_server_list``, runs the
preflight (tiny CUDA work as a client until it shows up in ``get_client_list``,
at most a few seconds) in the background, and hands the runner every workload's
client variables: the workloads load beside the preflight, and ``settle`` (awaited by
the runner before the start gate may open) raises its failure.
While the phase runs, a daemon that exits fails the phase. Each running workload
is looked up in the servers' client lists (its process or a child), at the latest
just before the workloads are stopped (``last_look``: a short phase on a busy machine
can end before the watch got to them); one that never
shows up gets the verdict ``not-in-mps`` and an alert: CUDA runs a program outside
MPS without a word when it cannot reach the daemon. It is judged at its first list read
after a read that found it had completed requests already (a process joins at its CUDA
context's creation, before its first GPU work: seconds after its first requests), else
after ``JOIN_GRACE_S`` of running (a model still loading). Clients that are not this
session's (another session joined the daemon) are said once and kept as the phase's
``mps.shared``: its numbers are not a clean MPS measurement. ``leave`` sends ``quit``, waits
for the daemon to exit (it is not instant), then kills what is left of its group,
and keeps the control and server logs for the snapshot.

One daemon serves every GPU of a multi-GPU run: it is started without
``CUDA_VISIBLE_DEVICES`` and each copy pins itself with ``CUDA_VISIBLE_DEVICES``.
NVIDIA documents per-GPU daemons with the GPU's UUID in the daemon's
``CUDA_VISIBLE_DEVICES``; with clients that also set it, torch counted GPUs the
server did not expose and crashed (seen on the H200 pair), so xwatch does not.

A split phase (``compare --layout split``) is the exception: its daemon must not serve
the GPUs of its native or XSched copies, so it is started with
``CUDA_VISIBLE_DEVICES`` listing its own copies' GPUs (PCI bus order) and each of its
copies pins itself with its GPU's place in that list (the daemon's list remaps the
clients' indices; every client sets one, unlike the crash above). Only its own copies
get the client variables; the others keep their private, empty pipe folder.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

import msgspec
from msgspec.structs import replace

from xwatch.core import model as M
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.workload import WorkloadRun
from xwatch.core.modes.daemon import DaemonBackend, stop_group
from xwatch.core.modes.neighbours import Strangers
from xwatch.core.mps import NAME as MPS
from xwatch.core.mps import MpsBackend, MpsError, control
from xwatch.core.mps.env import client_params, mps_env
from xwatch.core.mps.neighbours import MpsDaemon
from xwatch.core.procs import pid_alive, tree
from xwatch.scenario import Scenario

SMOKE_MODULE = "xwatch.core.engine.worker.smoke"
#: how long a running workload may take to appear in a client list
JOIN_GRACE_S = 20.0
LOG_KEPT = 200


class MpsController(MpsBackend, DaemonBackend):
    """The MPS mode backend (see the module): what MPS declares (``MpsBackend``) on
    the daemon lifecycle both daemons share (``DaemonBackend``)."""

    NOTE, SOURCE, DAEMON = "mps", "mps", "control daemon"

    def __init__(self, tool: str, scenario: Scenario, preflight: bool = True,
                 start_timeout_s: float = 15.0, probe_s: float = 3.0,
                 poll_s: float = 2.0) -> None:
        super().__init__(deque(maxlen=LOG_KEPT))
        self.tool = tool
        self.scenario = scenario
        self.preflight = preflight
        self.start_timeout_s = start_timeout_s
        self.probe_s = probe_s
        self.poll_s = poll_s
        self.pipe_dir = ""
        self.log_dir = ""
        self._pending: dict[str, tuple[WorkloadRun, float]] = {}
        self._looked: set[str] = set()  # workloads a client list was read for while alive
        #: workloads that had completed requests when a client list was read
        self._served: set[str] = set()
        #: set when a workload starts running: the watch asks for the client list at
        #: once, not at its next 2 s poll (a short phase's workloads may be gone by then)
        self._wake: asyncio.Event | None = None
        self._hung = False  # it stopped answering: no quit, straight to SIGKILL
        self.joined: MpsDaemon | None = None  # another session's daemon, used as it runs
        self._box = Strangers()  # clients not of this session, per phase
        self.gpus: list[int] = []  # a split phase: the GPUs its own daemon serves

    # -- mode backend protocol
    def for_scenario(self, scenario: Scenario) -> MpsController:
        return MpsController(self.tool, scenario, preflight=self.preflight)

    async def enter(self, phase: Phase) -> dict[str, dict[str, str]]:
        scen = phase.own(self.scenario, MPS)
        base = Path(phase.session.scratch_dir) / f"mps-{phase.index}"
        self.pipe_dir, self.log_dir = str(base / "pipe"), str(base / "log")
        self.joined = await asyncio.to_thread(control.other_daemon, self.tool, scen)
        if self.joined is not None and self.joined.pipe_dir is not None:
            self.pipe_dir = self.joined.pipe_dir  # its clients reach it there
        os.makedirs(self.pipe_dir, exist_ok=True)
        os.makedirs(self.log_dir, exist_ok=True)
        top = max(w.priority_value for w in scen.workloads)
        envs = {w.name: mps_env(w, self.pipe_dir, self.log_dir, w.priority_value == top)
                for w in scen.workloads}
        # a split phase's own daemon serves its copies' GPUs alone (see the module)
        self.gpus = sorted({w.gpu for w in scen.workloads if w.gpu is not None}) \
            if phase.copy_modes and self.joined is None else []
        for w in scen.workloads:
            if self.gpus and w.gpu is not None:
                envs[w.name]["CUDA_VISIBLE_DEVICES"] = str(self.gpus.index(w.gpu))
        self.phase = phase
        self._failure = None
        self._box = Strangers()
        self._servers: set[int] = set()  # MPS servers seen in this phase
        self._pending = {}
        self._looked = set()
        self._served = set()
        self._wake = asyncio.Event()
        self.log.clear()
        phase.mps = M.Mps(
            tool=self.tool, pipe_dir=self.pipe_dir, log_dir=self.log_dir,
            daemon_cmd=[self.tool, "-f"], daemon_pid=None, servers=[],
            env=envs, params={w.name: msgspec.convert(client_params(w, w.priority_value == top),
                                                      M.MpsParams)
                              for w in scen.workloads},
            workloads={}, preflight=None, control_log=[], server_log=[],
            daemon_exit=None, changes=[],
            topology=f"one control daemon for GPUs {','.join(map(str, self.gpus))} only "
                     "(CUDA_VISIBLE_DEVICES); its copies pinned by their place in that list"
            if self.gpus else "one control daemon for every GPU of the run; copies pinned "
                              "with CUDA_VISIBLE_DEVICES",
        )
        await self._start_daemon(phase)
        self._probe = asyncio.create_task(self._preflight(phase, envs)) \
            if self.preflight else None
        self._watch = asyncio.create_task(self._watch_loop(phase))
        return envs

    async def last_look(self, phase: Phase) -> None:
        """The client lists read once more before the workloads stop, for those not
        proven yet (none pending, a failed daemon: nothing to read); a daemon that does
        not answer within ``LAST_LOOK_S`` holds the stop no longer."""
        if self.phase is phase and self._pending and self._failure is None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._judge_pending(final=False), self.LAST_LOOK_S)

    async def _judge_last(self, phase: Phase, watched: bool) -> None:
        """Those not proven clients yet are judged on a last client-list read."""
        if self.phase is phase:
            await self._judge_pending(final=True)

    def _keep_logs(self, phase: Phase) -> None:
        if phase.mps is not None:
            phase.mps = replace(
                phase.mps, control_log=self._read_log("control.log") or list(self.log)[-60:],
                server_log=self._read_log("server.log"))

    def on_running(self, run: WorkloadRun, libraries: list[str] | None) -> None:
        """Queue the workload for the client-list check (done off the event loop, at
        once: the watch is woken)."""
        self._pending[run.spec.name] = (run, time.monotonic())
        self._set_wl(run.spec.name, status="pending")
        if self._wake is not None:
            self._wake.set()

    # -- daemon
    async def _join(self, phase: Phase, d: MpsDaemon) -> None:
        """Use another session's control daemon: it must answer and serve no other
        user; it is neither started nor stopped here, and no daemon-wide setting of it
        is changed."""
        servers = await asyncio.to_thread(control.check_joinable, self.tool, d)
        if phase.mps is not None:
            phase.mps = replace(phase.mps, daemon_cmd=list(d.proc.argv), daemon_pid=d.proc.pid,
                                topology="another session's control daemon, joined",
                                joined=M.Joined(pid=d.proc.pid, user=d.proc.user,
                                                command=d.proc.cmdline, pipe_dir=d.pipe_dir))
        self._note(f"joined {d.describe()} (servers now: {servers or 'none'}): this session "
                   "neither started it nor stops it; only its own workloads are looked up "
                   "in the client lists")

    async def _start_daemon(self, phase: Phase) -> None:
        if self.joined is not None:
            return await self._join(phase, self.joined)
        env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": self.pipe_dir,
               "CUDA_MPS_LOG_DIRECTORY": self.log_dir}
        for k in ("CUDA_VISIBLE_DEVICES", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                  "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "CUDA_MPS_CLIENT_PRIORITY"):
            env.pop(k, None)  # the daemon serves every GPU; clients pin themselves
        if self.gpus:  # a split phase: its own copies' GPUs alone
            env.update(CUDA_VISIBLE_DEVICES=",".join(map(str, self.gpus)),
                       CUDA_DEVICE_ORDER="PCI_BUS_ID")
        title = "MPS daemon did not start"
        proc = self._spawn([self.tool, "-f"], self.log_dir, MpsError, title,
                           f"{self.tool} -f", env)
        if phase.mps is not None:
            phase.mps = replace(phase.mps, daemon_pid=proc.pid)
        self._note(f"control daemon started: {self.tool} -f (pid {proc.pid}), pipe "
                   f"directory {self.pipe_dir}")

        def exited(rc: int) -> str:
            tail = " | ".join(list(self.log)[-5:]) or " | ".join(
                self._read_log("control.log")[-5:]) or "(empty)"
            return f"{self.tool} exited with code {rc} before it answered. Log: {tail}"

        await self._answer(
            lambda: control.command(self.tool, self.pipe_dir, "get_server_list", 3.0),
            self.start_timeout_s, MpsError, title, exited,
            lambda e: f"the MPS control daemon did not answer within "
                      f"{self.start_timeout_s:.0f} s: {e}")
        self._note("control daemon answers")

    async def _halt(self, proc: subprocess.Popen[bytes]) -> None:
        """``quit``, waited for (it is not instant), then what is left of the group
        killed; a hung daemon is killed at once."""
        hung, self._hung = self._hung, False
        if proc.poll() is None and not hung:
            with contextlib.suppress(MpsError):
                await asyncio.to_thread(control.command, self.tool, self.pipe_dir, "quit", 5.0)
            end = time.monotonic() + 10.0  # quit is not instant (servers shut down first)
            while proc.poll() is None and time.monotonic() < end:
                await asyncio.sleep(0.05)
        await stop_group(proc, ((9, 5.0),) if hung else ((15, 2.0), (9, 5.0)))
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, 9)  # a server left in the daemon's group

    def _read_log(self, name: str) -> list[str]:
        try:
            with open(os.path.join(self.log_dir, name), errors="replace") as f:
                return [ln.rstrip() for ln in f.readlines()[-LOG_KEPT:]]
        except OSError:
            return []

    # -- evidence
    def _set_wl(self, name: str, **changes: object) -> M.MpsWorkload:
        """Replace fields of workload ``name``'s MPS evidence (a pending record the
        first time); the new record."""
        assert self.phase is not None and self.phase.mps is not None
        ws = self.phase.mps.workloads
        rec = ws[name] = replace(ws.get(name) or M.MpsWorkload(), **changes)
        return rec

    def clients(self, servers: list[int] | None = None) -> dict[int, list[int]]:
        """{server pid: client pids} now, of ``servers`` (None: those listed now;
        blocking: call from a thread)."""
        if servers is None:
            servers = control.pids(control.command(self.tool, self.pipe_dir,
                                                   "get_server_list"))
        return {s: control.pids(control.command(self.tool, self.pipe_dir,
                                                f"get_client_list {s}"))
                for s in servers}

    def intruders(self, phase: Phase, lists: dict[int, list[int]]) -> str | None:
        """A split phase: a copy of another mode (native, XSched) that is a client of this
        daemon fails the phase (the proof per copy: such a copy is no MPS client)."""
        if not phase.copy_modes or self._failure is not None:
            return None
        clients = {c for cl in lists.values() for c in cl}
        for name, run in phase.runs.items():
            if run.pid and not phase.in_mode(MPS, name) and set(tree(run.pid)) & clients:
                mode = phase.mode_of(name)
                self._failure = (f"{name} (pid {run.pid}) runs {mode} beside the MPS copies "
                                 "but is a client of the phase's MPS server: not a clean "
                                 f"{mode} measurement")
                self._note(self._failure, "error")
                break
        return self._failure

    def _strangers(self, phase: Phase, lists: dict[int, list[int]]) -> None:
        """Clients that are not this session's (another session joined this daemon, or
        any other program): said once, kept in the phase's ``mps.shared``."""
        self.intruders(phase, lists)
        box, first = self._box, self._box.record is None
        theirs = box.foreign(sorted({c for cl in lists.values() for c in cl}))
        now = time.monotonic()
        since = None if phase.t_measure is None or now < phase.t_measure else \
            now - phase.t_measure
        if not box.seen(theirs, now - phase.t_start, since, servers=[
                s for s, cl in lists.items() if set(cl) & set(theirs)]):
            return
        if phase.mps is not None:
            phase.mps = replace(phase.mps, shared=box.record)
        if first and box.record is not None:
            phase.annotations.append(M.Annotation(t=box.record.t, kind="shared", text=(
                f"MPS control daemon shared: {box.record.who()}")))
            self._note(box.line("MPS control daemon", self.joined is not None), "warning")

    #: the daemon is asked every poll (``poll_s``, 2 s: each ask runs the control tool,
    #: a process start, 0.55 ms of xwatch's CPU on the H100) whether it answers, and
    #: each server listed for its clients (``_strangers``); this long without an answer
    #: (a hung daemon: clients would wait on it) fails the phase
    UNANSWERED_S = 6.0
    LAST_LOOK_S = 10.0

    async def _watch_loop(self, phase: Phase) -> None:
        silent_since: float | None = None
        while True:
            wake = self._wake  # made by ``enter``, which starts this loop
            assert wake is not None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), self.poll_s)
            wake.clear()
            try:
                listed = control.pids(await asyncio.to_thread(
                    control.command, self.tool, self.pipe_dir, "get_server_list", 3.0))
                silent_since = None
                gone = sorted(self._servers - set(listed))
                if self.joined is None:  # joined: only the servers its workloads used
                    self._servers |= set(listed)
                if gone and self._failure is None:
                    self._failure = self._server_died(phase, gone)
                    self._note(self._failure, "error")
                    return
                if listed:
                    self._strangers(phase, await asyncio.to_thread(self.clients, listed))
            except MpsError as e:
                now = time.monotonic()
                if silent_since is None:
                    silent_since = now
                    self._note(f"control daemon did not answer: {e}", "warning")
                elif now - silent_since >= self.UNANSWERED_S and self._failure is None and \
                        self.proc is not None and self.proc.poll() is None:
                    self._hung = True
                    self._failure = (f"the MPS control daemon (pid {self.proc.pid}) has not "
                                     f"answered for {now - silent_since:.1f} s "
                                     f"({now - phase.t_start:.1f} s into phase {phase.name})")
                    self._note(self._failure, "error")
                    return
            d = self.joined
            if d is not None and not pid_alive(d.proc.pid, zombie=False) and \
                    self._failure is None:
                self._failure = (f"the joined MPS control daemon (pid {d.proc.pid}, user "
                                 f"{d.proc.user}) is gone {time.monotonic() - phase.t_start:.1f}"
                                 f" s into phase {phase.name}")
                self._note(self._failure, "error")
                return
            proc = self.proc
            if proc is not None and proc.poll() is not None and self._failure is None:
                rc = proc.returncode
                how = f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}"
                self._failure = (f"the MPS control daemon (pid {proc.pid}) died ({how}) "
                                 f"{time.monotonic() - phase.t_start:.1f} s into phase "
                                 f"{phase.name}")
                if phase.mps is not None:
                    phase.mps = replace(phase.mps, daemon_exit=M.DaemonExit(
                        t=round(time.monotonic() - phase.t_start, 3), returncode=rc))
                self._note(self._failure, "error")
                return
            if self._pending:
                await self._judge_pending(final=False)

    def _server_died(self, phase: Phase, gone: list[int]) -> str:
        """Why the phase fails when a server it used is no longer listed: its clients
        lose their GPU context (CUDA says only cudaErrorMpsRpcFailure)."""
        assert phase.mps is not None
        clients = [n for n, w in phase.mps.workloads.items() if w.server in gone]
        t = time.monotonic() - phase.t_start
        phase.mps = replace(phase.mps, server_exit=M.MpsServerExit(t=round(t, 3), servers=gone))
        dev = os.environ.get("CUDA_VISIBLE_DEVICES")
        where = f", GPU {dev}" if dev else ""
        who = f"; its clients {', '.join(clients)} lost their GPU context" if clients else ""
        return (f"the MPS server (pid {', '.join(map(str, gone))}{where}) died "
                f"{t:.1f} s into phase {phase.name}{who}")

    async def _judge_pending(self, final: bool) -> None:
        if not self._pending or self.phase is None:
            return
        served = {n for n, (run, _) in self._pending.items() if run.rec.count}  # before the read
        try:
            lists = await asyncio.to_thread(self.clients)
        except MpsError as e:
            if final:
                for name in list(self._pending):
                    self._set_wl(name, status="unverified",
                                 warnings=[f"client list unavailable: {e}"])
                self._pending.clear()
            return
        assert self.phase.mps is not None
        self.phase.mps = replace(self.phase.mps, servers=sorted(lists))
        now = time.monotonic()
        for name, (run, since) in list(self._pending.items()):
            if run.pid is None:
                continue
            if not final and pid_alive(run.pid, zombie=False):
                self._looked.add(name)  # a list was read while it ran
            mine = set(tree(run.pid))
            server = next((s for s, cl in lists.items() if mine & set(cl)), None)
            if server is not None:
                self._servers.add(server)
                self._set_wl(name, status="in-mps", server=server,
                             client_pids=sorted(mine & set(lists[server])), warnings=[])
                del self._pending[name]
                self._note(f"{name} (pid {run.pid}) is a client of MPS server {server}")
            elif final and name not in self._looked and not pid_alive(run.pid, zombie=False):
                # gone before any list was read while it ran: no evidence either way
                self._set_wl(name, status="unverified", warnings=[
                    f"pid {run.pid} exited before the client list was read"])
                del self._pending[name]
            elif final or now - since > JOIN_GRACE_S or name in self._served or \
                    run.state not in ("running", "stalled"):
                rec = self._set_wl(name, status="not-in-mps", warnings=[
                    f"not in MPS: pid {run.pid} is not among the clients of "
                    f"{', '.join(map(str, lists)) or 'any server'}; CUDA ran it without MPS "
                    "(daemon unreachable, a CUDA_MPS_PIPE_DIRECTORY of its own, or no CUDA "
                    "work)"])
                del self._pending[name]
                self._note(f"{name}: {rec.warnings[0]}", "warning")
        # served at this read and still unlisted at the next: not a client
        self._served |= served & set(self._pending)

    def _set_preflight(self, phase: Phase, preflight: M.MpsPreflight) -> None:
        if phase.mps is not None:
            phase.mps = replace(phase.mps, preflight=preflight)

    async def _preflight(self, phase: Phase, envs: dict[str, dict[str, str]]) -> None:
        """A few seconds of tiny CUDA work as a client; it must join the daemon."""
        w = next((x for x in phase.own(self.scenario, MPS).workloads if x.model is not None
                  and x.name in phase.runs), None)
        if w is None:
            self._set_preflight(phase, M.MpsPreflight(
                verdict="skipped", detail="no built-in model workload to probe (command "
                "workloads are judged by the client list)"))
            return
        device = w.device if w.device != "auto" else "cuda:0"
        env = {**os.environ, **envs[w.name], "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parents[3]), os.environ.get("PYTHONPATH", "")])}
        argv = [w.python or sys.executable, "-m", SMOKE_MODULE, device, w.stream,
                str(self.probe_s + 2.0)]
        t0 = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
            start_new_session=True)
        seen: set[int] = set()
        verdict, detail = "not-in-mps", ""
        try:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 120.0)
            if line:
                for _ in range(int(self.probe_s / 0.5) + 1):
                    try:
                        lists = await asyncio.to_thread(self.clients)
                    except MpsError as e:
                        detail = str(e)
                        break
                    if any(proc.pid in cl for cl in lists.values()):
                        seen.add(proc.pid)
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(proc.pid, signal.SIGUSR1)  # seen: end its work now
                        break
                    await asyncio.sleep(0.5)
            rc = await asyncio.wait_for(proc.wait(), 60.0)
            err = (await proc.stderr.read()).decode(errors="replace") if proc.stderr else ""
            if rc != 0:
                verdict = "crashed"
                detail = f"exit {rc}: " + (err.strip().splitlines() or [""])[-1]
            elif seen:
                verdict, detail = "in-mps", f"pid {proc.pid} was a client of the phase's server"
            else:
                detail = detail or (f"pid {proc.pid} ran its CUDA work but never appeared in "
                                    "get_client_list: it ran outside MPS")
        except asyncio.TimeoutError:
            verdict, detail = "hung", "no result in time; killed"
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)
                await proc.wait()
        self._set_preflight(phase, M.MpsPreflight(
            verdict=verdict, detail=detail, workload=w.name, device=device,
            seconds=round(time.monotonic() - t0, 2)))
        self._note(f"preflight {verdict}: {detail}", "info" if verdict == "in-mps" else "error")
        if verdict != "in-mps":
            raise MpsError(f"MPS preflight {verdict}: {detail}", title="MPS preflight failed")

    # -- live control
    async def set_active_thread_percentage(self, pct: int) -> list[int]:
        """``set_active_thread_percentage`` on every running server (new work only)."""
        if not 1 <= pct <= 100:
            raise MpsError(f"active thread percentage must be 1-100 (got {pct})")
        if self.joined is not None:
            raise MpsError(f"this session joined another's MPS control daemon (pid "
                           f"{self.joined.proc.pid}): a server's active thread percentage "
                           "applies to its other clients too, so it is left as it is",
                           title="Setting of a joined MPS daemon")
        if self.proc is None:
            raise MpsError("MPS mode is not running")
        servers = control.pids(await asyncio.to_thread(
            control.command, self.tool, self.pipe_dir, "get_server_list"))
        if not servers:
            raise MpsError("no MPS server is running yet: nothing to change")
        for s in servers:
            await asyncio.to_thread(control.command, self.tool, self.pipe_dir,
                                    f"set_active_thread_percentage {s} {pct}")
        if self.phase is not None:
            text = f"MPS active thread percentage -> {pct}"
            note = M.Annotation(t=round(time.monotonic() - self.phase.t_start, 3), text=text,
                                servers=servers)
            self.phase.annotations.append(note)
            if self.phase.mps is not None:
                self.phase.mps.changes.append(note)
            self._note(text)
        return servers


def backend_from_args(scen: Scenario, preflight: bool = True,
                      explicit: bool = False) -> tuple[MpsController | None, str | None]:
    """(the MPS backend, None) where MPS can run here, else (None, why not). With
    ``explicit`` (the user asked for MPS) what stops it is a titled error instead."""
    tool = control.find_tool()
    try:
        if tool is not None:  # another session's daemon: refused unless joined
            control.other_daemon(tool, scen)
        control.check_can_run(tool, control.nvml_compute_modes() if tool else None,
                              join=scen.mps.join)
    except MpsError as e:
        if explicit:
            raise
        return None, str(e)
    assert tool is not None
    return MpsController(tool, scen, preflight=preflight), None


def backend_of(args: argparse.Namespace, scen: Scenario,
               explicit: bool) -> tuple[MpsController | None, str | None]:
    """The mode's ``backend_factory``."""
    return backend_from_args(scen, preflight=not args.no_preflight, explicit=explicit)
