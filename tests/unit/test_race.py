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


def _shaped(n: int, mean: float, sd: float) -> list[float]:
    """n values with exactly this mean and sample SD."""
    z = [i - (n - 1) / 2 for i in range(n)]
    zsd = math.sqrt(sum(v * v for v in z) / (n - 1))
    return [mean + sd * v / zsd for v in z]


@pytest.mark.parametrize("xs,bound,conf", [([11.3, 15.6, 8.9, 9.4], 10.0, 0.995),
                                           ([12.0, 14.0, 13.0], 10.0, 0.95),
                                           ([5.0, 9.0, 7.5, 6.1, 8.2], 10.0, 0.99)])
def test_rounds_to_tell_is_the_first_count_whose_interval_leaves_the_bound(
        xs: list[float], bound: float, conf: float) -> None:
    k = race.rounds_to_tell(xs, bound, conf)
    assert k is not None and k >= 0
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))

    def clear(n: int) -> bool:  # checked through interval_at, not the search's formula
        iv = interval_at(_shaped(n, m, sd), conf)
        assert iv.lo is not None and iv.hi is not None
        return iv.hi < bound or iv.lo > bound

    assert clear(len(xs) + k)
    assert k == 0 or not clear(len(xs) + k - 1)
    assert race.rounds_to_tell([bound, bound + 1.0, bound - 1.0], bound) is None  # on it
    assert race.rounds_to_tell([bound + 1.0], bound) is None  # one run: no spread


def test_rounds_to_decide_separates_two_prices_at_the_level() -> None:
    a = _c("a", [5.0, 5.1, 5.0], [300.0, 310.0, 305.0])
    b = _c("b", [5.0, 5.1, 5.0], [290.0, 300.0, 295.0])
    judge([a, b], OBJ)
    k = race.rounds_to_decide(a, b, 0.975)
    assert k is not None and k > 0
    n = 3 + k
    ia = interval_at(_shaped(n, 305.0, 5.0), 0.975)
    ib = interval_at(_shaped(n, 295.0, 5.0), 0.975)
    assert ib.hi is not None and ia.lo is not None and ib.hi < ia.lo
    ia = interval_at(_shaped(n - 1, 305.0, 5.0), 0.975)
    ib = interval_at(_shaped(n - 1, 295.0, 5.0), 0.975)
    assert ib.hi is not None and ia.lo is not None and ib.hi >= ia.lo


def test_what_the_budget_left_open_when_no_estimate_meets_the_slo() -> None:
    """The H100's first 20-minute race (2026-11-23): every estimate above 10 ms."""
    cs = [_c("native", [9.79, 23.21, 22.75, 14.97], [6100.0, 6200.0, 6150.0, 6160.0],
             "native"),
          _c("mps 50", [15.57, 12.08, 8.86, 9.41], [4200.0, 4300.0, 4250.0, 4290.0]),
          _c("xsched 16/8", [19.69, 22.75, 21.65, 19.59], [5900.0, 5950.0, 5930.0, 5980.0])]
    judge(cs, OBJ)
    assert cs[2].status == race.DROPPED_SLO
    op = race.still_open(cs, OBJ)
    assert op.likely is None and set(op.waits) == {"native", "mps 50"}
    conf = race.level(cs)
    assert op.waits["mps 50"][1] == race.rounds_to_tell(cs[1].slo_values, 10.0, conf)
    assert op.rounds == max(k for _, k in op.waits.values() if k is not None)
    note = race.undecided_note(cs, OBJ, run_s=25.0)
    assert note.startswith("Undecided at the budget: no open candidate's estimate meets "
                           "high P99 < 10 ms; the race would end with each dropped for the "
                           f"SLO; about {op.rounds} more rounds (")
    runs = sum(k for _, k in op.waits.values() if k is not None)
    assert f"{runs} runs, about {runs * 25 / 60:.0f} min) would decide it" in note
    assert "mps 50: high P99 " in note and "above 10 ms by estimate" in note


def test_what_the_budget_left_open_around_a_likely_choice() -> None:
    cs = [_c("native", [4.0, 4.2, 4.1], [100.0, 101.0, 99.0], "native"),
          _c("cheap but slow", [9.0, 12.0, 10.6], [300.0, 302.0, 298.0]),
          _c("likely", [6.0, 9.5, 7.0], [250.0, 260.0, 240.0]),
          _c("close", [5.0, 5.2, 5.1], [235.0, 250.0, 245.0])]
    judge(cs, OBJ)
    op = race.still_open(cs, OBJ)
    assert op.likely is not None and op.likely.label == "likely"
    assert op.waits["cheap but slow"][0].startswith("high P99")  # told by the SLO
    assert op.waits["close"][0].startswith("price ")  # told by price
    assert op.waits["close"][1] == race.rounds_to_decide(cs[3], cs[2], race.level(cs))
    assert "native" not in op.waits or op.waits["native"][1] is not None
    assert "the likely choice is likely (the cheapest whose estimate meets high P99 < 10 " \
        "ms)" in race.undecided_note(cs, OBJ)


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


def test_a_race_ended_by_its_budget_records_what_is_open() -> None:
    """The advice record of a race the budget ended: every open candidate is
    ``undecided`` with what it waits for, and the note says how many more rounds
    (this was empty on the H100's first 20-minute race: the note looked for
    survivors after the statuses had been settled)."""
    from xwatch.core.modes.base import NATIVE
    from xwatch.core.plans.advise import Race
    from xwatch.core.plans.headless import Step
    from xwatch.scenario import load_scenario

    scen = load_scenario("intensive")
    cs = [_c("native", [9.79, 23.21, 22.75, 14.97], [6100.0, 6200.0, 6150.0, 6160.0], "native"),
          _c("mps 50", [15.57, 12.08, 8.86, 9.41], [4200.0, 4300.0, 4250.0, 4290.0])]
    rc = Race(scen, OBJ, [(c, Step(NATIVE, label=c.label, candidate=True)) for c in cs],
              budget_s=0.0, say=lambda text: None)
    rc.rounds = 4
    assert rc.after_round() is False  # the budget is spent
    adv = rc.advice()
    assert adv["met"] is False and adv["decided"] is False
    assert [c["status"] for c in adv["candidates"]] == [race.UNDECIDED] * 2
    assert all(c["reason"].startswith("open: high P99 ") for c in adv["candidates"])
    assert adv["undecided"].startswith("Undecided at the budget: no open candidate's")
    assert adv["more_rounds"] == race.still_open(cs, OBJ).rounds is not None


def test_a_dearer_candidate_already_told_apart_waits_for_the_likely_choice() -> None:
    """The H100's second race: MPS at 75% of SMs was below MPS at 100% on price with
    confidence, and waited only for that one to meet the SLO with confidence."""
    cs = [_c("mps 100", [8.0, 6.5, 9.9, 7.8], [6269.0, 6200.0, 6340.0, 6267.0]),
          _c("mps 75", [7.9, 6.0, 9.5, 8.1], [5390.0, 5300.0, 5480.0, 5390.0])]
    judge(cs, OBJ)
    op = race.still_open(cs, OBJ)
    assert op.likely is cs[0]
    words, k = op.waits["mps 75"]
    assert "below mps 100's with confidence; waits for mps 100 to meet the SLO" in words
    assert k == op.waits["mps 100"][1] == race.rounds_to_tell(cs[0].slo_values, 10.0,
                                                              race.level(cs))
    adv = {"slo": {"workload": "high", "metric": "P99", "latency_ms": 10.0}, "choice": None,
           "candidates": race.as_records([*cs[:1], *cs[1:]]), "likely": "mps 100",
           "more_rounds": 1, "closest": "mps 75", "rounds": 4}
    for c in adv["candidates"]:
        c["status"] = race.UNDECIDED
    assert race.sentence(adv).startswith(
        "No setting met high P99 < 10 ms with confidence within the budget; the likely "
        "choice, about 1 more round from a decision, is MPS, low x 1: high P99 8.05 ms [")
