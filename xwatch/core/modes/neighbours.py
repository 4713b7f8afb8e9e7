"""This box's other sessions: the daemons that a mode's own daemon would collide with,
found before one is started (any user's, read through ``core/procs``), and once a
phase runs, the processes that joined this session's daemon.

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

MPS: a control daemon (``nvidia-cuda-mps-control -d`` or ``-f``) of the same driver's
tool serves the GPUs its ``CUDA_VISIBLE_DEVICES`` lists (all when unset); it is
reached through its ``CUDA_MPS_PIPE_DIRECTORY`` (default ``/tmp/nvidia-mps``, where
it writes ``nvidia-cuda-mps-control.pid``). Another user's environment cannot be
read: such a daemon is taken to serve every GPU, through the default folder if its
pid file is there.

With XSched 1.2.0 on two H200s no queue of key 1 was listed while an xserver ran (the
build's ipc library maps the key to another): the process alone found it.

Once a phase runs, ``Strangers`` tells which processes its daemon serves that are not
the session's: another session that joined it, or any other program. On the H200s a
joiner on the other GPU took the first session's HIGH P50 under XSched from 4 to 19 ms.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from xwatch.core import model as M
from xwatch.core.engine.launch import OWNER_ENV
from xwatch.core.procs import (
    PROC,
    BoxProcess,
    MsgQueue,
    environ,
    is_below,
    msg_queues,
    process,
    processes,
    program_index,
    program_path,
    read_bytes,
    user_name,
)
from xwatch.core.schedulers import (
    MPS_DEFAULT_PIPE,
    MPS_PID_FILE,
    MPS_TOOL,
    XSCHED_DEFAULT_POLICY,
    XSCHED_DEFAULT_PORT,
    XSERVER,
)


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


@dataclass(frozen=True)
class MpsDaemon:
    """An MPS control daemon already running on this box."""

    proc: BoxProcess
    pipe_dir: str | None  # None: unknown (another user's environment, no pid file)
    visible: str | None  # its CUDA_VISIBLE_DEVICES; None: unset (every GPU)
    env_read: bool  # whether its environment could be read

    def serves(self, gpus: set[int]) -> bool:
        """Whether it serves any of ``gpus`` (unknown: assumed so)."""
        if self.visible is None:
            return True
        items = [x.strip() for x in self.visible.split(",") if x.strip()]
        if not all(x.isdigit() for x in items):
            return True  # UUIDs or MIG names: not mapped to indices here
        return bool({int(x) for x in items} & gpus)

    def describe(self) -> str:
        gpus = ("every GPU (its environment is not readable)" if not self.env_read else
                "every GPU" if self.visible is None else f"CUDA_VISIBLE_DEVICES={self.visible}")
        return (f"MPS control daemon pid {self.proc.pid}, user {self.proc.user}, pipe "
                f"directory {self.pipe_dir or 'unknown'}, serving {gpus}; command line: "
                f"{self.proc.cmdline}")


def xserver_args(argv: tuple[str, ...], i: int) -> tuple[str | None, int | None]:
    """(policy, port) of an xserver from its argv (``xserver`` alone: XSched's
    defaults; anything but two arguments: unknown)."""
    rest = argv[i + 1:]
    if not rest:
        return XSCHED_DEFAULT_POLICY, XSCHED_DEFAULT_PORT
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


def _file_id(*paths: str) -> tuple[int, int] | None:
    """(device, inode) of the first of ``paths`` that can be looked at, else None."""
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        return st.st_dev, st.st_ino
    return None


def find_mps_daemons(tool: str, own: set[int] = frozenset(),  # type: ignore[assignment]
                     proc: str = PROC) -> list[MpsDaemon]:
    """MPS control daemons of the same control tool (the same file: one driver) that
    run on this box, but for ``own``."""
    out = []
    mine = _file_id(tool)
    for p in processes(proc):
        i = program_index(p.argv, MPS_TOOL)
        if i is None or p.pid in own or not ({"-d", "-f"} & set(p.argv[i + 1:])):
            continue  # the tool run as a client: a command, not a daemon
        path = program_path(p, i, proc)  # as its own root sees it (a container's), else ours
        theirs = _file_id(f"{proc}/{p.pid}/root{path}", path) if os.path.isabs(path) else None
        if mine is not None and theirs is not None and theirs != mine:
            continue  # another driver's tool
        env = environ(p.pid, proc)
        if env is not None:
            pipe: str | None = env.get("CUDA_MPS_PIPE_DIRECTORY") or MPS_DEFAULT_PIPE
            visible = env.get("CUDA_VISIBLE_DEVICES")
        else:
            pidf = read_bytes(str(Path(MPS_DEFAULT_PIPE) / MPS_PID_FILE))
            pipe = MPS_DEFAULT_PIPE if pidf and pidf.strip() == str(p.pid).encode() else None
            visible = None
        out.append(MpsDaemon(p, pipe, visible, env is not None))
    return out


class Strangers:
    """The processes a daemon of this session serves that are not this session's
    (another session that joined it, or any other program), and since when. A pid is
    judged once: this xwatch's own are its descendants (workloads, their servers'
    workers, its probes) or carry its ``XWATCH_OWNER`` mark (a daemonized child whose
    parent is gone); a pid already gone when first seen cannot be judged and is passed
    over."""

    def __init__(self, me: int | None = None, proc: str = PROC) -> None:
        self.me, self.proc = me or os.getpid(), proc
        self._judged: dict[int, BoxProcess | None] = {}  # None: ours, or not judged
        self.record: M.Shared | None = None

    def _theirs(self, pid: int) -> BoxProcess | None:
        p = process(pid, self.proc)
        if p is None or pid == self.me:
            return None
        env = environ(pid, self.proc)
        if env is not None and env.get(OWNER_ENV) == str(self.me):
            return None
        return None if is_below(pid, self.me, self.proc) else p

    def foreign(self, pids: Iterable[int]) -> list[int]:
        """Those of ``pids`` that are not this session's, judged once each."""
        out = []
        for pid in pids:
            if pid not in self._judged:
                self._judged[pid] = self._theirs(pid)
            if self._judged[pid] is not None:
                out.append(pid)
        return out

    def seen(self, pids: list[int], t: float, t_measured: float | None, queues: int = 0,
             devices: Iterable[int] = (), servers: Iterable[int] = ()) -> bool:
        """Fold one look at the daemon's strangers ``pids`` (already ``foreign``) into
        ``record``; whether it changed (the first time: its ``t``)."""
        if not pids:
            return False
        old = self.record
        users = {u for p in pids if (b := self._judged.get(p)) is not None
                 for u in (b.user,)}
        if old is None:
            new = M.Shared(t=round(t, 3), t_measured=None if t_measured is None
                           else round(t_measured, 3), pids=sorted(pids),
                           users=sorted(users), queues=queues, devices=sorted(set(devices)),
                           servers=sorted(set(servers)))
        else:
            new = msgspec.structs.replace(
                old, pids=sorted({*old.pids, *pids}), users=sorted({*old.users, *users}),
                queues=max(old.queues, queues), devices=sorted({*old.devices, *devices}),
                servers=sorted({*old.servers, *servers}))
        if new == old:
            return False
        self.record = new
        return True

    def line(self, daemon: str, joined: bool) -> str:
        """The log line for the first look (``record`` set): ``another process joined
        this xserver at t=37.2 s (...)``; ``joined``: this session joined another's."""
        r = self.record
        assert r is not None
        who = (f"processes not of this session share the joined {daemon}" if joined else
               f"another process joined this {daemon}")
        return (f"{who} at {r.when()} ({r.who()}): this phase's numbers from then on are "
                "not a clean measurement of the mode")
