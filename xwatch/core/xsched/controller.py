"""The XSched mode backend: gives workloads their environment, starts and stops
xserver (or joins another session's), runs the preflight beside the workloads' start,
and applies live control (priorities, the policy, queue settings). What the workloads
show of XSched (their lines, the maps, ``/xqueues``) is gathered by
``xqueues.evidence``; the daemon's lifecycle it shares with MPS (``modes.daemon``).

Interface: XSched's documented env variables, daemon and HTTP API. xwatch never
links XSched; it starts processes with the shim's environment and talks to
``xserver`` over HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import time
from typing import Any

import msgspec
from msgspec.structs import replace

from xwatch.core import model as M
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.workload import WorkloadRun
from xwatch.core.modes.daemon import DaemonBackend
from xwatch.core.xsched import NAME as XSCHED
from xwatch.core.xsched import XschedBackend
from xwatch.core.xsched.client import XserverClient, free_port, validate_config
from xwatch.core.xsched.compat import (
    check_policy,
    check_scenario,
    join,
    other_xserver,
    running_policy_note,
)
from xwatch.core.xsched.engagement import XserverLog
from xwatch.core.xsched.env import queue_params, xsched_env
from xwatch.core.xsched.fork import switchable
from xwatch.core.xsched.install import XschedError, XschedInstall, find_install, workload_platform
from xwatch.core.xsched.leave.quiet import XserverQuiet, died_by_itself
from xwatch.core.xsched.meta import InstallMeta, read_meta
from xwatch.core.xsched.preflight import Launcher, preflight
from xwatch.core.xsched.rules.isolation import is_shim
from xwatch.core.xsched.rules.neighbours import Xserver
from xwatch.core.xsched.xqueues.evidence import Evidence, of_run
from xwatch.core.xsched.xqueues.polling import Pace
from xwatch.errors import UsageError
from xwatch.scenario import Scenario, Workload


class XschedController(XschedBackend, DaemonBackend):  # its last_look: none (the poller watched)
    """The XSched mode backend: environments, xserver's lifecycle, live control; what
    XSched declares (``XschedBackend``) on the daemon lifecycle both daemons share
    (``DaemonBackend``)."""

    NOTE, SOURCE, DAEMON = "xsched", "xserver", "xserver"
    STOP_STEPS = ((2, 3.0), (15, 2.0), (9, 5.0))  # SIGINT, SIGTERM, SIGKILL
    log: XserverLog  # counts each process's XQueues as lines come

    def __init__(self, install: XschedInstall, scenario: Scenario,
                 poll_s: float | None = None, start_timeout_s: float = 15.0,
                 preflight: bool = True, settled_s: float | None = None) -> None:
        super().__init__(XserverLog(maxlen=400))
        self.install = install
        self.preflight = preflight
        self.scenario = scenario
        self.poll_s = poll_s if poll_s is not None else scenario.xsched.poll_ms / 1000.0
        self.pace = Pace(self.poll_s, settled_s if settled_s is not None
                         else scenario.xsched.settled_ms / 1000.0)
        self.start_timeout_s = start_timeout_s
        self.policy = scenario.xsched.policy
        self.meta: InstallMeta | None = None  # read when a phase starts (and by doctor)
        self.port: int | None = None
        self.client: XserverClient | None = None
        self.joined: Xserver | None = None  # another session's xserver, used as it runs
        self.evidence = Evidence(self)  # what the workloads show of XSched
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
        self._failure = None
        self.evidence.reset()
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
        phase.line_watchers.append(self.evidence.watch_line)
        await self._start_xserver(phase)
        self._quiet = XserverQuiet(self.log, phase, lambda n: phase.in_mode(XSCHED, n),
                                   self.joined is not None, self.proc)  # the probes' leave
        # the preflight runs beside the workloads' load (their imports take seconds;
        # the start gate holds them until it passed, and its failure stops them)
        self._probe = asyncio.create_task(preflight(
            phase, scen, self.install, self.client, plats, envs, self._note, self.launcher,
            self._quiet)) if self.preflight and self.client is not None else None
        self._watch = asyncio.create_task(self.evidence.poll_loop(phase, self._quiet.lock))
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

    async def _judge_last(self, phase: Phase, watched: bool) -> None:
        if watched:  # the poller's last answers folded: the final verdicts
            self.evidence.refresh(phase, final=True)

    def _keep_logs(self, phase: Phase) -> None:
        if phase.xsched is not None:
            phase.xsched = replace(phase.xsched, log_tail=list(self.log)[-60:])

    def on_running(self, run: WorkloadRun, libraries: list[str] | None) -> None:
        """The maps proof: a running workload without the shim mapped is not scheduled."""
        self.evidence.set_wl(of_run(run), run.spec.name,
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
        title = "xserver did not start"
        proc = self._spawn(argv, str(self.install.root), XschedError, title, argv[0])
        self.port = port
        client = self.client = XserverClient(port)
        self._note(f"xserver started: {' '.join(argv)} (pid {proc.pid})")
        running = await self._answer(
            client.get_policy, self.start_timeout_s, XschedError, title,
            lambda rc: f"xserver exited with code {rc} before its HTTP API answered on "
                       f"port {port}. Log: {' | '.join(list(self.log)[-5:]) or '(empty)'}",
            lambda e: f"xserver did not answer on port {port} within "
                      f"{self.start_timeout_s:.0f} s")
        self._check_running_policy(phase, running)

    async def _halt(self, proc: subprocess.Popen[bytes]) -> None:
        if (why := died_by_itself(proc, self.phase, self.log)) is not None:
            self._fail(why, proc.returncode)  # an abort its polls had not seen yet
        await super()._halt(proc)

    # -- live control
    def _handles(self, name: str) -> tuple[int, ...]:
        st = self.evidence.stats.get(name)
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
        st = self.evidence.stats.get(name)
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
