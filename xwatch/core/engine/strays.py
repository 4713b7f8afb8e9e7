"""Processes an xwatch left behind: every process started under it carries its pid
in ``XWATCH_OWNER`` (``launch``), daemonized children that left the process group
included; ``kill_strays`` finds them by that mark and kills them (this xwatch's at
exit, or a dead one's). ``pid_alive`` is the one "does this process still run"
check (a stray's owner, a kept session's xwatch, an MPS client)."""

from __future__ import annotations

import os


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


def _xwatch_alive(pid_text: str) -> bool:
    """Whether the process that marked one (``XWATCH_OWNER``) still runs (any process
    of that pid: a live owner's workloads are never touched; a mark that is no pid
    counts as alive)."""
    try:
        return pid_alive(int(pid_text))
    except ValueError:
        return True


def kill_strays(owner: int | None = None) -> list[str]:
    """SIGKILL every process marked as started under this xwatch (``XWATCH_OWNER`` in
    its environment: workloads and everything they started, daemonized children that
    left the group included); 'pid command' of each."""
    from xwatch.core.engine.launch import OWNER_ENV

    try:
        import psutil
    except ImportError:  # pragma: no cover
        return []
    mark = str(owner or os.getpid())
    me = os.getpid()
    out = []
    for p in psutil.process_iter(["pid"]):
        if p.pid == me:
            continue
        try:
            got = p.environ().get(OWNER_ENV)
            if got is None:
                continue
            if got != mark and (owner is not None or _xwatch_alive(got)):
                continue  # another xwatch's, still running (a dead one's strays go too)
            cmd = " ".join(p.cmdline())[:120]
            p.kill()
            out.append(f"{p.pid} {cmd}")
        except (psutil.Error, OSError):
            continue
    return out

