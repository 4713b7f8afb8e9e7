"""The capacity search against planted knees: one trial and the summary of many, the
planted truths of issue 65's two goals (``CASES``) and the search's designs by name
(``design_of``); ``benchmarks/stats/capacity_sim.py`` prints it, and
tests/unit/test_capacity_search.py runs the fast version."""


from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from xwatch.core.analysis.capacity import loads
from xwatch.core.analysis.capacity import search as cap
from xwatch.core.analysis.first import capacity as first
from xwatch.testing.planted import Scenario, one_run

SLO_MS = 10.0
#: issue 65's two goals as planted truths (see the module)
CASES: dict[str, dict[str, object]] = {
    "intensive": dict(searches=11, sigma=0.05, heavy=True, duration=15.0, lo=25.0,
                      hi=800.0, slopes=(2.0, 6.0)),
    "serve-train": dict(searches=11, sigma=0.10, heavy=True, duration=20.0, lo=1.0,
                        hi=64.0, slopes=(0.5, 3.0), per=31.0),
    # ``intensive`` on a floor: at low load the P99 is the service time, 45% of the
    # objective (the H200's dedicated ResNet-18 at 25 req/s: 4.3 ms; MPS 4.7-5.3 ms)
    "intensive-floor": dict(searches=11, sigma=0.05, heavy=True, duration=15.0, lo=25.0,
                            hi=800.0, slopes=(2.0, 6.0), floor=0.45),
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


def quick_outliers() -> None:
    """``sequential.outliers`` remembered for the pools it has seen (the same answers;
    a trial of eleven searches asks it for the same pool once a load)."""
    from functools import lru_cache

    from xwatch.core.analysis.stats import sequential as seq

    if getattr(seq.outliers, "remembered", False):
        return
    plain = seq.outliers

    @lru_cache(maxsize=64)
    def known(parts: tuple[tuple[float, float], ...]) -> tuple[bool, ...]:
        return tuple(plain(parts))

    def outliers(parts: Sequence[tuple[float, float]]) -> list[bool]:
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
    verdicts: int = 0  # loads met or failed with confidence
    closed: int = 0  # searches with a bracket closed on both sides


def trial(seed: int, searches: int = 4, sigma: float = 0.1, heavy: bool = False,
          duration: float = 10.0, lo: float = 50.0, hi: float = 4000.0,
          max_rounds: int = 80, slopes: tuple[float, float] = (0.5, 3.0),
          design: loads.Design = loads.NOW, per: float = 1.0, floor: float = 0.0,
          budget: int | None = None, partial: bool = True) -> Trial:
    """One capacity run against planted knees (see the module); ``per``: values of the
    SLO metric a request gives (an ITL: a token each); ``floor``: the typical run's SLO
    metric at no load, a share of the objective (the curve ``slo (floor + (1 - floor)
    (r / K) ** k)``: a hockey stick with its knee still at K); ``budget``: the most runs
    (None: no budget), the last round ``partial`` as ``xwatch capacity`` runs it (the
    loads closest to a verdict first: ``analysis.first.capacity``), else only whole
    rounds."""
    rng = random.Random(seed)
    knees = [math.exp(rng.uniform(math.log(lo * 1.5), math.log(hi / 2))) for _ in range(searches)]
    ks = [rng.uniform(*slopes) for _ in range(searches)]
    hunt = cap.Hunt(SLO_MS, lo, hi, [cap.Search(f"c{i}", "native", dedicated=i == 0)
                                     for i in range(searches)], lows=True, design=design)
    s_of = {s.label: i for i, s in enumerate(hunt.searches)}
    hunt.judge()
    rounds = runs = 0
    while ((probes := hunt.probes()) or hunt.needs_low_alone()) and rounds < max_rounds:
        entries: list[tuple[cap.Search | None, float]] = [*probes]
        if hunt.needs_low_alone():
            entries.append((None, 0.0))
        if budget is not None and runs + len(entries) > budget:
            if not partial or runs >= budget:
                break
            entries = [entries[j] for j in first.ranked(hunt, entries)][:budget - runs]
        rounds += 1
        for s, rate in entries:
            if s is None:
                hunt.add_low_alone(1500.0 * math.exp(rng.gauss(0, 0.01)))
                runs += 1
                continue
            i = s_of[s.label]
            truth = SLO_MS * (floor + (1.0 - floor) * (rate / knees[i]) ** ks[i])
            sc = Scenario("sim", heavy=heavy, requests=max(16, int(rate * duration * per)))
            v, se = one_run(rng, sc, truth, sigma)
            s.add(rate, v, se, low=1000.0 * math.exp(rng.gauss(0, 0.01)), low_se=math.nan)
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
    verdicts = sum(ld.verdict in (cap.MET, cap.FAILED) for s in hunt.searches
                   for ld in s.loads.values())
    return Trial(wrong or nonmono, sum(s.status in cap.SETTLED for s in hunt.searches),
                 searches, runs, rounds, widths, [s.status for s in hunt.searches], wrong,
                 verdicts, len(widths))


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
        f"verdicts a trial (loads met or failed with confidence): median "
        f"{statistics.median(t.verdicts for t in trials):g}; brackets closed on both sides: "
        f"{100 * sum(t.closed for t in trials) / max(1, sum(t.searches for t in trials)):.0f}%",
    ]
