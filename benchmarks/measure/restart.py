"""How long the dashboard's ``m`` and ``x`` keys take: from the key to the new
phase's first measured second, split into the old phase's teardown and the new
phase's start (issue 41 goal 1).

    python benchmarks/measure/restart.py intensive --modes native,mps --toggles 4 --device cuda:0
    python benchmarks/measure/restart.py intensive --modes native,xsched --xsched ROOT
    python benchmarks/measure/restart.py demo --modes native --toggles 2 --device cpu   # restarts (r)

The keys call ``Runner.start_phase(new mode)``, which stops the running phase first;
this script makes the same calls on the same runner (no terminal), cycling through
``--modes`` ``--toggles`` times after a first phase, each phase measuring ``--dwell``
seconds before the next key. Every phase is a fresh set of processes, as always.
Prints each switch and, per switch kind, the median and range of: the key to the
old phase gone (teardown: workloads stopped, the mode's daemon left), the new
phase's start to its first measured second, and the whole key to first measured
second. ``--json FILE`` writes every switch.

The goal line (issue 58 goal 4): every ``x`` (a switch into or out of XSched) at most
8 s from the key to the new phase's first measured second, the first ``x`` into XSched
named on its own (it pays the xserver's start and the preflight; the later ones find
the preflight's verdicts cached). Each switch into XSched also says what its start
waited for: the preflight's seconds, the start gate, how its copies and probes started
(forked from XSched's fork server, or exec'd and why).

    python benchmarks/measure/restart.py intensive --modes native,xsched --xsched ROOT --device cuda:0
    python benchmarks/measure/restart.py SCEN --modes native,xsched --xsched FAKE --device cpu  # dry run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.session import Session
from xwatch.core.plans.runner import Runner
from xwatch.scenario import load_scenario
from xwatch.testing.starts import goal_lines

MPS, XSCHED = "mps", "xsched"


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


def started(p: Phase) -> dict[str, Any]:
    """What the new phase's start waited for: its preflight, its start gate (the last
    copy warm -> released), how its copies and its probes started."""
    pre = p.preflight
    starts = [r.launch.start if isinstance(r.launch.start, str) else "?" for r in p.runs.values()]
    gates = [r.stages["released"] - r.stages["warm"] for r in p.runs.values()
             if "released" in r.stages and "warm" in r.stages]
    probes = [v.start if isinstance(v.start, str) else "?" for v in (pre.verdicts if pre else [])
              if not v.cached]
    return {"preflight_s": pre.seconds if pre is not None and isinstance(pre.seconds, float)
            else None, "gate_s": max(gates) if gates else None,
            "copies_forked": sum(x.startswith("fork") for x in starts), "copies": len(starts),
            "exec": sorted({x for x in starts if not x.startswith("fork")}), "probes": probes}


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
    from xwatch.core.plans.options import Backends

    runner = Runner(scen, session, backends=Backends.of(xs, mps))
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
            servers: list[dict[str, Any]] = [
                {"start": fs.label, "importing": fs.importing, "import_s": fs.ready_s,
                 "failure": fs.failure} for fs in runner.supervisor.forkservers]
            await runner.start_phase(new_mode)  # what the key does: stop, then start
            p = runner.phase
            assert p is not None and old.t_end is not None
            t_first = await _measuring(runner)
            rec = {"from": old.mode, "to": new_mode, "key_to_old_gone": old.t_end - t_key,
                   "start_to_measured": t_first - p.t_start, "key_to_measured": t_first - t_key,
                   **started(p), "forkservers_at_key": servers}
            switches.append(rec)
            how = ""
            if new_mode == XSCHED:
                pre = rec["preflight_s"]
                how = (f" (preflight {f'{pre:.2f} s' if pre is not None else 'cached'}, "
                       f"start gate {rec['gate_s'] or 0:.2f} s, {rec['copies_forked']} of "
                       f"{rec['copies']} copies forked"
                       + "".join(f"; {x}" for x in rec["exec"])
                       + "".join(f"; probe: {x}" for x in dict.fromkeys(rec["probes"]))
                       + "".join(f"; at the key, the server of {x['start']} was still "
                                 "importing" for x in servers if x["importing"]) + ")")
            print(f"{old.mode} -> {new_mode}: teardown {rec['key_to_old_gone']:.2f} s, "
                  f"start {rec['start_to_measured']:.2f} s, key to first measured second "
                  f"{rec['key_to_measured']:.2f} s{how}", flush=True)
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
    for line in goal_lines(switches):
        print(line)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(switches, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
