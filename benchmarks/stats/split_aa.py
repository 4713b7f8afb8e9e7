"""The split layout's A/A: native against native inside one phase. ``compare --layout
split`` pairs two modes inside each phase, each on its own half of the GPUs, the halves
swapped every repeat (``plans.box.split_gpus``); with the same mode on both halves the
paired difference must be within noise.

Every phase runs the scenario natively on every GPU named (one runner, interleaved
repeats); repeat r's GPUs are cut into arms A and B exactly as a split phase of two
modes would place them, each arm's run value is the geometric mean of its copies (as
the answer takes it, ``analysis.stats.copies.combine``), and the arms are compared
round by round on the log scale with Student's t (as ``neighbours_aa.py``; HIGH's P50
and P99, each LOW's samples/s). The same pairs with arm B made 1.5x slower must come
out beyond noise.

    python3 benchmarks/stats/split_aa.py OUT [SCENARIO] --gpus 0,1,2,3 [--rounds 6]
        [--duration 10]

Writes OUT/aa.json, OUT/aa.txt and the session (OUT/session). Exit 0: within noise and
the planted bias caught; 3: a metric beyond noise or the planted bias missed; 1: fewer
than two usable rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.stats.neighbours_aa import PLANTED, _judge
from xwatch.core.analysis.stats.copies import combine, role
from xwatch.core.analysis.stats.runs import run_value
from xwatch.core.engine.live.session import Session
from xwatch.core.model.metric import P50, P99, THROUGHPUT, Metric
from xwatch.core.plans.box import split_gpus
from xwatch.core.plans.driver import EXIT_FAILED, EXIT_GATE, EXIT_OK, Driver, Plan, Step
from xwatch.core.plans.options import Options
from xwatch.errors import XwatchError
from xwatch.scenario import load_scenario, parse_gpus

ARMS = ("a", "b")


def arm_pairs(session: Session, metrics: list[tuple[str, Metric]], gpus: list[int]
              ) -> dict[str, list[tuple[float, float]]]:
    """Per ``workload metric``, (arm A, arm B) run values, one pair a usable phase."""
    out: dict[str, list[tuple[float, float]]] = {f"{n} {m}": [] for n, m in metrics}
    for p in session.snapshot().phases:
        if p.status != "done" or not p.repeat:
            continue
        placed = split_gpus(ARMS, gpus, int(p.repeat) - 1)
        for name, metric in metrics:
            arms = []
            for arm in ARMS:
                ws = [w for w in p.workloads if role(w.name) == name and w.count
                      and w.gpu is not None and placed.get(w.gpu) == arm]
                arms.append(combine([run_value(w, metric) for w in ws], metric.scale).est
                            if ws else math.nan)
            if all(v == v for v in arms):
                out[f"{name} {metric}"].append((arms[0], arms[1]))
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("scenario", nargs="?", default="intensive")
    p.add_argument("--gpus", required=True)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--telemetry", default="auto")
    a = p.parse_args(argv)
    gpus = list(parse_gpus(a.gpus))
    if len(gpus) < 2 or a.rounds < 2:
        p.error("--gpus needs two GPUs or more; --rounds >= 2")
    scen = load_scenario(a.scenario).with_overrides(duration_s=a.duration, gpus=tuple(gpus))
    base = scen.unreplicated()
    top = max(w.priority_value for w in base.workloads)
    metrics = [(w.name, m) for w in base.workloads if w.priority_value == top
               for m in (P50, P99)][:2]
    metrics += [(w.name, THROUGHPUT) for w in base.workloads if w.priority_value < top]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    step = Step("native")

    rounds = [(r + 1, step) for r in range(a.rounds)]

    def finish(session: Session) -> int | None:
        pairs = arm_pairs(session, metrics, gpus)
        rows: dict[str, Any] = {}
        for key, ps in pairs.items():
            latency = not key.endswith(str(THROUGHPUT))
            rows[key] = {"values": ps, "aa": _judge(ps, latency),
                         "planted": _judge(ps, latency, PLANTED if latency else 1 / PLANTED)}
        lines = [f"split A/A: {base.name} native against native on GPUs "
                 f"{','.join(map(str, gpus))}, halves swapped every round; {a.rounds} rounds "
                 f"of {a.duration:g} s",
                 f"{'metric':<22} {'pairs':>5}  {'B vs A (95% CI)':>32}  {'A/A':<14} "
                 f"planted {PLANTED:g}x"]
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
            print("fewer than two usable rounds: no A/A", flush=True)
            return EXIT_FAILED
        bad = [k for k, r in rows.items() if not r["aa"]["within_noise"]]
        blind = [k for k, r in rows.items() if r["planted"]["within_noise"]
                 and not k.endswith(str(THROUGHPUT))]
        return EXIT_GATE if bad or blind else EXIT_OK

    opts = Options(export=str(out / "session"), telemetry=a.telemetry, repeat=1)
    return asyncio.run(Driver(scen, opts).run(Plan([step], rounds=rounds, finish=finish,
                                                   floors=False, tolerant=True)))


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except XwatchError as e:
        print(f"split_aa: {e.title}: {e}", file=sys.stderr)
        sys.exit(2)
