"""A round that does not fit the budget runs the part of it that does, the most
informative first, for advise's race and capacity's searches alike (``plans.driver.fitting``,
``analysis.first``): exact counts from a phase's
mean cost, the order each ranks, and plans whose budget holds half a round running
that half. Time is the plans' own clock, set by hand (no timing)."""

from __future__ import annotations

from typing import Any

from xwatch.core.analysis.capacity import search as cap
from xwatch.core.analysis.capacity.lines import capacity_lines
from xwatch.core.analysis.first import capacity as cap_first
from xwatch.core.analysis.first import race as first
from xwatch.core.analysis.stats import race
from xwatch.core.analysis.stats.race import Candidate, Objective
from xwatch.core.model.metric import Metric
from xwatch.core.modes.base import NATIVE
from xwatch.core.plans import driver as budget
from xwatch.core.plans.capacity import make_run
from xwatch.core.plans.driver import Step
from xwatch.core.plans.options import Backends, Options
from xwatch.scenario import parse_scenario

OBJ = Objective("high", Metric.parse("P99"), 10.0)


def test_fitting_counts_the_entries_whose_phases_end_within_the_budget() -> None:
    # 4 phases in 100 s: 25 s a phase; 60 s left hold 2 (50 s), not 3 (75 s)
    assert budget.fitting(9, lambda k: k, 100.0, 4, 160.0) == 2
    assert budget.fitting(9, lambda k: k, 100.0, 4, 150.0) == 2  # ends exactly at it
    assert budget.fitting(9, lambda k: k, 100.0, 4, 149.9) == 1
    assert budget.fitting(9, lambda k: k, 100.0, 4, 124.9) == 0  # not even one
    assert budget.fitting(9, lambda k: k, 100.0, 4, 325.0) == 9  # the whole round
    # on a box, 4 entries a phase: 9 entries are 3 phases, 6 are 2
    assert budget.fitting(9, lambda k: -(-k // 4), 100.0, 4, 160.0) == 8
    line = budget.partial_line("advise", 3, 9, 168.0, 9, 240.0)
    assert line == ("xwatch: advise: a partial round: 3 of 9 runs fit in the budget "
                    "(1.2 min left at 19 s a phase), the most informative first")


def _c(label: str, slo: list[float], price: list[float]) -> Candidate:
    return Candidate(label, "mps", {"low.x": 1}, list(slo), list(price))


def test_advise_ranks_the_likely_choice_then_its_rivals() -> None:
    cs = [_c("over far", [19.0], [900.0]), _c("under dear", [6.0], [300.0]),
          _c("likely", [5.0], [600.0]), _c("over near", [11.0], [950.0])]
    race.judge(cs, OBJ)  # fits the one-run estimates (no decision on one run)
    order = first.ranked(cs, race.to_run(cs, OBJ), OBJ)
    assert [c.label for c in order] == ["likely", "under dear", "over near", "over far"]


def _clock(t: list[float]) -> Any:
    return lambda: t[0]


def test_an_advise_budget_for_half_a_round_runs_that_half() -> None:
    from xwatch.core.plans.advise import Race
    from xwatch.scenario import load_scenario

    cs = [_c("a", [5.0], [600.0]), _c("b", [6.0], [500.0]), _c("c", [7.0], [400.0]),
          _c("d", [12.0], [900.0])]
    said: list[str] = []
    rc = Race(load_scenario("intensive"), OBJ,
              [(c, Step(NATIVE, label=c.label, candidate=True)) for c in cs],
              budget_s=120.0, say=said.append)
    t = [0.0]
    rc.clock, rc.t0 = _clock(t), 0.0
    rc.rounds, rc.phases, t[0] = 1, 4, 80.0  # a round of 4 phases took 80 s: 20 s each
    assert rc.after_round() is True
    assert rc.part == ["a", "b"]  # 40 s left: 2 of the 4 second runs
    assert ("xwatch: advise: a partial round: 2 of 4 runs fit in the budget (0.7 min left "
            "at 20 s a phase), the most informative first (a, b)") in said
    phases = rc.round()
    assert sorted(placed[0][0].label for placed, _ in phases) == ["a", "b"]
    assert rc.part is None and "2 left out (the budget)" in said[-1]
    rc.phases, t[0] = 6, 125.0  # the half ran: nothing more fits
    for c in cs[:2]:
        c.slo_values.append(c.slo_values[0])
        c.prices.append(c.prices[0])
    assert rc.after_round() is False


def _cap_run(budget_s: float) -> Any:
    # 20 s runs: the tests below take a phase as 20 s (a phase is never shorter than
    # its measured time, which the first round's fit counts on)
    scen = parse_scenario({"duration_s": 20, "workload": [
        {"name": "high", "priority": "high", "model": "resnet18", "rate": 40},
        {"name": "low", "priority": "low", "model": "resnet50"}],
        "slo": {"workload": "high", "percentile": 99.0, "latency_ms": 10}})
    return make_run(scen, Options(rates="40:640", budget_min=budget_s / 60.0), ["native"],
                    {}, Backends(), say=lambda _: None)


def test_capacity_ranks_the_load_nearest_its_verdict_first() -> None:
    run = _cap_run(600.0)
    native, ded = run.hunt.searches
    native.add(40.0, 12.0, 0.1, 900.0, 1.0)  # over the objective: one more run to a look
    ded.add(40.0, 3.0, 0.1)  # under: the growth moves on to a new load (two runs)
    run.hunt.add_low_alone(1500.0)
    run.hunt.judge()
    entries = [(s, r) for s, r in run.hunt.probes()] + [(None, 0.0)]
    assert [(s.label if s else None, r) for s, r in entries] == [
        ("native", 40.0), ("dedicated", 139.0), (None, 0.0)]
    assert cap_first.runs_needed(run.hunt, native, 40.0) == 1
    assert cap_first.runs_needed(run.hunt, ded, 139.0) == 2
    # native's load needs 1 run; dedicated's new load 2 and goes before LOW alone's 2
    assert cap_first.ranked(run.hunt, entries) == [0, 1, 2]
    assert cap_first.ranked(run.hunt, entries[::-1]) == [2, 1, 0]


def test_a_capacity_budget_for_half_a_round_runs_that_half() -> None:
    run = _cap_run(100.0)
    t = [0.0]
    run.clock, run.t0 = _clock(t), 0.0
    assert sorted(placed[0][0].key for placed, _ in run.round()) == [
        "dedicated @ 40/s", "low alone", "native @ 40/s"]  # the first round: whole
    native, ded = run.hunt.searches
    native.add(40.0, 12.0, 0.1, 900.0, 1.0)
    ded.add(40.0, 3.0, 0.1)
    run.hunt.add_low_alone(1500.0)
    run.phases, t[0] = 3, 60.0  # 20 s a phase; 40 s left: 2 of the 3 probes
    assert run.after_round() is True
    assert run.part == ["native @ 40/s", "dedicated @ 139/s"]
    phases = run.round()
    assert sorted(placed[0][0].key for placed, _ in phases) == [
        "dedicated @ 139/s", "native @ 40/s"]
    run.phases, t[0] = 5, 100.0  # they ran: no room for another probe
    assert run.after_round() is False and run.over
    assert all(s.status == cap.UNDECIDED for s in run.hunt.searches)


def test_the_budgets_end_says_what_each_search_still_needed() -> None:
    """A user whose budget ended reads what more would buy: each undecided search's next
    load and the runs it still needed as its runs stand (``first.capacity.still``); a
    search whose runs ran away needs ``Design.wary`` runs for its quiet load, one run in
    or not (on two H200s the ranking had said 1)."""
    run = _cap_run(100.0)
    t = [0.0]
    run.clock, run.t0 = _clock(t), 0.0
    run.round()
    native, ded = run.hunt.searches
    native.add(40.0, 12.0, 0.1, 900.0, 1.0)
    ded.add(40.0, 3.0, 0.1)
    run.hunt.add_low_alone(1500.0)
    run.phases, t[0] = 5, 100.0  # no room for another probe
    assert run.after_round() is False and run.over
    reasons = {s.label: s.reason for s in run.hunt.searches}
    assert reasons["native"] == ("the budget ended; its next load, 40 req/s (1 run), "
                                 "needed 1 more before its first look"), reasons
    assert reasons["dedicated"] == "the budget ended; its next load, 139 req/s, was not yet run"
    lines = "\n".join(capacity_lines(run.record_of()))
    assert "native: undecided: the budget ended; its next load, 40 req/s" in lines, lines
    # a search whose runs ran away: a quiet load of one run needs Design.wary runs
    h = cap.Hunt(10.0, 25.0, 800.0, [cap.Search("mps", "mps")], lows=False)
    m = h.searches[0]
    for v in (2.97, 627.3):
        m.add(301.0, v, 0.1)
    m.add(293.0, 2.96, 0.1)
    h.judge()
    assert m.runaways and cap_first.runs_needed(h, m, 293.0) == h.design.wary - 1
    m.next = 293.0
    assert cap_first.still(h, m) == ("its next load, 293 req/s (1 run), needed about 7 "
                                     "more runs for a verdict, as its runs stand")
    m.next = 500.0
    assert cap_first.still(h, m) == "its next load, 500 req/s, was not yet run"


def test_the_h200_advise_round_that_left_a_minute_unused_now_buys_three_runs() -> None:
    """``advise llm-graphed --slo chat.itl_ms:P99=5 --budget 4`` on an H200: one round of
    9 runs took 2.8 min (18.7 s a phase) and the race stopped with 1.2 min unused. Now
    3 of the 9 second runs fit (56 s of the 72 s left): the likely choice (the highest
    price under 5 ms by estimate) and its two nearest rivals under it."""
    from xwatch.core.plans.advise import Race
    from xwatch.scenario import load_scenario

    obj = Objective("high", Metric.parse("P99"), 5.0)  # intensive's HIGH, llm's numbers
    first_runs = [("mps 100", 8.43, 2150.0), ("mps 75", 5.17, 1830.0),
                  ("xsched 8/4", 4.87, 1792.0), ("xsched 16/8", 3.93, 1766.0),
                  ("xsched 4/2", 3.80, 1612.0), ("mps 50", 3.99, 1574.0),
                  ("xsched 2/1", 3.87, 1408.0), ("mps 25", 3.67, 896.0),
                  ("xsched 1/1", 3.70, 832.0)]
    cs = [_c(label, [slo], [price]) for label, slo, price in first_runs]
    said: list[str] = []
    rc = Race(load_scenario("intensive"), obj,
              [(c, Step(NATIVE, label=c.label, candidate=True)) for c in cs],
              budget_s=240.0, say=said.append)
    t = [168.0]
    rc.clock, rc.t0, rc.rounds, rc.phases = _clock(t), 0.0, 1, 9
    assert rc.after_round() is True
    assert rc.part == ["xsched 8/4", "xsched 16/8", "xsched 4/2"]
    assert any(line.startswith("xwatch: advise: a partial round: 3 of 9 runs fit in the "
                               "budget (1.2 min left at 19 s a phase)") for line in said)


def test_a_load_whose_runs_lie_far_apart_is_said_as_it_is_seen() -> None:
    """After the round in which a load's runs first lie more than 4x apart, the console
    says so once, with the runs (as two H200s showed at 438 req/s: 184 to 2,625 ms)."""
    said: list[str] = []
    run = _cap_run(600.0)
    run.say = said.append
    native, ded = run.hunt.searches
    for v in (1080.0, 183.9):
        ded.add(438.0, v, 1.0)
    native.add(40.0, 5.0, 0.1, 900.0, 1.0)
    run.hunt.add_low_alone(1500.0)
    run.after_round()
    wild = [ln for ln in said if "lie" in ln]
    assert wild == ["    dedicated: runs at 438 req/s lie 6x apart (1,080, 184 ms): a "
                    "queue that ran away in some; dedicated's loads are met only on 8 runs "
                    "or more, and a verdict near this load may be wrong"]
    ded.add(438.0, 2625.0, 1.0)
    run.after_round()
    assert len([ln for ln in said if "lie" in ln]) == 1  # once a load


def test_a_search_that_starts_again_says_its_new_end() -> None:
    """Verdicts are judged afresh, so a stopped search can start again (a met load opens
    once the pool widens): its next end is said too, not only its first."""
    said: list[str] = []
    run = _cap_run(600.0)
    run.say = said.append
    native = run.hunt.searches[0]
    native.status, native.reason = cap.AT_KNEE, "first"
    run.after_round()
    native.status = cap.SEARCHING  # as ``Hunt.judge`` sets it when a verdict changes
    run.after_round()
    native.status, native.reason = cap.AT_KNEE, "second"
    run.after_round()
    assert [ln for ln in said if ln.startswith("    native:")] == [
        "    native: at-knee (first)", "    native: at-knee (second)"]
