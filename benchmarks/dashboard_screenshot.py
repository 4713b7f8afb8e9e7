"""Run the real dashboard headless on a scenario, save an SVG screenshot, and
report the dashboard's own CPU use and what the table showed; then quit and
check that no workload survived.

    python benchmarks/dashboard_screenshot.py SCENARIO OUT.svg [--seconds 40]
        [--telemetry auto] [--device cuda:0] [--size 140x44] [--keys t@15,z@25]

``--keys`` presses keys at given seconds (e.g. ``t`` for a kernel capture, ``z`` to
zoom its lane) before the screenshot.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from xwatch.core.plans.console import ms
from xwatch.scenario import load_scenario
from xwatch.ui.app import make_app


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("out")
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--telemetry", default="auto")
    ap.add_argument("--device")
    ap.add_argument("--size", default="140x44")
    ap.add_argument("--keys", default="", help="KEY@SECONDS,... pressed during the run")
    a = ap.parse_args()
    w, h = (int(x) for x in a.size.split("x"))
    scen = load_scenario(a.scenario).with_overrides(device=a.device)
    app = make_app(scen, telemetry=a.telemetry)
    me = psutil.Process()
    async with app.run_test(size=(w, h)) as pilot:
        c0, t0 = me.cpu_times(), time.monotonic()
        for key, at in sorted(((k, float(t)) for k, _, t in
                               (x.partition("@") for x in a.keys.split(",") if x)),
                              key=lambda kt: kt[1]):
            await pilot.pause(max(0.0, at - (time.monotonic() - t0)))
            await pilot.press(key)
        await pilot.pause(max(0.0, a.seconds - (time.monotonic() - t0)))
        c1, t1 = me.cpu_times(), time.monotonic()
        app.refresh_view(force_charts=True)
        await pilot.pause(1.5)
        out = Path(a.out)
        app.save_screenshot(filename=out.name, path=str(out.parent))
        snap = app.snap
        pids = [r.pid for r in app.session.current.runs.values() if r.pid]  # type: ignore[union-attr]
        await app.action_quit()
    cpu = (c1.user - c0.user) + (c1.system - c0.system)
    print(f"dashboard CPU {100 * cpu / (t1 - t0):.1f}% of one core over {t1 - t0:.0f} s")
    assert snap is not None and snap.current is not None
    tel = snap.telemetry
    if tel is not None:
        print(f"telemetry {tel.backend}: {tel.reason}; poll {tel.poll_cost_ms}")
    for wl in snap.current.workloads:
        print(f"{wl.name}: {wl.state} n={wl.count} window p50={ms(wl.window.p50)} "
              f"p99={ms(wl.window.p99)} phase p99={ms(wl.phase.p99)} ms "
              f"{wl.throughput.window_requests_per_s or 0:.2f}/s "
              f"{wl.throughput.window_samples_per_s or 0:.0f} smp/s "
              f"device={wl.hello.get('device_name')} stream={wl.hello.get('stream')}")
    time.sleep(2)
    alive = [p for p in pids if psutil.pid_exists(p)
             and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    print(f"workload processes left after quit: {len(alive)}")


if __name__ == "__main__":
    asyncio.run(main())
