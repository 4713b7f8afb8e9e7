"""The XSched mode's side of the preflight probes' leave (``leave.probes``): when the
phase's XSched workloads do no GPU work (held at the start gate, or ended), a hold on
xwatch's own ``/xqueues`` polls (the poll thread takes ``lock`` around each request),
and xserver's "client process N closed" log lines, read as they come. Also how an
xserver that ended by itself is told apart from one xwatch stopped."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable

from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.snapshot import PENDING, STARTING, TERMINAL, WAITING, WARMING
from xwatch.core.xsched.engagement import XserverLog

#: how long the probes wait for the workloads to finish loading and be held
QUIET_MAX_S = 120.0
QUIET_POLL_S = 0.05
CLOSED_POLL_S = 0.005  # xserver's log lines arrive on the event loop


class XserverQuiet:
    """``probe_leave.Quiet`` for one phase: ``log``, xserver's as it comes;
    ``in_xsched(name)`` says which of its workloads are XSched clients; ``joined``: the
    xserver is another session's (its log is not read here)."""

    def __init__(self, log: XserverLog, phase: Phase, in_xsched: Callable[[str], bool],
                 joined: bool, proc: subprocess.Popen[bytes] | None = None) -> None:
        self.log = log
        self.proc = proc
        self.phase = phase
        self.in_xsched = in_xsched
        self.joined = joined
        self.lock = threading.Lock()  # held: the poll thread sends nothing

    async def closed(self, pid: int, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while not self.joined and pid not in self.log.closed:
            if time.monotonic() >= end:
                return False
            await asyncio.sleep(CLOSED_POLL_S)
        return not self.joined

    async def quiet(self) -> str:
        t0 = time.monotonic()
        gate = self.phase.session.scenario.start_together
        while True:
            # a workload not asked for yet (no "spawn") runs nothing: only the started count
            runs = [r for n, r in self.phase.runs.items() if self.in_xsched(n)
                    and (r.state != PENDING or "spawn" in r.stages) and r.state not in TERMINAL]
            # the start gate holds the built-in ones (models, servers' load generators) warm
            held = [r for r in runs if gate and (r.spec.model is not None
                                                 or r.spec.server is not None)]
            loading = [r.spec.name for r in held if r.state in (PENDING, STARTING, WARMING)]
            waited = time.monotonic() - t0
            if loading and waited < QUIET_MAX_S:
                await asyncio.sleep(QUIET_POLL_S)
                continue
            said = []
            if loading:
                said.append(f"{', '.join(loading)} still loading after {QUIET_MAX_S:g} s")
            elif held:
                said.append(f"the workloads were held at the start gate (waited {waited:.1f} s)")
            free = [r.spec.name for r in runs if r not in held and r.state != WAITING]
            if free:
                said.append(f"{', '.join(free)} ran beside the leave (not held by the start "
                            "gate)")
            return "; ".join(said) or "no XSched workload was running"

    def gone(self) -> str | None:
        """Why this phase's xserver is gone, when it ended by itself (``died_by_itself``)."""
        return died_by_itself(self.proc, self.phase, self.log) if self.proc is not None \
            else None

    @contextlib.asynccontextmanager
    async def hush(self) -> AsyncIterator[None]:
        await asyncio.to_thread(self.lock.acquire)  # after the poll in flight, if any
        try:
            yield
        finally:
            self.lock.release()


def died_by_itself(proc: subprocess.Popen[bytes], phase: Phase | None,
                   log: Iterable[str]) -> str | None:
    """Why the phase's xserver ``proc`` is gone, when it ended by itself before xwatch
    stopped it (an abort the polls had not seen yet: the preflight's probes crash with
    it), with the last lines of its ``log``; None while it runs."""
    rc = proc.poll()
    if rc is None:
        return None
    how = f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}"
    into = f" {time.monotonic() - phase.t_start:.1f} s into phase {phase.name}" \
        if phase is not None else ""
    tail = " | ".join(list(log)[-3:])[-300:]
    return f"xserver (pid {proc.pid}) died ({how}){into}" + (f"; its log: {tail}" if tail else "")
