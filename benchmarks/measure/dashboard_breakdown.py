"""Where the dashboard's CPU goes, per component, without a profiler's distortion.

    python benchmarks/measure/dashboard_breakdown.py SCENARIO [--seconds 30] [--xsched ROOT]
                                             [--telemetry host] [--device D] [--gpus 0,1]

SCENARIO ``fleet`` is ``dashboard_cpu --fleet``'s pair of paced producers; with
``--gpus 0,...,7`` and ``PYTHONPATH=tests/data/fake_nvml FAKE_NVML_GPUS=8`` and
``--telemetry nvml`` it is the 16-workload, 8-device case.

Runs ``dashboard_cpu.measure`` and, during its window only, accounts CPU time
(``time.thread_time``, the calling thread's own) to: every event-loop callback (by
the coroutine or function it runs), every widget's ``render_lines`` (by class), the
snapshot, the ``/xqueues`` fetch (on the poll thread), and each garbage collection
(by generation, wall time). cProfile doubled the event loop's cost and shifted its
shares towards Python-heavy code; these wrappers add a few microseconds per call.
Sums overlap (a widget's render runs inside a timer callback).

Fake XSched here: make the test fake with ``tests/helpers/fake_xsched.make_install``
and set ``FAKE_XQUEUES_PER_PROCESS=144`` (PyTorch under the real shim).
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.events
import collections
import gc
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))

import dashboard_cpu

ON = False
CACHES: list[Any] = []  # the /xqueues polls' answer caches (hits: answers not decoded)
cpu: collections.Counter[str] = collections.Counter()
calls: collections.Counter[str] = collections.Counter()


def account(key: str, fn: Callable[[], Any]) -> Any:
    if not ON:
        return fn()
    if threading.current_thread() is not threading.main_thread():
        key += " [thread]"
    t0 = time.thread_time()
    try:
        return fn()
    finally:
        cpu[key] += time.thread_time() - t0
        calls[key] += 1


def wrap(owner: Any, name: str, key: str | None = None) -> None:
    f = getattr(owner, name)
    label = key or f"{owner.__name__}.{name}"

    def w(*a: Any, **k: Any) -> Any:
        return account(label, lambda: f(*a, **k))

    setattr(owner, name, w)


def install() -> None:
    from textual.widget import Widget

    from xwatch.core.engine.live.session import Session
    from xwatch.core.xsched.client import XserverClient
    from xwatch.core.xsched.xqueues.polling import AnswerCache

    wrap(Session, "snapshot")
    wrap(XserverClient, "xqueues_raw")  # the HTTP exchange
    wrap(AnswerCache, "answer")  # the decoding (or the last answer again)
    init = AnswerCache.__init__

    def keep(self: AnswerCache) -> None:
        init(self)
        CACHES.append(self)

    AnswerCache.__init__ = keep  # type: ignore[method-assign]
    rl = Widget.render_lines
    Widget.render_lines = lambda self, crop: account(  # type: ignore[method-assign]
        f"render_lines {type(self).__name__}", lambda: rl(self, crop))
    run = asyncio.events.Handle._run

    def handle_run(self: Any) -> None:
        cb = self._callback
        name = getattr(cb, "__qualname__", None) or type(cb).__name__
        owner = getattr(cb, "__self__", None)
        if owner is not None and hasattr(owner, "get_coro"):  # a task step: its coroutine
            name = "task " + getattr(owner.get_coro(), "__qualname__", "?")
        account("loop: " + name, lambda: run(self))

    asyncio.events.Handle._run = handle_run  # type: ignore[method-assign]
    started: dict[int, float] = {}

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if not ON:
            return
        if phase == "start":
            started[0] = time.perf_counter()
        elif 0 in started:
            cpu[f"gc gen{info['generation']} (wall)"] += time.perf_counter() - started.pop(0)
            calls[f"gc gen{info['generation']} (wall)"] += 1

    gc.callbacks.append(on_gc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--xsched", metavar="ROOT")
    ap.add_argument("--telemetry", default="host")
    ap.add_argument("--device")
    ap.add_argument("--gpus", help="replicate onto these GPUs, as --gpus")
    ap.add_argument("--warm", type=float, default=3.0, metavar="S",
                    help="as dashboard_cpu --warm")
    ap.add_argument("--mode", choices=("native", "xsched", "mps"),
                    help="default: xsched with --xsched, else native")
    a = ap.parse_args()
    gpus = tuple(int(x) for x in a.gpus.split(",")) if a.gpus else None
    ref = dashboard_cpu.fleet_scenario() if a.scenario == "fleet" else a.scenario
    install()
    from textual.pilot import Pilot

    pause = Pilot.pause

    async def window(self: Any, delay: float | None = None) -> None:
        global ON
        ON = delay is not None and delay == a.seconds  # the measured window only
        try:
            await pause(self, delay)
        finally:
            ON = False

    Pilot.pause = window  # type: ignore[method-assign]
    r = asyncio.run(dashboard_cpu.measure(ref, a.seconds, None, a.telemetry, a.xsched,
                                          a.mode or ("xsched" if a.xsched else "native"),
                                          a.device,
                                          gpus=gpus, warm=a.warm))
    print(f"{a.scenario}: dashboard CPU {r['cpu_pct']:.2f}% of one core")
    print(dashboard_cpu.thread_line(r))
    for c in CACHES:
        print(f"  /xqueues answers: {c.misses} decoded, {c.hits} the same bytes as the last")
    print(f"  {'component':58s} {'ms/s':>7s} {'calls/s':>8s} {'ms/call':>8s}")
    for k, v in cpu.most_common(30):
        print(f"  {k[:58]:58s} {1000 * v / a.seconds:7.2f} {calls[k] / a.seconds:8.2f} "
              f"{1000 * v / calls[k]:8.3f}")


if __name__ == "__main__":
    main()
