"""CPU used by the dashboard process itself (workloads are separate processes
and not counted), with the demo scenario and with a fast synthetic producer.

    python benchmarks/measure/dashboard_cpu.py [--seconds 30] [--rate 20000] [--only light|demo|fast]
                                       [--profile OUT.pstats]
    python benchmarks/measure/dashboard_cpu.py --fleet 2,4,8,16 [--seconds 30] [--repeat 2]

``--fleet N,...``: N paced workloads on N/2 GPUs (``--gpus 0,...``): on each GPU a
HIGH producer at 20 req/s and a LOW one at 50 req/s (2 samples each), with the fake
NVML of the tests reporting N/2 devices (``FAKE_NVML_GPUS``) polled as on a real box
(``--telemetry nvml``). N = 2 is one pair without ``--gpus``. The sizes are measured
in turn, ``--repeat`` rounds interleaved, so a drift of the machine is spread over all.

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
import importlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from xwatch.scenario import load_scenario
from xwatch.ui.app import make_app

ROOT = Path(__file__).resolve().parents[2]


async def measure(scenario_ref: str, seconds: float, profile: str | None = None,
                  telemetry: str = "host", xsched: str | None = None, mode: str = "native",
                  device: str | None = None, settle: float = 60.0,
                  gpus: tuple[int, ...] | None = None,
                  size: tuple[int, int] = (150, 46),
                  proc_interval: float | None = None, warm: float = 3.0) -> dict[str, float]:
    scen = load_scenario(scenario_ref).with_overrides(device=device, gpus=gpus)
    backend = mps = None
    if xsched:
        from xwatch.core.xsched.controller import backend_from_args
        backend = backend_from_args(xsched, scen)
    if mode == "mps":
        from xwatch.core.mps.controller import backend_from_args as mps_backend
        mps, _ = mps_backend(scen, explicit=True)
    kw = {} if proc_interval is None else {"telemetry_proc_interval": proc_interval}
    from xwatch.core.plans.options import Backends

    app = make_app(scen, telemetry=telemetry, backends=Backends.of(backend, mps), mode=mode,
                   **kw)
    me = psutil.Process()
    async with app.run_test(size=size) as pilot:
        # models load, warm up (XSched: preflight too): wait until every workload has
        # counted requests (at most ``settle`` s), then ``warm`` s more, so start-up stays
        # out (an XSched phase polls at its fast pace for its first 20 s: --warm 25 for
        # the settled pace)
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
                print(f"  phase {ph.name}: {ph.status} {ph.error or ''}")
                for name, run in ph.runs.items():
                    print(f"  {name}: {run.state} n={run.rec.count}")
            for ln in app.session.logs_since(0)[-25:]:
                print(f"  log {ln.source} {ln.stream}: {ln.text[:300]}")
        await pilot.pause(warm)
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
    parts = [f"{k} {v:.2f}%" for k, v in sorted(th.items(), key=lambda kv: -kv[1]) if v >= 0.05]
    return "    threads: " + ", ".join(parts)


def producers(name: str, high: tuple[str, int], low: tuple[str, int]) -> str:
    """A scenario file of two paced producers (tests/data/workloads/pipe_producer.py):
    ``(workload name, requests/s)`` for the high- and the low-priority one."""
    f = Path(tempfile.mkdtemp()) / f"{name}.toml"
    prod = f"{ROOT}/tests/data/workloads/pipe_producer.py"
    tables = "".join(f"""
[[workload]]
name = "{wl}"
priority = "{prio}"
command = ["{sys.executable}", "{prod}", "{rate}"]
""" for prio, (wl, rate) in (("high", high), ("low", low)))
    f.write_text(f'name = "{name}"\nduration_s = 600\n{tables}')
    return str(f)


def synthetic(rate: int, low_rate: int = 50) -> str:
    return producers("synthetic", ("fast", rate), ("slow", low_rate))


def fleet_scenario() -> str:
    """HIGH at 20 req/s and LOW at 50 req/s: replicated per GPU with ``gpus``."""
    return producers("fleet", ("high", 20), ("low", 50))


def fleet(sizes: list[int], seconds: float, repeat: int, profile: str | None) -> None:
    """The dashboard's cost against the number of workloads (see the module doc)."""
    fake = str(ROOT / "tests" / "data" / "fake_nvml")
    if fake not in sys.path:
        sys.path.insert(0, fake)  # telemetry imports pynvml in this process
    import pynvml

    ref = fleet_scenario()
    got: dict[int, list[float]] = {n: [] for n in sizes}
    for rnd in range(repeat):
        for n in sizes:
            gpus = n // 2
            os.environ["FAKE_NVML_GPUS"] = str(max(1, gpus))
            importlib.reload(pynvml)  # it reads the device count when imported
            r = asyncio.run(measure(ref, seconds, profile, telemetry="nvml",
                                    gpus=tuple(range(gpus)) if gpus > 1 else None))
            got[n].append(r["cpu_pct"])
            print(f"round {rnd + 1}: {n:2d} workloads on {max(1, gpus)} fake NVML device(s): "
                  f"dashboard CPU {r['cpu_pct']:5.2f}% of one core, ingesting "
                  f"{r['events_per_s']:6.0f} events/s", flush=True)
            print(thread_line(r), flush=True)
    print("\nworkloads  dashboard CPU, % of one core (each round)")
    for n in sizes:
        print(f"{n:9d}  " + ", ".join(f"{v:.2f}" for v in got[n]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--only", choices=("light", "demo", "fast"))
    ap.add_argument("--profile", metavar="OUT.pstats")
    ap.add_argument("--scenario", help="measure this scenario instead (e.g. intensive)")
    ap.add_argument("--telemetry", default="host")
    ap.add_argument("--xsched", metavar="ROOT")
    ap.add_argument("--mode", default="native", choices=("native", "xsched", "mps"))
    ap.add_argument("--device")
    ap.add_argument("--fleet", metavar="N,N,...",
                    help="the cost curve over N paced workloads on N/2 fake NVML GPUs")
    ap.add_argument("--repeat", type=int, default=1, help="--fleet: rounds, interleaved")
    ap.add_argument("--settle", type=float, default=60.0, metavar="S",
                    help="at most this long to wait for every workload's first requests "
                         "(model load, preflight) before measuring")
    ap.add_argument("--warm", type=float, default=3.0, metavar="S",
                    help="seconds between every workload counting and the measured window")
    ap.add_argument("--proc-interval", type=float, metavar="S",
                    help="seconds between per-process GPU queries (default: the app's, "
                         "as --telemetry-proc-interval)")
    a = ap.parse_args()
    if a.fleet:
        fleet([int(x) for x in a.fleet.split(",")], a.seconds, a.repeat, a.profile)
        return
    if a.scenario:
        r = asyncio.run(measure(a.scenario, a.seconds, a.profile, a.telemetry, a.xsched,
                                a.mode, a.device, a.settle, proc_interval=a.proc_interval,
                                warm=a.warm))
        print(f"{a.scenario} ({a.mode}, telemetry {a.telemetry}) dashboard CPU "
              f"{r['cpu_pct']:5.2f}% of one core, ingesting {r['events_per_s']:8.0f} events/s")
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
