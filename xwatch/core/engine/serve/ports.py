"""A server's port: who holds a port already (checked before anything starts, and again
by the generator before its server starts), a free port for ``port = "auto"`` (bound to
port 0, read and closed; the generator then confirms that the process listening there
is not another xwatch workload's), ``{port}`` filled in, and the pid listening on a
port. Standard library and psutil only: the command line imports it."""

from __future__ import annotations

import contextlib
import errno
import socket
from pathlib import Path

#: the address servers listen on (the only one xwatch starts them on)
HOST = "127.0.0.1"


def _bindable(port: int) -> bool | None:
    """True if ``port`` can be bound now, False if it is in use, None: cannot tell."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no holder
    try:
        s.bind(("", port))
        return True
    except OSError as e:
        return False if e.errno == errno.EADDRINUSE else None
    finally:
        s.close()


def listener_pid(port: int) -> int | None:
    """The pid listening on TCP ``port``, where this user may see it (psutil); else None."""
    with contextlib.suppress(Exception):
        import psutil

        for c in psutil.net_connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                return int(c.pid)
    return None


def describe_pid(pid: int | None) -> str:
    """``pid 123 (python3)``, or ``another process`` when it cannot be seen."""
    if pid is None:
        return "another process"
    name = "?"
    with contextlib.suppress(Exception):
        import psutil

        name = psutil.Process(pid).name()
    return f"pid {pid} ({name})"


def port_holder(port: int) -> str | None:
    """Who listens on ``port`` already (a description), or None if it is free."""
    if _bindable(port) is not False:
        return None
    return describe_pid(listener_pid(port))


def free_port(avoid: frozenset[int] | set[int] = frozenset()) -> int:
    """A port free now (the kernel's choice for port 0), not one of ``avoid``. Another
    process may still take it before the server listens: the generator checks that the
    listener is its own server (``listener_pid``)."""
    for _ in range(64):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = int(s.getsockname()[1])
        if port not in avoid:
            return port
    raise OSError(errno.EADDRINUSE, "no free port found in 64 tries")


def fill_port(argv: tuple[str, ...], port: int) -> tuple[str, ...]:
    """``argv`` with ``{port}`` (anywhere in an argument) replaced by ``port``."""
    return tuple(a.replace("{port}", str(port)) for a in argv)


def owned_by_xwatch(pid: int, owner_env: str = "XWATCH_OWNER") -> bool:
    """``pid`` is a process some xwatch session started (its environment carries
    ``XWATCH_OWNER``): another copy's server, or another session's; False when it
    cannot be read (another user's process)."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return any(kv.startswith(owner_env.encode() + b"=") for kv in env.split(b"\0"))
