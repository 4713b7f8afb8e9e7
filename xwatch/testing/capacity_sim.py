"""The capacity search against planted knees: one trial and the summary of many, the
planted truths of issue 65's two goals (``CASES``) and the search's designs by name
(``design_of``); ``benchmarks/stats/capacity_sim.py`` prints it, and
tests/unit/test_capacity_search.py runs the fast version."""


from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections.abc import Callable, Sequence
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
    # ``intensive-floor`` whose runs near the knee now and then run away, as on two H200s
    # (docs/results/h200x2-2026-11-29b.md): a run's queue runs away with a chance rising
    # from 0 to 1 around a rate of 0.6-1.0 of the typical run's knee (``RUNAWAY``)
    "intensive-runaway": dict(searches=11, sigma=0.05, heavy=True, duration=15.0, lo=25.0,
                              hi=800.0, slopes=(2.0, 6.0), floor=0.45, runaway=(0.6, 1.0)),
    # ``intensive-floor`` whose run-to-run spread grows toward the knee (``spread``: 3x
    # at the knee), as native's did on two H200s: 8% apart at 38-100 req/s, 7.5-15.3 ms
    # at 200 (docs/results/h200x2-2026-11-29c.md)
    "intensive-spread": dict(searches=11, sigma=0.05, heavy=True, duration=15.0, lo=25.0,
                             hi=800.0, slopes=(2.0, 6.0), floor=0.45, grow=3.0),
}
#: a run that runs away: its P99 times a factor log-uniform in this range (on the H200s
#: 7x to 50x near the knee, 400x past it); the chance of one at rate r is logistic in
#: log(r / R) with this scale, R drawn as ``trial``'s ``runaway`` says; in such a run this
#: share of the requests misses the objective (the SLO over every request of a load then
#: misses once the chance passes 1% / this, ``pooled_knee``)
RUNAWAY = (4.0, 300.0)
RUNAWAY_SCALE = 0.1
RUNAWAY_SHARE = 0.2


def runaway_chance(rate: float, at: float) -> float:
    """The chance that a run at ``rate`` runs away, half at ``at``."""
    return 1.0 / (1.0 + math.exp(-math.log(rate / at) / RUNAWAY_SCALE))


def typical_knee(base: Callable[[float], float], at: float | None, slo: float,
                 lo: float, hi: float) -> float:
    """The rate where the typical run's SLO metric (the geometric mean over runs,
    ``base(r)`` times the runaway factor's geometric mean to the chance of one) crosses
    ``slo``: the knee the search's verdicts are judged against (bisection on log rate;
    the curve rises with the rate)."""
    mean_log = (math.log(RUNAWAY[0]) + math.log(RUNAWAY[1])) / 2.0

    def over(r: float) -> bool:
        extra = 0.0 if at is None else runaway_chance(r, at) * mean_log
        return math.log(base(r)) + extra >= math.log(slo)

    a, b = lo / 100.0, hi * 100.0
    for _ in range(200):
        m = math.sqrt(a * b)
        a, b = (a, m) if over(m) else (m, b)
    return math.sqrt(a * b)


def spread(sigma: float, grow: float, v: float) -> float:
    """The run-to-run SD at a load whose curve term ``(r / K) ** k`` is ``v``: ``sigma``
    at no load, ``grow`` times it at the knee, on linearly in ``v`` to twice that."""
    return sigma * (1.0 + (grow - 1.0) * min(v, 2.0))


def pooled_knee(knee: float, at: float | None) -> float:
    """The rate from which the SLO over every request of a load misses: the typical
    run's knee without runaways, or where a run's chance of running away passes
    1% / ``RUNAWAY_SHARE``, the lower."""
    if at is None:
        return knee
    p = 0.01 / RUNAWAY_SHARE
    return min(knee, at * math.exp(RUNAWAY_SCALE * math.log(p / (1.0 - p))))


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
    #: loads met at or above the rate from which the SLO over their requests together
    #: misses (``pooled_knee``; only with runaways)
    lenient: int = 0


def trial(seed: int, searches: int = 4, sigma: float = 0.1, heavy: bool = False,
          duration: float = 10.0, lo: float = 50.0, hi: float = 4000.0,
          max_rounds: int = 80, slopes: tuple[float, float] = (0.5, 3.0),
          design: loads.Design = loads.NOW, per: float = 1.0, floor: float = 0.0,
          budget: int | None = None, partial: bool = True,
          runaway: tuple[float, float] | None = None, grow: float = 1.0) -> Trial:
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
    ats: list[float | None] = [None] * searches
    if runaway is not None:
        ats = [k * rng.uniform(*runaway) for k in knees]

    def base(i: int) -> Callable[[float], float]:
        return lambda r: SLO_MS * (floor + (1.0 - floor) * (r / knees[i]) ** ks[i])

    truths = [typical_knee(base(i), ats[i], SLO_MS, lo, hi) for i in range(searches)]
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
            truth = base(i)(rate)
            at = ats[i]
            if at is not None and rng.random() < runaway_chance(rate, at):
                truth *= math.exp(rng.uniform(math.log(RUNAWAY[0]), math.log(RUNAWAY[1])))
            sc = Scenario("sim", heavy=heavy, requests=max(16, int(rate * duration * per)))
            v, se = one_run(rng, sc, truth, spread(sigma, grow, (rate / knees[i]) ** ks[i]))
            s.add(rate, v, se, low=1000.0 * math.exp(rng.gauss(0, 0.01)), low_se=math.nan)
            runs += 1
        hunt.judge()
    hunt.close()
    wrong = nonmono = False
    lenient = 0
    for s in hunt.searches:
        i = s_of[s.label]
        k, pk = truths[i], pooled_knee(knees[i], ats[i])
        for r, ld in s.loads.items():
            if (ld.verdict == cap.MET and r >= k) or (ld.verdict == cap.FAILED and r <= k):
                wrong = True
            lenient += ld.verdict == cap.MET and r >= pk
        nonmono = nonmono or s.status == cap.NON_MONOTONE
    widths = [w for s in hunt.searches if (w := s.width()) is not None]
    verdicts = sum(ld.verdict in (cap.MET, cap.FAILED) for s in hunt.searches
                   for ld in s.loads.values())
    return Trial(wrong or nonmono, sum(s.status in cap.SETTLED for s in hunt.searches),
                 searches, runs, rounds, widths, [s.status for s in hunt.searches], wrong,
                 verdicts, len(widths), lenient)


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
        f"loads met where the SLO over their requests together misses (runaway runs): "
        f"{sum(t.lenient for t in trials)} in {sum(t.lenient > 0 for t in trials)} trials",
    ]
