"""The event pipe reader on real pipes and a real event loop: a read is delivered at
once, what is written during the pause waits at most one pause, what the pipe holds
can be taken at any moment (a snapshot, the stall watchdog), slow pipes are read
together on the shared grid, and a flood is drained without pauses."""

from __future__ import annotations

import asyncio
import json
import math
import os
from typing import Any

from xwatch.core.engine.supervisor import _EventPipe, _FlushGrid, _Ticket
from xwatch.core.model.events import Event, Request


class _Run:
    """What the reader hands events to (``WorkloadRun``'s intake)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.at: list[float] = []
        self.stop_requested = False

    def on_events(self, events: list[Event]) -> None:
        self.events += events
        self.at.append(asyncio.get_running_loop().time())

    def on_malformed(self, lines: list[str]) -> None:
        raise AssertionError(lines)


class _Proc:
    returncode = 0


class _Mp:
    def __init__(self) -> None:
        self.run = _Run()
        self.proc = _Proc()


def _lines(first: int, n: int) -> bytes:
    return b"".join((json.dumps({"seq": i, "t": 1.0, "latency_ms": 1.5}) + "\n").encode()
                    for i in range(first, first + n))


async def _reader(capacity: int = 1 << 20) -> tuple[_EventPipe, int, _Mp]:
    r, w = os.pipe()
    mp = _Mp()
    loop = asyncio.get_running_loop()
    _, proto = await loop.connect_read_pipe(lambda: _EventPipe(mp, capacity),  # type: ignore[arg-type]
                                            os.fdopen(r, "rb", 0))
    return proto, w, mp


async def _close(proto: _EventPipe, w: int) -> None:
    """The writer exits: the reader delivers the rest and sees the end."""
    os.close(w)
    proto.drain()
    await asyncio.wait_for(proto.closed, 5)


async def _until(cond: Any, timeout: float = 5.0) -> None:
    end = asyncio.get_running_loop().time() + timeout
    while not cond():
        assert asyncio.get_running_loop().time() < end, "timed out"
        await asyncio.sleep(0.005)


def test_first_read_at_once_then_paused_and_taken_on_demand() -> None:
    async def main() -> None:
        proto, w, mp = await _reader()
        loop = asyncio.get_running_loop()
        proto.window = 0.8  # a slow producer's pauses (the grid is used from 0.25 s)
        t0 = loop.time()
        os.write(w, _lines(0, 5))
        await _until(lambda: len(mp.run.events) == 5)
        assert loop.time() - t0 < 0.2  # delivered at once, not after a pause
        assert isinstance(proto._timer, _Ticket)  # a long pause, on the grid
        os.write(w, _lines(5, 5))  # the reader is paused: this waits in the pipe
        await asyncio.sleep(0.05)
        assert len(mp.run.events) == 5
        proto.deliver_now()  # a snapshot takes what the pipe holds
        assert [e.seq for e in mp.run.events if isinstance(e, Request)] == list(range(10))
        await _close(proto, w)

    asyncio.run(main())


def test_what_waits_in_the_pipe_is_read_at_the_end_of_one_pause() -> None:
    async def main() -> None:
        proto, w, mp = await _reader()
        loop = asyncio.get_running_loop()
        proto.window = 0.6
        os.write(w, _lines(0, 1))
        await _until(lambda: len(mp.run.events) == 1)
        assert proto._timer is not None  # paused, for about a second
        t0 = loop.time()
        os.write(w, _lines(1, 3))
        await _until(lambda: len(mp.run.events) == 4)
        waited = loop.time() - t0
        # at most the pause (<= 1 s, then the next quarter-second grid point), never two
        assert waited <= proto.MAX_COALESCE_S + _FlushGrid.GRID_S + 0.1
        await _close(proto, w)

    asyncio.run(main())


def test_slow_pipes_are_read_together_on_the_grid() -> None:
    async def main() -> None:
        pipes = [await _reader() for _ in range(4)]
        for _, w, _ in pipes:
            os.write(w, _lines(0, 1))
        await _until(lambda: all(len(mp.run.events) == 1 for _, _, mp in pipes))
        loop = asyncio.get_running_loop()
        grid = _FlushGrid.GRID_S
        now = loop.time()  # start just after a grid point: the four pauses begin within
        await asyncio.sleep(math.ceil(now / grid) * grid - now + 0.01)  # one step
        for proto, w, _ in pipes:  # each paused 0.4 s from a slightly different moment
            if proto._timer is not None:
                proto._timer.cancel()
                proto._timer = None
            proto.window = 0.4
            proto._pause(1)
            os.write(w, _lines(1, 2))
            await asyncio.sleep(0.005)
        await _until(lambda: all(len(mp.run.events) == 3 for _, _, mp in pipes))
        times = {round(mp.run.at[-1], 2) for _, _, mp in pipes}
        assert len(times) == 1  # one wake-up delivered all four
        for proto, w, _ in pipes:
            await _close(proto, w)

    asyncio.run(main())


def test_a_flood_is_drained_without_waiting_a_pause() -> None:
    """A writer that floods after a slow start (a hello, then events as fast as it can)
    never finds its pipe full for long: 200,000 events arrive well inside a second of
    pauses."""
    async def main() -> None:
        proto, w, mp = await _reader(capacity=1 << 16)
        os.write(w, b'{"type": "hello", "pid": 1}\n')
        await asyncio.sleep(0.3)  # slow start: the next pause would be long
        loop = asyncio.get_running_loop()
        total = 200_000
        chunk = _lines(0, 500)

        def write_all() -> None:
            for _ in range(total // 500):
                os.write(w, chunk)  # blocks while the pipe is full
            os.close(w)

        t0 = loop.time()
        writer = loop.run_in_executor(None, write_all)
        await _until(lambda: len(mp.run.events) >= total, timeout=30)
        await writer
        assert loop.time() - t0 < 10
        proto.drain()
        await asyncio.wait_for(proto.closed, 5)

    asyncio.run(main())
