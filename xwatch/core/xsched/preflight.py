"""Preflight: while an XSched phase's real workloads load (held by the start gate
until it passed; its failure stops them, so a broken shim still fails the phase in
the probes' seconds, not after the models loaded), run a few seconds of tiny GPU
work under the shim with each workload's own XSched environment and the running
xserver, on a created stream and on the default stream, and say what XSched did
with it. A workload that
captures CUDA graphs (an LLM decoder with ``decode = "graphed"``) gets a third probe,
``graph``: the same work captured once as a graph and replayed (XSched 49079bc's shim
queues kernels launched during a capture into its own queue instead of the graph,
and the graphed decoder crashed under it on an H100; the probe says so in seconds,
before the decoder measures anything).

One probe per distinct (python, platform, device, stream, workload environment)
among the built-in model workloads, all in parallel. A probe's verdict is one of
``engaged``, ``crashed-at-exit`` (engaged to its end, said ``done``, then died while
exiting, as XSched 1.2's shim was seen to: the phase goes on with a warning), ``crashed``,
``shim-not-loaded``, ``app-managed``, ``local``, ``not-scheduled``, ``hung``
(decided by ``engagement.probe_verdict`` from the exit status, the shim's log and
the XQueues xserver listed for the probe's pid). A crash, hang or "not scheduled"
on the kind of stream a workload uses fails the phase at once with that reason. A probe
is ``hung`` when it outlasts ``PROBE_TIMEOUT_S`` or, once another probe crashed, when its
CPU time stands still for ``CRASH_GRACE_S``: by its own progress, not the wall clock, so
a busy machine's slow probe is not called hung.
Verdicts are cached for the process's lifetime per install (and shim file),
interpreter, platform, device, stream and XSched environment
(``XWATCH_PREFLIGHT_CACHE=0``: never), and never from a preflight during which xserver
died. After their work the probes are held, and leave one at a time while xserver hears
nothing else (``leave.probes``).

Each probe starts the way its workloads do (issue 58 goal 4): with the environment the
phase's workloads start from (``Launcher.base_env``) and, where they fork from XSched's
fork server, forked from it too (``Launcher.fork``): a fresh process of its own pid and
process group, already under the shim with torch imported, which switches to the global
scheduler itself after the fork and registers its own XQueues with xserver, as each
forked copy does. So the preflight no longer pays a fresh interpreter's imports under
the shim (7.96 s of a 4-GPU phase's 8.1 s start, the copies held at the start gate for
4.5 s of it). Where the workloads are exec'd (no fork server, ``XWATCH_FORK_SERVER=0``,
an install whose scheduler cannot be switched after a fork, HIP's preloaded shim, an
environment that differs), so is the probe. Each verdict says how its probe started
(``start``) and its pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from xwatch.core import model as M
from xwatch.core.engine.launch import build_launch
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.supervisor import child_setup
from xwatch.core.engine.worker.zygote import SMOKE_MODULE, ForkedProcess, ForkServer
from xwatch.core.procs import cpu_ticks
from xwatch.core.xsched.client import XserverClient
from xwatch.core.xsched.engagement import EXIT_CRASH, FAILING_VERDICTS, probe_verdict
from xwatch.core.xsched.install import XschedError, XschedInstall
from xwatch.core.xsched.leave.probes import (
    HOLD_ENV,
    LEFT_TIMEOUT_S,
    Held,
    Quiet,
    leave,
    wait_on,
)
from xwatch.scenario import Scenario, Workload

SMOKE_SECONDS = 2.0
PROBE_TIMEOUT_S = 120.0
CRASH_GRACE_S = 10.0  # once one probe crashed, how long the others may make no progress
PROGRESS_POLL_S = 0.5  # how often a probe's CPU time is read once another crashed
POLL_S = 0.02

_CACHE: dict[tuple[Any, ...], Verdict] = {}
#: "0": every XSched phase probes afresh (benchmarks/gpu/plans/probe-race.sh: each phase's
#: probes leave beside its own xserver)
CACHE_ENV = "XWATCH_PREFLIGHT_CACHE"
GPU_PIN_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")


@dataclass(frozen=True)
class Probe:
    """One smoke run: where and how."""

    python: str
    platform: str
    device: str
    stream: str  # "created" | "default" | "graph" | "n/a" (cpu)
    env: Mapping[str, str] = field(repr=False, compare=False)
    env_added: Mapping[str, str] = field(repr=False, compare=False)
    workloads: tuple[str, ...] = field(compare=False, default=())

    def key(self, install: XschedInstall) -> tuple[Any, ...]:
        shim = install.shim(self.platform)
        try:
            mtime = shim.stat().st_mtime_ns
        except OSError:
            mtime = None
        relevant = tuple(sorted((k, v) for k, v in self.env_added.items()
                                if not k.startswith("XWATCH_")))
        return (str(install.root), mtime, self.python, self.platform, self.device, self.stream,
                relevant)


#: One probe's verdict: the snapshot's own type (``Preflight.verdicts``), built here.
Verdict = M.Verdict

#: forks a probe as a workload with its environment would be: (python, module, its
#: arguments, environment) -> (the process, "fork (fork server pid N)"), or (None,
#: "exec (why not)"): then it is exec'd (``fork_from``)
Forker = Callable[[str, str, tuple[str, ...], Mapping[str, str]],
                  Awaitable[tuple[ForkedProcess | None, str]]]


async def fork_from(fs: ForkServer | None, python: str, module: str, args: tuple[str, ...],
                    env: Mapping[str, str]) -> tuple[ForkedProcess | None, str]:
    """A ``Forker`` over fork server ``fs`` (the one a workload with ``env`` forks from,
    ``Supervisor.server_for``): ``python -u -m module args`` with ``env`` forked as that
    workload would be (waiting for the server's imports the same way): (the process, its
    ``launch.start``: "fork (fork server pid N)"), or (None, "exec (why not)"): then the
    caller execs it. Its event pipe is ``/dev/null``; it is in its own session and
    process group, and dies with the server, the server with xwatch."""
    if fs is None:
        return None, "exec"
    why = await fs.ready_for((python, "-u", "-m", module), env, module)
    if why is None:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            proc = await fs.spawn(env, None, null, module, args)
        finally:
            os.close(null)
        if proc is not None:
            return proc, fs.label
        why = fs.failure
    return None, f"exec ({why})" if why else "exec"


@dataclass(frozen=True)
class Launcher:
    """How the preflight starts its probes as the phase starts its workloads (see the
    module): from ``base_env`` (None: xwatch's own environment) and through ``fork``
    (None: every probe exec'd)."""

    base_env: Mapping[str, str] | None = None
    fork: Forker | None = None


class _Proc(Protocol):
    """What a probe is read through: an ``asyncio.subprocess.Process`` or a
    ``ForkedProcess``."""

    @property
    def pid(self) -> int: ...

    @property
    def stdout(self) -> asyncio.StreamReader | None: ...

    @property
    def stderr(self) -> asyncio.StreamReader | None: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...


def verdict_line(v: Verdict) -> str:
    """Where the probe ran, for which workloads, and what it showed, in one line."""
    where = f"on {v.device}" if v.stream == "n/a" else f"{_where(v)} on {v.device}"
    cached = " (cached)" if v.cached else ""
    how = f" [{v.start}{f', pid {v.pid}' if isinstance(v.pid, int) else ''}]" \
        if isinstance(v.start, str) and not v.cached else ""
    return f"{where} for {', '.join(v.workloads)}: {v.status}{cached} - {v.detail}{how}"


def _device_of(w: Workload) -> str:
    return w.device


def uses_graphs(w: Workload) -> bool:
    """Whether the workload's model captures and replays CUDA graphs."""
    return w.decode == "graphed"


def plan_probes(scen: Scenario, install: XschedInstall, platforms: Mapping[str, str],
                envs: Mapping[str, Mapping[str, str]], graphs: bool = False,
                base_env: Mapping[str, str] | None = None) -> list[Probe]:
    """The distinct probes the scenario's built-in workloads need (``graphs``: a graph
    probe for every GPU workload, not only those that capture graphs; doctor's), each
    with its workload's environment built on ``base_env`` (None: xwatch's own)."""
    probes: dict[tuple[Any, ...], Probe] = {}
    for w in scen.workloads:
        if w.model is None:
            continue
        streams: tuple[str, ...] = ("n/a",) if w.device == "cpu" else \
            ("created", "default", "graph") if graphs or uses_graphs(w) else \
            ("created", "default")
        spec = build_launch(w, envs.get(w.name), base_env=base_env)
        # the workload's own environment counts: priorities, levels and extra variables
        # can each make the shim behave differently
        # (but not which GPU a --gpus copy is pinned to: the copies on the first GPU
        # speak for the others, so 8 GPUs cost no more probes than one)
        own_env = tuple(sorted((k, v) for k, v in spec.env_added.items()
                               if not k.startswith("XWATCH_") and k not in GPU_PIN_VARS))
        for stream in streams:
            k = (w.python or sys.executable, platforms[w.name], _device_of(w), stream, own_env)
            prev = probes.get(k)
            names = (*(prev.workloads if prev else ()), w.name)
            env, added = (prev.env, prev.env_added) if prev else (spec.env, spec.env_added)
            probes[k] = Probe(k[0], k[1], k[2], stream, env, added, names)
    return list(probes.values())


async def run_probes(probes: list[Probe], install: XschedInstall, client: XserverClient,
                     seconds: float = SMOKE_SECONDS, timeout_s: float = PROBE_TIMEOUT_S,
                     use_cache: bool = True, fork: Forker | None = None,
                     fails: Callable[[list[Verdict]], bool] | None = None,
                     quiet: Quiet | None = None,
                     leaves: list[M.ProbeLeave] | None = None) -> list[Verdict]:
    """Run the probes (in parallel) while polling xserver for their XQueues; each
    forked through ``fork`` where it can be (see the module), else exec'd; held after
    their work and let go one at a time (``leave.probes``: ``quiet``, the mode's, says
    when; ``fails``: whether verdicts fail the phase, when they go at once). How they
    left is appended to ``leaves`` (none when every verdict was cached)."""
    out: list[Verdict | None] = [None] * len(probes)
    todo: list[tuple[int, Probe]] = []
    use_cache = use_cache and os.environ.get(CACHE_ENV) != "0"
    for i, p in enumerate(probes):
        hit = _CACHE.get(p.key(install)) if use_cache else None
        if hit is not None:
            out[i] = msgspec.structs.replace(hit, workloads=list(p.workloads), cached=True)
        else:
            todo.append((i, p))
    if todo:
        results, left = await _run(todo, client, seconds, timeout_s, fork, fails, quiet)
        if leaves is not None and left is not None:
            leaves.append(left)
        for (i, p), v in zip(todo, results):
            out[i] = v
            _CACHE[p.key(install)] = v
    # on a machine without a GPU both stream probes ran on the CPU: say it once
    seen: set[tuple[Any, ...]] = set()
    result = []
    for got in out:
        if got is None:
            continue
        k = (got.python, got.platform, got.device, tuple(got.workloads), got.stream)
        if got.stream == "n/a" and k in seen:
            continue
        seen.add(k)
        result.append(got)
    return result


async def _start(p: Probe, seconds: float, fork: Forker | None, hold: bool = False
                 ) -> tuple[_Proc | None, str, str]:
    """Start probe ``p`` (``hold``: held after its work, ``probe_leave``): (the process,
    how it started, why it could not: "")."""
    args = (p.device, p.stream, f"{seconds:g}")
    env = {**p.env, HOLD_ENV: "1"} if hold else dict(p.env)
    how = "exec"
    if fork is not None:
        try:
            forked, how = await fork(p.python, SMOKE_MODULE, args, env)
        except OSError as e:
            forked, how = None, f"exec (the fork failed: {e})"
        if forked is not None:
            return forked, how, ""
    try:
        return await asyncio.create_subprocess_exec(
            p.python, "-u", "-m", SMOKE_MODULE, *args, env=env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True,
            preexec_fn=child_setup()), how, ""
    except OSError as e:
        return None, how, f"cannot start {p.python}: {e.strerror or e}"


@dataclass
class _Out:
    """What one probe said so far: its stdout and stderr lines, its JSON lines folded
    (``info``), whether it said ``done``; ``held``: its leave (``leave.probes``)."""

    held: Held | None
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def line(self, ln: str) -> None:
        self.out.append(ln)
        with contextlib.suppress(ValueError):
            d = json.loads(ln)
            if isinstance(d, dict):
                if d.get("type") == "left":
                    if self.held is not None:
                        self.held.switched = d.get("left") is True
                        self.held.said.set()
                    return
                self.info.update(d)
                if d.get("type") == "done":
                    self.done.set()


async def _lines(stream: asyncio.StreamReader | None, sink: Callable[[str], None]) -> None:
    if stream is None:
        return
    while True:
        raw = await stream.readline()
        if not raw:
            return
        sink(raw.decode("utf-8", "replace").rstrip("\n"))


async def _communicate(proc: _Proc, o: _Out) -> None:
    """Its stdout and stderr, line by line into ``o``, to their end, and its exit."""
    await asyncio.gather(_lines(proc.stdout, o.line), _lines(proc.stderr, o.err.append),
                         proc.wait())


async def _run(todo: list[tuple[int, Probe]], client: XserverClient, seconds: float,
               timeout_s: float, fork: Forker | None = None,
               fails: Callable[[list[Verdict]], bool] | None = None,
               quiet: Quiet | None = None) -> tuple[list[Verdict], M.ProbeLeave | None]:
    """Run the probes, poll xserver for their XQueues, let them leave (held after their
    work, one at a time: ``probe_leave``; not with ``XWATCH_XSCHED_PROBE_WAIT=0``), judge
    them. ``fails``: whether verdicts fail the phase (then the probes go at once)."""
    hold = wait_on()
    t0 = time.monotonic()
    started = await asyncio.gather(*(_start(p, seconds, fork, hold) for _, p in todo))
    procs = [proc for proc, _, _ in started]
    starts = [how for _, how, _ in started]
    errors = [err for _, _, err in started]
    outs = [_Out(Held(proc.pid) if hold and proc is not None else None) for proc in procs]
    pids = {proc.pid: k for k, proc in enumerate(procs) if proc is not None}
    seen = [{"max": 0, "ready": 0, "polls": 0} for _ in procs]
    failed: dict[str, Any] = {"n": 0, "last": ""}

    stop_polls = asyncio.Event()

    async def poll() -> None:  # ends after its request in flight: nothing sent past it
        while not stop_polls.is_set():
            try:
                data = await asyncio.to_thread(client.xqueues)
            except XschedError as e:  # counted and reported: never silently "no queues"
                failed["n"] += 1
                failed["last"] = str(e)
                data = {}
            by_pid: dict[int, list[dict[str, Any]]] = {}
            for q in data.get("xqueues") or []:
                by_pid.setdefault(int(q.get("pid", -1)), []).append(q)
            for pid, k in pids.items():
                proc = procs[k]
                if proc is None or proc.returncode is not None or outs[k].done.is_set():
                    continue  # a held probe's idle XQueues after its work are not its run
                mine = by_pid.get(pid, [])
                seen[k]["polls"] += 1
                seen[k]["max"] = max(seen[k]["max"], len(mine))
                if any(q.get("ready") for q in mine):
                    seen[k]["ready"] += 1
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop_polls.wait(), POLL_S)

    crashed = asyncio.Event()
    released = asyncio.Event()

    async def collect(k: int, proc: _Proc) -> tuple[int | None, str]:
        """Its exit status and why it was killed ("": it was not)."""
        o = outs[k]
        comm: asyncio.Future[Any] = asyncio.ensure_future(_communicate(proc, o))
        if o.held is not None:
            comm.add_done_callback(lambda _: o.held.gone.set() if o.held else None)
        end = time.monotonic() + timeout_s
        ticks: int | None = None  # its CPU time when last seen to move, and when
        moved: float | None = None
        killed = ""
        while not comm.done() and not o.done.is_set():
            now = time.monotonic()
            left = end - now
            if left <= 0:
                killed = "after the time limit"
                break
            if crashed.is_set():  # another crashed: hung only if it makes no progress
                used = cpu_ticks(proc.pid)
                if moved is None or (used is not None and used != ticks):
                    ticks, moved = used, now
                if now - moved >= CRASH_GRACE_S:
                    killed = (f"and no progress (its CPU time stood still) for "
                              f"{CRASH_GRACE_S:g} s after another probe crashed")
                    break
                left = min(left, PROGRESS_POLL_S)
            others: list[asyncio.Future[Any]] = [asyncio.ensure_future(o.done.wait())]
            if not crashed.is_set():  # (once set, waiting on it again would spin)
                others.append(asyncio.ensure_future(crashed.wait()))
            await asyncio.wait({comm, *others}, timeout=left,
                               return_when=asyncio.FIRST_COMPLETED)
            for w in others:
                w.cancel()
        timed_out = bool(killed)
        if comm.done() and proc.returncode not in (0, None) and not o.done.is_set():
            crashed.set()
        if not timed_out and not comm.done():  # held after its work: until it is let go
            await released.wait()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(comm), LEFT_TIMEOUT_S + timeout_s / 4)
        if not comm.done():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, 9)
            await comm
        return proc.returncode, killed

    poller = asyncio.create_task(poll())
    tasks = [asyncio.ensure_future(collect(k, p)) if p is not None else None
             for k, p in enumerate(procs)]
    leave_rec: M.ProbeLeave | None = None if hold else M.ProbeLeave(wait=False)
    t_work = time.monotonic()
    try:
        if hold:  # every probe's work ended (its "done", or its exit, or the time limit)
            await asyncio.gather(*(_work_ended(t, o) for t, o in zip(tasks, outs)))
        else:  # the old way: each leaves as its work ends, polled until it exited
            released.set()
            await asyncio.gather(*(t for t in tasks if t is not None))
        stop_polls.set()
        await poller
        t_work = time.monotonic()  # a verdict's seconds: its run, not the hold after it
        if hold:
            early = _verdicts(todo, procs, outs, [
                (0, "") if o.done.is_set() or t is None else t.result()  # done: exited
                for t, o in zip(tasks, outs)], starts, errors, seen, failed,
                time.monotonic() - t0)
            ok = all(o.done.is_set() for o, p in zip(outs, procs) if p is not None) \
                and not (fails is not None and fails(early))
            held = [o.held for o in outs if o.held is not None and o.done.is_set()]
            leave_rec = await leave(held, client, quiet, ok)
        released.set()
        results = [await t if t is not None else (None, "") for t in tasks]
    finally:
        released.set()
        poller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poller
        for t in tasks:
            if t is not None and not t.done():
                t.cancel()
        for proc in procs:
            if proc is not None and proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, 9)
    return _verdicts(todo, procs, outs, results, starts, errors, seen, failed,
                     t_work - t0), leave_rec


async def _work_ended(task: asyncio.Future[Any] | None, o: _Out) -> None:
    """Until a probe's work ended: its ``done`` line, or its ``collect`` returned."""
    if task is None:
        return
    waiter = asyncio.ensure_future(o.done.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()


def _verdicts(todo: list[tuple[int, Probe]], procs: list[_Proc | None], outs: list[_Out],
              results: list[tuple[int | None, str]], starts: list[str], errors: list[str],
              seen: list[dict[str, int]], failed: dict[str, Any], elapsed: float
              ) -> list[Verdict]:
    """Each probe's verdict from what it said, its exit (``results``: (status, why it
    was killed, "" if it was not)) and what xserver listed for it."""
    verdicts = []
    for k, ((_, p), (rc, killed), proc, o) in enumerate(zip(todo, results, procs, outs)):
        lines = [ln for ln in o.err if ln.strip()]
        info = o.info
        finished = o.done.is_set()  # the smoke's "done" line: its work ended, synchronized
        if errors[k]:
            status, detail, cause, sched = "crashed", errors[k], errors[k], None
        else:
            status, detail, cause, sched = probe_verdict(
                rc, lines, seen[k]["max"], seen[k]["ready"], bool(killed),
                int(info.get("iters", 0)), seen[k]["polls"], finished,
                limit=killed or "after the time limit")
            if failed["n"] and status != "engaged":
                detail += (f" ({failed['n']} /xqueues polls failed, last: "
                           f"{failed['last'][:160]})")
        stream = p.stream if not str(info.get("stream", "")).startswith("n/a") else "n/a"
        verdicts.append(Verdict(
            status=status, detail=detail, python=p.python, platform=p.platform, device=p.device,
            stream=stream, workloads=list(p.workloads), returncode=rc, cause=cause,
            scheduler=sched, queues_max=seen[k]["max"], ready_polls=seen[k]["ready"],
            polls=seen[k]["polls"], iters=int(info.get("iters", 0)),
            median_ms=info.get("median_ms"), seconds=round(elapsed, 2),
            torch=info.get("torch"), device_name=info.get("device_name"),
            stderr_tail=list(deque(lines, maxlen=12)),
            poll_errors=failed["n"], poll_error=failed["last"][:300], finished=finished,
            start=starts[k], pid=proc.pid if proc is not None else None))
    return verdicts


#: which failure names the phase's: a crash first (a crashed process of the global
#: scheduler can stall xserver, so probes beside it look unscheduled), then a hang
SEVERITY = {"crashed": 0, "hung": 1, "not-scheduled": 2}


def preflight_failure(verdicts: list[Verdict], scen: Scenario) -> str | None:
    """Why the phase must not start: a workload's own stream kind (or, for one that
    captures CUDA graphs, the graph probe) crashed, hung or was not scheduled; the most
    severe such failure, with the others named after it. None if every workload may
    start."""
    found: list[tuple[int, int, Verdict]] = []
    for k, w in enumerate(scen.workloads):
        if w.model is None:
            continue
        mine = [v for v in verdicts if w.name in v.workloads]
        kinds = (w.stream, "n/a", "graph") if uses_graphs(w) else (w.stream, "n/a")
        wanted = [v for v in mine if v.stream in kinds] or mine
        found += [(SEVERITY.get(v.status, 3), k, v) for v in wanted
                  if v.status in FAILING_VERDICTS]
    if not found:
        return None
    found.sort(key=lambda f: (f[0], f[1]))
    _, k, v = found[0]
    w = scen.workloads[k]
    uses = v.device if v.stream == "n/a" else \
        "CUDA graphs (decode = 'graphed')" if v.stream == "graph" else w.stream
    outcome = "run unscheduled" if v.status == "not-scheduled" else \
        "fail the same way, after loading its model"
    others = []
    for _, _, o in found[1:]:
        what = f"{_where(o)} {o.status}"
        if o is not v and what not in others:
            others.append(what)
    also = f" Also: {'; '.join(others)}." if others else ""
    return (f"preflight: {_where(v)} under XSched {v.status} ({v.detail}); {w.name} uses "
            f"{uses}, so its real workload would {outcome}.{also} Fix the install or the "
            "scenario (or --no-preflight to start anyway)")


def _where(v: Verdict) -> str:
    return v.device if v.stream == "n/a" else \
        "a CUDA graph (captured, then replayed)" if v.stream == "graph" else \
        f"{v.stream} stream"


def clear_cache() -> None:
    _CACHE.clear()


async def preflight(phase: Phase, scenario: Scenario, install: XschedInstall,
                    client: XserverClient, plats: dict[str, str],
                    envs: dict[str, dict[str, str]], note: Callable[..., None],
                    launcher: Launcher | None = None, quiet: Quiet | None = None) -> None:
    """The phase's preflight: probe its built-in workloads (``plan_probes``), each
    started as its workloads are (``launcher``; None: exec'd from xwatch's own
    environment) and let go as ``quiet`` (the XSched mode's) allows (``leave.probes``),
    record the verdicts and how the probes left in ``phase.preflight``, log each with
    ``note``, raise the failure (an xserver that died meanwhile is one)."""
    launcher = launcher or Launcher()
    scen = dataclasses.replace(scenario, workloads=tuple(
        w for w in scenario.workloads if w.name in phase.runs))
    probes = plan_probes(scen, install, plats, envs, base_env=launcher.base_env)
    if not probes:
        phase.preflight = M.Preflight(verdicts=[], note="no built-in model workload "
                                      "to probe (command workloads are judged by their "
                                      "engagement evidence)")
        return
    note(f"preflight: {len(probes)} probe(s) under the shim ...")
    t0 = time.monotonic()
    leaves: list[M.ProbeLeave] = []
    verdicts = await run_probes(probes, install, client, fork=launcher.fork,
                                fails=lambda vs: preflight_failure(vs, scen) is not None,
                                quiet=quiet, leaves=leaves)
    reason = preflight_failure(verdicts, scen)
    if quiet is not None and (gone := quiet.gone()) is not None:  # no probe's fault alone
        reason = f"{gone}; during the preflight" + (f" (and {reason})" if reason else "")
        for p in probes:  # judged beside a dying xserver: a retry probes afresh
            _CACHE.pop(p.key(install), None)
    phase.preflight = M.Preflight(verdicts=list(verdicts),
                                  seconds=round(time.monotonic() - t0, 2), failure=reason,
                                  leave=leaves[0] if leaves else msgspec.UNSET)
    if leaves and leaves[0].wait and not reason:
        note(f"preflight: probes' leave: {leaves[0].line()}",
             "warning" if leaves[0].note else "info")
    for v in verdicts:
        note(f"preflight {verdict_line(v)}", "error" if reason and v.status in
             FAILING_VERDICTS else "warning" if v.status == EXIT_CRASH else "info")
    if reason:
        raise XschedError(reason, title="XSched preflight failed")
