"""The capacity search against planted knees: how often a bracket misses its knee (at
any look), how often the searches decide, and how many runs and minutes they take.

The truth: ``searches`` candidates (the dedicated one among them), each with a knee K
drawn log-uniform in [1.5 lo, hi / 2] (the rates asked: 50 to 4,000 req/s, so
that each run bounds its P99) and the typical run's SLO metric at rate r
``slo * (r / K) ** k``, the slope k drawn in ``--slopes`` (default [0.5, 3]; flat
curves put many loads within noise of the objective, a queue near saturation is
steeper). Each run is drawn as ``benchmarks/race_sim.py`` draws
one: a run-level effect on the P99 (log-normal SD ``sigma``, or Student's t with 3
degrees of freedom at the same scale: ``heavy``), then the P99 as the order statistic
of the run's requests (rate x ``duration`` of them, at least 16: a run too short to
bound the P99 has no within-run error and leaves its interval open above), its
within-run standard error from the order statistic's 95% ranks. The search is
``analysis.capacity.search.Hunt`` as ``xwatch capacity`` runs it: a round is one run of
every live search's next load, a look after every round.

A trial misses when any load of any search was judged on the wrong side of its knee
(a ``met`` at or above K, a ``failed`` at or below it), or a search called a monotone
truth not monotone: the promise is that this happens in at most 5% of trials.

    python benchmarks/capacity_sim.py [TRIALS] [--searches N] [--sigma S] [--heavy]
        [--duration S] [--phase-s S] [--slopes LO:HI] [--case intensive|serve-train]
        [--before] [--design KEY=VALUE,...]

``--case`` sets the truth of one of issue 65's goals (every other option then ignored):
``intensive`` 11 searches (native, MPS 100-25%, XSched 1/1-16/8 and dedicated), rates
25 to 800 req/s, 15 s runs, run-to-run SD 5% with heavy tails, slopes 2-6 (a queue
near saturation); ``serve-train`` 11 searches, rates 1 to 64 req/s, 20 s runs of 31
ITL values a request, SD 10% with heavy tails, slopes 0.5-3 (a batching server's ITL
rises slowly). ``--before``: the search as it was until 2026-11-29
(``search.BEFORE``: two runs before a load's first look, a union bound over its looks,
bisection of the widest gap) instead of xwatch's (``search.NOW``); ``--design``: one
idea of ``search.Design`` changed from xwatch's (``spread=even``, ``place=bisect``,
``skip=false``, ``first=1``, ``give_up=none``...), to see what each is worth.

Minutes: each run costs ``--phase-s`` (default 25: a 10 s phase and its start), one
GPU, runs back to back; LOW alone's runs included.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.race_sim import Scenario, one_run
from xwatch.core.analysis.capacity import loads
from xwatch.core.analysis.capacity import search as cap

SLO_MS = 10.0
#: issue 65's two goals as planted truths (see the module)
CASES: dict[str, dict[str, object]] = {
    "intensive": dict(searches=11, sigma=0.05, heavy=True, duration=15.0, lo=25.0,
                      hi=800.0, slopes=(2.0, 6.0)),
    "serve-train": dict(searches=11, sigma=0.10, heavy=True, duration=20.0, lo=1.0,
                        hi=64.0, slopes=(0.5, 3.0), per=31.0),
}


def design_of(text: str) -> loads.Design:
    """``search.NOW`` with ``KEY=VALUE,...`` changed (numbers, true/false, none)."""
    changes: dict[str, object] = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        if key not in {f.name for f in dataclasses.fields(loads.Design)}:
            raise SystemExit(f"--design {text!r}: no field {key!r} in search.Design")
        low = value.lower()
        changes[key] = (None if low == "none" else low == "true" if low in ("true", "false")
                        else int(value) if value.isdigit() else value)
    return dataclasses.replace(loads.NOW, **changes)  # type: ignore[arg-type]


def _quick_outliers() -> None:
    """``sequential.outliers`` remembered for the pools it has seen (the same answers;
    a trial of eleven searches asks it for the same pool once a load)."""
    from functools import lru_cache

    from xwatch.core.analysis.stats import sequential as seq

    if getattr(seq.outliers, "remembered", False):
        return
    plain = seq.outliers

    @lru_cache(maxsize=64)
    def known(parts: tuple[tuple[float, int], ...]) -> tuple[bool, ...]:
        return tuple(plain(parts))

    def outliers(parts: Sequence[tuple[float, int]]) -> list[bool]:
        return list(known(tuple(parts)))

    outliers.remembered = True  # type: ignore[attr-defined]
    seq.outliers = outliers


@dataclass
class Trial:
    miss: bool
    settled: int  # searches settled (decided, above or below the range)
    searches: int
    runs: int
    rounds: int
    widths: list[float]
    statuses: list[str]
    wrong: bool = False  # a load judged on the wrong side of its knee (else: non-monotone)


def trial(seed: int, searches: int = 4, sigma: float = 0.1, heavy: bool = False,
          duration: float = 10.0, lo: float = 50.0, hi: float = 4000.0,
          max_rounds: int = 80, slopes: tuple[float, float] = (0.5, 3.0),
          design: loads.Design = loads.NOW, per: float = 1.0) -> Trial:
    """One capacity run against planted knees (see the module); ``per``: values of the
    SLO metric a request gives (an ITL: a token each)."""
    rng = random.Random(seed)
    knees = [math.exp(rng.uniform(math.log(lo * 1.5), math.log(hi / 2))) for _ in range(searches)]
    ks = [rng.uniform(*slopes) for _ in range(searches)]
    hunt = cap.Hunt(SLO_MS, lo, hi, [cap.Search(f"c{i}", "native", dedicated=i == 0)
                                     for i in range(searches)], lows=True, design=design)
    s_of = {s.label: i for i, s in enumerate(hunt.searches)}
    hunt.judge()
    rounds = runs = 0
    while (probes := hunt.probes()) and rounds < max_rounds:
        rounds += 1
        for s, rate in probes:
            i = s_of[s.label]
            truth = SLO_MS * (rate / knees[i]) ** ks[i]
            sc = Scenario("sim", heavy=heavy, requests=max(16, int(rate * duration * per)))
            v, se = one_run(rng, sc, truth, sigma)
            s.add(rate, v, se, low=1000.0 * math.exp(rng.gauss(0, 0.01)), low_se=math.nan)
            runs += 1
        if hunt.needs_low_alone():
            hunt.add_low_alone(1500.0 * math.exp(rng.gauss(0, 0.01)))
            runs += 1
        hunt.judge()
    hunt.close()
    wrong = nonmono = False
    for s in hunt.searches:
        k = knees[s_of[s.label]]
        for r, ld in s.loads.items():
            if (ld.verdict == cap.MET and r >= k) or (ld.verdict == cap.FAILED and r <= k):
                wrong = True
        nonmono = nonmono or s.status == cap.NON_MONOTONE
    widths = [w for s in hunt.searches if (w := s.width()) is not None]
    return Trial(wrong or nonmono, sum(s.status in cap.SETTLED for s in hunt.searches),
                 searches, runs, rounds, widths, [s.status for s in hunt.searches], wrong)


def summary(trials: list[Trial], phase_s: float) -> list[str]:
    n = len(trials)
    misses = sum(t.miss for t in trials)
    se = math.sqrt(max(misses, 1) * (n - misses) / n) / n
    settled = sum(t.settled for t in trials) / max(1, sum(t.searches for t in trials))
    runs = [t.runs for t in trials]
    statuses: dict[str, int] = {}
    for t in trials:
        for st in t.statuses:
            statuses[st] = statuses.get(st, 0) + 1
    widths = [w for t in trials for w in t.widths]
    return [
        f"trials: {n}; a bracket missed its knee (any look) in {misses} "
        f"({100 * misses / n:.1f}% +- {100 * se:.1f}%; promise: at most 5%; a verdict on "
        f"the wrong side in {sum(t.wrong for t in trials)}, the rest non-monotone)",
        f"searches settled (within 10%, or above/below the rates asked): {100 * settled:.0f}%"
        f"; statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
        f"runs a trial: median {statistics.median(runs):.0f}, max {max(runs)}; at "
        f"{phase_s:g} s a run: median {statistics.median(runs) * phase_s / 60:.1f} min",
        f"bracket widths at the end: median {100 * statistics.median(widths):.0f}%"
        if widths else "no bracket closed on both sides",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trials", type=int, nargs="?", default=500)
    ap.add_argument("--searches", type=int, default=4)
    ap.add_argument("--sigma", type=float, default=0.1)
    ap.add_argument("--heavy", action="store_true")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--phase-s", type=float, default=25.0)
    ap.add_argument("--slopes", default="0.5:3", metavar="LO:HI",
                    help="the range of the curves' log-log slopes at the knee (default 0.5:3; "
                         "a queue near saturation is steeper)")
    ap.add_argument("--case", choices=sorted(CASES))
    ap.add_argument("--before", action="store_true",
                    help="the search as it was until 2026-11-29 (search.BEFORE)")
    ap.add_argument("--design", default="", metavar="KEY=VALUE,...",
                    help="search.Design's fields changed from xwatch's (search.NOW)")
    a = ap.parse_args(argv)
    lo_k, _, hi_k = a.slopes.partition(":")
    design = loads.BEFORE if a.before else design_of(a.design)
    _quick_outliers()
    kw = CASES[a.case] if a.case else dict(
        searches=a.searches, sigma=a.sigma, heavy=a.heavy, duration=a.duration,
        slopes=(float(lo_k), float(hi_k)))
    trials = [trial(k, design=design, **kw) for k in range(a.trials)]  # type: ignore[arg-type]
    for line in summary(trials, a.phase_s):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
