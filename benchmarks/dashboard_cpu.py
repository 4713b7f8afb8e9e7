"""CPU used by the dashboard process itself (workloads are separate processes
and not counted), with the demo scenario and with a fast synthetic producer.

    python benchmarks/dashboard_cpu.py [--seconds 30] [--rate 20000] [--only light|demo|fast]
                                       [--profile OUT.pstats]

``light`` is the rate of the `intensive` pair (20 req/s + 6 it/s) from synthetic
producers, so the dashboard's own cost is measured without workloads competing for
the CPU. ``--profile`` runs cProfile over the measured window.

Runs the real app headless (Textual's run_test, 120x40) for the given time and
reports the xwatch process's CPU time / wall time, events ingested, and how
many screen refreshes happened.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from xwatch.scenario import load_scenario
from xwatch.ui.app import make_app

ROOT = Path(__file__).resolve().parent.parent


async def measure(scenario_ref: str, seconds: float, profile: str | None = None,
                  telemetry: str = "host", xsched: str | None = None, mode: str = "native",
                  device: str | None = None, settle: float = 60.0) -> dict[str, float]:
    scen = load_scenario(scenario_ref).with_overrides(device=device)
    backend = None
    if xsched:
        from xwatch.core.xsched.controller import backend_from_args
        backend = backend_from_args(xsched, scen)
    app = make_app(scen, telemetry=telemetry, xsched=backend, mode=mode)
    me = psutil.Process()
    async with app.run_test(size=(150, 46)) as pilot:
        # models load, warm up (XSched: preflight too): wait until every workload has
        # counted requests (at most ``settle`` s), then 3 s more, so start-up stays out
        end = time.monotonic() + settle
        started = False
        while time.monotonic() < end:
            ph = app.session.current
            if ph is not None and ph.runs and all(r.rec.count for r in ph.runs.values()):
                started = True
                break
            await pilot.pause(0.5)
        if not started:  # measuring an idle dashboard would flatter it: say so, and why
            print(f"WARNING: not every workload counted a request within {settle:.0f} s "
                  "(--settle): this measurement is not of a running scenario", flush=True)
            ph = app.session.current
            if ph is not None:
                print(f"  phase {ph.name}: {ph.status} {ph.extra.get('error') or ''}")
                for name, run in ph.runs.items():
                    print(f"  {name}: {run.state} n={run.rec.count}")
            for ln in app.session.logs_since(0)[-25:]:
                print(f"  log {ln.source} {ln.stream}: {ln.text[:300]}")
        await pilot.pause(3.0)
        prof = None
        if profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        c0, t0 = me.cpu_times(), time.monotonic()
        th0 = {t.id: t.user_time + t.system_time for t in me.threads()}
        n0 = sum(r.rec.count for r in app.session.current.runs.values())  # type: ignore[union-attr]
        await pilot.pause(seconds)
        c1, t1 = me.cpu_times(), time.monotonic()
        th1 = {t.id: t.user_time + t.system_time for t in me.threads()}
        if prof is not None and profile:
            prof.disable()
            prof.dump_stats(profile)
        n1 = sum(r.rec.count for r in app.session.current.runs.values())  # type: ignore[union-attr]
        await app.action_quit()
    cpu = (c1.user - c0.user) + (c1.system - c0.system)
    names = {t.native_id: t.name for t in threading.enumerate()}
    per_thread = {names.get(tid, str(tid)): 100 * (th1[tid] - th0.get(tid, 0.0)) / (t1 - t0)
                  for tid in th1}
    return {"cpu_pct": 100 * cpu / (t1 - t0), "events_per_s": (n1 - n0) / (t1 - t0),
            "threads": per_thread}  # type: ignore[dict-item]


def thread_line(r: dict[str, object]) -> str:
    """Per-thread CPU (% of one core), busiest first, threads under 0.05% left out."""
    th = r.get("threads") or {}
    assert isinstance(th, dict)
    parts = [f"{k} {v:.1f}%" for k, v in sorted(th.items(), key=lambda kv: -kv[1]) if v >= 0.05]
    return "    threads: " + ", ".join(parts)


def synthetic(rate: int, low_rate: int = 50) -> str:
    f = Path(tempfile.mkdtemp()) / "synthetic.toml"
    f.write_text(f"""
name = "synthetic"
duration_s = 600
[[workload]]
name = "fast"
priority = "high"
command = ["{sys.executable}", "{ROOT}/tests/data/workloads/pipe_producer.py", "{rate}"]
[[workload]]
name = "slow"
priority = "low"
command = ["{sys.executable}", "{ROOT}/tests/data/workloads/pipe_producer.py", "{low_rate}"]
""")
    return str(f)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--only", choices=("light", "demo", "fast"))
    ap.add_argument("--profile", metavar="OUT.pstats")
    ap.add_argument("--scenario", help="measure this scenario instead (e.g. intensive)")
    ap.add_argument("--telemetry", default="host")
    ap.add_argument("--xsched", metavar="ROOT")
    ap.add_argument("--mode", default="native", choices=("native", "xsched"))
    ap.add_argument("--device")
    ap.add_argument("--settle", type=float, default=60.0, metavar="S",
                    help="at most this long to wait for every workload's first requests "
                         "(model load, preflight) before measuring")
    a = ap.parse_args()
    if a.scenario:
        r = asyncio.run(measure(a.scenario, a.seconds, a.profile, a.telemetry, a.xsched,
                                a.mode, a.device, a.settle))
        print(f"{a.scenario} ({a.mode}, telemetry {a.telemetry}) dashboard CPU "
              f"{r['cpu_pct']:5.1f}% of one core, ingesting {r['events_per_s']:8.0f} events/s")
        print(thread_line(r))
        return
    runs = {"light": ("light: producers at 20/s + 6/s (intensive's rates)", lambda: synthetic(20, 6)),
            "demo": ("demo (real torch workers)", lambda: "demo"),
            "fast": (f"synthetic producer ({a.rate}/s requested)", lambda: synthetic(a.rate))}
    for key, (label, ref) in runs.items():
        if a.only and key != a.only:
            continue
        r = asyncio.run(measure(ref(), a.seconds, a.profile))
        print(f"{label:<40} dashboard CPU {r['cpu_pct']:5.1f}% of one core, "
              f"ingesting {r['events_per_s']:8.0f} events/s")
        print(thread_line(r))


if __name__ == "__main__":
    main()
