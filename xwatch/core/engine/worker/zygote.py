"""The fork server: one process per xwatch run that has imported torch and the
models' libraries (and touched no GPU), forking a fresh worker process per workload
and phase, so that a phase does not pay the imports again (issue 41 goal 1: they
were 7-8 s of a 9.7 s phase start on the H100).

Every run is still a fresh process: its own pid, process group, CUDA context,
allocator and caches; only the imported Python modules are shared, copy-on-write.
A worker is forked only where that is the same as starting it: the built-in
worker, under xwatch's own interpreter, with an environment equal to the server's
except the variables read after the imports (``LAZY_ENV``): the worker's own settings
and pipes (``WORKER_ENV``), and those the GPU runtime reads when it initializes
(``worker.GPU_INIT_ENV``): which GPUs it sees (``CUDA_VISIBLE_DEVICES``,
``CUDA_DEVICE_ORDER``, ``HIP_VISIBLE_DEVICES``, ``ROCR_VISIBLE_DEVICES``) and MPS's
client variables. So the copies of a multi-GPU run, each pinned to its GPU by those
variables, are forked like one GPU's copy (issue 51 goal 5): the child sets its
environment (``os.environ``, hence the C library's too) before the worker runs, and
the worker's first GPU call comes after that; its hello reports what the runtime read
(``gpu_init_env``). Anything else that differs is a reason to exec, named in the
launch's ``start`` ("exec (its environment differs from the fork server's in ...)").

A mode's workloads may fork from a server of their own, started with the environment
the mode gives them (XSched's CUDA copies, issue 58 goal 4). That environment names the
mode's fork support (``support``): the variables of the mode read after the fork, which
may differ per copy (``ForkSupport.lazy``), what the server must be after its imports to
fork (``after_imports``) and what a child does before its module runs (``in_child``).
Other interpreters and command workloads are exec'd. The server refuses to fork at all
(and everything is started as before) if its imports left it unsafe to fork: a second
thread, or the CUDA driver already initialized (``fork_hazard``), or its mode's support
says why not.

Two sides in one module:
- the server process, ``python -m xwatch.core.engine.worker.zygote MODEL ...``
  (``serve``): imports, says ``ready``, then forks on request and reports each
  child's exit; a fork request carries the child's module (the worker, or a mode's
  preflight probe, ``FORKABLE``) and its arguments, environment, working folder and
  its stdout, stderr and event pipe (``SCM_RIGHTS``);
- xwatch's side (``ForkServer``, asyncio): starts it, forks through it, and gives
  each child as a ``ForkedProcess`` that the supervisor treats like a subprocess.

A launch that finds a mode's own server still importing waits for it (``ForkServer.wait``,
``ready_for``): the server was started no later than the launch and imports what an
exec'd copy would under the shim, so the fork comes no later than an exec'd copy's
imports would end, without several interpreters importing at once. The wait is bounded
(``IMPORT_WAIT_S`` after the server's start); past it, and whenever the server cannot
fork, the launch is exec'd and says why. The native server's launches do not wait: a
run's first phase is exec'd beside its imports, as before (waiting would fork MPS's
first-phase copies too, which the fake MPS daemon of the tests cannot see as clients: it
reads each process's environment at exec from ``/proc``).

``XWATCH_FORK_SERVER=0`` turns it off (every worker is started by exec, as before).
Messages are JSON datagrams on a ``SOCK_SEQPACKET`` socket pair. A forked worker keeps
the server's command line in ``ps`` (``... -m xwatch.core.engine.worker.zygote``); its
name (``comm``, what ``top`` shows) is ``xwatch-worker``, and the snapshot names its pid
and how it started (``launch.start``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

from xwatch.core.engine.protocol import EVENT_FD_ENV, GATE_ENV
from xwatch.core.engine.worker import CONFIG_ENV, GPU_INIT_ENV
from xwatch.core.engine.worker.smoke import HOLD_ENV
from xwatch.core.engine.worker.support import ForkSupport, named

SOCKET_ENV = "XWATCH_ZYGOTE_FD"
#: set in a forked worker's environment: the fork server's pid
FORKED_ENV = "XWATCH_FORKED_FROM"
#: "0": no fork server, every worker is exec'd
ENABLE_ENV = "XWATCH_FORK_SERVER"
WORKER_MODULE = "xwatch.core.engine.worker"
#: a mode's preflight probe (``worker.smoke``): forked like the workers it speaks for
SMOKE_MODULE = "xwatch.core.engine.worker.smoke"
#: the modules a fork request may name
FORKABLE = (WORKER_MODULE, SMOKE_MODULE)
#: those whose child ends through the C library's ``exit`` once the module returned, as
#: an exec'd process's normal exit does (the others: ``os._exit``, as the worker itself
#: does): a scheduler loaded in the probe then sees it leave as the exec'd probe's did
#: (XSched's ``SchedAgent`` destructor tells xserver, before its channel goes: a process
#: that vanishes while xserver still lists its XQueues can stall it,
#: docs/results/h100x4-2026-11-27.md, part B).
NORMAL_EXIT = frozenset({SMOKE_MODULE})
#: a launch waits for a server still importing until it has imported for this long
IMPORT_WAIT_S = 60.0
IMPORTING = "the fork server is still importing"
#: xwatch's settings and pipes for the worker: read by the worker itself, after the imports
WORKER_ENV = frozenset({CONFIG_ENV, EVENT_FD_ENV, GATE_ENV, "XWATCH_TRACE_DIR", "XWATCH_OWNER",
                        FORKED_ENV, HOLD_ENV})
#: read after the imports (by the worker, or by the GPU runtime as it initializes, which
#: the server never did), so a forked worker may differ from the server in them and in
#: nothing else
LAZY_ENV = WORKER_ENV | GPU_INIT_ENV
MAX_MSG = 1 << 20
try:
    _PRCTL: Any = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # pragma: no cover
    _PRCTL = None


def is_lazy(name: str, supports: tuple[ForkSupport, ...] = ()) -> bool:
    """Whether variable ``name`` is read after the fork (may differ from the server's):
    one of ``LAZY_ENV``, or of its mode's (``supports``: those its environment names)."""
    return name in LAZY_ENV or any(s.lazy(name) for s in supports)


def fixed_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of an environment that must equal the server's for a fork (the mode's
    fork support it names, ``support.SUPPORT_ENV``, among it)."""
    supports = named(env)
    return {k: v for k, v in env.items() if not is_lazy(k, supports)}


def env_differences(server: Mapping[str, str], env: Mapping[str, str]) -> list[str]:
    """The variables that keep a worker with ``env`` from being forked by a server with
    ``server``'s environment, sorted: set in one and not the other, or set to another
    value, outside ``LAZY_ENV``. Empty: a fork is the same as an exec."""
    a, b = fixed_env(server), fixed_env(env)
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


# ------------------------------------------------------------------ the server
def fork_hazard() -> str | None:
    """Why forking this process now would not give a clean worker, else None: a Python
    thread (it may hold a lock the child would inherit held), or a GPU runtime already
    initialized (a CUDA context never survives a fork). A CUDA build of torch loads
    ``libcuda`` at import without initializing it: that is asked of the driver itself
    (``cuDeviceGetCount`` answers CUDA_ERROR_NOT_INITIALIZED before ``cuInit``, and
    initializes nothing). A mode's library loaded by the imports is judged by the mode's
    fork support (``after_imports``).
    A ROCm build is judged by torch's own flag alone (HIP has no such question; not run
    on an AMD GPU). Native thread pools that the imports start
    (numpy's OpenBLAS, one per core) are fork-aware: they shut down before a fork
    (``pthread_atfork``) and start again in the child when used, which is what
    PyTorch's own forked DataLoader workers rely on."""
    import threading

    if threading.active_count() > 1:
        return f"{threading.active_count()} Python threads after the imports"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "torch initialized its GPU runtime during the imports"
    with contextlib.suppress(OSError), open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "/libcuda.so" in path and cuda_initialized(path):
                return f"the CUDA driver was initialized during the imports ({path})"
    return None


CUDA_ERROR_NOT_INITIALIZED = 3


def cuda_initialized(path: str) -> bool:
    """Whether the CUDA driver loaded from ``path`` (already mapped) had ``cuInit``
    called; True where that cannot be asked (a fork is then not risked)."""
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
        count = ctypes.c_int(0)
        rc = lib.cuDeviceGetCount(ctypes.byref(count))
    except (OSError, AttributeError):
        return True
    return bool(rc != CUDA_ERROR_NOT_INITIALIZED)


def native_threads() -> int:
    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1


def _send(sock: socket.socket, msg: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        sock.send(json.dumps(msg).encode())


def _child(req: dict[str, Any], fds: list[int], server: int, close: list[int],
           modes: tuple[tuple[ForkSupport, Any], ...] = ()) -> None:
    """In the forked child: become the worker process, run it, exit (never returns)."""
    rc = 1
    normal_exit = req.get("module") in NORMAL_EXIT
    try:
        signal.set_wakeup_fd(-1)
        for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2,
                  signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.setsid()  # its own session and process group, as an exec'd worker has
        die_with_parent(server)
        if _PRCTL is not None:  # ps shows the server's command line; top shows this
            _PRCTL(15, ctypes.c_char_p(b"xwatch-worker"), 0, 0, 0)  # PR_SET_NAME
        out, err, ev = fds
        for fd in close:
            with contextlib.suppress(OSError):
                os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (null, out, err):
            if fd > 2:
                os.close(fd)
        env = dict(req["env"])
        env[EVENT_FD_ENV] = str(ev)
        env[FORKED_ENV] = str(server)
        os.environ.clear()
        os.environ.update(env)
        if req.get("cwd"):
            os.chdir(req["cwd"])
        for support, state in modes:  # before its first GPU call
            support.in_child(state)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.reconfigure(write_through=True)  # type: ignore[union-attr]
        import runpy

        if req["module"] not in FORKABLE:
            raise SystemExit(f"not a module the fork server forks: {req['module']}")
        sys.argv = [req["module"], *[str(a) for a in req.get("argv") or ()]]
        try:
            runpy.run_module(req["module"], run_name="__main__", alter_sys=True)
            rc = 0
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, int | None):
                print(e.code, file=sys.stderr)
    except BaseException:
        import traceback

        with contextlib.suppress(Exception):
            traceback.print_exc()
        rc = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        if normal_exit:  # atexit handlers and static destructors run (``NORMAL_EXIT``)
            with contextlib.suppress(Exception):
                _exit = ctypes.CDLL(None).exit
                _exit.argtypes = [ctypes.c_int]
                _exit(rc)
        os._exit(rc)


def die_with_parent(parent: int) -> None:
    """PR_SET_PDEATHSIG(SIGKILL), then exit if ``parent`` already died: a forked worker
    dies with the server, the server with xwatch."""
    if _PRCTL is not None:
        _PRCTL(1, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(70)


def serve(sock_fd: int, models: list[str]) -> int:
    """The server's main loop (see the module)."""
    import select

    t0 = time.monotonic()
    sock = socket.socket(fileno=sock_fd)
    try:
        import torch  # noqa: F401

        from xwatch.core.engine.worker.models import import_library

        for m in dict.fromkeys(models):
            import_library(m)
    except BaseException as e:  # an import that fails here fails in the worker too
        _send(sock, {"op": "ready", "pid": os.getpid(), "hazard": f"imports failed: {e!r}"})
        return 1
    hazard = fork_hazard()
    modes = tuple((support, *support.after_imports()) for support in named(os.environ))
    hazard = hazard or next((why for _, _, why in modes if why), None)
    _send(sock, {"op": "ready", "pid": os.getpid(), "hazard": hazard,
                 "seconds": round(time.monotonic() - t0, 3), "threads": native_threads()})
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: set[int] = set()
    me = os.getpid()
    try:
        while True:
            ready, _, _ = select.select([sock.fileno(), wake_r], [], [])
            if wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
            while children:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                children.discard(pid)
                _send(sock, {"op": "exit", "pid": pid, "rc": os.waitstatus_to_exitcode(status)})
            if sock.fileno() not in ready:
                continue
            try:
                data, fds, _, _ = socket.recv_fds(sock, MAX_MSG, 4)
            except OSError:
                return 0
            if not data:
                return 0  # xwatch closed its end: done
            req = json.loads(data)
            if hazard is not None or len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                _send(sock, {"op": "error", "id": req.get("id"),
                             "message": hazard or f"expected 3 descriptors, got {len(fds)}"})
                continue
            pid = os.fork()
            if pid == 0:
                _child(req, fds, me, [sock.fileno(), wake_r, wake_w],
                       tuple((support, state) for support, state, _ in modes))
            for fd in fds:
                os.close(fd)
            children.add(pid)
            _send(sock, {"op": "forked", "id": req.get("id"), "pid": pid})
    finally:
        for pid in children:  # xwatch is gone or closed us: nothing may outlive it
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)


# ------------------------------------------------------------------ xwatch's side
class ForkedProcess:
    """A worker forked by the server, with what the supervisor uses of an
    ``asyncio.subprocess.Process``: ``pid``, ``returncode``, ``wait()``, ``stdout``
    and ``stderr`` (stream readers)."""

    def __init__(self, pid: int, stdout: asyncio.StreamReader,
                 stderr: asyncio.StreamReader, exited: asyncio.Future[int],
                 server: ForkServer | None = None) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self._exited = exited
        self.server = server

    @property
    def lost(self) -> str | None:
        """Why it died with the fork server (the server exited under it), else None."""
        return self.server.lost.get(self.pid) if self.server is not None else None

    @property
    def returncode(self) -> int | None:
        f = self._exited
        return f.result() if f.done() and not f.cancelled() else None

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)


class ForkServer:
    """xwatch's side of the fork server (see the module). ``start`` launches it in the
    background; ``ready_for(argv, env)`` says whether a launch can be forked, once the
    server's imports are done (bounded: see the module); ``spawn`` forks one (None:
    start it by exec instead, ``failure`` says why)."""

    def __init__(self, models: list[str], env: Mapping[str, str], log_path: str,
                 wait: bool = False) -> None:
        self.models = models
        #: launches wait for its imports (``ready_for``; a mode's own server: see the module)
        self.wait = wait
        self.env = fixed_env(env)
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.failure: str | None = None  # why it cannot fork (then exec is used)
        self.ready_s: float | None = None  # its imports' time
        self._ready: asyncio.Future[None] | None = None
        self._started = 0.0  # monotonic, when ``start`` ran
        self._ids = 0
        self._forks: dict[int, asyncio.Future[int]] = {}
        self._exits: dict[int, asyncio.Future[int]] = {}
        #: workers that died with the server (pid -> why)
        self.lost: dict[int, str] = {}

    @staticmethod
    def enabled() -> bool:
        return os.environ.get(ENABLE_ENV, "1") != "0"

    @property
    def label(self) -> str:
        """How a launch forked by this server started (``launch.start``)."""
        return f"fork (fork server pid {self.proc.pid if self.proc else '?'})"

    @property
    def importing(self) -> bool:
        return self._ready is not None and not self._ready.done()

    def why_not(self, argv: tuple[str, ...], env: Mapping[str, str],
                module: str = WORKER_MODULE) -> str | None:
        """Why ``argv`` with ``env`` cannot be forked now, else None (``IMPORTING``
        while the server imports: ``ready_for`` waits for it)."""
        if self.failure is not None:
            return self.failure
        if tuple(argv[1:]) != ("-u", "-m", module) or argv[0] != sys.executable:
            return ("not the built-in worker under xwatch's interpreter" if module ==
                    WORKER_MODULE else f"not {module} under xwatch's interpreter")
        diff = env_differences(self.env, env)
        if diff:
            more = f" and {len(diff) - 4} more" if len(diff) > 4 else ""
            return (f"its environment differs from the fork server's in "
                    f"{', '.join(diff[:4])}{more}")
        if self.importing:
            return IMPORTING
        return None

    async def ready_for(self, argv: tuple[str, ...], env: Mapping[str, str],
                        module: str = WORKER_MODULE) -> str | None:
        """``why_not``, after waiting for the server's imports if they are all that
        keeps the launch from being forked (see the module), at most until
        ``IMPORT_WAIT_S`` after the server's start."""
        why = self.why_not(argv, env, module)
        if why != IMPORTING or self._ready is None or not self.wait:
            return why
        left = self._started + IMPORT_WAIT_S - time.monotonic()
        if left > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._ready), left)
        why = self.why_not(argv, env, module)
        return f"{IMPORTING} after {IMPORT_WAIT_S:g} s" if why == IMPORTING else why

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {**self.env, SOCKET_ENV: str(theirs.fileno())}
        me = os.getpid()
        try:
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", __name__, *self.models], env=env,
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    pass_fds=(theirs.fileno(),), start_new_session=True,
                    preexec_fn=lambda: die_with_parent(me))
        except OSError as e:
            mine.close()
            self.failure = f"the fork server did not start: {e}"
            return
        finally:
            theirs.close()
        self.sock = mine
        mine.setblocking(False)
        self._started = time.monotonic()
        self._ready = loop.create_future()
        loop.add_reader(mine.fileno(), self._on_readable)

    def _on_readable(self) -> None:
        assert self.sock is not None
        while True:
            try:
                data = self.sock.recv(MAX_MSG)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._lost("the fork server exited")
                return
            msg = json.loads(data)
            op = msg.get("op")
            if op == "ready" and self._ready is not None and not self._ready.done():
                self.ready_s = msg.get("seconds")
                if msg.get("hazard"):
                    self.failure = f"the fork server cannot fork: {msg['hazard']}"
                self._ready.set_result(None)
            elif op in ("forked", "error"):
                f = self._forks.pop(int(msg.get("id") or 0), None)
                if f is not None and not f.done():
                    if op == "forked":
                        f.set_result(int(msg["pid"]))
                    else:
                        f.set_exception(OSError(msg.get("message")))
            elif op == "exit":
                pid = int(msg["pid"])
                f = self._exits.get(pid)
                if f is None:
                    f = self._exits[pid] = asyncio.get_running_loop().create_future()
                if not f.done():
                    f.set_result(int(msg["rc"]))

    def _lost(self, why: str) -> None:
        """The server is gone: its children died with it (PR_SET_PDEATHSIG)."""
        if self.sock is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self.sock.fileno())
            self.sock.close()
            self.sock = None
        self.failure = self.failure or why
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(None)
        for f in self._forks.values():
            if not f.done():
                f.set_exception(OSError(why))
        self._forks.clear()
        for pid, f in self._exits.items():
            if not f.done():
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                self.lost[pid] = (f"{why} (pid {self.proc.pid if self.proc else '?'}): the "
                                  "workers forked from it died with it")
                f.set_result(-int(signal.SIGKILL))

    async def spawn(self, env: Mapping[str, str], cwd: str | None, event_w: int,
                    module: str = WORKER_MODULE, argv: tuple[str, ...] = ()
                    ) -> ForkedProcess | None:
        """Fork ``module`` (the built-in worker; the preflight's probe with its
        ``argv``) with ``env`` (its event pipe's write end ``event_w``); None if the
        server cannot (``failure`` says why)."""
        if self._ready is None or not self._ready.done():
            return None  # still importing (``ready_for`` waits for it first)
        if self.failure is not None or self.sock is None:
            return None
        loop = asyncio.get_running_loop()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        self._ids += 1
        fid = self._ids
        fut: asyncio.Future[int] = loop.create_future()
        self._forks[fid] = fut
        req = {"op": "fork", "id": fid, "module": module, "argv": list(argv), "cwd": cwd,
               "env": {k: v for k, v in env.items() if k != EVENT_FD_ENV}}
        try:
            socket.send_fds(self.sock, [json.dumps(req).encode()], [out_w, err_w, event_w])
            pid = await fut
        except OSError as e:
            self._forks.pop(fid, None)
            for fd in (out_r, err_r):
                os.close(fd)
            self.failure = f"the fork server could not fork: {e}"
            return None
        finally:
            os.close(out_w)
            os.close(err_w)
        exited = self._exits.get(pid)
        if exited is None:
            exited = self._exits[pid] = loop.create_future()
        return ForkedProcess(pid, await _reader(out_r), await _reader(err_r), exited, self)

    def close(self) -> None:
        """Stop the server (its children with it); safe to call twice, from anywhere."""
        proc, self.proc = self.proc, None
        if self.sock is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self.sock.fileno())
            self.sock.close()
            self.sock = None
        self.failure = self.failure or "the fork server was stopped"
        if proc is not None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5.0)


async def _reader(fd: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
                                 os.fdopen(fd, "rb", 0))
    return reader


if __name__ == "__main__":
    sys.exit(serve(int(os.environ[SOCKET_ENV]), sys.argv[1:]))
