"""A/A check on a recorded session: one mode's runs split in two halves (odd and
even repeats), compared as two settings with the run-level method the answers use
(runs paired in order, Student's t over the paired differences), must come out
"within noise"; the same halves with every latency of the second doubled (a
planted 2x shift, applied to its histogram) must not.

    python benchmarks/stats/aa_check.py SNAPSHOT.json [MODE]
"""

from __future__ import annotations

import math
import sys

import msgspec

from xwatch.core.analysis.stats.copies import role
from xwatch.core.analysis.verdict import latency_change, rate_change
from xwatch.core.engine.stats import RELATIVE_WIDTH
from xwatch.core.export.snapshot import load_snapshot

SHIFT_2X = round(math.log(2.0) / math.log1p(RELATIVE_WIDTH))  # buckets per doubling


def doubled(p):  # type: ignore[no-untyped-def]
    ws = tuple(msgspec.structs.replace(
        w, latency_hist=msgspec.structs.replace(
            w.latency_hist, buckets=[(i + SHIFT_2X, k) for i, k in w.latency_hist.buckets]),
        phase=msgspec.structs.replace(w.phase, min=(w.phase.min or 0.0) * 2,
                                     max=(w.phase.max or 0.0) * 2))
        for w in p.workloads)
    return msgspec.structs.replace(p, workloads=ws)


def main() -> int:
    snap = load_snapshot(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "native"
    ps = [p for p in snap.phases if p.mode == mode and p.status != "failed"]
    if len(ps) < 2:
        print(f"need at least two {mode} phases, have {len(ps)}")
        return 2
    a, b = ps[0::2], ps[1::2]
    # by the scenario's names: with --gpus every GPU's copy counts (``high`` for high@0, ...)
    hi = max(ps[0].workloads, key=lambda w: w.priority)
    hi_name = role(hi.name)
    lows = list(dict.fromkeys(role(w.name) for w in ps[0].workloads if w.priority < hi.priority))
    print(f"A/A: {mode} phases {[p.name for p in a]} vs {[p.name for p in b]} "
          "(run-level: each run one observation, paired in order)")
    bad = 0
    for q in (50.0, 99.0):
        c = latency_change(hi_name, q, a, b)
        if c is not None:
            print(f"  {hi_name} P{q:g}: {c.text()}")
            bad += c.way != 0
    for n in lows:
        c = rate_change(n, a, b)
        if c is not None:
            print(f"  {n} samples/s: {c.text()}")
    print("planted 2x on the second half:")
    for q in (50.0, 99.0):
        c = latency_change(hi_name, q, a, [doubled(p) for p in b])
        if c is not None:
            print(f"  {hi_name} P{q:g}: {c.text()}")
            bad += c.way <= 0
    print("A/A within noise and 2x beyond it: " + ("yes" if not bad else f"NO ({bad})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
