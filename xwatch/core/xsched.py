"""XSched: install discovery, per-workload environment, the xserver daemon,
its HTTP API, and the evidence that XSched is really scheduling.

Interface: ../shared/reference/xsched-interface.md. xwatch never links XSched;
it starts processes with the shim's environment and talks to ``xserver`` over
HTTP. "Engaged" is decided from evidence, not from settings: the scheduler the
shim reports in the workload's own log, the XQueues xserver lists for the
workload's pid, and whether those queues are ever seen ready/suspended while
the workload completes requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xwatch.core.session import Phase, WorkloadRun
from xwatch.core.supervisor import child_setup
from xwatch.errors import XschedError
from xwatch.scenario import POLICIES, Scenario, Workload

SHIMS = {"cuda": "libshimcuda.so", "hip": "libshimhip.so"}
#: (priority, level, threshold, batch_size) as in XSched's upstream example.
DEFAULTS = {"high": (1, 1, 16, 8), "low": (0, 1, 4, 2)}
SCHED_LINE = re.compile(r"using (global scheduler|local scheduler with policy (\w+)|"
                        r"app-managed scheduler)")
SAMPLES_KEPT = 3600


# ------------------------------------------------------------------ install
@dataclass(frozen=True)
class XschedInstall:
    root: Path
    source: str  # "--xsched", "XSCHED_HOME", "scenario [xsched] root"

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    @property
    def xserver(self) -> Path:
        return self.root / "bin" / "xserver"

    def shim(self, platform: str) -> Path:
        return self.lib / SHIMS[platform]

    def check(self, platforms: set[str]) -> None:
        """Raise XschedError naming the first missing file."""
        looked = f"(XSched root {self.root}, from {self.source})"
        if not self.root.is_dir():
            raise XschedError(f"XSched root {self.root} is not a folder {looked}",
                              title="XSched install not found")
        if not self.lib.is_dir():
            raise XschedError(f"missing {self.lib}/ : an install made with `make cuda|hip "
                              f"INSTALL_PATH=...` has lib/ and bin/ {looked}",
                              title="XSched install incomplete")
        for p in sorted(platforms):
            if not self.shim(p).is_file():
                others = [x for x in SHIMS.values() if (self.lib / x).is_file()]
                hint = f"; found {', '.join(others)} (built for another platform?)" if others \
                    else ""
                raise XschedError(f"missing {self.shim(p)}: the {p.upper()} shim {looked}{hint}",
                                  title="XSched shim missing")
        if not os.access(self.xserver, os.X_OK):
            raise XschedError(f"missing or not executable: {self.xserver} {looked}",
                              title="xserver missing")


def find_install(cli_root: str | None, scen: Scenario | None) -> XschedInstall | None:
    if cli_root:
        return XschedInstall(Path(cli_root).expanduser().resolve(), "--xsched")
    env = os.environ.get("XSCHED_HOME")
    if env:
        return XschedInstall(Path(env).expanduser().resolve(), "XSCHED_HOME")
    if scen is not None and scen.xsched.root:
        base = Path(scen.source).parent if not scen.source.startswith("<") else Path.cwd()
        return XschedInstall((base / scen.xsched.root).expanduser().resolve(),
                             "scenario [xsched] root")
    return None


_PLATFORM_CACHE: dict[str, str] = {}


def detect_platform(python: str) -> str:
    """'hip' when that interpreter's torch is a ROCm build, else 'cuda'."""
    if python in _PLATFORM_CACHE:
        return _PLATFORM_CACHE[python]
    try:
        out = subprocess.run(
            [python, "-c", "import torch; print('hip' if getattr(torch.version, 'hip', None) "
             "else 'cuda')"], capture_output=True, text=True, timeout=120)
        plat = out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout.strip() \
            else "cuda"
    except (OSError, subprocess.TimeoutExpired):
        plat = "cuda"
    _PLATFORM_CACHE[python] = plat if plat in SHIMS else "cuda"
    return _PLATFORM_CACHE[python]


def workload_platform(w: Workload, scen: Scenario) -> str:
    if scen.xsched.platform:
        return w.platform or scen.xsched.platform
    if w.platform:
        return w.platform
    import sys
    return detect_platform(w.python or sys.executable)


def queue_params(w: Workload) -> dict[str, int]:
    """Priority/level/threshold/batch size: scenario overrides, else by priority."""
    high = w.priority == "high" or (isinstance(w.priority, int) and w.priority > 0)
    dp, dl, dt, db = DEFAULTS["high" if high else "low"]
    x = w.xsched
    prio = x.priority if x.priority is not None else (
        w.priority if isinstance(w.priority, int) else dp)
    return {"priority": prio, "level": x.level if x.level is not None else dl,
            "threshold": x.threshold if x.threshold is not None else dt,
            "batch_size": x.batch_size if x.batch_size is not None else db}


def xsched_env(w: Workload, install: XschedInstall, platform: str) -> dict[str, str]:
    """The environment XSched mode adds for workload ``w``."""
    q = queue_params(w)
    env = {
        "XSCHED_SCHEDULER": "GLB",
        "XSCHED_AUTO_XQUEUE": "ON",
        "XSCHED_AUTO_XQUEUE_PRIORITY": str(q["priority"]),
        "XSCHED_AUTO_XQUEUE_LEVEL": str(q["level"]),
        "XSCHED_AUTO_XQUEUE_THRESHOLD": str(q["threshold"]),
        "XSCHED_AUTO_XQUEUE_BATCH_SIZE": str(q["batch_size"]),
        "LD_LIBRARY_PATH": str(install.lib),
    }
    if platform == "hip":
        env["LD_PRELOAD"] = str(install.shim("hip"))
    env.update(w.xsched.env)
    return env


def free_port(preferred: int) -> int:
    """``preferred`` if nothing listens there, else a free port from the OS."""
    for port in (preferred, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise XschedError("no free TCP port for xserver")


# ------------------------------------------------------------------ HTTP client
class XserverClient:
    """Blocking client for xserver's HTTP API (call it from a thread)."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 2.0) -> None:
        self.base = f"http://{host}:{port}"
        self.timeout = timeout

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            with contextlib.suppress(ValueError):
                detail = json.loads(detail).get("error", detail)
            raise XschedError(f"xserver refused {method} {path}: HTTP {e.code}: {detail}",
                              title="xserver refused")
        except (urllib.error.URLError, OSError) as e:
            raise XschedError(f"xserver at {self.base} not reachable: {e}",
                              title="xserver unreachable")
        return json.loads(raw) if raw else {}

    def xqueues(self) -> dict[str, Any]:
        return self._call("GET", "/xqueues")  # type: ignore[no-any-return]

    def get_policy(self) -> int:
        return int(self._call("GET", "/policy")["policy"])

    def set_policy(self, name: str) -> Any:
        if name not in POLICIES:
            raise XschedError(f"unknown policy {name!r}; one of {', '.join(POLICIES)}")
        return self._call("POST", f"/policy?policy={POLICIES[name]}")

    def hint_priority(self, handle: int, priority: int) -> Any:
        return self._call("POST", "/hint", {"hint_type": 1, "handle": handle,
                                            "priority": priority})

    def config(self, handle: int, level: int | None = None, threshold: int | None = None,
               batch_size: int | None = None) -> Any:
        q = {k: v for k, v in (("level", level), ("threshold", threshold),
                               ("batch_size", batch_size)) if v is not None}
        return self._call("POST", f"/config/{handle:x}?" + urllib.parse.urlencode(q))


def validate_config(level: int | None, threshold: int | None, batch_size: int | None,
                    current: dict[str, Any] | None = None) -> None:
    """Refuse values xserver would refuse, before sending (batch < threshold)."""
    cur = current or {}
    lv = level if level is not None else cur.get("level")
    th = threshold if threshold is not None else cur.get("threshold")
    bs = batch_size if batch_size is not None else cur.get("batch_size")
    if lv is not None and not 1 <= int(lv) <= 3:
        raise XschedError(f"level must be 1..3 (got {lv})", title="Invalid XQueue setting")
    if th is not None and int(th) < 1:
        raise XschedError(f"threshold must be >= 1 (got {th})", title="Invalid XQueue setting")
    if bs is not None and int(bs) < 1:
        raise XschedError(f"batch_size must be >= 1 (got {bs})", title="Invalid XQueue setting")
    if th is not None and bs is not None and int(bs) >= int(th):
        raise XschedError(f"batch_size ({bs}) must stay below threshold ({th})",
                          title="Invalid XQueue setting")


# ------------------------------------------------------------------ engagement
@dataclass
class QueueStats:
    """What /xqueues showed for one workload over a phase."""

    samples: int = 0  # polls in which the workload had at least one queue
    polls: int = 0  # polls since the workload started
    ready: int = 0  # polls with >= 1 queue ready
    suspended: int = 0  # polls with >= 1 queue suspended
    queues: int = 0  # queues in the latest poll
    handles: tuple[int, ...] = ()
    latest: tuple[dict[str, Any], ...] = ()


def engagement(mode_on: bool, scheduler: str | None, q: QueueStats, count: int,
               running: bool) -> tuple[str, list[str]]:
    """(status, warnings) for one workload in one XSched phase.

    status: engaged | not-scheduled | no-xqueue | app-managed | local |
    shim-not-loaded | pending.
    """
    if not mode_on:
        return "native", []
    warn: list[str] = []
    if scheduler == "app-managed":
        warn.append("shim reports 'using app-managed scheduler': no cross-process priority "
                    "(XSCHED_SCHEDULER is not GLB)")
        return "app-managed", warn
    if scheduler and scheduler.startswith("local"):
        warn.append(f"shim reports 'using {scheduler}': priorities apply only inside this "
                    "process (XSCHED_POLICY set?)")
        return "local", warn
    if q.samples == 0:
        if not running and count == 0:
            return "pending", warn
        if scheduler is None and q.polls >= 3:
            warn.append("the shim never loaded: no scheduler line in the log and no XQueue "
                        "(LD_PRELOAD/LD_LIBRARY_PATH wrong, or the real driver library found "
                        "first; in containers set XSCHED_CUDA_LIB)")
            return "shim-not-loaded", warn
        if q.polls >= 3:
            warn.append("XSched mode is on but xserver lists no XQueue for this process")
            return "no-xqueue", warn
        return "pending", warn
    if count > 0 and q.ready == 0 and q.polls >= 3:
        warn.append("not scheduled by XSched: requests completed but its XQueues were never "
                    "seen ready. Likely causes: work on the default stream (set stream = "
                    "\"created\"), the shim not intercepting this library, or an app-managed "
                    "scheduler")
        return "not-scheduled", warn
    return "engaged", warn


# ------------------------------------------------------------------ the controller
class XschedController:
    """The XSched mode backend: xserver lifecycle, environments, polling, control."""

    def __init__(self, install: XschedInstall, scenario: Scenario,
                 poll_s: float = 0.5, start_timeout_s: float = 15.0) -> None:
        self.install = install
        self.scenario = scenario
        self.poll_s = poll_s
        self.start_timeout_s = start_timeout_s
        self.policy = scenario.xsched.policy
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.client: XserverClient | None = None
        self.phase: Phase | None = None
        self._poller: asyncio.Task[None] | None = None
        self._readers: list[asyncio.Task[None]] = []
        self.log: deque[str] = deque(maxlen=400)

    # -- mode backend protocol
    async def enter(self, phase: Phase) -> dict[str, dict[str, str]]:
        scen = self.scenario
        plats = {w.name: await asyncio.to_thread(workload_platform, w, scen)
                 for w in scen.workloads}
        self.install.check(set(plats.values()))
        envs = {w.name: xsched_env(w, self.install, plats[w.name]) for w in scen.workloads}
        self.phase = phase
        info: dict[str, Any] = {
            "root": str(self.install.root), "source": self.install.source,
            "policy": self.policy, "platforms": plats, "env": envs,
            "params": {w.name: queue_params(w) for w in scen.workloads},
            "xserver_cmd": None, "port": None, "log_tail": [], "samples": [],
            "workloads": {}, "changes": [],
        }
        phase.extra["xsched"] = info
        phase.extra.setdefault("annotations", [])
        phase.line_watchers.append(self._watch_line)
        await self._start_xserver(info)
        self._poller = asyncio.create_task(self._poll_loop(phase))
        return envs

    async def leave(self, phase: Phase) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._poller
            self._poller = None
            self._refresh_engagement(phase)
        await self._stop_xserver()
        info = phase.extra.get("xsched")
        if info is not None:
            info["log_tail"] = list(self.log)[-60:]

    def kill_now(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, 9)

    # -- xserver
    async def _start_xserver(self, info: dict[str, Any]) -> None:
        requested = self.scenario.xsched.port
        port = free_port(requested)
        if port != requested:
            self._note(f"port {requested} is taken (another xserver?); using {port}")
        argv = [str(self.install.xserver), self.policy, str(port)]
        info["xserver_cmd"] = argv
        info["port"] = port
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
        loop = asyncio.get_running_loop()
        assert self.proc.stdout is not None
        self._readers = [asyncio.create_task(self._read_log(loop))]
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
                await asyncio.to_thread(self.client.get_policy)
                break
            except XschedError:
                if time.monotonic() > deadline:
                    await self._stop_xserver()
                    raise XschedError(f"xserver did not answer on port {port} within "
                                      f"{self.start_timeout_s:.0f} s",
                                      title="xserver did not start")
                await asyncio.sleep(0.1)

    async def _read_log(self, loop: asyncio.AbstractEventLoop) -> None:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        stream = proc.stdout
        while True:
            raw = await asyncio.to_thread(stream.readline)
            if not raw:
                return
            line = raw.decode("utf-8", "replace").rstrip()
            self.log.append(line)
            if self.phase is not None:
                self.phase.session.log("xserver", "stdout", line)

    async def _stop_xserver(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for sig, wait in ((2, 3.0), (15, 2.0), (9, 5.0)):  # SIGINT, SIGTERM, SIGKILL
            if proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            end = time.monotonic() + wait
            while proc.poll() is None and time.monotonic() < end:
                await asyncio.sleep(0.05)
        for t in self._readers:
            with contextlib.suppress(asyncio.TimeoutError, Exception):
                await asyncio.wait_for(t, 2.0)
        self._note(f"xserver stopped (exit {proc.returncode})")

    def _note(self, text: str, level: str = "info") -> None:
        if self.phase is not None:
            self.phase.session.log("xwatch", level, f"xsched: {text}")

    # -- evidence
    def _watch_line(self, run: WorkloadRun, stream: str, line: str) -> None:
        m = SCHED_LINE.search(line)
        if not m:
            return
        what = m.group(1)
        sched = "global" if what.startswith("global") else \
            f"local {m.group(2)}" if what.startswith("local") else "app-managed"
        info = self._wl_info(run.phase, run.spec.name)
        info["scheduler"] = sched
        info["scheduler_line"] = line.strip()[:300]

    def _wl_info(self, phase: Phase, name: str) -> dict[str, Any]:
        info = phase.extra["xsched"]["workloads"]
        if name not in info:
            info[name] = {"scheduler": None, "scheduler_line": None, "status": "pending",
                          "warnings": [], "stats": QueueStats().__dict__.copy(),
                          "queues": [], "lane": []}
        return info[name]  # type: ignore[no-any-return]

    async def _poll_loop(self, phase: Phase) -> None:
        assert self.client is not None
        stats: dict[str, QueueStats] = {w.name: QueueStats() for w in self.scenario.workloads}
        self._stats = stats
        unreachable = False
        while True:
            t0 = time.monotonic()
            try:
                data = await asyncio.to_thread(self.client.xqueues)
                self._ingest(phase, data, stats, t0)
                unreachable = False
            except XschedError as e:  # xserver stopped answering: say so once per outage
                if not unreachable:
                    self._note(f"/xqueues poll failed: {e}", "warning")
                unreachable = True
            except Exception as e:  # a malformed answer is recorded, not fatal
                self._note(f"/xqueues answer not understood: {e!r}", "warning")
            self._refresh_engagement(phase)
            await asyncio.sleep(max(0.05, self.poll_s - (time.monotonic() - t0)))

    def _ingest(self, phase: Phase, data: dict[str, Any], stats: dict[str, QueueStats],
                t: float) -> None:
        queues = data.get("xqueues") or []
        by_pid: dict[int, list[dict[str, Any]]] = {}
        for q in queues:
            by_pid.setdefault(int(q.get("pid", -1)), []).append(q)
        sample: dict[str, Any] = {"t": round(t, 4), "workloads": {}}
        for name, run in phase.runs.items():
            if run.pid is None:
                continue
            st = stats[name]
            mine = by_pid.get(run.pid, [])
            alive = run.state not in ("finished", "failed", "stopped")
            if alive:
                st.polls += 1
            ready = sum(1 for q in mine if q.get("ready"))
            susp = sum(1 for q in mine if q.get("suspended"))
            if mine:
                st.samples += 1
                st.ready += 1 if ready else 0
                st.suspended += 1 if susp else 0
            st.queues = len(mine)
            st.handles = tuple(int(q["handle"]) for q in mine if "handle" in q)
            st.latest = tuple(mine[:64])
            sample["workloads"][name] = {"queues": len(mine), "ready": ready, "suspended": susp}
            info = self._wl_info(phase, name)
            lane = "suspended" if susp else "running" if ready else "idle" if mine else "none"
            info["lane"].append([round(t - phase.t_start, 2), lane])
            if len(info["lane"]) > SAMPLES_KEPT:
                del info["lane"][: len(info["lane"]) - SAMPLES_KEPT]
        samples = phase.extra["xsched"]["samples"]
        samples.append(sample)
        if len(samples) > SAMPLES_KEPT:
            del samples[: len(samples) - SAMPLES_KEPT]

    def _refresh_engagement(self, phase: Phase) -> None:
        stats = getattr(self, "_stats", {})
        for name, run in phase.runs.items():
            info = self._wl_info(phase, name)
            st = stats.get(name, QueueStats())
            status, warns = engagement(True, info["scheduler"], st, run.rec.count,
                                       run.state == "running")
            if status != info["status"] and warns:
                for w in warns:
                    self._note(f"{name}: {w}", "warning")
            info["status"], info["warnings"] = status, warns
            info["stats"] = {k: v for k, v in st.__dict__.items() if k != "latest"}
            info["stats"]["handles"] = list(st.handles)
            info["queues"] = [dict(q) for q in st.latest]

    # -- live control
    def _handles(self, name: str) -> tuple[int, ...]:
        st = getattr(self, "_stats", {}).get(name)
        return st.handles if st else ()

    def _annotate(self, text: str, **data: Any) -> None:
        if self.phase is None:
            return
        note = {"t": round(time.monotonic() - self.phase.t_start, 3), "text": text, **data}
        self.phase.extra.setdefault("annotations", []).append(note)
        self.phase.extra["xsched"]["changes"].append(note)
        self._note(text)

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

    async def set_policy(self, name: str) -> None:
        if self.client is None:
            raise XschedError("XSched mode is not running")
        await asyncio.to_thread(self.client.set_policy, name)
        self.policy = name
        if self.phase is not None:
            self.phase.extra["xsched"]["policy"] = name
        self._annotate(f"policy -> {name}", policy=name)

    async def configure(self, name: str, level: int | None = None,
                        threshold: int | None = None, batch_size: int | None = None) -> int:
        """POST /config/<hex handle> for every queue of ``name`` (validated first)."""
        if self.client is None:
            raise XschedError("XSched mode is not running")
        st = getattr(self, "_stats", {}).get(name)
        if not st or not st.handles:
            raise XschedError(f"{name} has no XQueue yet: nothing to configure")
        current = dict(st.latest[0]) if st.latest else None
        validate_config(level, threshold, batch_size, current)
        for h in st.handles:
            await asyncio.to_thread(self.client.config, h, level, threshold, batch_size)
        vals = {k: v for k, v in (("level", level), ("threshold", threshold),
                                  ("batch_size", batch_size)) if v is not None}
        self._annotate(f"{name}: " + ", ".join(f"{k}={v}" for k, v in vals.items()),
                       workload=name, handles=[f"{h:x}" for h in st.handles], **vals)
        return len(st.handles)


def backend_from_args(root: str | None, scen: Scenario) -> XschedController | None:
    """The XSched backend if an install is configured (validated when a phase starts)."""
    inst = find_install(root, scen)
    if inst is None:
        return None
    if not inst.root.is_dir():
        raise XschedError(f"XSched root {inst.root} (from {inst.source}) is not a folder",
                          title="XSched install not found")
    return XschedController(inst, scen)
