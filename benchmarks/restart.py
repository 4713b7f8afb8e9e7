"""How long the dashboard's ``m`` and ``x`` keys take: from the key to the new
phase's first measured second, split into the old phase's teardown and the new
phase's start (issue 41 goal 1).

    python benchmarks/restart.py intensive --modes native,mps --toggles 4 --device cuda:0
    python benchmarks/restart.py intensive --modes native,xsched --xsched ROOT
    python benchmarks/restart.py demo --modes native --toggles 2 --device cpu   # restarts (r)

The keys call ``Runner.start_phase(new mode)``, which stops the running phase first;
this script makes the same calls on the same runner (no terminal), cycling through
``--modes`` ``--toggles`` times after a first phase, each phase measuring ``--dwell``
seconds before the next key. Every phase is a fresh set of processes, as always.
Prints each switch and, per switch kind, the median and range of: the key to the
old phase gone (teardown: workloads stopped, the mode's daemon left), the new
phase's start to its first measured second, and the whole key to first measured
second. ``--json FILE`` writes every switch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

from xwatch.core.engine.live.session import Session
from xwatch.core.modes.base import MPS, XSCHED
from xwatch.core.plans.runner import Runner
from xwatch.scenario import load_scenario


async def _measuring(runner: Runner, timeout: float = 600.0) -> float:
    """Wait for the running phase's first measured second; its monotonic time."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        p = runner.phase
        if p is not None and p.t_measure is not None and time.monotonic() >= p.t_measure:
            return p.t_measure
        if p is not None and p.t_end is not None:
            raise RuntimeError(f"phase {p.name} ended ({p.status}) before it measured: "
                               f"{p.error}")
        await asyncio.sleep(0.02)
    raise RuntimeError("no measured second within the timeout")


async def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("--modes", default="native,mps")
    ap.add_argument("--toggles", type=int, default=4)
    ap.add_argument("--dwell", type=float, default=3.0)
    ap.add_argument("--device")
    ap.add_argument("--xsched")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    modes = a.modes.split(",")
    scen = load_scenario(a.scenario).with_overrides(duration_s=3600, device=a.device)
    mps = xs = None
    if MPS in modes:
        from xwatch.core.mps.controller import backend_from_args as mps_backend

        mps, _ = mps_backend(scen, explicit=True)
    if XSCHED in modes:
        from xwatch.core.xsched.controller import backend_from_args as xs_backend

        xs = xs_backend(a.xsched, scen)
        if xs is None:
            ap.error("--modes has xsched: give --xsched ROOT (or XSCHED_ROOT)")
    session = Session(scen)
    runner = Runner(scen, session, xsched=xs, mps=mps)
    switches: list[dict[str, Any]] = []
    try:
        await runner.start_phase(modes[0])
        await _measuring(runner)
        for i in range(a.toggles):
            await asyncio.sleep(a.dwell)
            old = runner.phase
            assert old is not None
            new_mode = modes[(i + 1) % len(modes)]
            t_key = time.monotonic()
            await runner.start_phase(new_mode)  # what the key does: stop, then start
            p = runner.phase
            assert p is not None and old.t_end is not None
            t_first = await _measuring(runner)
            rec = {"from": old.mode, "to": new_mode, "key_to_old_gone": old.t_end - t_key,
                   "start_to_measured": t_first - p.t_start, "key_to_measured": t_first - t_key}
            switches.append(rec)
            print(f"{old.mode} -> {new_mode}: teardown {rec['key_to_old_gone']:.2f} s, "
                  f"start {rec['start_to_measured']:.2f} s, key to first measured second "
                  f"{rec['key_to_measured']:.2f} s", flush=True)
    finally:
        await runner.stop_phase()
        session.close()
    kinds = dict.fromkeys((s["from"], s["to"]) for s in switches)
    for f, t in kinds:
        mine = [s for s in switches if (s["from"], s["to"]) == (f, t)]
        parts = []
        for k in ("key_to_old_gone", "start_to_measured", "key_to_measured"):
            v = [s[k] for s in mine]
            parts.append(f"{k} {statistics.median(v):.2f} s [{min(v):.2f}, {max(v):.2f}]")
        print(f"{f} -> {t} (n={len(mine)}): " + "; ".join(parts))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(switches, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
