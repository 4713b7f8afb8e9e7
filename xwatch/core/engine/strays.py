"""Processes an xwatch left behind: every process started under it carries its pid
in ``XWATCH_OWNER`` (``launch``), daemonized children that left the process group
included; ``kill_strays`` finds them by that mark and kills them (this xwatch's at
exit, or a dead one's). Whether a mark's owner still runs is asked of
``procs.pid_alive``, the one "does this process still run" check."""

from __future__ import annotations

import os

from xwatch.core.procs import pid_alive


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

