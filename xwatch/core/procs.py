"""Processes and ``/proc``: whether a process still runs, its owner and command line,
its environment, its parent, the processes above it and the tree below it, the CPU time
it used, its memory maps, and the System V message queues of ``/proc/sysvipc/msg``. A
leaf below every stage: it imports nothing of xwatch, so the mode backends, the search
for other sessions' daemons, the strays' sweep and the load generator's server all read
processes through it. The process tree is walked here and nowhere else (``tree``,
``descendants`` below a process, ``is_below`` up from one; ``signal_each`` signals what
``tree`` found).

Every reader takes the ``/proc`` root as ``proc`` (tests pass a made-up one) and says
"unknown" with None rather than raising: a process may be gone by the time it is read,
and another user's environment cannot be read at all.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
from collections.abc import Iterator
from dataclasses import dataclass

PROC = "/proc"


@dataclass(frozen=True)
class BoxProcess:
    """A process of this box: its pid, owner and command line."""

    pid: int
    uid: int
    argv: tuple[str, ...]

    @property
    def user(self) -> str:
        return user_name(self.uid)

    @property
    def cmdline(self) -> str:
        return " ".join(self.argv)


@dataclass(frozen=True)
class MsgQueue:
    """One System V message queue (a line of ``/proc/sysvipc/msg``)."""

    key: int
    msqid: int
    cuid: int  # its creator's uid
    lspid: int  # the last process that sent to it (0: none yet)
    lrpid: int  # the last process that received from it


def pid_alive(pid: int, zombie: bool = True) -> bool:
    """Whether a process ``pid`` exists (one of another user's included). A zombie
    (exited, not yet reaped) counts as alive only with ``zombie``. No pid (0 or less)
    is no process (``kill(0, 0)`` would ask about our own process group)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if zombie:
        return True
    import psutil

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def read_bytes(path: str) -> bytes | None:
    """A file's bytes; None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def process(pid: int, proc: str = PROC) -> BoxProcess | None:
    """Process ``pid`` (None when gone, a zombie, or a kernel thread)."""
    raw = read_bytes(f"{proc}/{pid}/cmdline")
    status = read_bytes(f"{proc}/{pid}/status")
    if not raw or status is None:
        return None
    uid = -1
    for line in status.decode(errors="replace").splitlines():
        if line.startswith("State:") and "Z" in line.split()[1:2]:
            return None
        if line.startswith("Uid:"):
            uid = int(line.split()[1])
    argv = tuple(a.decode(errors="replace") for a in raw.rstrip(b"\0").split(b"\0"))
    return BoxProcess(pid, uid, argv)


def processes(proc: str = PROC) -> Iterator[BoxProcess]:
    """Every live process this one can see."""
    try:
        names = os.listdir(proc)
    except OSError:
        return
    for d in names:
        if d.isdigit():
            p = process(int(d), proc)
            if p is not None:
                yield p


def environ(pid: int, proc: str = PROC) -> dict[str, str] | None:
    """Process ``pid``'s environment; None when it cannot be read (another user's)."""
    raw = read_bytes(f"{proc}/{pid}/environ")
    if raw is None:
        return None
    out = {}
    for item in raw.split(b"\0"):
        k, eq, v = item.partition(b"=")
        if eq:
            out[k.decode(errors="replace")] = v.decode(errors="replace")
    return out


def maps(pid: int, proc: str = PROC) -> list[str] | None:
    """The paths process ``pid`` has mapped (``/proc/PID/maps``, one a mapping);
    None when they cannot be read (not Linux, permissions, process gone)."""
    try:
        with open(f"{proc}/{pid}/maps", encoding="utf-8", errors="replace") as f:
            return [ln.split(None, 5)[5].strip() for ln in f if len(ln.split(None, 5)) == 6]
    except (OSError, IndexError):
        return None


def msg_queues(path: str = f"{PROC}/sysvipc/msg") -> list[MsgQueue]:
    """The System V message queues of this IPC namespace."""
    raw = read_bytes(path)
    if raw is None:
        return []
    lines = raw.decode(errors="replace").splitlines()
    if not lines:
        return []
    head = lines[0].split()
    out = []
    for line in lines[1:]:
        row = dict(zip(head, line.split(), strict=False))
        try:
            out.append(MsgQueue(int(row["key"]), int(row["msqid"]), int(row["cuid"]),
                                int(row["lspid"]), int(row["lrpid"])))
        except (KeyError, ValueError):
            continue
    return out


def program_index(argv: tuple[str, ...], name: str) -> int | None:
    """Index of the argv item that is program ``name`` (argv[0], or the script an
    interpreter runs: argv[1]); None if neither."""
    for i in range(min(2, len(argv))):
        if os.path.basename(argv[i]) == name:
            return i
    return None


def program_path(p: BoxProcess, i: int, proc: str = PROC) -> str:
    """The path of the program at argv[i]: the binary ``/proc`` links to, else made
    absolute with its working folder when that can be read, else as given."""
    path = p.argv[i]
    if i == 0:  # the binary itself (readable for one's own processes and root's)
        with contextlib.suppress(OSError):
            exe = os.readlink(f"{proc}/{p.pid}/exe")
            if os.path.basename(exe) == os.path.basename(path):
                return exe
    if not os.path.isabs(path) and "/" in path:
        with contextlib.suppress(OSError):
            path = os.path.join(os.readlink(f"{proc}/{p.pid}/cwd"), path)
    return path


def parent(pid: int, proc: str = PROC) -> int | None:
    """Process ``pid``'s parent (None when gone or unreadable)."""
    raw = read_bytes(f"{proc}/{pid}/stat")
    if raw is None:
        return None
    try:
        return int(raw.rsplit(b")", 1)[1].split()[1])
    except (ValueError, IndexError):
        return None


def cpu_ticks(pid: int, proc: str = PROC) -> int | None:
    """The CPU time process ``pid`` has used so far, user and system, in clock ticks
    (``utime + stime`` of ``/proc/PID/stat``); None when gone or unreadable. A process
    that waits on something that never comes uses none; one that is only slow (a busy
    machine) still does."""
    raw = read_bytes(f"{proc}/{pid}/stat")
    if raw is None:
        return None
    try:
        fields = raw.rsplit(b")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (ValueError, IndexError):
        return None


def descendants(pid: int) -> list[int] | None:
    """Every process below ``pid`` (its children, theirs, ...; psutil); None when
    ``pid`` is gone or its tree cannot be read."""
    try:
        import psutil

        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except Exception:
        return None


def tree(pid: int) -> list[int]:
    """``pid`` and every process below it (just ``pid`` when its tree cannot be read)."""
    return [pid, *(descendants(pid) or ())]


def is_below(pid: int, root: int, proc: str = PROC) -> bool:
    """Whether ``root`` is among process ``pid``'s ancestors (its parent, theirs, ...,
    up to init); False once the chain cannot be read further."""
    seen, up = set(), parent(pid, proc)
    while up is not None and up > 1 and up not in seen:
        if up == root:
            return True
        seen.add(up)
        up = parent(up, proc)
    return False


def signal_each(pids: list[int], sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to each of ``pids`` (a ``tree``: a process that left its group
    included); one already gone, or not ours to signal, is passed over."""
    for p in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, sig)


def own_pids() -> set[int]:
    """This process and its descendants (the daemons a session started itself)."""
    return set(tree(os.getpid()))
