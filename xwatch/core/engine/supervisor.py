"""Starts, watches and stops workload processes (asyncio, one event loop).

Each workload runs in its own process group with its own environment; its
events arrive on a dedicated pipe (fd number in ``XWATCH_EVENT_FD``), its
stdout/stderr are captured separately as its log. A command's stdout can be a
pseudo-terminal (``stdout = "pty"``): C stdio then flushes every line, so
latencies printed with ``printf`` arrive live instead of in 4 KiB blocks. Stopping is SIGINT, then
SIGTERM, then SIGKILL to the whole group. Children never outlive xwatch: they
get ``PR_SET_PDEATHSIG`` (Linux), the built-in worker also watches its parent
pid, and an ``atexit`` hook kills whatever is left.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import errno
import math
import os
import re
import signal
import sys
import threading
import time
import tty
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from xwatch.core.engine.launch import LaunchSpec
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.workload import WorkloadRun
from xwatch.core.engine.protocol import EVENT_FD_ENV, PIPE_BYTES, LineParser, grow_pipe, next_window
from xwatch.core.engine.snapshot import FAILED, PENDING, STARTING, STOPPED, TERMINAL
from xwatch.core.engine.strays import kill_strays
from xwatch.core.engine.worker.zygote import ForkedProcess, ForkServer, fixed_env
from xwatch.core.model.events import event_of

MAX_LOG_LINE = 2000
_PR_SET_PDEATHSIG = 1

try:
    _libc: Any = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
    _prctl = _libc.prctl if _libc is not None else None
except (OSError, AttributeError):  # pragma: no cover
    _prctl = None


#: the stop requests a child must hear (``ManagedProcess.stop``): an ignored disposition
#: survives exec, so one xwatch inherited (a shell's ``cmd &`` ignores SIGINT) is undone
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def child_setup(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A ``preexec_fn``: die with ``sig`` when the parent dies (also across exec), and
    hear SIGINT and SIGTERM even where xwatch was started with them ignored (else an
    exec'd worker ignored the stop request and was stopped by SIGTERM 3 s later)."""
    parent = os.getpid()

    def setup() -> None:
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # parent died before prctl took effect
            os._exit(70)
        for s in STOP_SIGNALS:
            if signal.getsignal(s) == signal.SIG_IGN:
                signal.signal(s, signal.SIG_DFL)

    return setup


_LIVE_GROUPS: weakref.WeakSet[ManagedProcess] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    """Last line of defence when xwatch exits without a clean stop."""
    for mp in list(_LIVE_GROUPS):
        mp.kill_now()
    kill_strays()


#: how often a running workload's return code is looked at, besides ``Process.wait``
EXIT_POLL_S = 2.0
class _Ticket:
    """A flush booked on the grid; ``cancel`` as an ``asyncio.TimerHandle``."""

    __slots__ = ("cancelled", "fn")

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _FlushGrid:
    """Flushes of slow event pipes, lined up on a ``GRID_S`` grid of the loop's clock:
    sixteen workloads at 20-50 req/s make one wake-up per grid step that reads all of
    them on warm caches, instead of sixteen wake-ups on cold ones."""

    GRID_S = 0.25
    _grids: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _FlushGrid] = \
        weakref.WeakKeyDictionary()

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.slots: dict[float, list[_Ticket]] = {}

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> _FlushGrid:
        grid = cls._grids.get(loop)
        if grid is None:
            grid = cls._grids[loop] = cls(loop)
        return grid

    def call_later(self, delay: float, fn: Callable[[], None]) -> _Ticket:
        """Call ``fn`` at the first grid point at least ``delay`` from now."""
        at = math.ceil((self.loop.time() + delay) / self.GRID_S) * self.GRID_S
        ticket = _Ticket(fn)
        slot = self.slots.get(at)
        if slot is None:
            slot = self.slots[at] = []
            self.loop.call_at(at, self._fire, at)
        slot.append(ticket)
        return ticket

    def _fire(self, at: float) -> None:
        for ticket in self.slots.pop(at, ()):
            if not ticket.cancelled:
                ticket.fn()


class _EventPipe(asyncio.Protocol):
    """Reads a workload's event pipe: a read is delivered at once, then the transport
    pauses and the kernel's pipe buffer gathers what the workload writes meanwhile. At
    the end of the pause the pipe is read right there (``os.read``, non-blocking): if
    it held anything, that is delivered and the next pause starts; only a quiet pipe
    goes back to waiting for the loop to wake it. A steady producer is thus read once
    per pause, never woken for, and an event waits at most one pause.

    The pause adapts to the rate: long enough that a read carries several events (up to
    ``MAX_COALESCE_S``: at 20 req/s one read per 20 requests instead of one per
    request), short enough that the pipe fills to at most an eighth of its capacity
    (``MIN_COALESCE_S`` at the fastest), so a writer never waits on a full pipe. Event
    times come from the workload: this changes no number, only when the screen sees
    them (the table redraws every 2 s). Before the watchdog calls a workload stalled,
    it reads what is waiting (``WorkloadRun.deliver_pending``).

    Why a second: each wake-up of a mostly idle process runs on cold caches, about
    0.2 ms for a read of five events here; sixteen paced workloads at 4 wake-ups a
    second were a third of the dashboard's cost. Pauses of a quarter second or more
    end on a shared grid (``_FlushGrid``): one wake-up reads every slow pipe."""

    MIN_COALESCE_S = 0.005
    MAX_COALESCE_S = 1.0  # a writer under 1 MiB/s (about 10,000 events/s) never waits

    def __init__(self, mp: ManagedProcess, capacity: int = 1 << 16) -> None:
        self.mp = mp
        self.parser = LineParser()
        self.loop = asyncio.get_running_loop()
        self.closed = self.loop.create_future()
        self._timer: asyncio.Handle | _Ticket | None = None
        self.transport: asyncio.ReadTransport | None = None
        self._fd = -1
        self.capacity = capacity
        # a pipe that could not grow gets proportionally shorter pauses
        self.max_window = self.MAX_COALESCE_S * min(1.0, capacity / PIPE_BYTES)
        self.window = self.MIN_COALESCE_S  # the next pause
        self._last_read = self.loop.time()
        self._thread = threading.get_ident()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        pipe = transport.get_extra_info("pipe")
        with contextlib.suppress(AttributeError, ValueError, OSError):
            self._fd = pipe.fileno()

    def data_received(self, data: bytes) -> None:
        self._take(data)
        self._pause(len(data))

    def _pause(self, got: int) -> None:
        """Pause after a read of ``got`` bytes; after an eighth of the pipe or more (a
        backlog) only for one turn of the loop, so a flood is drained without waits."""
        transport = self.transport
        if self._timer is not None or transport is None or transport.is_closing():
            return
        transport.pause_reading()
        if got >= self.capacity // 8:
            self.window = self.MIN_COALESCE_S
            self._timer = self.loop.call_soon(self._poll)
        elif self.window >= _FlushGrid.GRID_S:
            self._timer = _FlushGrid.of(self.loop).call_later(self.window, self._poll)
        else:
            self._timer = self.loop.call_later(self.window, self._poll)

    def _poll(self) -> None:
        """The end of a pause: what the pipe holds now is read and delivered here; a
        quiet pipe (or its end) is left to the loop again."""
        self._timer = None
        data = self._read_now()
        if data:
            self._take(data)
            self._pause(len(data))
        elif self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()  # the next write (or the end) wakes us

    def _read_now(self) -> bytes:
        """Whatever the pipe holds, without blocking (up to its capacity)."""
        if self._fd < 0 or self.transport is None or self.transport.is_closing():
            return b""
        chunks: list[bytes] = []
        got = 0
        while got < self.capacity:
            try:
                b = os.read(self._fd, self.capacity)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:  # the transport sees the error once resumed
                break
            if not b:  # the end: the transport sees it once resumed
                break
            chunks.append(b)
            got += len(b)
        return b"".join(chunks)

    def _take(self, data: bytes) -> None:
        now = self.loop.time()
        # the pause at most doubles from one read to the next: a workload that starts
        # slowly (its hello, a model load) and then floods finds short pauses first,
        # instead of a full pipe and a blocked write
        self.window = min(2 * self.window,
                          next_window(len(data), now - self._last_read, self.capacity,
                                      self.MIN_COALESCE_S, self.max_window))
        self._last_read = now
        self._deliver(self.parser.feed(data))

    def deliver_now(self) -> None:
        """Read and deliver what the pipe holds, now (the stall watchdog, a snapshot).
        Only on the loop's own thread: the parser keeps partial lines between reads."""
        if threading.get_ident() != self._thread:
            return
        data = self._read_now()
        if data:
            self._take(data)

    def drain(self) -> None:
        """The workload exited: deliver what is left now and stop pausing, so the end
        of the pipe is seen at once."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.deliver_now()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def _deliver(self, res: Any) -> None:
        run = self.mp.run
        try:
            if res.events:
                run.on_events(res.events)
            if res.malformed:
                run.on_malformed(res.malformed)
        except Exception as e:  # a bug in one handler must not kill the reader
            run.phase.session.log("xwatch", "error", f"{run.spec.name}: event handling: {e!r}")

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._deliver(self.parser.close())
        if not self.closed.done():
            self.closed.set_result(None)
        proc, run = self.mp.proc, self.mp.run
        if proc is not None and proc.returncode is None and not run.stop_requested:
            run.pipe_closed_at = round(time.monotonic() - run.phase.t_start, 3)
            run.phase.session.log("xwatch", "warning", f"{run.spec.name}: closed its event "
                                  f"pipe (XWATCH_EVENT_FD) {run.pipe_closed_at:.1f} s into the "
                                  "phase while still running: no further request can be seen")


class _PtyReaderProtocol(asyncio.StreamReaderProtocol):
    """A pty master reports the end of the child's output as EIO: make it EOF, so
    that the lines still buffered are read rather than lost."""

    def connection_lost(self, exc: Exception | None) -> None:
        if isinstance(exc, OSError) and exc.errno == errno.EIO:
            exc = None
        super().connection_lost(exc)


async def _pty_reader(master: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20, loop=loop)
    await loop.connect_read_pipe(lambda: _PtyReaderProtocol(reader, loop=loop),
                                 os.fdopen(master, "rb", 0))
    return reader


class ManagedProcess:
    """One workload process and the tasks that read its pipes."""

    def __init__(self, run: WorkloadRun, spec: LaunchSpec,
                 forkserver: ForkServer | None = None) -> None:
        self.run = run
        self.spec = spec
        self.forkserver = forkserver
        self.proc: asyncio.subprocess.Process | ForkedProcess | None = None
        self.pgid: int | None = None
        self.done = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []
        self._waiter: asyncio.Future[int] | None = None  # proc.wait(), started once
        self._regex = re.compile(spec.regex) if spec.regex else None
        self._planned_end = False

    async def start(self) -> None:
        run = self.run
        run.state = STARTING
        run.launch = self.spec.as_record()
        run.stage("spawn")
        fs = self.forkserver
        if fs is not None and self.spec.stdout != "pty":  # XSched's server, importing,
            await fs.ready_for(self.spec.argv, self.spec.env)  # is waited for (``zygote``)
            if run.stop_requested:  # stopped meanwhile: nothing is started
                run.state = STOPPED
                self.done.set()
                return
        r, w = os.pipe()
        capacity = grow_pipe(r)
        env = dict(self.spec.env)
        env[EVENT_FD_ENV] = str(w)
        master: int | None = None
        stdout: int = asyncio.subprocess.PIPE
        if self.spec.stdout == "pty":
            master, slave = os.openpty()
            tty.setraw(slave)  # no echo, no "\n" -> "\r\n"
            stdout = slave
        why = fs.why_not(self.spec.argv, env) if fs is not None else None
        if fs is not None and why is None and master is None:
            forked = await fs.spawn(env, self.spec.cwd, w)
            if forked is not None:
                os.close(w)
                run.launch = msgspec.structs.replace(run.launch, start=fs.label)
                self.proc = forked
                await self._started(r, capacity, None)
                return
            why = fs.failure
        run.launch = msgspec.structs.replace(
            run.launch, start="exec" + (f" ({why})" if fs is not None and why else ""))
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.spec.argv, env=env, cwd=self.spec.cwd,
                stdin=asyncio.subprocess.DEVNULL, stdout=stdout,
                stderr=asyncio.subprocess.PIPE, pass_fds=(w,), start_new_session=True,
                preexec_fn=child_setup(), limit=1 << 20)
        except OSError as e:
            os.close(r)
            if master is not None:
                os.close(master)
            run.on_spawn_error(f"cannot start {self.spec.argv[0]!r}: {e.strerror or e}")
            self.done.set()
            return
        finally:
            for fd in (w, stdout if master is not None else -1):
                with contextlib.suppress(OSError):
                    if fd >= 0:
                        os.close(fd)
        await self._started(r, capacity, master)

    async def _started(self, r: int, capacity: int, master: int | None) -> None:
        """The process is there: read its event pipe (``r``), stdout and stderr."""
        run = self.run
        assert self.proc is not None
        run.stage("spawned")
        self.pgid = self.proc.pid
        run.pid = self.proc.pid
        _LIVE_GROUPS.add(self)
        loop = asyncio.get_running_loop()
        _, proto = await loop.connect_read_pipe(lambda: _EventPipe(self, capacity), os.fdopen(r, "rb", 0))
        run.deliver_pending = proto.deliver_now
        out = await _pty_reader(master) if master is not None else self.proc.stdout
        assert out is not None and self.proc.stderr is not None
        self._tasks = [
            asyncio.create_task(self._read_lines(out, "stdout")),
            asyncio.create_task(self._read_lines(self.proc.stderr, "stderr")),
        ]
        self._tasks.append(asyncio.create_task(self._watch(proto)))
        run.phase.session.log("xwatch", "info", f"{run.spec.name}: started pid {self.proc.pid}")

    async def _read_lines(self, stream: asyncio.StreamReader, name: str) -> None:
        run = self.run
        rx = self._regex if name == "stdout" else None
        while True:
            try:
                raw = await stream.readline()
            except (ValueError, asyncio.LimitOverrunError):
                raw = b"<line too long, skipped>\n"
                with contextlib.suppress(Exception):
                    await stream.read(1 << 20)
            if not raw:
                return
            line = raw.decode("utf-8", "replace").rstrip("\r\n")[:MAX_LOG_LINE]
            try:
                if rx is not None:
                    m = rx.search(line)
                    if m:  # a request event, through the pipe's own checks
                        try:
                            ev = event_of({"latency_ms": float(m.group("latency_ms")),
                                           "t": time.monotonic()})
                        except (TypeError, ValueError):
                            ev = None
                        if ev is None:
                            run.on_malformed([line])
                        else:
                            run.on_events([ev])
                run.on_output(name, line)
            except Exception as e:
                run.phase.session.log("xwatch", "error", f"{run.spec.name}: log handling: {e!r}")

    async def _wait_exit(self, timeout: float | None = None) -> int | None:
        """The exit status once the process has exited (None: still running after
        ``timeout``). ``Process.wait()`` alone also waits for stdout/stderr to close,
        which never happens while a child the workload left behind holds them: the
        return code is looked at every ``EXIT_POLL_S`` too (a look costs about 70 us
        on the event loop: sixteen workloads at 2 Hz were 2 ms of every second)."""
        assert self.proc is not None
        end = None if timeout is None else time.monotonic() + timeout
        if self._waiter is None:
            self._waiter = asyncio.ensure_future(self.proc.wait())
        while self.proc.returncode is None:
            step = EXIT_POLL_S if end is None else 0.5
            left = step if end is None else min(step, end - time.monotonic())
            if left <= 0:
                return None
            await asyncio.wait({self._waiter}, timeout=left)
        return self.proc.returncode

    async def _watch(self, proto: _EventPipe) -> None:
        assert self.proc is not None
        rc = await self._wait_exit()
        assert rc is not None
        proto.drain()
        # the pipes close when the child exits; give readers a moment to drain
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(proto.closed, *self._tasks[:2]), timeout=2.0)
        code, sig = (None, -rc) if rc < 0 else (rc, None)
        lost = self.proc.lost if isinstance(self.proc, ForkedProcess) else None
        if lost:
            self.run.phase.session.log("xwatch", "error", f"{self.spec.name}: {lost}")
        self.run.on_exit(code, sig, planned_end=self._planned_end)
        _LIVE_GROUPS.discard(self)
        # the group may still hold grandchildren of an external command
        self._signal_group(signal.SIGKILL)
        self.done.set()

    def _signal_group(self, sig: int) -> bool:
        if self.pgid is None:
            return False
        try:
            os.killpg(self.pgid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    async def stop(self, planned_end: bool, grace: tuple[float, float] = (3.0, 2.0)) -> None:
        self._planned_end = planned_end
        self.run.stop_requested = True
        if self.proc is None or self.done.is_set():
            return
        self.run.stage("stop")
        for sig, wait in ((signal.SIGINT, grace[0]), (signal.SIGTERM, grace[1]),
                          (signal.SIGKILL, 5.0)):
            if self.proc.returncode is not None:
                break
            self._signal_group(sig)
            await self._wait_exit(wait)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.done.wait(), timeout=5.0)

    def kill_now(self) -> None:
        """Synchronous SIGKILL of the whole group (atexit / emergencies)."""
        self._signal_group(signal.SIGKILL)


class Supervisor:
    """Runs one phase's workload set at a time."""

    def __init__(self, grace: tuple[float, float] = (3.0, 2.0)) -> None:
        self.grace = grace
        #: started by ``warm_forkserver``, one per environment (the native one, XSched's
        #: shim environment); kept across phases, stopped by ``kill_now``
        self.forkservers: list[ForkServer] = []
        self.procs: dict[str, ManagedProcess] = {}
        self._starters: list[asyncio.Task[None]] = []
        self.phase: Phase | None = None

    async def start(self, phase: Phase, specs: list[LaunchSpec]) -> None:
        """Start every workload of ``phase`` (each after its own delay)."""
        self.phase = phase
        self.procs = {}
        self._starters = []
        for spec in specs:
            mp = ManagedProcess(phase.runs[spec.name], spec, self.server_for(spec.env))
            self.procs[spec.name] = mp
            if spec.delay_s > 0:
                self._starters.append(asyncio.create_task(self._delayed(mp)))
            else:
                await mp.start()

    async def _delayed(self, mp: ManagedProcess) -> None:
        await asyncio.sleep(mp.spec.delay_s)
        if not mp.run.stop_requested:
            await mp.start()

    def all_exited(self) -> bool:
        return bool(self.procs) and all(
            mp.run.state in TERMINAL for mp in self.procs.values())

    async def wait_all(self) -> None:
        for mp in self.procs.values():
            if mp.run.state != PENDING or mp.proc is not None:
                await mp.done.wait()

    async def stop(self, planned_end: bool = False) -> None:
        """Stop every workload of the current phase (in parallel), then whatever they
        left behind outside their process groups."""
        for t in self._starters:
            t.cancel()
        for mp in self.procs.values():
            if mp.proc is None and mp.run.state in (PENDING, STARTING):
                mp.run.stop_requested = True
                mp.run.state = STOPPED
        await asyncio.gather(*(mp.stop(planned_end, self.grace) for mp in self.procs.values()),
                             return_exceptions=True)
        strays = await asyncio.to_thread(kill_strays)
        if strays and self.phase is not None:
            self.phase.session.log("xwatch", "warning", "killed process(es) a workload left "
                                   "behind outside its process group: " + "; ".join(strays))

    @property
    def forkserver(self) -> ForkServer | None:
        """The first fork server started (None: none)."""
        return self.forkservers[0] if self.forkservers else None

    def server_for(self, env: Mapping[str, str]) -> ForkServer | None:
        """The fork server whose environment is ``env``'s (else the first, whose
        ``why_not`` then names the difference)."""
        fixed = fixed_env(env)
        return next((fs for fs in self.forkservers if fs.env == fixed), self.forkserver)

    MAX_FORKSERVERS = 3  # native and XSched's shim environment need two

    def warm_forkserver(self, spec: LaunchSpec, models: list[str], log_path: str,
                        wait: bool = False) -> None:
        """Start a fork server (``worker.zygote``) in the background with ``spec``'s
        environment and the ``models``' libraries imported, once per environment, if it
        is enabled and ``spec`` is the built-in worker under xwatch's interpreter;
        ``wait``: launches wait for its imports rather than exec (XSched's)."""
        if not models or not ForkServer.enabled() or \
                len(self.forkservers) >= self.MAX_FORKSERVERS:
            return
        fixed = fixed_env(spec.env)
        if any(fs.env == fixed for fs in self.forkservers):
            return
        if self.forkservers:  # forkserver.log, forkserver-2.log, ...
            root, ext = os.path.splitext(log_path)
            log_path = f"{root}-{len(self.forkservers) + 1}{ext}"
        fs = ForkServer(list(dict.fromkeys(models)), spec.env, log_path, wait)
        if fs.why_not(spec.argv, spec.env) is None:
            fs.start()
            self.forkservers.append(fs)

    def kill_now(self) -> None:
        for mp in self.procs.values():
            mp.kill_now()
        for fs in self.forkservers:
            fs.close()
        kill_strays()

    @property
    def failed(self) -> list[WorkloadRun]:
        return [mp.run for mp in self.procs.values() if mp.run.state == FAILED]
