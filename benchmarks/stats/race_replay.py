"""Replay a recorded advise race's runs under the race's intervals as they are and as
they were (a union bound over the looks and the squared-ratio borrowing), look by look:
which candidates each would have dropped, and whether and when each would have decided.

    python benchmarks/stats/race_replay.py SNAPSHOT [--slo WORKLOAD:METRIC=MS] [--lows NAME,...]

The runs are the snapshot's phases in the order they ran; a look follows each round
(every candidate's phases in the snapshot's ``advice`` order). Only the intervals
differ between the two replays, so a difference in the outcome is the method's.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from xwatch.core.analysis.stats import race
from xwatch.core.analysis.stats import sequential as seq
from xwatch.core.export.snapshot import load_snapshot
from xwatch.core.model.metric import Metric


def _old_borrowed(r: seq.LogRuns, prior: seq.Prior) -> int:
    """The borrowing before 2026-11-25: the pool's degrees of freedom scaled by the
    squared ratio of the pool's variance to the setting's own."""
    return int((prior.df - r.df) * (prior.var / r.var) ** 2) if r.var > 0 else 0


@contextmanager
def method(old: bool) -> Iterator[None]:
    saved: tuple[Callable[..., float], Callable[..., int]] = (seq.look_alpha, seq.borrowed)
    if old:
        seq.look_alpha = seq.union_look_alpha  # type: ignore[assignment]
        seq.borrowed = _old_borrowed  # type: ignore[assignment]
    try:
        yield
    finally:
        seq.look_alpha, seq.borrowed = saved  # type: ignore[assignment]


def replay(path: str, old: bool) -> list[str]:
    snap = load_snapshot(path)
    adv = snap.advice
    if adv is None:
        raise SystemExit(f"{path}: no advise race in this snapshot")
    slo = adv.slo
    obj = race.Objective(slo.workload, Metric.parse(slo.metric or f"P{slo.percentile:g}"),
                         slo.latency_ms)
    lows = [w.name for w in snap.phases[0].workloads if w.name != slo.workload]
    cands = {c.label: race.Candidate(c.label, c.mode, dict(c.settings)) for c in adv.candidates}
    out: list[str] = []
    seen: set[str] = set()
    with method(old):
        for p in snap.phases:
            label = p.candidate
            if label is None or label not in cands:
                continue
            if label in seen:  # a candidate's second phase of this replay: a new round
                out.append(_look(list(cands.values()), obj, len(out) + 1))
                seen.clear()
            seen.add(label)
            race.record_run(cands[label], p, obj, lows)
        out.append(_look(list(cands.values()), obj, len(out) + 1))
    return out


def _look(cands: list[race.Candidate], obj: race.Objective, k: int) -> str:
    winner = race.judge(cands, obj)
    parts = [f"{c.label}: {c.runs} runs {c.slo.text()} {c.status}" for c in cands]
    head = f"look {k}: " + ("DECIDED, " + winner.label if winner else "open")
    return head + "\n    " + "\n    ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshot")
    a = ap.parse_args()
    for old in (True, False):
        print("=== " + ("before (union bound, squared-ratio borrowing)" if old else "now"))
        for line in replay(a.snapshot, old):
            print(line)


if __name__ == "__main__":
    main()
