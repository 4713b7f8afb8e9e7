"""Issue 65's H200 race rebuilt from its numbers and replayed under the race's intervals as
they were before 2026-11-29 and as they are (``benchmarks/stats/race_case.py`` prints it;
tests/unit/test_race_case.py checks it; ``race_coverage`` borrows ``before``)."""


from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from xwatch.core.analysis.stats import race
from xwatch.core.analysis.stats import sequential as seq
from xwatch.core.analysis.stats.intervals import betainc
from xwatch.core.model.metric import Metric

OBJ = race.Objective("chat", Metric.parse("itl_ms:P99"), 5.0)
BUDGET_MIN, RUN_MIN = 5.0, 0.28
WINDOW_S, BATCH = 10.0, 128
#: label: (ITL P99 of each run, ms; trainer iterations in each 10 s window, or the
#: samples/s as recorded; the within-run relative SE of the price the race recorded)
RUNS: dict[str, tuple[list[float], list[float], float]] = {
    "native": ([7.26, 7.30, 7.22], [141 * 12.8, 141 * 12.8, 140 * 12.8], 0.025),
    "mps trainer sm=100%": ([8.14, 7.46, 8.71], [168 * 12.8, 169 * 12.8, 168 * 12.8], 0.025),
    "mps trainer sm=50%": ([3.97, 4.09, 3.95], [124 * 12.8, 123 * 12.8, 123 * 12.8], 0.025),
    "xsched trainer th=2 b=1": ([3.61, 3.82, 3.49], [109 * 12.8, 100 * 12.8, 108 * 12.8],
                                0.06),
    "xsched trainer th=8 b=4": ([4.22, 3.80, 4.05], [1766.1, 1766.0, 1766.0], 0.06),
}
ITL_SE = 0.0085  # a run's ITL P99 within-run SE, relative (693 values, order statistics)
CASE = "xsched trainer th=8 b=4"


# ------------------------------------------------------------ the intervals before
def _borrowed_before(r: seq.LogRuns, prior: seq.Prior) -> int:
    """``sequential.borrowed`` before 2026-11-29: the whole pool's other degrees of
    freedom times the one-sided F test's p-value."""
    others = prior.df - r.df
    rest = (prior.var * prior.df - r.ss) / others if others > 0 else 0.0
    if not rest > 0:
        return 0
    f = r.var / rest
    return round(others * betainc(others / 2.0, r.df / 2.0, others / (others + r.df * f)))


def _moderated_before(r: seq.LogRuns, prior: seq.Prior | None) -> tuple[float, float]:
    """``sequential.moderated`` before 2026-11-29 (a copy)."""
    if prior is None or prior.df < r.df:
        return (r.var, r.df) if r.df else (math.nan, 0)
    own = r.var if r.df else 0.0
    if own <= prior.var:
        return max(prior.var, r.floor), prior.df
    return max(own, r.floor), r.df + _borrowed_before(r, prior)


def _price_runs_before(c: race.Candidate) -> seq.LogRuns | None:
    """``race.fit``'s prices before 2026-11-29: the floor from ``rate x cv / sqrt(n)``."""
    return seq.log_runs(c.prices, c.price_ses, histogram=False)


@contextmanager
def before() -> Iterator[None]:
    """The race's intervals as they were before 2026-11-29."""
    saved = seq.moderated, race.price_runs
    seq.moderated, race.price_runs = _moderated_before, _price_runs_before  # type: ignore[assignment]
    try:
        yield
    finally:
        seq.moderated, race.price_runs = saved  # type: ignore[assignment]


# ------------------------------------------------------------ the replay
@dataclass
class Replay:
    cands: list[race.Candidate]
    winner: race.Candidate | None
    rounds: int
    minutes: float
    lines: list[str]


def candidates() -> list[race.Candidate]:
    return [race.Candidate(label, label.split()[0], {}) for label in RUNS]


def add_run(c: race.Candidate) -> bool:
    """``c``'s next recorded run (False: none left)."""
    slo, prices, cv = RUNS[c.label]
    k = c.runs
    if k >= len(slo):
        return False
    c.slo_values.append(slo[k])
    c.slo_ses.append(slo[k] * ITL_SE)
    c.prices.append(prices[k])
    c.price_ses.append(prices[k] * cv)
    c.price_res.append(BATCH / WINDOW_S)
    return True


def replay() -> Replay:
    """The race on the case's runs, round by round, under ``race`` as it is now (or as
    ``before()`` makes it)."""
    cs = candidates()
    used, rounds, winner, lines = 0.0, 0, None, []
    while True:
        todo = race.to_run(cs, OBJ)
        if rounds and used + RUN_MIN * len(todo) > BUDGET_MIN:
            lines.append(f"budget: a round of {len(todo)} run(s) would overrun "
                         f"{BUDGET_MIN:g} min")
            break
        if not all(add_run(c) for c in todo):
            lines.append("no more recorded runs")
            break
        used += RUN_MIN * len(todo)
        rounds += 1
        winner = race.judge(cs, OBJ)
        lines.append(f"round {rounds} ({used:.1f} min): "
                     + ("DECIDED: " + winner.label if winner else "open"))
        for c in cs:
            lines.append(f"    {c.label:25s} {c.runs} runs  ITL P99 {c.slo.text()} ms  "
                         f"price {c.price.text('{:,.0f}')}/s  {c.status}")
        if winner is not None or not any(c.alive for c in cs):
            break
    return Replay(cs, winner, rounds, used, lines)
