"""The phase watch's pause (``Runner._pause``): once measuring, it ends at the planned
end itself, not at its next tick, nor before the planned end (a quarter second late was
the old 4 Hz poll; the 1 Hz tick would make it a second)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

from xwatch.core.plans.runner import Runner


class _NeverExits:
    async def wait_all(self) -> None:
        await asyncio.Event().wait()


def _runner() -> Runner:
    r = object.__new__(Runner)  # only the pause's own state: its supervisor
    r.supervisor = _NeverExits()  # type: ignore[assignment]
    return r


async def test_a_measuring_pause_ends_at_the_planned_end_not_its_tick() -> None:
    planned_in = 0.3
    t0 = time.monotonic()
    phase: Any = SimpleNamespace(t_measure=t0 + planned_in - 2.0)  # 2 s phase, 0.3 s left
    exits = await _runner()._pause(phase, 2.0, 30.0, asyncio.Event(), None)
    took = time.monotonic() - t0
    assert took >= planned_in - 0.01
    # a tick of 30 s would take 30 s: anything under 20 s is the planned end, however
    # busy the machine (the event loop's lag is not the watch's)
    assert took < 20, took
    assert exits is not None and not exits.done()
    exits.cancel()


async def test_a_pause_ends_at_once_when_stop_is_set() -> None:
    stop = asyncio.Event()
    phase: Any = SimpleNamespace(t_measure=time.monotonic())
    asyncio.get_running_loop().call_later(0.05, stop.set)
    t0 = time.monotonic()
    exits = await _runner()._pause(phase, 3600.0, 30.0, stop, None)
    assert time.monotonic() - t0 < 20
    assert exits is not None
    exits.cancel()


async def test_a_loading_phase_looks_again_within_a_quarter_second() -> None:
    phase: Any = SimpleNamespace(t_measure=None)
    t0 = time.monotonic()
    assert await _runner()._pause(phase, 10.0, 30.0, asyncio.Event(), None) is None
    assert 0.2 <= time.monotonic() - t0 < 20
