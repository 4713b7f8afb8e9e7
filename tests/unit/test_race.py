"""The race's decisions against hand-made runs: intervals over every look, drops for
the SLO and for price, the winner, which candidates the next round runs, what is
left undecided, the words and the TOML; and a simulation: with a known truth,
racing picks the truly cheapest SLO-meeting candidate and runs fewer runs than the
full grid. (The intervals' promise over looks: ``tests/unit/test_sequential.py``.)"""

from __future__ import annotations

import math
import random
from typing import Any

import msgspec
import pytest

from xwatch.core import model as M
from xwatch.core.analysis.stats import race
from xwatch.core.analysis.stats import sequential as seq
from xwatch.core.analysis.stats.race import Candidate, Objective, judge
from xwatch.core.analysis.stats.runs import t_ppf
from xwatch.core.model.metric import Metric
from xwatch.core.modes.base import NATIVE
from xwatch.core.plans import box
from xwatch.core.plans.options import Backends

MPS, XSCHED = "mps", "xsched"

#: the snapshot record of OBJ (what advise writes)
SLO = M.Slo(workload="high", metric="P99", percentile=99.0, latency_ms=10.0)
OBJ = Objective("high", Metric.parse("P99"), 10.0)


def _c(label: str, slo: list[float], price: list[float], mode: str = "mps") -> Candidate:
    return Candidate(label, mode, {} if mode == "native" else {"low.x": 1}, list(slo), list(price))


def test_an_interval_is_the_geometric_mean_with_pooled_t_at_the_looks_share() -> None:
    cs = [_c("a", [1.0, 2.0, 4.0], [10.0, 11.0, 12.0]), _c("b", [3.0, 3.3, 3.6], [5.0] * 3)]
    race.fit(cs)
    la = [math.log(x) for x in (1.0, 2.0, 4.0)]
    lb = [math.log(x) for x in (3.0, 3.3, 3.6)]
    ma, mb = sum(la) / 3, sum(lb) / 3
    ss_a, ss_b = sum((x - ma) ** 2 for x in la), sum((x - mb) ** 2 for x in lb)
    pooled = (ss_a + ss_b) / 4  # 4 degrees of freedom between the two
    alpha = seq.look_alpha(0.05 * race.SLO_SHARE / 2, 3)
    iv = cs[0].slo
    assert iv.est == pytest.approx(2.0)  # the geometric mean
    own = ss_a / 2  # a is noisier than the pool: its own variance, fewer borrowed df
    f = own / (ss_b / 2)  # against b's: F(2, 2), whose upper tail at f is 1 / (1 + f)
    df = 2 + round(2 * min(1.0, 2 / (1.0 + f)))  # the two-sided p-value's share
    half = t_ppf(1 - alpha / 2, df) * math.sqrt(own / 3)
    assert iv.hi == pytest.approx(2.0 * math.exp(half))
    assert iv.lo == pytest.approx(2.0 * math.exp(-half))
    # b is quieter than the pool: the pooled variance on all 4 degrees of freedom (on
    # its own 2 alone, this look's error would need t = 42 instead of 10)
    hb = t_ppf(1 - alpha / 2, 4) * math.sqrt(pooled / 3)
    assert cs[1].slo.hi == pytest.approx(math.exp(mb + hb), rel=1e-9)


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
    """n values whose logs have exactly this mean and sample SD."""
    z = [i - (n - 1) / 2 for i in range(n)]
    zsd = math.sqrt(sum(v * v for v in z) / (n - 1))
    return [math.exp(mean + sd * v / zsd) for v in z]


@pytest.mark.parametrize("xs,bound", [([11.3, 15.6, 8.9, 9.4], 10.0),
                                      ([12.0, 14.0, 13.0], 10.0),
                                      ([5.0, 9.0, 7.5, 6.1, 8.2], 10.0)])
def test_rounds_to_tell_is_the_first_count_whose_interval_leaves_the_bound(
        xs: list[float], bound: float) -> None:
    c = _c("a", xs, [1.0] * len(xs))
    race.fit([c])
    alpha = race.share([c])
    k = race.rounds_to_tell(c, bound, alpha)
    assert k is not None and k >= 0
    logs = [math.log(x) for x in xs]
    m = sum(logs) / len(logs)
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (len(logs) - 1))

    def clear(n: int) -> bool:  # checked through the race's own intervals
        d = _c("a", _shaped(n, m, sd), [1.0] * n)
        race.fit([d])
        return d.meets(Objective("high", Metric.parse("P99"), bound)) or \
            d.fails(Objective("high", Metric.parse("P99"), bound))

    assert clear(len(xs) + k)
    assert k == 0 or not clear(len(xs) + k - 1)
    on = _c("b", [bound, bound * 1.1, bound / 1.1], [1.0] * 3)
    race.fit([on])
    assert race.rounds_to_tell(on, bound, alpha) is None  # on it


def test_rounds_to_decide_separates_two_prices() -> None:
    a = _c("a", [5.0, 5.1, 5.0], _shaped(3, math.log(305.0), 0.02))
    b = _c("b", [5.0, 5.1, 5.0], _shaped(3, math.log(295.0), 0.02))
    judge([a, b], OBJ)
    alpha = race.share([a, b], price=True)
    k = race.rounds_to_decide(a, b, alpha)
    assert k is not None and k > 0

    def apart(n: int) -> bool:
        x = _c("a", [5.0] * n, _shaped(n, math.log(305.0), 0.02))
        y = _c("b", [5.0] * n, _shaped(n, math.log(295.0), 0.02))
        race.fit([x, y])
        return y.price.hi is not None and x.price.lo is not None and y.price.hi < x.price.lo

    assert apart(3 + k) and not apart(3 + k - 1)


def test_what_the_budget_left_open_when_no_estimate_meets_the_slo() -> None:
    """The H100's first 20-minute race (2026-11-23): every estimate above 10 ms."""
    cs = [_c("native", [9.79, 23.21, 22.75, 14.97], [6100.0, 6200.0, 6150.0, 6160.0],
             "native"),
          _c("mps 50", [15.57, 12.08, 8.86, 9.41], [4200.0, 4300.0, 4250.0, 4290.0]),
          _c("xsched 16/8", [19.69, 22.75, 21.65, 19.59], [5900.0, 5950.0, 5930.0, 5980.0])]
    judge(cs, OBJ)
    cs[2].status = race.DROPPED_SLO  # (with this pool it is not, yet, at 4 runs)
    op = race.still_open(cs, OBJ)
    assert op.likely is None and set(op.waits) == {"native", "mps 50"}
    conf = race.share(cs)
    assert op.waits["mps 50"][1] == race.rounds_to_tell(cs[1], 10.0, conf)
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
    assert op.waits["close"][1] == race.rounds_to_decide(cs[3], cs[2],
                                                         race.share(cs, price=True))
    assert "native" not in op.waits or op.waits["native"][1] is not None
    assert "the likely choice is likely (the cheapest whose estimate meets high P99 < 10 " \
        "ms)" in race.undecided_note(cs, OBJ)
    # a candidate recommended at the budget (it meets with confidence) is the advice;
    # the note no longer names another "likely choice" beside it (H100, 2026-11-24: the
    # advice said "Use th=1" and the note "the likely choice is th=16")
    note = race.undecided_note(cs, OBJ, chosen=cs[0])
    assert note.startswith("Not decided on price at the budget: native meets high P99 < 10 "
                           "ms with confidence and is the advice; likely may be cheaper")
    assert "the likely choice" not in note


def test_sentence_toml_and_reasons() -> None:
    cs = [_c("native", [4.0, 4.1], [100.0, 101.0], "native"),
          Candidate("mps 50", "mps", {"low.mps.priority": 1,
                                      "low.mps.active_thread_percentage": 50},
                    [8.0, 8.2], [70.0, 71.0])]
    judge(cs, OBJ)
    cs[1].status = race.CHOSEN
    adv = M.Advice(slo=SLO, choice=M.Choice(label="mps 50", mode="mps",
                                            settings=dict(cs[1].settings)),
                   candidates=race.as_records(cs), decided=True)
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
    adv = M.Advice(slo=SLO, choice=None, closest="m", rounds=1,
                   candidates=race.as_records(cs))
    s = race.sentence(adv)
    assert s.startswith("No setting met high P99 < 10 ms with confidence (the budget ended "
                        "after 1 round(s); a decision needs at least 2 runs of each)"), s


def test_intervals_stay_positive_and_are_never_narrower_than_the_resolution() -> None:
    """Two runs in one histogram bucket (the field's 7.30 [7.30, 7.30]): the interval is
    at least the bucket's width, and never reaches 0 or below."""
    from xwatch.core.analysis.stats.resolution import resolution_ms

    cs = [_c("a", [7.30, 7.30], [100.0, 100.0]), _c("b", [8.0, 8.4], [90.0, 91.0]),
          _c("c", [9.0, 9.5], [80.0, 81.0]), _c("d", [1.0, 30.0], [70.0, 71.0])]
    race.fit(cs)
    r = resolution_ms([7.30, 7.30])
    a = cs[0].slo
    assert a.lo is not None and a.hi is not None
    assert a.lo <= 7.30 - r / 2 and a.hi >= 7.30 + r / 2
    assert a.hi - a.lo > r  # and wider still: the pool's spread
    assert cs[3].slo.lo is None or cs[3].slo.lo > 0.0  # 1 and 30: its own 1 df


def test_runs_too_short_to_bound_their_p99_cannot_meet_the_slo() -> None:
    """16 requests a run (the chat workload): each run's P99 is its maximum, with no
    upper order statistic; the SLO interval stays open above, so no "met"."""
    cs = [_c("chat", [5.0, 5.1, 5.2, 5.0], [100.0, 101.0, 99.0, 100.0]),
          _c("other", [20.0, 21.0, 20.5, 20.2], [200.0, 201.0, 199.0, 200.0])]
    cs[0].slo_ses = [math.nan] * 4
    assert judge(cs, OBJ) is None
    assert cs[0].slo.hi is None and not cs[0].meets(OBJ) and cs[0].alive
    assert cs[1].status == race.DROPPED_SLO  # a lower bound is still a bound
    # no run of it can decide anything more: the next round leaves it out, unless it
    # is all that is left (the safeguard), and the budget's words say why it is open
    cs.append(_c("third", [7.0, 8.0, 7.5, 7.2], [150.0, 152.0, 149.0, 151.0]))
    judge(cs, OBJ)
    assert [c.label for c in race.to_run(cs, OBJ)] == ["third"]
    assert race.rounds_to_tell(cs[0], OBJ.latency_ms, race.share(cs)) is None
    assert [c.label for c in race.to_run(cs[:2], OBJ)] == ["chat"]
    words, rounds = race.still_open(cs[:2], OBJ).waits["chat"]
    assert rounds is None and "too short to bound P99 from above (that needs 368 " in words


def test_the_next_round_runs_only_what_can_still_decide() -> None:
    cs = [_c("likely", [6.0, 9.0, 7.0], [500.0, 510.0, 505.0]),
          _c("dearer", [9.5, 10.5, 10.0], [300.0, 301.0, 299.0]),
          _c("cheaper", [9.0, 11.0, 10.5], [700.0, 705.0, 702.0]),
          _c("done", [3.0, 3.1, 3.05], [100.0, 101.0, 99.0])]
    judge(cs, OBJ)
    assert cs[3].meets(OBJ) and cs[3].alive  # meets, priced apart from every survivor
    names = {c.label for c in race.to_run(cs, OBJ)}
    assert names == {"likely", "cheaper"}  # "dearer" waits for "likely"; "done" waits
    fresh = [_c("x", [5.0], [1.0]), _c("y", [5.0, 5.1], [2.0, 2.1])]
    assert [c.label for c in race.to_run(fresh, OBJ)] == ["x"]  # first, two runs each


def test_a_race_ended_by_its_budget_records_what_is_open() -> None:
    """The advice record of a race the budget ended: every open candidate is
    ``undecided`` with what it waits for, and the note says how many more rounds
    (this was empty on the H100's first 20-minute race: the note looked for
    survivors after the statuses had been settled)."""
    from xwatch.core.modes.base import NATIVE
    from xwatch.core.plans.advise import Race
    from xwatch.core.plans.driver import Step
    from xwatch.scenario import load_scenario

    scen = load_scenario("intensive")
    cs = [_c("native", [9.79, 23.21, 22.75, 14.97], [6100.0, 6200.0, 6150.0, 6160.0], "native"),
          _c("mps 50", [15.57, 12.08, 8.86, 9.41], [4200.0, 4300.0, 4250.0, 4290.0])]
    rc = Race(scen, OBJ, [(c, Step(NATIVE, label=c.label, candidate=True)) for c in cs],
              budget_s=0.0, say=lambda text: None)
    rc.rounds = 4
    assert rc.after_round() is False  # the budget is spent
    adv = rc.advice()
    assert adv.met is False and adv.decided is False
    assert [c.status for c in adv.candidates] == [race.UNDECIDED] * 2
    assert all(c.reason.startswith("open: high P99 ") for c in adv.candidates)
    assert adv.undecided and adv.undecided.startswith(
        "Undecided at the budget: no open candidate's")
    assert adv.more_rounds == race.still_open(cs, OBJ).rounds


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
    assert k == op.waits["mps 100"][1] == race.rounds_to_tell(cs[0], 10.0, race.share(cs))
    adv = M.Advice(slo=SLO, choice=None, candidates=[
        msgspec.structs.replace(c, status=race.UNDECIDED)
        for c in race.as_records([*cs[:1], *cs[1:]])],
        likely="mps 100", more_rounds=1, closest="mps 75", rounds=4)
    assert race.sentence(adv).startswith(
        "No setting met high P99 < 10 ms with confidence within the budget; the likely "
        "choice, about 1 more round from a decision, is MPS, low x 1: high P99 7.96 ms [")


# ------------------------------------------------------------ races over the box
def _entries(n: int, mode: str = "mps") -> list[box.Entry]:
    return [box.Entry(f"c{i}", mode) for i in range(n)]


@pytest.mark.parametrize("k", [2, 3, 4])
def test_a_round_is_a_latin_square_over_the_gpus(k: int) -> None:
    """k candidates on k GPUs: every round a permutation (one phase, each GPU once);
    over k rounds each candidate runs once on every GPU."""
    gpus = [5, 1, 7, 2][:k]  # any indices, in the order --gpus names them
    seen: dict[str, list[int]] = {}
    for rnd in range(1, k + 1):
        phases = box.layout(_entries(k), gpus, rnd)
        assert len(phases) == 1
        assert sorted(phases[0].gpus) == sorted(gpus)
        for label, g in phases[0].placed:
            seen.setdefault(label, []).append(g)
    assert all(sorted(v) == sorted(gpus) for v in seen.values()), seen
    # and the rounds differ: no candidate keeps its GPU from one round to the next
    assert all(v[i] != v[i + 1] for v in seen.values() for i in range(k - 1))


def test_more_candidates_than_gpus_fill_phases_and_rotate() -> None:
    gpus = [0, 1]
    for rnd in range(1, 5):
        phases = box.layout(_entries(5), gpus, rnd)
        assert [len(p.placed) for p in phases] == [2, 2, 1]  # ceil(5/2) phases
        assert all(len(set(p.gpus)) == len(p.gpus) for p in phases)  # a GPU once a phase
        assert sorted(lb for p in phases for lb, _ in p.placed) == [f"c{i}" for i in range(5)]
    on = {rnd: dict(pl for p in box.layout(_entries(5), gpus, rnd) for pl in p.placed)
          for rnd in (1, 2)}
    assert all(on[1][c] != on[2][c] for c in on[1])


def _xs(policy: str = "HPF", port: int = 50000, preflight: bool = True) -> Any:
    """An XSched backend whose xserver would run ``policy`` on ``port``."""
    import dataclasses
    from pathlib import Path

    from xwatch.core.xsched.controller import XschedController
    from xwatch.core.xsched.install import XschedInstall
    from xwatch.scenario.model import XschedSettings

    sc = dataclasses.replace(_two_workloads(), xsched=dataclasses.replace(
        XschedSettings(), policy=policy, port=port))
    return XschedController(XschedInstall(Path("/opt/xsched"), "test"), sc,
                            preflight=preflight)


def _mps(tool: str = "/t", preflight: bool = False) -> Any:
    from xwatch.core.mps.controller import MpsController

    return MpsController(tool, _two_workloads(), preflight=preflight)


def test_candidates_that_differ_in_an_xserver_wide_setting_never_share_a_phase() -> None:
    """XSched: one xserver, one policy for every GPU; per-process settings (threshold,
    batch size) may differ within a phase, the policy or port may not."""
    es = [box.Entry("th2", XSCHED, box.phase_wide(_xs())),
          box.Entry("th8", XSCHED, box.phase_wide(_xs())),
          box.Entry("hpf-other-port", XSCHED, box.phase_wide(_xs(port=50001))),
          box.Entry("cbs", XSCHED, box.phase_wide(_xs("CBS"))),
          box.Entry("native", NATIVE)]
    for rnd in (1, 2, 3):
        phases = box.layout(es, [0, 1, 2, 3], rnd)
        groups = sorted(sorted(lb for lb, _ in p.placed) for p in phases)
        assert groups == [["cbs"], ["hpf-other-port"], ["native"], ["th2", "th8"]]
    # planted: a rule that ignored the policy would put cbs beside th2
    assert box.phase_wide(_xs("CBS")) != box.phase_wide(_xs())


def test_mps_client_settings_share_a_phase_a_daemon_wide_one_never() -> None:
    """MPS: one control daemon for the phase; each client's priority, SM share and pinned
    memory limit come from its own environment (``box_scenario`` gives each copy its
    candidate's), the daemon (its tool) is one."""
    mps_a = _mps("/usr/bin/nvidia-cuda-mps-control", preflight=True)
    mps_b = _mps("/opt/other/nvidia-cuda-mps-control", preflight=True)
    es = [box.Entry("sm100", MPS, box.phase_wide(mps_a)),
          box.Entry("sm50", MPS, box.phase_wide(mps_a)),
          box.Entry("other-daemon", MPS, box.phase_wide(mps_b))]
    phases = box.layout(es, [0, 1], 1)
    assert sorted(sorted(lb for lb, _ in p.placed) for p in phases) == \
        [["other-daemon"], ["sm100", "sm50"]]
    scen = _two_workloads()
    placed = [({"low": {"mps.active_thread_percentage": 100}}, 0),
              ({"low": {"mps.active_thread_percentage": 50}}, 1)]
    sc = box.box_scenario(scen, placed)
    from xwatch.core.mps.env import mps_env
    env = {w.name: mps_env(w, "/p", "/l", w.name.startswith("high")) for w in sc.workloads}
    assert env["low@0"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "100"
    assert env["low@1"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" not in env["high@1"]
    assert {w.name: w.env["CUDA_VISIBLE_DEVICES"] for w in sc.workloads} == \
        {"high@0": "0", "low@0": "0", "high@1": "1", "low@1": "1"}
    assert box.copy_settings(scen, placed) == {"low@0": {"mps.active_thread_percentage": 100},
                                               "low@1": {"mps.active_thread_percentage": 50}}


def _two_workloads(gpus: tuple[int, ...] = ()) -> Any:
    from xwatch.scenario import Scenario, Workload
    wls = (Workload(name="high", priority="high", command=("true",)),
           Workload(name="low", priority="low", command=("true",)))
    return Scenario(name="s", description="", duration_s=10.0, device="cpu", window_s=10.0,
                    workloads=wls).on_gpus(gpus)


def test_advise_sets_mps_and_xsched_keys_together_each_on_its_own_mode() -> None:
    from xwatch.core.plans.advise import plan_candidates
    from xwatch.errors import UsageError

    scen = _two_workloads()
    xs, mp = _xs(preflight=False), _mps()
    plan = plan_candidates(scen, OBJ, [NATIVE, MPS, XSCHED],
                           ["low.mps.active_thread_percentage=100,50", "low.threshold=2,8"],
                           Backends.of(xs, mp))
    got = {(c.mode, tuple(sorted(c.settings.items()))) for c, _ in plan}
    assert got == {(NATIVE, ()),
                   (MPS, (("low.mps.active_thread_percentage", 100),)),
                   (MPS, (("low.mps.active_thread_percentage", 50),)),
                   (XSCHED, (("low.threshold", 2),)), (XSCHED, (("low.threshold", 8),))}
    for c, step in plan:  # each backend's scenario carries its own mode's keys only
        if c.mode == XSCHED:
            low = step.backend.scenario.workload("low")  # type: ignore[union-attr]
            assert low.xsched.threshold in (2, 8) and low.mps.active_thread_percentage is None
    with pytest.raises(UsageError, match="is an MPS key, but --modes native,xsched races no mps"):
        plan_candidates(scen, OBJ, [NATIVE, XSCHED],
                        ["low.mps.active_thread_percentage=50", "low.threshold=2"],
                        Backends.of(xs, mp))
    with pytest.raises(UsageError, match="is an XSched key, but xsched is skipped here: no "
                                         "XSched install"):
        plan_candidates(scen, OBJ, [NATIVE, MPS], ["low.threshold=2"], Backends.of(xs, mp),
                        {XSCHED: "no XSched install"})


def test_a_box_round_runs_each_candidate_on_its_gpu_and_records_it() -> None:
    """advise on --gpus 0,1: a round's phase runs two candidates' copies, each pinned to
    its GPU with its own setting, under one backend; native, alone in its mode, takes
    both GPUs (no GPU idles); each run records its GPUs."""
    from xwatch.core.plans.advise import Race, plan_candidates

    scen = _two_workloads((0, 1))
    obj = Objective("high", Metric.parse("P90"), 10.0)
    mp = _mps()
    plan = plan_candidates(scen, obj, [NATIVE, MPS], ["low.mps.active_thread_percentage=100,50"],
                           Backends.of(mp))
    rc = Race(scen, obj, plan, 600.0, say=lambda _: None, backends=Backends.of(mp))
    gpus_of: dict[str, list[int]] = {}
    for _ in range(2):
        phases = rc.round()
        assert len(phases) == 2  # native on both GPUs; the MPS pair
        for placed, step in phases:
            assert sorted(g for _, g in placed) == [0, 1]  # every GPU busy
            assert step.copy_modes is None  # one mode a phase (mix is off)
            if step.mode == MPS:
                assert step.only == ("high@0", "low@0", "high@1", "low@1")
                sc = step.backend.scenario  # type: ignore[union-attr]
                by_gpu = {g: c.settings for c, g in placed}
                for g in (0, 1):
                    pct = sc.workload(f"low@{g}").mps.active_thread_percentage
                    assert {"low.mps.active_thread_percentage": pct} == by_gpu[g]
            else:
                assert {c.label for c, _ in placed} == {"native"}
            for c, g in placed:
                assert g is not None
                gpus_of.setdefault(c.label, []).append(g)
    mps = {lb: v for lb, v in gpus_of.items() if lb != "native"}
    assert all(sorted(v) == [0, 1] for v in mps.values()), gpus_of
    assert {tuple(v) for v in mps.values()} == {(0, 1), (1, 0)}
    assert sorted(gpus_of["native"]) == [0, 0, 1, 1]


def test_fill_packs_the_issues_round_into_one_phase_on_four_gpus() -> None:
    """Issue 58's round 3 (native; mps sm=50%; two XSched settings) took three phases with
    2 or 3 of 4 GPUs idle in each: with ``mix`` it is one phase, every GPU busy, one
    candidate a GPU, each mode's copies under its own backend."""
    es = [box.Entry("native", NATIVE), box.Entry("mps50", MPS, box.phase_wide(_mps(
        preflight=True))), box.Entry("th8", XSCHED, box.phase_wide(_xs())),
        box.Entry("th2", XSCHED, box.phase_wide(_xs()))]
    seen: dict[str, set[int]] = {}
    for rnd in range(1, 5):
        phases = box.layout(es, [0, 1, 2, 3], rnd, fill=True, mix=True)
        assert len(phases) == 1
        bp = phases[0]
        assert sorted(bp.gpus) == [0, 1, 2, 3] and sorted(bp.labels) == sorted(
            e.label for e in es)
        assert bp.mode == "native+xsched+mps"
        assert dict(bp.modes) == {e.label: e.mode for e in es}
        for lb, g in bp.placed:
            seen.setdefault(lb, set()).add(g)
    assert all(v == {0, 1, 2, 3} for v in seen.values()), seen  # every candidate, every GPU
    # without mix: one mode a phase, but each phase spread over every GPU
    phases = box.layout(es, [0, 1, 2, 3], 1, fill=True)
    assert sorted(len(p.labels) for p in phases) == [1, 1, 2]
    assert all(sorted(p.gpus) == [0, 1, 2, 3] for p in phases)
    two = next(p for p in phases if len(p.labels) == 2)
    assert sorted(len(two.gpus_of(lb)) for lb in two.labels) == [2, 2]


def test_mix_keeps_one_daemon_per_mode_a_phase() -> None:
    """Two XSched groups (different policies) never share a phase, even with room;
    native joins any phase."""
    es = [box.Entry("hpf", XSCHED, box.phase_wide(_xs())),
          box.Entry("cbs", XSCHED, box.phase_wide(_xs("CBS"))),
          box.Entry("native", NATIVE)]
    phases = box.layout(es, [0, 1, 2, 3], 1, fill=True, mix=True)
    assert sorted(sorted(p.labels) for p in phases) == [["cbs"], ["hpf", "native"]]


def test_a_mixed_race_phase_and_a_spread_run_are_recorded_over_their_copies() -> None:
    """With ``mix`` native shares the MPS candidates' phase on a GPU of its own: the step
    carries each copy's mode and each mode's backend; a candidate spread over two GPUs
    records one run, the geometric mean of its copies' values and a per-GPU price."""
    from xwatch.core.engine.snapshot import PhaseSnapshot
    from xwatch.core.plans.advise import Race, plan_candidates

    scen = _two_workloads((0, 1, 2))
    obj = Objective("high", Metric.parse("P90"), 10.0)
    mp = _mps()
    plan = plan_candidates(scen, obj, [NATIVE, MPS], ["low.mps.active_thread_percentage=100"],
                           Backends.of(mp))
    rc = Race(scen, obj, plan, 600.0, say=lambda _: None, backends=Backends.of(mp),
              mix=True)
    (placed, step), = rc.round()
    assert step.mode == "native+mps" and step.copy_modes is not None
    assert step.backends is not None and set(step.backends) == {NATIVE, MPS}
    assert step.backends[NATIVE] is None and step.backend is None
    by = {c.label: sorted(g for d, g in placed if d is c) for c, _ in placed}
    assert sorted(len(v) for v in by.values()) == [1, 2]  # 2 candidates on 3 GPUs
    for c, _ in placed:
        for g in by[c.label]:
            assert step.copy_modes[f"high@{g}"] == c.mode == step.copy_modes[f"low@{g}"]
    assert step.backends[MPS].scenario.workload("low@0") is not None  # type: ignore[union-attr]
    # a spread candidate's run: its copies' mean
    two = next(lb for lb, v in by.items() if len(v) == 2)
    g1, g2 = by[two]

    from tests.unit.test_runs import _rate_run, _run
    from xwatch.core.analysis.stats.runs import run_value
    from xwatch.core.model.metric import THROUGHPUT

    rng = random.Random(3)
    ws = [msgspec.structs.replace(_run(rng, 400, sc, 0.0), name=f"high@{g}")
          for g, sc in ((g1, 1.0), (g2, 2.0))]
    ws += [_rate_run(rng, 200, sc, name=f"low@{g}") for g, sc in ((g1, 1.0), (g2, 0.5))]
    p = PhaseSnapshot(0, "x", step.mode, "done", "", None, 10.0, True, tuple(ws))
    c = next(c for c in rc.cands if c.label == two)
    race.record_run(c, p, obj, rc.lows, (g1, g2))
    v = [run_value(w, Metric.parse("P90")).est for w in ws[:2]]
    assert c.slo_values[-1] == pytest.approx(math.sqrt(v[0] * v[1]), rel=1e-9)  # geomean
    r = [run_value(w, THROUGHPUT).est for w in ws[2:]]
    assert c.prices[-1] == pytest.approx((r[0] + r[1]) / 2, rel=1e-9)  # per GPU, not the sum
    assert c.run_gpus[-1] == (g1, g2) and c.gpus[-1] == g1
    rec = next(r for r in race.as_records(rc.cands) if r.label == two)
    assert rec.run_gpus == [[g1, g2]]


def _box_misses(gpu_sd: float, rotate: bool, seed: int, k: int = 2, sims: int = 200,
                rounds: int = 10) -> float:
    """The share of simulated races in which some candidate's SLO or price interval, at
    some look, missed its truth: five candidates over ``k`` GPUs, a fixed effect per
    GPU (one GPU ``gpu_sd`` slower), an effect shared by a phase's copies (2.5%, as
    measured on the H200 box), copy-to-copy noise (15% for a P99, 1% for a price),
    P99s rounded to 0.1 ms and prices to whole samples/s. The truth is the candidate's
    value averaged over the box's GPUs. ``rotate`` False ties each candidate to one
    GPU (a planted bug)."""
    rng = random.Random(seed)
    mus = [6.0, 8.0, 9.5, 12.0, 15.0]
    costs = [5000.0, 4200.0, 3600.0, 3000.0, 2500.0]
    gpus = list(range(k))
    missed = 0
    for _ in range(sims):
        g_slo = [gpu_sd if j == k - 1 else 0.0 for j in gpus]
        g_price = [-gpu_sd / 5 if j == k - 1 else 0.0 for j in gpus]
        t_slo = [m * math.exp(sum(g_slo) / k) for m in mus]
        t_price = [p * math.exp(sum(g_price) / k) for p in costs]
        cs = [Candidate(f"c{i}", "mps", {}) for i in range(len(mus))]
        hit = False
        for rnd in range(1, rounds + 1):
            order = race.to_run(cs, OBJ)
            if rotate:
                phases = box.layout([box.Entry(c.label, "mps") for c in order], gpus, rnd)
            else:
                phases = [box.BoxPhase("mps", ((c.label, int(c.label[1:]) % k),))
                          for c in order]
            for ph in phases:
                shared = rng.gauss(0, 0.025)
                for lb, g in ph.placed:
                    i = int(lb[1:])
                    c = cs[i]
                    v = mus[i] * math.exp(g_slo[g] + shared + rng.gauss(0, 0.15))
                    p = costs[i] * math.exp(g_price[g] + shared / 2 + rng.gauss(0, 0.01))
                    c.slo_values.append(round(v, 1))
                    c.prices.append(float(round(p)))
                    c.gpus.append(g)
            judge(cs, OBJ)
            for i, c in enumerate(cs):
                if c.runs < race.MIN_RUNS:
                    continue
                for iv, t in ((c.slo, t_slo[i]), (c.price, t_price[i])):
                    if (iv.lo is not None and iv.lo > t) or (iv.hi is not None and iv.hi < t):
                        hit = True
            if not any(c.alive for c in cs):
                break
        missed += hit
    return missed / sims


@pytest.mark.parametrize("gpu_sd,k", [(0.05, 2), (0.2, 2), (0.2, 4)])
def test_box_races_keep_their_intervals_with_gpu_and_run_effects(gpu_sd: float, k: int) -> None:
    """Every interval of every look of every candidate (the race's own drops deciding
    which run on) holds together at 95% with a slow GPU, a per-phase effect and the
    rotation; tied to one GPU instead, a slow GPU breaks them."""
    assert _box_misses(gpu_sd, rotate=True, seed=11, k=k) <= 0.05


def test_tied_to_one_gpu_a_slow_gpu_breaks_the_intervals() -> None:
    assert _box_misses(0.2, rotate=False, seed=11) > 0.2


def test_a_neighbours_failure_fails_only_its_own_candidate() -> None:
    """A box phase with a copy that crashed on GPU 1: the candidate on GPU 0 keeps its
    run; the one on GPU 1 fails; a failure of the phase itself (its daemon) fails both;
    a stall names its copy."""
    from tests.unit.test_runs import _rate_run, _run
    from xwatch.core.engine.snapshot import PhaseSnapshot

    rng = random.Random(1)
    obj = Objective("high", Metric.parse("P50"), 100.0)

    def phase(status: str, error: str | None, crashed: str | None) -> PhaseSnapshot:
        ws = []
        for g in (0, 1):
            hi = msgspec.structs.replace(_run(rng, 400, 1.0, 0.0), name=f"high@{g}")
            lo = _rate_run(rng, 200, 1.0, name=f"low@{g}")
            ws += [msgspec.structs.replace(w, state="failed") if w.name == crashed else w
                   for w in (hi, lo)]
        return PhaseSnapshot(0, "mps-1", "mps", status, "", None, 10.0, True, tuple(ws),
                             error=error)

    for p, ok0, ok1 in ((phase("failed", None, "low@1"), True, False),
                        (phase("failed", "low@0 stalled since 3.1 s", None), False, True),
                        (phase("failed", "MPS control daemon died", None), False, False),
                        (phase("done", None, None), True, True)):
        a, b = Candidate("a", "mps", {}), Candidate("b", "mps", {})
        race.record_run(a, p, obj, ["low"], 0)
        race.record_run(b, p, obj, ["low"], 1)
        assert (a.runs == 1, b.runs == 1) == (ok0, ok1), (p.error, a.reason, b.reason)
        assert (a.status == race.FAILED, b.status == race.FAILED) == (not ok0, not ok1)
        assert a.gpus == ([0] if ok0 else []) and b.gpus == ([1] if ok1 else [])


def test_advice_at_the_budget_says_why_it_chose_and_names_the_cheaper_ones_open() -> None:
    """The ITL race of issue 58: at the budget the advice was the only setting meeting
    the SLO with confidence, not the cheapest by estimate; two cheaper settings were
    still open. The sentence says so and names them with their estimates and the rounds
    they need; the console (``advice_lines``) and the report print the same sentence from
    the snapshot's record."""
    from xwatch.core.modes.base import NATIVE
    from xwatch.core.plans.advise import Race, advice_lines
    from xwatch.core.plans.driver import Step
    from xwatch.scenario import load_scenario

    cs = [_c("sure", [6.0, 6.1, 5.9, 6.05], [1240.0, 1250.0, 1245.0, 1248.0]),
          _c("th8", [7.0, 10.5, 8.0, 11.5], [1580.0, 1590.0, 1585.0, 1582.0]),
          _c("sm50", [9.0, 9.8, 9.4, 9.1], [1470.0, 1480.0, 1485.0, 1478.0]),
          _c("native", [30.0, 31.0, 29.0, 30.5], [2000.0, 2010.0, 1990.0, 2005.0], "native")]
    rc = Race(load_scenario("intensive"), OBJ,
              [(c, Step(NATIVE, label=c.label, candidate=True)) for c in cs],
              budget_s=0.0, say=lambda text: None)
    rc.rounds = 4
    assert rc.after_round() is False
    adv = rc.advice()
    assert adv.choice is not None and adv.choice.label == "sure" and adv.decided is False
    s = race.sentence(adv)
    assert "(the only setting that meets the SLO with confidence)" in s, s
    assert "cheapest by estimate" not in s
    assert "; th8 and sm50 may meet it for less (th8: P99 " in s, s
    assert "; sm50: P99 " in s and s.endswith("to tell.") and "more round" in s, s
    rec = {c.label: c for c in adv.candidates}
    assert isinstance(rec["th8"].more_rounds, int) and isinstance(rec["sm50"].more_rounds, int)
    assert rec["sure"].more_rounds is msgspec.UNSET or rec["sure"].status == race.CHOSEN
    assert advice_lines(adv)[1] == s  # the console; the report prints race.sentence too


def test_advice_chosen_among_several_that_meet_says_the_cheapest_by_estimate() -> None:
    cs = [_c("a", [5.0, 5.1, 4.9, 5.05], [1000.0, 1300.0, 1100.0, 1250.0]),
          _c("b", [5.2, 5.0, 5.1, 5.3], [1050.0, 1200.0, 1150.0, 1100.0])]
    judge(cs, OBJ)
    assert cs[0].meets(OBJ) and cs[1].meets(OBJ)
    cs[0].status, cs[1].status = race.CHOSEN, race.UNDECIDED
    adv = M.Advice(slo=SLO, choice=M.Choice(label="a", mode="mps", settings={"low.x": 1}),
                   candidates=race.as_records(cs), decided=False)
    s = race.sentence(adv)
    assert "(the cheapest by estimate of the 2 settings that meet the SLO with confidence: " \
           "the budget ended before their prices were told apart)" in s, s
    assert "may meet it for less" not in s


def test_an_older_record_without_rounds_per_candidate_says_the_races_rounds() -> None:
    """The tutorial's advise (an H100 race recorded before candidates kept their own
    rounds): the record keeps only the race's count (2), so the advice says that, never
    "the runs so far cannot tell" (what an unset count is not)."""
    from pathlib import Path

    from xwatch.core.export.snapshot import load_snapshot

    root = Path(__file__).resolve().parents[2]
    snap = load_snapshot(root / "data/results/h100-2026-11-25/second/advise-intensive")
    assert snap.advice is not None
    s = race.sentence(snap.advice)
    assert s.startswith("Use XSched, low threshold 1, low batch_size 1 (the only setting "
                        "that meets the SLO with confidence)"), s
    assert s.endswith("may meet it for less (mps low pri=1 sm=100%: P99 6.60 [3.35, 13.03] ms, "
                      "6,348 [6,278, 6,418]/s; native: P99 6.88 [0.70, 67.77] ms, 6,194 [6,126, "
                      "6,263]/s; xsched low th=2 b=1: P99 9.03 [7.42, 10.99] ms, 5,964 [5,682, "
                      "6,261]/s; mps low pri=1 sm=75%: P99 4.79 [?, ?] ms, 5,426 [5,342, "
                      "5,512]/s): about 2 more rounds to tell."), s
    assert "cannot tell" not in s


def test_a_candidate_whose_mode_took_no_part_is_dropped_as_such_not_for_the_slo() -> None:
    """Issue 64: an XSched candidate in whose run XSched scheduled none of its copies is
    dropped as ``dropped-no-part``, naming them and why; one copy on another GPU taking
    part does not save it; a run whose every verdict is undecided (its evidence came too
    late: on a busy machine a 1 s phase's workloads exited before MPS's client list was
    read) counts as it ran."""
    from tests.unit.test_runs import _rate_run, _run
    from xwatch.core.engine.snapshot import PhaseSnapshot

    rng = random.Random(2)
    obj = Objective("high", Metric.parse("P50"), 100.0)

    def phase(st0: str, st1: str) -> PhaseSnapshot:
        ws = []
        for g in (0, 1):
            ws += [msgspec.structs.replace(_run(rng, 400, 1.0, 0.0), name=f"high@{g}"),
                   _rate_run(rng, 200, 1.0, name=f"low@{g}")]
        st = {"high@0": st0, "low@0": st0, "high@1": st1, "low@1": st1}
        xs = M.Xsched(root="/x", workloads={n: M.XschedWorkload(status=s)
                                             for n, s in st.items()})
        return PhaseSnapshot(0, "xsched-1", "xsched", "done", "", None, 10.0, True,
                             tuple(ws), xsched=xs)

    a, b = Candidate("a", XSCHED, {}), Candidate("b", XSCHED, {})
    p = phase("no-xqueue", "engaged")
    race.record_run(a, p, obj, ["low"], 0)
    race.record_run(b, p, obj, ["low"], 1)
    assert a.status == race.DROPPED_NO_PART and a.runs == 0
    assert a.reason.startswith("XSched took no part: high@0 had no XQueue"), a.reason
    assert b.status == race.SURVIVING and b.runs == 1
    c = Candidate("c", XSCHED, {})
    race.record_run(c, phase("pending", "pending"), obj, ["low"], 0)
    assert c.status == race.SURVIVING and c.runs == 1
    # the sentence when every candidate is out names those that took no part
    b.status = race.DROPPED_SLO
    adv = M.Advice(slo=M.Slo(workload="high", metric="P50", percentile=50.0, latency_ms=100.0),
                   candidates=race.as_records([a, b], None), runs=1, seconds=1.0,
                   budget_s=60.0, seed=0)
    assert race.sentence(adv).startswith(
        "No setting meets high P50 < 100 ms: every one was dropped or failed (a: took no part)")
