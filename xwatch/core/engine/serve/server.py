"""The server's lifecycle, as the load generator runs it: the port (``port = "auto"``: a
free one chosen now and put where the command says ``{port}``) and its check before the
start, the start (its own stderr tail kept for failures), readiness (a phase that ends
first is told "not ready after N s (...)"; the listener checked to be no other xwatch
workload's), its death while it is measured, and the stop of its whole process tree.
``Fatal`` and ``Stopped`` are how the generator's parts end the workload.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import dataclasses
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from xwatch.core.engine.causes import collapse, times
from xwatch.core.engine.protocol import GATE_ENV
from xwatch.core.engine.serve.config import ServeConfig
from xwatch.core.engine.serve.ports import (
    describe_pid,
    fill_port,
    free_port,
    listener_pid,
    owned_by_xwatch,
    port_holder,
)
from xwatch.core.procs import signal_each, tree

HOST = "127.0.0.1"
#: the server's stderr lines a failure quotes
TAIL_LINES = 12
#: how long a stopped server may take to exit before its tree is killed
STOP_GRACE_S = 2.0
#: readiness is asked this often
READY_POLL_S = 0.2
_PR_SET_PDEATHSIG = 1


class Fatal(Exception):
    """The workload fails: ``message`` names why; ``code`` is the generator's exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Stopped(Exception):
    """xwatch stopped the workload before it measured (the server still loading); its
    message, if any, says how far the server got ("not ready after N s (...)")."""


def with_port(cfg: ServeConfig) -> ServeConfig:
    """``cfg`` with its port chosen: port 0 (``port = "auto"``) becomes a free port, put
    where the server's command says ``{port}``."""
    if cfg.port:
        return cfg
    port = free_port()
    return dataclasses.replace(cfg, port=port, port_auto=True,
                               server=fill_port(cfg.server, port))


def _server_preexec() -> None:
    """The server dies with the generator (PDEATHSIG) and hears SIGINT/SIGTERM."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR2})


class Server:
    """One server process: started, asked for readiness, watched, stopped."""

    def __init__(self, cfg: ServeConfig) -> None:
        self.cfg = cfg = with_port(cfg)
        self.base = f"http://{HOST}:{cfg.port}"
        #: its last stderr lines, a line repeated in a row kept once with its count
        self.tail: collections.deque[list[Any]] = collections.deque(maxlen=TAIL_LINES)
        self.proc: asyncio.subprocess.Process | None = None
        self._pumps: list[asyncio.Task[None]] = []

    def last_lines(self) -> str:
        lines = collapse(ln + times(n) for ln, n in self.tail if ln.strip())
        return ("; its last stderr lines:\n  " + "\n  ".join(lines)) if lines \
            else "; it wrote nothing to stderr"

    def died(self, when: str) -> Fatal:
        assert self.proc is not None and self.proc.returncode is not None
        rc = self.proc.returncode
        how = f"was killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"
        return Fatal(f"the server (pid {self.proc.pid}) {how} {when}{self.last_lines()}", 3)

    def _keep(self, line: str) -> None:
        """A stderr line into the tail; the same as the last one counts it."""
        if self.tail and self.tail[-1][0] == line:
            self.tail[-1][1] += 1
        else:
            self.tail.append([line, 1])

    async def _pump(self, stream: asyncio.StreamReader, out: Any, keep: bool) -> None:
        """The server's output passed through as it comes (chunks, not lines: a progress
        bar redrawn with carriage returns is no line); ``keep``: its last lines kept."""
        partial = b""
        while True:
            data = await stream.read(1 << 16)
            if not data:
                if keep and partial.strip():
                    self._keep(partial.decode("utf-8", "replace").strip()[:300])
                return
            if keep:
                *lines, partial = (partial + data).replace(b"\r", b"\n").split(b"\n")
                partial = partial[-4096:]
                for ln in lines:
                    if ln.strip():
                        self._keep(ln.decode("utf-8", "replace").rstrip()[:300])
            with contextlib.suppress(OSError, ValueError):
                out.buffer.write(data)
                out.buffer.flush()

    async def start_server(self) -> None:
        cfg = self.cfg
        holder = port_holder(cfg.port)
        if holder is not None:
            if cfg.port_auto:
                raise Fatal(self._raced(holder), 5)
            raise Fatal(f"port {cfg.port} is already taken by {holder} before the server "
                        f"started: free it or set the workload's 'port' (and the server's) "
                        "to a free one", 5)
        env = dict(os.environ)
        for k in ("XWATCH_EVENT_FD", "XWATCH_SERVE_CONFIG", GATE_ENV):  # the generator's own
            env.pop(k, None)
        if cfg.preload:
            env["LD_PRELOAD"] = cfg.preload
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *cfg.server, cwd=cfg.cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                preexec_fn=_server_preexec, pass_fds=())
        except OSError as e:
            raise Fatal(f"the server could not be started: {cfg.server[0]}: {e}", 2) from None
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._pumps = [asyncio.create_task(self._pump(self.proc.stdout, sys.stdout, False)),
                       asyncio.create_task(self._pump(self.proc.stderr, sys.stderr, True))]

    async def wait_ready(self, session: aiohttp.ClientSession,
                         stop_event: asyncio.Event) -> None:
        cfg, proc = self.cfg, self.proc
        assert proc is not None
        t0 = time.monotonic()
        deadline = t0 + cfg.ready_timeout_s
        last = "no answer yet"
        url = self.base + cfg.ready
        while True:
            if stop_event.is_set():
                raise Stopped(f"not ready after {time.monotonic() - t0:.0f} s (GET "
                              f"{cfg.ready}: {last[:200]})")
            if proc.returncode is not None:
                await self._drain_pumps()
                holder = port_holder(cfg.port) if cfg.port_auto else None
                if holder is not None:  # it could not listen: the port was taken
                    raise Fatal(self._raced(holder) + self.last_lines(), 5)
                raise self.died("before it was ready")
            try:
                async with session.get(url, timeout=aiohttp.ClientTimeout(total=2.0)) as r:
                    if r.status == 200:
                        break
                    last = f"HTTP {r.status}: {(await r.text())[:120]!r}"
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
                last = type(e).__name__ + (f": {e}" if str(e) else "")
            if time.monotonic() >= deadline:
                raise Fatal(f"the server (pid {proc.pid}) was never ready: GET {cfg.ready} "
                            f"did not answer 200 within {cfg.ready_timeout_s:g} s (the last "
                            f"try: {last[:200]}){self.last_lines()}", 4)
            await asyncio.sleep(READY_POLL_S)
        if cfg.port_auto:  # a fixed port was checked free before anything started
            self.check_listener()

    def _raced(self, holder: str) -> str:
        return (f"port {self.cfg.port}, chosen free for it (port = \"auto\"), was taken by "
                f"{holder} before the server listened on it: two processes chose it at once "
                "(rare); run it again")

    def check_listener(self) -> None:
        """The process that answered readiness is no other xwatch workload's (two copies'
        servers that chose one free port at once); an outside listener, e.g. a container's
        port proxy, is left alone."""
        assert self.proc is not None
        pid = listener_pid(self.cfg.port)
        if pid is not None and pid not in tree(self.proc.pid) and owned_by_xwatch(pid):
            raise Fatal(f"GET {self.cfg.ready} was answered on port {self.cfg.port} by "
                        f"{describe_pid(pid)}, another xwatch workload's process, not by "
                        f"this server (pid {self.proc.pid})"
                        + ": two processes chose the port at once (rare); run it again"
                        + self.last_lines(), 5)

    async def _drain_pumps(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*self._pumps), 1.0)

    async def watch_server(self, stopping: Callable[[], bool]) -> Fatal | None:
        """Waits for the server's exit: the failure when it exits while it should be
        serving (``stopping()`` false), else None."""
        assert self.proc is not None
        await self.proc.wait()
        # a stop signal reaches the server's group and the generator at once: a server
        # that dies of it at once must not be blamed before the generator's handler ran
        await asyncio.sleep(0.1)
        if not stopping():
            await self._drain_pumps()
            return self.died("mid-phase, while it was being measured")
        return None

    async def stop_server(self) -> None:
        """The server and every process it started: SIGTERM (unless the stop signal
        already reached its group), then SIGKILL after ``STOP_GRACE_S``."""
        proc = self.proc
        if proc is None:
            return
        pids = tree(proc.pid)
        if proc.returncode is None:
            signal_each(pids, signal.SIGTERM)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
        signal_each([p for p in pids if p != proc.pid or proc.returncode is None],
                    signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
        await self._drain_pumps()
