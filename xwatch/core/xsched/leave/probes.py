"""How the XSched preflight's probes leave XSched (issue 64 goal 4), so that their end
races nothing in xserver.

XSched 1.2 (bd494cb) races at a client's leave: the client sends its
``ProcessDestroyEvent`` and removes its own message queue at once
(``SchedAgent::FiniScheduler``, ``GlobalScheduler::Stop``), while xserver's scheduler
thread sends a ``SchedOperation`` to every process that has XQueues after every batch of
events it handles (``LocalScheduler::ExecuteOperations``), any process's XQueue events
and every HTTP query included. One such send that finds the queue already removed and
the channel not yet forgotten fails its assertion (``server.cpp:200``) and xserver
aborts. docs/gpus-start.md ("A probe's exit and xserver") has the sequence, file and
line.

So each probe, after its work (``smoke``'s ``done``), stays in XSched, idle, until told
to leave (``HOLD_ENV``); the preflight then, with nothing else talking to xserver (the
phase's workloads held at the start gate, xwatch's own polls paused: ``Quiet``), lets
them leave one at a time, each after xserver logged the previous one "closed" and a
moment for its scheduler's last batch. A probe that left stays alive until all have
(its exit is one more batch, of xserver's process monitor); then all exit, and the
preflight waits until xserver lists none of their pids (``GONE_TIMEOUT_S``; past it the
pids still listed are reported). The
record is the preflight's ``leave`` (``ProbeLeave``). ``XWATCH_XSCHED_PROBE_WAIT=0``
brings back the old end (every probe leaves as its work ends), to reproduce the race.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from xwatch.core import model as M
from xwatch.core.engine.worker.smoke import HOLD_ENV
from xwatch.core.xsched.client import XserverClient
from xwatch.core.xsched.install import XschedError

#: "0": the probes leave as their work ends, beside whatever else runs (the old way)
WAIT_ENV = "XWATCH_XSCHED_PROBE_WAIT"
#: one probe's leave: from its release to its "left" line (or its exit)
LEFT_TIMEOUT_S = 10.0
#: xserver's "client process N closed" for the probe just released
CLOSED_TIMEOUT_S = 2.0
#: an event xserver received just before a leave (xwatch's last query, the previous
#: probe's leave) still has its scheduler batch send to every process after it was
#: answered or logged (microseconds when nothing else runs): this long before each leave
SETTLE_S = 0.1
#: xserver listing none of the probes' pids, after the last left
GONE_TIMEOUT_S = 10.0
GONE_POLL_S = 0.05

__all__ = ["GONE_TIMEOUT_S", "HOLD_ENV", "WAIT_ENV", "Held", "Quiet", "leave",
           "wait_on"]


def wait_on() -> bool:
    """Whether the probes are held and let go one at a time (``WAIT_ENV``)."""
    return os.environ.get(WAIT_ENV) != "0"


class Quiet(Protocol):
    """What the XSched mode gives the preflight for its probes' leave."""

    async def quiet(self) -> str:
        """Wait (bounded) until the phase's workloads do no GPU work (held at the start
        gate, or ended); how they were then, in words."""
        ...

    def hush(self) -> contextlib.AbstractAsyncContextManager[None]:
        """xwatch sends xserver nothing inside it (its polls wait)."""
        ...

    async def closed(self, pid: int, timeout_s: float) -> bool:
        """Whether xserver logged "client process PID closed" within ``timeout_s`` (False
        at once where xwatch does not read its log: a joined xserver)."""
        ...

    def gone(self) -> str | None:
        """Why xserver is gone, when it ended by itself; None while it runs."""
        ...


@dataclass
class Held:
    """One probe held after its work: its pid; ``said`` once it printed its "left" line
    (``switched``: it switched to the app-managed scheduler itself; False: it could not,
    e.g. an install without ``XHintSetScheduler``, and leaves at its exit), ``gone`` once
    it exited."""

    pid: int
    said: asyncio.Event = field(default_factory=asyncio.Event)
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    switched: bool = False

    def release(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGUSR2)


async def leave(held: Sequence[Held], client: XserverClient, quiet: Quiet | None,
                ok: bool) -> M.ProbeLeave:
    """Let the held probes go (see the module). ``ok``: the preflight passed so far (the
    workloads may start); when it did not, they all go at once (the phase fails
    anyway), without waiting for the workloads or for xserver."""
    if not ok:
        await _at_once(held)
        return M.ProbeLeave(quiet="the preflight failed: its probes were let go at once")
    t0 = time.monotonic()
    how = await quiet.quiet() if quiet is not None else \
        "no XSched mode to ask: neither the workloads nor xwatch's polls were held"
    quiet_s = round(time.monotonic() - t0, 3)
    t1 = time.monotonic()
    late: list[int] = []
    unclosed: list[int] = []
    async with quiet.hush() if quiet is not None else contextlib.nullcontext():
        for h in held:
            if quiet is not None and (dead := quiet.gone()) is not None:
                await _at_once(held)
                return M.ProbeLeave(quiet_s=quiet_s, quiet=how, note=dead)
            await asyncio.sleep(SETTLE_S)
            h.release()
            if not await _wait(h.said, h.gone):
                late.append(h.pid)
                continue
            if not h.switched and not await _wait(h.gone):  # it leaves at its exit
                late.append(h.pid)
                continue
            if quiet is not None and not await quiet.closed(h.pid, CLOSED_TIMEOUT_S):
                unclosed.append(h.pid)
        # now they may exit: each exit is one more batch of xserver's process monitor
        # (``Server::ProcessTerminate``), harmless once no probe is leaving
        for h in held:
            if h.switched:
                h.release()
    listed, err = await _gone([h.pid for h in held], client, quiet)
    notes = []
    if late:
        notes.append(f"no leave from pid {', '.join(map(str, late))} within "
                     f"{LEFT_TIMEOUT_S:g} s")
    if unclosed:
        notes.append(f"xserver did not log pid {', '.join(map(str, unclosed))} closed "
                     f"within {CLOSED_TIMEOUT_S:g} s")
    if listed:
        notes.append(f"xserver still listed pid {', '.join(map(str, listed))} "
                     f"{GONE_TIMEOUT_S:g} s after the last probe left")
    if err:
        notes.append(f"could not ask xserver which pids it lists: {err}")
    return M.ProbeLeave(quiet_s=quiet_s, quiet=how, left_s=round(time.monotonic() - t1, 3),
                        listed=listed, note="; ".join(notes))


async def _at_once(held: Sequence[Held]) -> None:
    """Let every probe not yet gone leave at once, then exit (a second signal, once each
    said it left: two pending signals are one)."""
    for h in held:
        if not h.said.is_set() and not h.gone.is_set():
            h.release()
    await asyncio.gather(*(_wait(h.said, h.gone) for h in held))
    for h in held:
        if h.switched and not h.gone.is_set():
            h.release()


async def _wait(*events: asyncio.Event) -> bool:
    """Wait for the first of ``events``, at most ``LEFT_TIMEOUT_S``; whether one came."""
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        done, _ = await asyncio.wait(waits, timeout=LEFT_TIMEOUT_S,
                                     return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
    return bool(done)


async def _gone(pids: list[int], client: XserverClient, quiet: Quiet | None
                ) -> tuple[list[int], str]:
    """Poll xserver until it lists none of ``pids`` (XQueues or processes); the pids
    still listed after ``GONE_TIMEOUT_S`` (empty: none), and the last poll's error."""
    if not pids:
        return [], ""
    end = time.monotonic() + GONE_TIMEOUT_S
    listed: list[int] = list(pids)
    err = ""
    while True:
        try:
            data = await asyncio.to_thread(client.xqueues)
            err = ""
            rows = [*(data.get("xqueues") or []), *(data.get("processes") or [])]
            seen = {int(r.get("pid", -1)) for r in rows if isinstance(r, dict)}
            listed = [p for p in pids if p in seen]
            if not listed:
                return [], ""
        except XschedError as e:
            err = str(e)[:200]
            if quiet is not None and (dead := quiet.gone()) is not None:
                return listed, dead
        if time.monotonic() >= end:
            return listed, err
        await asyncio.sleep(GONE_POLL_S)
