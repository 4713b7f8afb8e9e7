"""The one base of the mode backends that own a daemon (XSched's xserver, the MPS
control daemon): what they share, written once.

- the daemon's process: started in a process group of its own that dies with xwatch
  (``PR_SET_PDEATHSIG``), its output read line by line into the backend's ``log`` and
  the session's log, asked until it answers (its exit first, or no answer in time, is a
  titled error), stopped the daemon's own way and its readers drained;
- the preflight that runs beside the workloads' start (``_probe``, awaited by
  ``settle``) and the phase's watch (``_watch``);
- ``leave`` in one order: the preflight and the watch cancelled, the last judgement of
  the phase's workloads, the daemon stopped, its logs kept; safe to call twice;
- ``kill_now`` (the synchronous emergency stop: SIGKILL to the daemon's group),
  ``failure`` and xwatch's notes about the mode.

What differs stays in each backend: how its daemon is asked and stopped (``_halt``), its
last judgement (``_judge_last``) and the logs it keeps (``_keep_logs``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections import deque
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, TypeVar

from xwatch.core.engine.supervisor import child_setup
from xwatch.core.modes.base import ModeBackend
from xwatch.errors import XwatchError

if TYPE_CHECKING:
    from xwatch.core.engine.live.phase import Phase

T = TypeVar("T")


async def read_lines(stream: IO[bytes], on_line: Callable[[str], None]) -> None:
    """Hand every line of a daemon's output to ``on_line`` until it closes (the
    blocking reads run on a thread)."""
    while True:
        raw = await asyncio.to_thread(stream.readline)
        if not raw:
            return
        on_line(raw.decode("utf-8", "replace").rstrip())


async def stop_group(proc: subprocess.Popen[bytes],
                     steps: tuple[tuple[int, float], ...]) -> None:
    """Signal the daemon's process group with each (signal, seconds to wait) in turn
    until it has exited."""
    for sig, wait in steps:
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        end = time.monotonic() + wait
        while proc.poll() is None and time.monotonic() < end:
            await asyncio.sleep(0.05)


async def _cancelled(task: asyncio.Task[None] | None) -> None:
    """``task`` cancelled and waited for (whatever it raises on its way out)."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


class DaemonBackend(ModeBackend):
    """A mode backend that starts (or joins) a daemon for each phase (see the module)."""

    #: its notes' prefix in xwatch's log ("xsched: ...")
    NOTE = ""
    #: the source its daemon's own lines are logged under
    SOURCE = ""
    #: the daemon as its notes name it ("xserver stopped (exit 0)")
    DAEMON = ""
    #: (signal, seconds to wait) its group is sent in turn until the daemon exits
    STOP_STEPS: tuple[tuple[int, float], ...] = ((15, 2.0), (9, 5.0))

    def __init__(self, log: deque[str]) -> None:
        self.log = log  # the daemon's last lines
        self.proc: subprocess.Popen[bytes] | None = None  # started here (None: joined)
        self.phase: Phase | None = None
        self._failure: str | None = None
        self._probe: asyncio.Task[None] | None = None  # the preflight, until ``settle``
        self._watch: asyncio.Task[None] | None = None  # the phase's watch
        self._readers: list[asyncio.Task[None]] = []  # of the daemon's output

    # -- mode backend protocol
    async def settle(self, phase: Phase) -> None:
        """Wait for the preflight, which runs beside the workloads' start (they are held
        by the start gate until it passed); raise its failure, and the runner stops them.
        A preflight that fails still fails the phase in its own seconds, not after a load."""
        probe, self._probe = self._probe, None
        if probe is not None:
            await probe

    async def leave(self, phase: Phase) -> None:
        # left before it settled: the preflight's probes are killed on its way out
        probe, self._probe = self._probe, None
        await _cancelled(probe)
        watch, self._watch = self._watch, None
        await _cancelled(watch)
        await self._judge_last(phase, watch is not None)
        await self._stop_daemon()
        self._keep_logs(phase)

    def failure(self) -> str | None:
        """Why this phase cannot go on in the mode (its daemon died or hung), else None."""
        return self._failure

    def kill_now(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, 9)

    # -- what each backend does its own way
    async def _judge_last(self, phase: Phase, watched: bool) -> None:
        """The phase's workloads judged for the last time, its watch stopped (``watched``:
        there was one)."""

    def _keep_logs(self, phase: Phase) -> None:
        """The daemon's logs kept in the phase's record."""

    async def _halt(self, proc: subprocess.Popen[bytes]) -> None:
        """Stop the daemon this backend started."""
        await stop_group(proc, self.STOP_STEPS)

    # -- the daemon
    def _spawn(self, argv: list[str], cwd: str, error: type[XwatchError], title: str,
               name: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start the daemon (``name`` in the error when it cannot be) in a process group
        of its own, SIGTERMed when xwatch dies, its output read into ``log``."""
        try:
            proc = self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, env=env, start_new_session=True,
                preexec_fn=child_setup(15), cwd=cwd)
        except OSError as e:
            raise error(f"cannot start {name}: {e}", title=title)
        assert proc.stdout is not None
        self._readers = [asyncio.create_task(read_lines(proc.stdout, self._on_output))]
        return proc

    async def _answer(self, ask: Callable[[], T], timeout_s: float, error: type[XwatchError],
                      title: str, exited: Callable[[int], str],
                      silent: Callable[[XwatchError], str]) -> T:
        """Ask the daemon just started (``ask``, blocking: on a thread) until it answers;
        its answer. Its exit first (``exited(its status)`` says why), or no answer within
        ``timeout_s`` (``silent(the last error)``; the daemon is stopped) is ``error``."""
        proc = self.proc
        assert proc is not None
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                await asyncio.sleep(0.1)  # its last lines reach the log
                self.proc = None
                raise error(exited(proc.returncode), title=title)
            try:
                return await asyncio.to_thread(ask)
            except error as e:
                if time.monotonic() > deadline:
                    await self._stop_daemon()
                    raise error(silent(e), title=title)
                await asyncio.sleep(0.1)

    async def _stop_daemon(self) -> None:
        """Stop the daemon this backend started (none, or joined: nothing to do), then
        wait for the last of its output."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        await self._halt(proc)
        for t in self._readers:
            with contextlib.suppress(asyncio.TimeoutError, Exception):
                await asyncio.wait_for(t, 2.0)
        self._readers = []
        self._note(f"{self.DAEMON} stopped (exit {proc.returncode})")

    def _on_output(self, line: str) -> None:
        self.log.append(line)
        if self.phase is not None:
            self.phase.session.log(self.SOURCE, "stdout", line)

    def _note(self, text: str, level: str = "info") -> None:
        if self.phase is not None:
            self.phase.session.log("xwatch", level, f"{self.NOTE}: {text}")
