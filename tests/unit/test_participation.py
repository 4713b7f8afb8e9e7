"""Who took part in a step's mechanism (``analysis.participation``) and what the answer
says when some or none did (issue 64: no verdict on a mechanism that took no part)."""

from __future__ import annotations

import math
import random

import msgspec
import pytest

from tests.helpers.fixture_snapshot import latency_hist, workload_snapshot
from xwatch.core import model as M
from xwatch.core.analysis.answer.stored import (
    answer_lines,
    gate,
    session_answer,
    unjudged,
    with_answer,
)
from xwatch.core.analysis.participation import NoPart, Participation, participation
from xwatch.core.analysis.verdict import answer
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import Moments
from xwatch.scenario import parse_scenario

SCEN = parse_scenario({"name": "t", "duration_s": 10, "workload": [
    {"name": "infer", "priority": "high", "model": "resnet18", "rate": 10,
     "stream": "default"},
    {"name": "train", "priority": "low", "model": "resnet18"}]}, "t")


def _wl(rng: random.Random, name: str, prio: int, shift: float = 0.0) -> WorkloadSnapshot:
    m = Moments()
    for _ in range(300):
        m.add(5.0 * math.exp(rng.gauss(0.0, 0.2)) + shift)
    w = workload_snapshot(name, prio, m.summary(), 300, 100.0 if prio == 0 else 0.0)
    return msgspec.structs.replace(w, latency_hist=latency_hist(m))  # type: ignore[type-var,return-value]


def _xsched(statuses: dict[str, str], version: str = "1.2.0") -> M.Xsched:
    return M.Xsched(root="/x", version=version,
                    workloads={n: M.XschedWorkload(status=s) for n, s in statuses.items()})


def _mps(statuses: dict[str, str]) -> M.Mps:
    return M.Mps(tool="t", pipe_dir="p", log_dir="l",
                 workloads={n: M.MpsWorkload(status=s) for n, s in statuses.items()})


def _phase(i: int, mode: str, rng: random.Random, repeat: int, shift: float = 0.0,
           **kw: object) -> PhaseSnapshot:
    ws = (_wl(rng, "infer", 1, shift), _wl(rng, "train", 0))
    return PhaseSnapshot(i, f"{mode}-{repeat}", mode, "done", "", None, 10.0, True, ws,
                         repeat=repeat, step=mode, **kw)  # type: ignore[arg-type]


def _session(mode: str, runs: int = 3, shift: float = 3.0, **kw: object) -> SessionSnapshot:
    rng = random.Random(5)
    phases: list[PhaseSnapshot] = []
    for r in range(1, runs + 1):
        phases.append(_phase(len(phases), "native", rng, r))
        phases.append(_phase(len(phases), mode, rng, r, shift, **kw))
    return SessionSnapshot(SCEN, tuple(phases), (), 0.0, 10.0)


@pytest.mark.parametrize("status,words", [
    ("shim-not-loaded", "shim not loaded"),
    ("no-xqueue", "had no XQueue (the shim never saw its GPU work)"),
    ("app-managed", "app-managed scheduler"),
    ("local", "local scheduler"),
    ("not-scheduled", "not scheduled (its XQueues were never seen ready"),
])
def test_every_xsched_reason_is_named(status: str, words: str) -> None:
    rng = random.Random(1)
    p = _phase(0, "xsched", rng, 1, xsched=_xsched({"infer": "engaged", "train": status}))
    part = participation([p], SCEN)
    assert part.took == ("infer",)
    assert part.absent == (NoPart("train", status, part.absent[0].reason),)
    assert words in part.absent[0].text()


def test_the_default_stream_is_named_where_the_evidence_says_so() -> None:
    rng = random.Random(1)
    p = _phase(0, "xsched", rng, 1, xsched=_xsched({"infer": "not-scheduled",
                                                     "train": "no-xqueue"}))
    part = participation([p], SCEN)
    assert not part.took_part
    assert part.no_verdict() == (
        "no verdict: XSched took no part: infer not scheduled (its work ran on the default "
        "stream, which XSched 1.2.0 does not schedule), train had no XQueue (the shim never "
        "saw its GPU work)")


def test_a_program_of_ones_own_that_says_default_stream_is_named_so() -> None:
    """A command workload has no ``stream`` key: its hello's ``"stream": "default"`` (as
    the how-to's infer.py --default-stream says) is the evidence; without it, the
    general reason."""
    own = parse_scenario({"name": "own", "duration_s": 10, "workload": [
        {"name": "infer", "priority": "high", "command": ["x"], "rate": 10},
        {"name": "train", "priority": "low", "command": ["y"]}]}, "own")
    rng = random.Random(1)
    xs = _xsched({"infer": "not-scheduled", "train": "engaged"})
    p = _phase(0, "xsched", rng, 1, xsched=xs)
    assert "bypassed XSched" in participation([p], own).absent[0].reason
    ws = tuple(msgspec.structs.replace(w, hello={"stream": "default"}) if w.name == "infer"
               else w for w in p.workloads)
    part = participation([msgspec.structs.replace(p, workloads=ws)], own)
    assert part.absent[0].reason.startswith("not scheduled (its work ran on the default stream")


def test_native_takes_part_by_definition() -> None:
    rng = random.Random(1)
    part = participation([_phase(0, "native", rng, 1)], SCEN)
    assert part.took_part and part.whole and part.line() == ""


def test_neither_took_part_no_effect_verdict_anywhere() -> None:
    snap = _session("xsched", xsched=_xsched({"infer": "shim-not-loaded",
                                               "train": "shim-not-loaded"}))
    (a,) = answer(snap)
    assert not a.took_part and all(c.way == 0 for c in a.changes)  # 3 ms: beyond noise
    line = answer_lines(with_answer(snap))[0]
    assert "no verdict: XSched took no part: infer shim not loaded" in line
    assert "within noise" not in line and "slower" not in line
    recs = session_answer(snap).records
    assert recs and all(r.took_part is False and r.way == "within" for r in recs)
    assert [n.workload for n in recs[0].no_part] == ["infer", "train"]
    assert recs[0].no_part[0].verdict == "shim-not-loaded"
    assert not gate(with_answer(snap), "slower")
    assert unjudged(with_answer(snap)) == ["XSched: not judged: " + a.part.no_verdict()[len("no verdict: "):]]


def test_high_only_keeps_the_verdict_and_says_what_it_measures() -> None:
    snap = _session("xsched", xsched=_xsched({"infer": "engaged", "train": "no-xqueue"}))
    (a,) = answer(snap)
    assert a.took_part
    line = answer_lines(with_answer(snap))[0]
    assert ("only infer was scheduled by XSched: the change measures XSched's effect on "
            "infer alone; train ran unscheduled beside it (train had no XQueue") in line
    assert "infer P99 +" in line and "slower" in line  # the verdict kept
    assert gate(with_answer(snap), "slower") and not unjudged(with_answer(snap))
    rec = session_answer(snap).records[0]
    assert rec.took_part is True and rec.scope and rec.no_part[0].workload == "train"


def test_low_only_says_so() -> None:
    snap = _session("xsched", xsched=_xsched({"infer": "app-managed", "train": "engaged"}))
    line = answer_lines(with_answer(snap))[0]
    assert "only train was scheduled by XSched: the change measures XSched's effect on " \
        "train alone; infer ran unscheduled beside it (infer app-managed scheduler" in line


def test_both_took_part_the_answer_is_as_before() -> None:
    snap = _session("xsched", xsched=_xsched({"infer": "engaged", "train": "engaged"}))
    (a,) = answer(snap)
    assert a.part.whole and a.part.line() == ""
    assert answer_lines(with_answer(snap))[0].startswith("XSched vs native (3 runs each, paired): infer P50")
    rec = session_answer(snap).records[0]
    assert rec.no_part == [] and rec.scope is msgspec.UNSET


def test_mps_non_client() -> None:
    snap = _session("mps", mps=_mps({"infer": "not-in-mps", "train": "not-in-mps"}))
    line = answer_lines(with_answer(snap))[0]
    assert "no verdict: MPS took no part: infer not a client of the MPS daemon" in line
    part = _session("mps", mps=_mps({"infer": "in-mps", "train": "not-in-mps"}))
    assert "only infer was a client of MPS" in answer_lines(with_answer(part))[0]


def test_undecided_claims_no_effect() -> None:
    snap = _session("xsched", xsched=_xsched({"infer": "pending", "train": "pending"}))
    (a,) = answer(snap)
    assert not a.took_part
    assert "no verdict: XSched was not proven to take part: infer undecided" in a.sentence()
    mps = _session("mps", mps=_mps({"infer": "in-mps", "train": "unverified"}))
    assert "train undecided (its client list could not be read)" in answer_lines(with_answer(mps))[0]
    assert "train may have run outside MPS" in answer_lines(with_answer(mps))[0]


def test_a_workload_out_in_one_run_of_several_is_out() -> None:
    rng = random.Random(2)
    ok = _xsched({"infer": "engaged", "train": "engaged"})
    out = _xsched({"infer": "engaged", "train": "no-xqueue"})
    ps = [_phase(0, "xsched", rng, 1, xsched=ok), _phase(1, "xsched", rng, 2, xsched=out)]
    part = participation(ps, SCEN)
    assert part.took == ("infer",) and part.absent[0].text() == \
        "train had no XQueue (the shim never saw its GPU work) in 1 of 2 runs"


def test_a_run_whose_evidence_came_late_takes_the_other_runs_word() -> None:
    rng = random.Random(4)
    ok = _mps({"infer": "in-mps", "train": "in-mps"})
    late = _mps({"infer": "unverified", "train": "unverified"})
    ps = [_phase(0, "mps", rng, 1, mps=ok), _phase(1, "mps", rng, 2, mps=late)]
    assert participation(ps, SCEN).whole
    out = _mps({"infer": "in-mps", "train": "not-in-mps"})
    ps.append(_phase(2, "mps", rng, 3, mps=out))
    part = participation(ps, SCEN)
    assert part.took == ("infer",) and part.absent[0].text() == \
        "train not a client of the MPS daemon (CUDA ran it outside MPS) in 1 of 3 runs"


def test_a_split_phase_copy_in_native_takes_part() -> None:
    rng = random.Random(3)
    p = _phase(0, "xsched", rng, 1, xsched=_xsched({"infer": "engaged"}),
               copy_modes={"infer": "xsched", "train": "native"})
    assert participation([p], SCEN).whole


def test_a_snapshot_without_the_evidence_says_so_and_keeps_its_verdicts() -> None:
    snap = _session("xsched")
    (a,) = answer(snap)
    assert a.took_part and "XSched's part not recorded" in a.sentence()
    assert gate(with_answer(snap), "slower")


def test_a_sweep_setting_that_took_no_part_is_on_no_frontier() -> None:
    from pathlib import Path

    from xwatch.core.export.sections.answers import frontier_rows
    from xwatch.core.export.snapshot import load_snapshot

    root = Path(__file__).resolve().parents[2]
    snap = load_snapshot(root / "data" / "results" / "h100-2026-11-22" / "sweep")
    rows, _ = frontier_rows(snap)
    assert rows[1][-1] == "yes"  # xsched-1, threshold 1: on the frontier as recorded
    p = snap.phases[1]
    assert p.xsched is not None
    xs = msgspec.structs.replace(p.xsched, workloads={
        n: msgspec.structs.replace(w, status="no-xqueue") for n, w in p.xsched.workloads.items()})
    out = msgspec.structs.replace(snap, phases=(snap.phases[0],
                                                msgspec.structs.replace(p, xsched=xs),
                                                *snap.phases[2:]))
    rows, note = frontier_rows(out)
    assert rows[1][-1] == "no (its mode took no part)"
    assert "no verdict: XSched took no part: high had no XQueue" in rows[1][6]
    assert "low.threshold=1, low.batch_size=1: no verdict: XSched took no part" in note


@pytest.mark.parametrize(("mode", "took", "want"), [
    ("xsched", ("train@0", "train@1"), "only train@0 and train@1 were scheduled by XSched: "),
    ("xsched", ("a", "b", "c"), "only a, b and c were scheduled by XSched: "),
    ("mps", ("train@0", "train@1"), "only train@0 and train@1 were clients of MPS: "),
    ("xsched", ("train",), "only train was scheduled by XSched: "),
])
def test_the_scope_agrees_with_how_many_took_part(mode: str, took: tuple[str, ...],
                                                  want: str) -> None:
    """Copies on several GPUs: "train@0 and train@1 were scheduled", not "was"."""
    part = Participation(mode, took, (NoPart("infer@0", "not-scheduled", "not scheduled"),))
    assert part.scope().startswith(want), part.scope()
