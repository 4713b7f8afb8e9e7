"""This box's other sessions, once a phase runs: the processes that joined this
session's daemon (``Strangers``). The daemons a mode's own daemon would collide with,
found before one is started, are each mode's own (XSched's xserver:
``xsched.rules.neighbours``; MPS's control daemons: ``mps.neighbours``).

Once a phase runs, ``Strangers`` tells which processes its daemon serves that are not
the session's: another session that joined it, or any other program. On the H200s a
joiner on the other GPU took the first session's HIGH P50 under XSched from 4 to 19 ms.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import msgspec

from xwatch.core import model as M
from xwatch.core.engine.launch import OWNER_ENV
from xwatch.core.procs import PROC, BoxProcess, environ, is_below, process


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
