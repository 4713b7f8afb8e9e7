"""Neighbour A/A: does a busy GPU next door bias a candidate? A race over the box
(``plans.box``) runs candidates side by side on the GPUs that ``--gpus`` names, so a
candidate's run on GPU A must not depend on whether GPUs B.. are busy.

One setting (the scenario in one mode) on GPU A alone, against the same setting on
GPU A while every other GPU named runs the same load ("beside"), in interleaved rounds
(alone then beside, then beside then alone: drift cancels), each a plan over the one
runner. Per round the pair of GPU A's runs is compared on the log scale (HIGH's P50 and
P99, each LOW's samples/s): the mean of the paired differences over rounds with its
Student's t 95% interval (``analysis.stats.runs.paired_interval``, never narrower than a
latency histogram's 0.5% bucket). Within noise (the interval holds 0) is the pass. The
same pairs with "beside" made 1.5x slower (a planted bias) must come out beyond noise,
or the check had too few rounds to see such a bias, and it says so.

    python3 benchmarks/stats/neighbours_aa.py OUT [SCENARIO] --gpus 0,1 [--mode native]
        [--rounds 4] [--duration 10] [--xsched ROOT] [--neighbours xsched]

``--neighbours MODE`` makes it the split layout's neighbour A/A (``compare --layout
split``): GPU A in ``--mode`` beside neighbours in the same mode ("same": every GPU
in ``--mode``, in place of "alone"), against GPU A in ``--mode`` beside neighbours in
MODE ("mixed": one split phase, each copy's isolation its own mode's), e.g. native
beside XSched against native beside native.

Writes OUT/aa.json (every pair, every interval), OUT/aa.txt (the table) and the session
(OUT/session: snapshot and report). Exit 0: every metric within noise and the planted
bias caught; 3: a metric differs beyond noise (neighbours bias it) or the planted
bias was missed (too few rounds); 1: a phase failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from pathlib import Path
from typing import Any

from xwatch.core.analysis.stats.runs import paired_interval, run_value
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.stats import RELATIVE_WIDTH
from xwatch.core.model.metric import THROUGHPUT, Metric
from xwatch.core.plans import box
from xwatch.core.plans.driver import EXIT_FAILED, EXIT_GATE, EXIT_OK, Driver, Plan, Step
from xwatch.core.plans.options import Backends, Options
from xwatch.errors import XwatchError
from xwatch.scenario import load_scenario, parse_gpus

PLANTED = 1.5  # the bias the check must be able to see


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("scenario", nargs="?", default="intensive")
    p.add_argument("--gpus", required=True, help="the GPU under test first, then its neighbours")
    p.add_argument("--mode", default="native", choices=("native", "mps", "xsched"))
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--xsched", default=None)
    p.add_argument("--telemetry", default="auto")
    p.add_argument("--neighbours", default=None, choices=("native", "mps", "xsched"),
                   help="the neighbours' mode: a split phase against every GPU in --mode")
    a = p.parse_args(argv)
    if len(parse_gpus(a.gpus)) < 2 or a.rounds < 2:
        p.error("--gpus needs the GPU under test and at least one neighbour; --rounds >= 2")
    return a


def _pairs(session: Session, names: dict[str, str]) -> dict[str, list[tuple[float, float]]]:
    """Per metric, (alone, beside) run values of the GPU under test, per round."""
    snap = session.snapshot()
    by: dict[tuple[int, str], Any] = {}
    for p in snap.phases:
        kind = "beside" if p.copy_modes else p.setting  # a split phase: the mixed one
        if p.status == "done" and kind in ("alone", "beside") and p.repeat:
            by[(int(p.repeat), str(kind))] = p
    out: dict[str, list[tuple[float, float]]] = {k: [] for k in names}
    for rnd in sorted({r for r, _ in by}):
        a, b = by.get((rnd, "alone")), by.get((rnd, "beside"))
        if a is None or b is None:
            continue
        for key, name in names.items():
            metric = Metric.parse(key.partition(" ")[2])
            wa, wb = a.workload(name), b.workload(name)
            if wa is None or wb is None or not wa.count or not wb.count:
                continue
            out[key].append((run_value(wa, metric).est, run_value(wb, metric).est))
    return out


def _judge(pairs: list[tuple[float, float]], latency: bool, scale: float = 1.0
           ) -> dict[str, Any]:
    ok = [(x, y * scale) for x, y in pairs if x > 0 and y > 0]
    res = math.log1p(RELATIVE_WIDTH) if latency else 0.0
    iv = paired_interval([math.log(x) for x, _ in ok], [math.log(y) for _, y in ok], res, res)

    def pct(v: float | None) -> float | None:
        return None if v is None else round((math.exp(v) - 1) * 100, 2)

    within = iv.lo is not None and iv.hi is not None and iv.lo <= 0 <= iv.hi
    return {"pairs": len(ok), "beside_vs_alone_pct": pct(iv.est) if iv.est == iv.est else None,
            "lo_pct": pct(iv.lo), "hi_pct": pct(iv.hi), "within_noise": within}


def main(argv: list[str]) -> int:
    a = _parse(argv)
    gpus = parse_gpus(a.gpus)
    scen = load_scenario(a.scenario).with_overrides(duration_s=a.duration, gpus=gpus)
    base = scen.unreplicated()
    top = max(w.priority_value for w in base.workloads)
    hi = next(w.name for w in base.workloads if w.priority_value == top)
    lows = [w.name for w in base.workloads if w.priority_value < top]
    at = gpus[0]
    names = {f"{hi} P50": box.copy_name(hi, at), f"{hi} P99": box.copy_name(hi, at),
             **{f"{lw} {THROUGHPUT}": box.copy_name(lw, at) for lw in lows}}
    alone = Step(a.mode, label="alone", only=box.copies(scen, [at]))
    beside = Step(a.mode, label="beside")  # every GPU named runs the same load
    if a.neighbours is not None:  # same ("alone"'s place) against mixed (split)
        from xwatch.core.modes.base import split_name
        alone = Step(a.mode, label="alone")
        placed = {g: a.mode if g == at else a.neighbours for g in gpus}
        beside = Step(split_name([a.mode, a.neighbours]), label="beside",
                      copy_modes=box.split_copies(scen, placed))
    used = {a.mode, a.neighbours}
    xs = mps = why = None
    if "mps" in used:
        from xwatch.core.mps.controller import backend_from_args
        mps, why = backend_from_args(scen, explicit=True)
    if "xsched" in used:
        from xwatch.core.xsched.controller import backend_from_args as xs_backend
        xs = xs_backend(a.xsched, scen)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    rounds = [(r + 1, st) for r in range(a.rounds)
              for st in ((alone, beside) if r % 2 == 0 else (beside, alone))]

    verdict: dict[str, Any] = {}

    def finish(session: Session) -> int | None:
        pairs = _pairs(session, names)
        rows = {}
        for key, ps in pairs.items():
            latency = not key.endswith(str(THROUGHPUT))
            rows[key] = {"values": ps, "aa": _judge(ps, latency),
                         "planted": _judge(ps, latency, PLANTED if latency else 1 / PLANTED)}
        verdict.update(rows)
        what = (f"beside {a.mode} vs beside {a.neighbours} (\"beside\" below)"
                if a.neighbours else "alone vs beside busy")
        lines = [f"neighbour A/A: {base.name} in {a.mode} on GPU {at} {what} "
                 f"GPUs {','.join(map(str, gpus[1:]))}; {a.rounds} rounds of {a.duration:g} s",
                 f"{'metric':<22} {'pairs':>5}  {'beside vs alone (95% CI)':>32}  "
                 f"{'A/A':<14} planted {PLANTED:g}x"]
        for key, r in rows.items():
            aa, pl = r["aa"], r["planted"]
            ci = f"{aa['beside_vs_alone_pct']}% [{aa['lo_pct']}%, {aa['hi_pct']}%]"
            lines.append(f"{key:<22} {aa['pairs']:>5}  {ci:>32}  "
                         f"{'within noise' if aa['within_noise'] else 'BEYOND NOISE':<14} "
                         f"{'missed' if pl['within_noise'] else 'caught'}")
        (out / "aa.txt").write_text("\n".join(lines) + "\n")
        (out / "aa.json").write_text(json.dumps(rows, indent=1))
        for line in lines:
            print(line, flush=True)
        if any(len(ps) < 2 for ps in pairs.values()):
            print("fewer than two usable pairs: no A/A", flush=True)
            return EXIT_FAILED
        bad = [k for k, r in rows.items() if not r["aa"]["within_noise"]]
        blind = [k for k, r in rows.items() if r["planted"]["within_noise"]
                 and not k.endswith(str(THROUGHPUT))]
        return EXIT_GATE if bad or blind else EXIT_OK

    opts = Options(export=str(out / "session"), telemetry=a.telemetry)
    driver = Driver(scen, opts, Backends.of(xs, mps, unavailable={"mps": why} if why else None))
    return asyncio.run(driver.run(Plan([alone, beside], rounds=rounds, finish=finish,
                                       floors=False, tolerant=True)))


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except XwatchError as e:
        print(f"neighbours_aa: {e.title}: {e}", file=sys.stderr)
        sys.exit(2)
