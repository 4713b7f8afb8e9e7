"""``compare --layout split`` against today's layout (``replicate``), at equal wall time,
simulated with the noise measured on a four-GPU box (log-scale SDs, docs/gpus-answer.md:
HIGH P50 copy to copy 3.4%, shared by a run 2.5%, GPU to GPU ~0; HIGH P99 copy 15%, run
~0, GPU 2.3%).

The model: a copy's log value = the mode's effect + the run's effect (shared by every
copy of a phase) + its GPU's effect (fixed for the box) + copy noise; each copy's value
on the 0.5% histogram grid.

- ``replicate``: each repeat runs one phase per mode, every mode on every GPU; a run's
  value is the geometric mean over its G copies; the modes' runs pair by repeat, so
  each paired difference carries two runs' effects: ``var = 2 (s_run^2 + s_copy^2/G)``.
- ``split``: each repeat is one phase holding every mode, each on G/m GPUs, rotated
  (``plans.box.split_gpus``); at equal wall time m times as many repeats; the run's
  effect cancels in the paired difference: ``var = 2 s_copy^2 / (G/m)`` (+ the GPU
  effects, balanced over the rotation, as run-to-run variance).

The product's own functions make every interval (``copies.combine``: the run's value
over its copies; ``runs.paired_interval``: Student's t over the paired runs, never
narrower than the grid). ``coverage`` counts how often the split design's 95% interval
covers the known truth (the mean difference its runs estimate, run and GPU effects
included).

    python benchmarks/stats/split_width_sim.py [--gpus 4] [--rounds 3] [--sims 2000]
    python benchmarks/stats/split_width_sim.py --measured REPLICATE/snapshot.json SPLIT/snapshot.json

CPU only, seconds. ``--measured`` reads two real compares' answers (the ``split`` plan
makes them: ``bash benchmarks/gpu/device.sh split OUT``) and prints each HIGH interval's
width relative to its baseline and the split/replicate ratio.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from xwatch.testing.split_width import STRUCTURES, predicted_ratio, width_and_coverage


def measured(rep: str, split: str) -> None:
    """The widths of two real compares' HIGH P50 and P99 changes, and their ratio."""
    import json

    def widths(path: str) -> dict[tuple[str, str], tuple[float, int]]:
        doc = json.loads(Path(path).read_text())
        return {(a["step"], a["metric"]): ((a["hi"] - a["lo"]) / a["base"], a["runs"])
                for a in doc.get("answer", []) if a["metric"] in ("P50", "P99")
                and a["workload"].partition("@")[0] == "high" and a.get("lo") is not None
                and a.get("hi") is not None and a.get("base")}

    wr, ws = widths(rep), widths(split)
    print(f"{'step':<10} {'metric':<6} {'replicate':>10} {'runs':>5} {'split':>8} {'runs':>5} "
          f"{'ratio':>6}")
    for key in sorted(set(wr) & set(ws)):
        (a, ka), (b, kb) = wr[key], ws[key]
        print(f"{key[0]:<10} {key[1]:<6} {a * 100:>9.1f}% {ka:>5} {b * 100:>7.1f}% {kb:>5} "
              f"{b / a:>6.2f}")
    if not set(wr) & set(ws):
        print("no HIGH P50/P99 change with an interval in both answers")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="replicate's repeats (split: x2)")
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--measured", nargs=2, metavar=("REPLICATE", "SPLIT"),
                    help="two snapshot.json of the real compares: their widths")
    args = ap.parse_args()
    if args.measured:
        measured(*args.measured)
        return 0
    if args.gpus < 2 or args.gpus % 2 or args.rounds < 2:
        ap.error("--gpus: an even number >= 2; --rounds >= 2")
    print(f"two modes on {args.gpus} GPUs; replicate {args.rounds} repeats (2 phases each) "
          f"against split {2 * args.rounds} phases: the same wall time")
    print(f"{'metric':<9} {'replicate':>10} {'cover':>6} {'split':>8} {'cover':>6} "
          f"{'ratio':>6} {'SD ratio':>9}")
    for name, sds in STRUCTURES.items():
        wr, cr = width_and_coverage("replicate", sds, args.gpus, args.rounds, args.sims, 1)
        ws, cs = width_and_coverage("split", sds, args.gpus, args.rounds, args.sims, 2)
        print(f"{name:<9} {wr * 100:>9.1f}% {cr:>6.3f} {ws * 100:>7.1f}% {cs:>6.3f} "
              f"{ws / wr:>6.2f} {predicted_ratio(sds, args.gpus):>9.2f}")
    print("target: HIGH P50 split/replicate <= 0.6 on 4 GPUs at equal wall time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
