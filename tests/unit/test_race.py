"""The race's decisions against hand-made runs: intervals at the Bonferroni level,
drops for the SLO and for price, the winner, what is left undecided, the words and
the TOML; and a simulation: with a known truth, racing picks the truly cheapest
SLO-meeting candidate and runs fewer runs than the full grid."""

from __future__ import annotations

import math
import random

import pytest

from xwatch.core.analysis import race
from xwatch.core.analysis.race import Candidate, Objective, interval_at, judge
from xwatch.core.analysis.runs import t_ppf

OBJ = Objective("high", "P99", 10.0)


def _c(label: str, slo: list[float], price: list[float], mode: str = "mps") -> Candidate:
    return Candidate(label, mode, {} if mode == "native" else {"low.x": 1}, list(slo), list(price))


def test_interval_at_a_level_is_students_t() -> None:
    xs = [1.0, 2.0, 4.0]
    iv = interval_at(xs, 0.99)
    m, sd = 7 / 3, math.sqrt(sum((x - 7 / 3) ** 2 for x in xs) / 2)
    assert iv.est == pytest.approx(m)
    assert iv.hi - m == pytest.approx(t_ppf(0.995, 2) * sd / math.sqrt(3))  # type: ignore[operator]


def test_no_decision_before_every_survivor_has_two_runs() -> None:
    cs = [_c("a", [20.0, 21.0], [1.0, 1.0]), _c("b", [5.0], [9.0])]
    assert judge(cs, OBJ) is None and all(c.alive for c in cs)


def test_slo_breakers_and_dominated_candidates_drop_and_the_cheapest_wins() -> None:
    cs = [_c("native", [4.0, 4.1, 4.2], [100.0, 101.0, 99.0], "native"),
          _c("slow", [30.0, 31.0, 29.0], [500.0, 501.0, 499.0]),
          _c("good", [5.0, 5.2, 5.1], [300.0, 301.0, 299.0]),
          _c("near", [5.0, 5.2, 5.1], [290.0, 320.0, 280.0])]
    win = judge(cs, OBJ)
    st = {c.label: c.status for c in cs}
    assert st["slow"] == race.DROPPED_SLO and "above 10 ms with confidence" in cs[1].reason
    assert st["native"] == race.DROPPED_DOMINATED
    assert win is None and st["good"] == st["near"] == race.SURVIVING  # prices overlap
    cs[3].prices = [250.0, 251.0, 249.0]
    win = judge(cs, OBJ)
    assert win is not None and win.label == "good"


def test_undecided_note_and_rounds_to_decide() -> None:
    a = _c("a", [5.0, 5.1], [300.0, 310.0])
    b = _c("b", [5.0, 5.1], [290.0, 300.0])
    judge([a, b], OBJ)
    k = race.rounds_to_decide(a, b)
    assert k is not None and k > 0
    note = race.undecided_note([a, b])
    assert note.startswith("Undecided at the budget: a vs b: about")


def test_sentence_toml_and_reasons() -> None:
    cs = [_c("native", [4.0, 4.1], [100.0, 101.0], "native"),
          Candidate("mps 50", "mps", {"low.mps.priority": 1,
                                      "low.mps.active_thread_percentage": 50},
                    [8.0, 8.2], [70.0, 71.0])]
    judge(cs, OBJ)
    cs[1].status = race.CHOSEN
    adv = {"slo": {"workload": "high", "metric": "P99", "latency_ms": 10.0},
           "choice": {"label": "mps 50", "mode": "mps", "settings": cs[1].settings},
           "candidates": race.as_records(cs), "decided": True}
    s = race.sentence(adv)
    assert s.startswith("Use MPS, low client priority 1, low at 50% of SMs: high P99 8.10 ms [")
    assert "< 10 ms; price 70/s [" in s and "-30% against native" in s
    assert race.toml_for(adv) == ["# run it with: xwatch run SCENARIO --mode mps",
                                  '# in the [[workload]] table with name = "low":',
                                  "[workload.mps]", "priority = 1",
                                  "active_thread_percentage = 50"]
    assert race.reasons(adv)[0].startswith("native: surviving")


def test_racing_finds_the_true_best_and_saves_runs() -> None:
    """Ten candidates with a known truth (P99 means and prices, run-to-run SDs as seen
    on the H100): the race picks the cheapest one whose true P99 meets 10 ms, in fewer
    runs than running every candidate every round until the same decision."""
    truth = [("native", 19.0, 6150), ("mps100", 12.0, 6300), ("mps75", 9.0, 5600),
             ("mps50", 8.0, 4400), ("mps25", 6.0, 2800), ("x1", 7.0, 3000),
             ("x2", 8.5, 4000), ("x4", 11.0, 5200), ("x8", 14.0, 5800), ("x16", 17.0, 6000)]
    wins, raced, grid = 0, 0, 0
    for seed in range(20):
        rng = random.Random(seed)
        cs = [Candidate(n, "mps", {}) for n, _, _ in truth]
        rnd = 0
        winner = None
        while winner is None and rnd < 60 and any(c.alive for c in cs):
            rnd += 1
            for c, (_, p99, price) in zip(cs, truth):
                if c.alive:
                    c.slo_values.append(rng.gauss(p99, 0.8))
                    c.prices.append(rng.gauss(price, 60))
            winner = judge(cs, OBJ)
        wins += winner is not None and winner.label == "mps75"
        raced += sum(c.runs for c in cs)
        grid += rnd * len(cs)
    assert wins >= 19
    assert raced < 0.7 * grid


def test_short_labels_and_a_budget_too_small_for_a_decision_says_so() -> None:
    assert race.short_label("mps", {"low.mps.priority": 1,
                                    "low.mps.active_thread_percentage": 50}) == \
        "mps low pri=1 sm=50%"
    assert race.short_label("xsched", {"low.threshold": 4, "low.batch_size": 2}) == \
        "xsched low th=4 b=2"
    cs = [_c("native", [17.0], [6100.0], "native"), _c("m", [14.0], [6300.0])]
    judge(cs, OBJ)
    for c in cs:
        c.status = race.UNDECIDED
    adv = {"slo": {"workload": "high", "metric": "P99", "latency_ms": 10.0}, "choice": None,
           "closest": "m", "rounds": 1, "candidates": race.as_records(cs)}
    s = race.sentence(adv)
    assert s.startswith("No setting met high P99 < 10 ms with confidence (the budget ended "
                        "after 1 round(s); a decision needs at least 2 runs of each)"), s


def test_intervals_are_cut_at_zero() -> None:
    assert interval_at([1.0, 30.0], 0.99).lo == 0.0
