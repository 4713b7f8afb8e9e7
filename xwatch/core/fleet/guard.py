"""The box agent's guard: a process of its own session (``python -m
xwatch.core.fleet.guard AGENT_PID``) that keeps a list of every process below the agent
(its workloads, xserver, MPS daemon, fork servers) and, once the agent is gone, stops
each of them that still runs: SIGTERM, then SIGKILL after ``GRACE_S``.

Why a process and not a thread: the agent is a Ray actor, and Ray ends an actor whose
owner (the command's process) has gone, SIGKILLed included, by killing the actor's
process, which leaves no thread to clean up. The workloads the agent started then live
on, reparented; the guard stops them. It is no child of the agent (started through a
process that forks it and exits, in a session of its own): Ray kills a dead worker's
child processes, and the guard must outlive the agent. A process is
known by its pid and start time, so a pid reused meanwhile is never signalled. The
guard ends once the agent has gone and its processes with it, or when told (SIGTERM:
the agent closed normally and stopped its processes itself).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import IO

from xwatch.core.procs import descendants, pid_alive

POLL_S = 0.2
GRACE_S = 3.0


def _started(pid: int) -> float | None:
    """The process's start time (psutil), None when it is gone."""
    try:
        import psutil

        return float(psutil.Process(pid).create_time())
    except Exception:
        return None


def _alive(pid: int, started: float) -> bool:
    return pid_alive(pid, zombie=False) and _started(pid) == started


def watch(agent: int, poll_s: float = POLL_S, grace_s: float = GRACE_S,
          say: bool = False) -> int:
    """Follow ``agent``'s tree until it is gone, then stop what it left (see the
    module); the number of processes it had to stop. ``say``: print ``seen PID`` for
    each process it will stop, once (a test waits for it)."""
    me = os.getpid()
    seen: dict[int, float] = {}
    while pid_alive(agent, zombie=False):
        for pid in descendants(agent) or ():
            if pid != me and pid not in seen:
                t = _started(pid)
                if t is not None:
                    seen[pid] = t
                    if say:
                        print(f"seen {pid}", flush=True)
        for pid in [p for p, t in seen.items() if not _alive(p, t)]:
            del seen[pid]
        time.sleep(poll_s)
    left = [p for p, t in seen.items() if _alive(p, t)]
    for pid in left:
        _signal(pid, signal.SIGTERM)
    end = time.monotonic() + grace_s
    while time.monotonic() < end and any(_alive(p, seen[p]) for p in left):
        time.sleep(poll_s / 2)
    for pid in left:
        if _alive(pid, seen[pid]):
            _signal(pid, signal.SIGKILL)
    return len(left)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class Guard:
    """A started guard: its pid, and its output where it says what it sees."""

    pid: int
    said: IO[bytes] | None = None

    def stop(self, timeout: float = 5.0) -> None:
        """Let it go (its agent closed normally): SIGTERM, then wait for its end."""
        _signal(self.pid, signal.SIGTERM)
        self.wait(timeout)

    def wait(self, timeout: float) -> bool:
        """Whether it ended within ``timeout`` seconds."""
        end = time.monotonic() + timeout
        while pid_alive(self.pid, zombie=False):
            if time.monotonic() > end:
                return False
            time.sleep(POLL_S / 4)
        return True


def start(agent: int, say: bool = False) -> Guard:
    """The guard of process ``agent`` (this one, usually): no child of it, in a session
    of its own (see the module); ``say``: its ``seen PID`` lines to read."""
    p = subprocess.Popen([sys.executable, "-m", "xwatch.core.fleet.guard", str(agent),
                          *(["--say"] if say else [])],
                         start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdout is not None
    pid = int(p.stdout.readline() or 0)
    p.wait()
    if not say:
        p.stdout.close()
    return Guard(pid, p.stdout if say else None)


def _main(argv: list[str]) -> None:
    """Fork the guard, say its pid, and leave it to its agent (see ``start``)."""
    child = os.fork()
    if child:
        print(child, flush=True)
        os._exit(0)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    watch(int(argv[0]), say="--say" in argv)
    os._exit(0)


if __name__ == "__main__":
    _main(sys.argv[1:])
