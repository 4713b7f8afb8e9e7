"""Whether a shorter run is a noisier run (issue 65: whether a capacity probe at a higher load
could run shorter): from ``noise`` snapshots of one configuration at several run lengths, each length's
run-to-run SD of the SLO workload's log P99 and log P50, per GPU copy and pooled over
the copies (each copy's runs about its own mean), and its ratio to the longest length's.
A run-to-run effect that averages out within a run would make the SD grow as
sqrt(longest / length); one that does not, stay flat. The within-run part (the order
statistic's own error, fewer requests in a shorter run) is in the SD too, so a flat SD
is the stronger finding.

    python benchmarks/measure/run_spread.py SNAPSHOT.json [SNAPSHOT.json ...] [--workload high]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict


def spreads(paths: list[str], workload: str) -> dict[float, dict[str, tuple[float, int]]]:
    """{length (s, rounded): {metric: (pooled SD of its log over runs, degrees of freedom)}}"""
    out: dict[float, dict[str, tuple[float, int]]] = {}
    for path in paths:
        doc = json.load(open(path))
        by: dict[tuple[str, str], list[float]] = defaultdict(list)
        lengths = []
        for p in doc["phases"]:
            if p.get("status") != "done":
                continue
            for name, w in p["workloads"].items():
                if name.split("@")[0] != workload or not w.get("latency_ms"):
                    continue
                lengths.append(w["measured_s"])
                for q in ("p99", "p50"):
                    v = w["latency_ms"].get(q)
                    if v:
                        by[(q, name)].append(math.log(v))
        if not lengths:
            continue
        length = round(statistics.median(lengths))
        row: dict[str, tuple[float, int]] = {}
        for q in ("p99", "p50"):
            ss = df = 0.0
            for (qq, _), xs in by.items():
                if qq == q and len(xs) > 1:
                    m = statistics.fmean(xs)
                    ss += sum((x - m) ** 2 for x in xs)
                    df += len(xs) - 1
            if df:
                row[q] = (math.sqrt(ss / df), int(df))
        out[length] = row
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("snapshots", nargs="+")
    ap.add_argument("--workload", default="high")
    a = ap.parse_args(argv)
    got = spreads(a.snapshots, a.workload)
    if not got:
        print("no finished runs of", a.workload)
        return 1
    longest = max(got)
    for q in ("p99", "p50"):
        ref = got[longest].get(q)
        for length in sorted(got):
            sd, df = got[length].get(q, (math.nan, 0))
            ratio = sd / ref[0] if ref and ref[0] else math.nan
            print(f"{q.upper()} {length:g} s runs: run-to-run SD {100 * sd:.2f}% ({df} df), "
                  f"{ratio:.2f}x the {longest:g} s runs' (wholly averaging: "
                  f"{math.sqrt(longest / length):.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
