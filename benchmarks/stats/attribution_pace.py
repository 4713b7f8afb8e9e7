"""What a slower ``/xqueues`` pace costs tail attribution, from recorded XSched phases.

    python benchmarks/stats/attribution_pace.py [SNAPSHOT ...] [--paces 0.2,0.25,0.33,0.5]
                                          [--repeat 20] [--above 90]

Every XSched phase of the given snapshots (default: every ``data/results/**/snapshot.json[.gz]``)
whose lanes were polled at 10 Hz is attributed twice: with every recorded poll, and with
the polls a slower poll thread would have taken (mean interval P, each interval 0.5-1.5x,
as ``polling.next_poll_wait`` draws them: the first recorded poll at or after each
drawn time, the same polls for every workload, as one poll reads them all). A slow
request is one of HIGH's kept requests above its ``--above`` percentile (the phase P99
leaves two a phase). Printed per pace: how many slow requests keep their category, how
many lose every poll close enough ("unknown"), how many change category.
"""

from __future__ import annotations

import argparse
import bisect
import glob
import os
import random
import sys

from msgspec.structs import replace

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from xwatch.core.analysis.gpu.attribution import attribute
from xwatch.core.analysis.phases import by_priority
from xwatch.core.engine.snapshot import PhaseSnapshot
from xwatch.core.export.snapshot import load_snapshot


def thinned(phase: PhaseSnapshot, pace_s: float, rng: random.Random) -> PhaseSnapshot:
    """``phase`` with only the polls a thread at ``pace_s`` would have taken."""
    assert phase.xsched is not None
    times = sorted({float(t) for w in phase.xsched.workloads.values() for t, _ in w.lane})
    kept: set[float] = set()
    t = times[0] if times else 0.0
    while times:
        i = bisect.bisect_left(times, t)
        if i >= len(times):
            break
        kept.add(times[i])
        t = times[i] + pace_s * rng.uniform(0.5, 1.5)
    wls = {n: replace(w, lane=[p for p in w.lane if float(p[0]) in kept])
           for n, w in phase.xsched.workloads.items()}
    return replace(phase, xsched=replace(phase.xsched, workloads=wls))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("snapshots", nargs="*")
    ap.add_argument("--paces", default="0.2,0.25,0.33,0.5")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--above", type=float, default=90.0)
    a = ap.parse_args()
    paths = a.snapshots or sorted(glob.glob("data/results/**/snapshot.json*", recursive=True))
    paces = [float(p) for p in a.paces.split(",")]
    tally = {p: [0, 0, 0, 0] for p in paces}  # same, newly unknown, changed, all
    phases = 0
    for path in paths:
        try:
            snap = load_snapshot(path)
        except Exception as e:  # a file of another kind: say so, go on
            print(f"skipped {path}: {type(e).__name__}: {e}")
            continue
        for ph in snap.phases:
            if ph.mode != "xsched" or ph.xsched is None or not ph.xsched.workloads:
                continue
            hi, _ = by_priority(ph)
            if hi is None or len(hi.slowest) < 20 or hi.name not in ph.xsched.workloads:
                continue
            lane = ph.xsched.workloads[hi.name].lane
            if len(lane) < 30 or (float(lane[-1][0]) - float(lane[0][0])) / len(lane) > 0.15:
                continue  # not a 10 Hz phase
            lats = sorted(lat for _, lat in hi.slowest)
            cut = lats[min(len(lats) - 1, int(a.above / 100 * len(lats)))]
            base = attribute(ph, cut, hi.name)
            if base is None or not base.requests:
                continue
            phases += 1
            want = [c for _, _, c in base.requests]
            print(f"{path}: {ph.name}: {len(want)} slow requests, at 10 Hz "
                  + ", ".join(f"{k} {v}" for k, v in base.counts.items() if v))
            for pace in paces:
                rng = random.Random(1)
                for _ in range(a.repeat):
                    got = attribute(thinned(ph, pace, rng), cut, hi.name)
                    assert got is not None
                    for w, (_, _, g) in zip(want, got.requests):
                        k = tally[pace]
                        k[3] += 1
                        if g == w:
                            k[0] += 1
                        elif g == "unknown":
                            k[1] += 1
                        else:
                            k[2] += 1
    print(f"\n{phases} XSched phases polled at 10 Hz; {a.repeat} thinnings each")
    print("pace (mean s)  same category  newly unknown  changed  (slow requests)")
    for pace, (same, unk, chg, n) in tally.items():
        if n:
            print(f"{pace:13.2f}  {same / n:13.1%}  {unk / n:13.1%}  {chg / n:7.1%}  ({n})")


if __name__ == "__main__":
    main()
