"""This box's other XSched sessions (any user's, read through ``core/procs``): the
xserver that this session's own would collide with, found before one is started.

XSched: the shims and xserver meet on one System V message queue whose key is a
compile-time constant (``XSCHED_SERVER_CHANNEL_KEY``, 1 in 1.2.0's
``protocol/include/xsched/protocol/def.h``). xserver creates it with
``msgget(key, IPC_CREAT | IPC_EXCL | 0666)`` and, finding it taken, removes the
holder's queue and makes its own: the first xserver's ``msgrcv`` then fails, it
shuts down, and its shims die with "failed to send event to server". So a second
xserver on a box breaks the first, and one xserver serves the whole box. It is found
as a process named ``xserver`` whose install uses the same key (its argv gives the
port: ``xserver [POLICY PORT]``, default HPF on 50000) or by the queue itself
(``/proc/sysvipc/msg``: its creator's uid, its last sender and receiver).

With XSched 1.2.0 on two H200s no queue of key 1 was listed while an xserver ran (the
build's ipc library maps the key to another): the process alone found it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xwatch.core.procs import (
    PROC,
    BoxProcess,
    MsgQueue,
    msg_queues,
    process,
    processes,
    program_index,
    program_path,
    user_name,
)
from xwatch.core.schedulers import XSERVER, XSERVER_DEFAULT_POLICY, XSERVER_DEFAULT_PORT


@dataclass(frozen=True)
class Xserver:
    """An xserver already serving this box's XSched channel."""

    key: int
    proc: BoxProcess | None  # None: only its channel's holder was seen
    port: int | None
    policy: str | None
    channel: MsgQueue | None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def describe(self) -> str:
        key = f"System V message queue key {self.key}"
        if self.proc is None:
            assert self.channel is not None
            who = self.channel.lrpid or self.channel.lspid
            return (f"XSched's channel ({key}, msqid {self.channel.msqid}, made by "
                    f"{user_name(self.channel.cuid)}) is held by pid {who}, which is not "
                    "an xserver this process can see")
        chan = f"its channel: {key}, msqid {self.channel.msqid}" if self.channel else \
            f"its channel ({key}) was not found in /proc/sysvipc/msg; found by its process"
        return (f"xserver pid {self.proc.pid}, user {self.proc.user}, port "
                f"{self.port if self.port is not None else 'unknown'}, policy "
                f"{self.policy or 'unknown'}; {chan}; command line: {self.proc.cmdline}")


def xserver_args(argv: tuple[str, ...], i: int) -> tuple[str | None, int | None]:
    """(policy, port) of an xserver from its argv (``xserver`` alone: XSched's
    defaults; anything but two arguments: unknown)."""
    rest = argv[i + 1:]
    if not rest:
        return XSERVER_DEFAULT_POLICY, XSERVER_DEFAULT_PORT
    if len(rest) == 2 and rest[1].isdigit():
        return rest[0], int(rest[1])
    return None, None


def find_xserver(key: int, key_of: Callable[[str | None], int],
                 own: set[int] = frozenset(),  # type: ignore[assignment]
                 proc: str = PROC) -> tuple[Xserver | None, MsgQueue | None]:
    """(the xserver already on this box's channel ``key``, else None; the channel's
    queue when it exists without a live holder: stale, left by an xserver that was
    killed, which a new xserver replaces). ``key_of(program path)`` is the channel
    key of the install an xserver binary belongs to; ``own``: pids to pass over."""
    chan = next((q for q in msg_queues(f"{proc}/sysvipc/msg") if q.key == key), None)
    found = []
    for p in processes(proc):
        i = program_index(p.argv, XSERVER)
        if i is None or p.pid in own:
            continue
        if key_of(program_path(p, i, proc)) != key:
            continue  # another install's channel
        policy, port = xserver_args(p.argv, i)
        found.append(Xserver(key, p, port, policy, chan))
    if found:  # the channel's last receiver first
        found.sort(key=lambda x: (chan is None or x.pid != chan.lrpid, x.pid or 0))
        return found[0], None
    if chan is not None:
        holders = [q for q in (chan.lrpid, chan.lspid) if q > 0 and q not in own]
        if any(process(h, proc) is not None for h in holders):
            return Xserver(key, None, None, None, chan), None
        return None, chan
    return None, None
