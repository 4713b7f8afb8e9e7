"""Run the real dashboard headless on a scenario, save an SVG screenshot, and
report the dashboard's own CPU use and what the table showed; then quit and
check that no workload survived.

    python benchmarks/measure/dashboard_screenshot.py SCENARIO OUT.svg [--seconds 40]
        [--telemetry auto] [--device cuda:0] [--size 140x44] [--keys t@15,z@25]
        [--gpus 0,1] [--mode native|xsched|mps] [--xsched ROOT] [--tab-shot 3:XS.svg]

``--keys`` presses keys at given seconds (e.g. ``t`` for a kernel capture, ``z`` to
zoom its lane) before the screenshot. ``--gpus``, ``--mode`` and ``--xsched`` are
``xwatch run``'s own (the same checks: a missing install or GPU is its titled error).
``--tab-shot KEY:FILE.svg`` (repeatable) presses KEY after the main screenshot and saves
another (``3``: the XSched tab with its scheduler lane).

The manual's home page image, on a machine with two GPUs and XSched (about 2 minutes):

    python benchmarks/measure/dashboard_screenshot.py intensive docs/screenshot-gpus.svg \
        --gpus 0,1 --mode xsched --xsched ROOT --telemetry nvml --seconds 60 \
        --size 160x50 --tab-shot 3:docs/screenshot-gpus-xsched.svg
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from xwatch.core.plans.console import ms
from xwatch.ui.app import make_app


def _setup(a: argparse.Namespace) -> dict[str, Any]:
    """The app's arguments as ``xwatch run`` makes them: its parser, its scenario
    overrides (--device, --gpus) and its XSched/MPS backends with their checks."""
    from xwatch.cli.checks import backends_of, check_devices, scenario_of
    from xwatch.cli.parser import build_parser

    argv = ["run", a.scenario, "--mode", a.mode, "--telemetry", a.telemetry]
    argv += [f"--{k}={v}" for k, v in (("device", a.device), ("gpus", a.gpus),
                                       ("xsched", a.xsched)) if v]
    args = build_parser().parse_args(argv)
    scen = scenario_of(args)
    backends = backends_of(args, scen, [a.mode])  # a mode that cannot run: refused
    check_devices(scen)
    return {"scenario": scen, "mode": a.mode, "telemetry": a.telemetry, "backends": backends}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("out")
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--telemetry", default="auto")
    ap.add_argument("--device")
    ap.add_argument("--size", default="140x44")
    ap.add_argument("--keys", default="", help="KEY@SECONDS,... pressed during the run")
    ap.add_argument("--gpus", help="a copy of every workload on each of these GPUs (0,1)")
    ap.add_argument("--mode", default="native", help="the first phase's mode")
    ap.add_argument("--xsched", help="the XSched install (else XSCHED_HOME)")
    ap.add_argument("--tab-shot", action="append", default=[], metavar="KEY:FILE.svg",
                    help="after the screenshot, press KEY and save FILE.svg (repeatable)")
    a = ap.parse_args()
    w, h = (int(x) for x in a.size.split("x"))
    app = make_app(**_setup(a))
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
        print(f"screenshot: {out}")
        for shot in a.tab_shot:
            key, _, name = shot.partition(":")
            await pilot.press(key)
            await pilot.pause(1.5)
            more = Path(name)
            app.save_screenshot(filename=more.name, path=str(more.parent))
            print(f"screenshot: {more} (after {key!r})")
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
    from xwatch.errors import XwatchError

    try:
        asyncio.run(main())
    except XwatchError as e:  # a missing install or GPU: its title, as xwatch says it
        sys.exit(f"{e.title}: {e}")
