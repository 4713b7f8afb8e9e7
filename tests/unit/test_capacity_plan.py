"""``xwatch capacity``'s plan without running anything: what is refused before anything
starts (a closed loop, a command that does not honour XWATCH_RATE, runs too short to
bound the SLO at the lowest rate, a malformed --rates), the searches it makes, what a
command is given, what it prints from a record, and the snapshot's record read back
(an older snapshot has none)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT
from xwatch.core import model as M
from xwatch.core.analysis.capacity.lines import capacity_lines, toml_lines
from xwatch.core.engine.launch import RATE_ENV, build_launch
from xwatch.core.plans.capacity import make_run, parse_rates
from xwatch.core.plans.options import Backends, Options
from xwatch.errors import UsageError
from xwatch.scenario import parse_scenario


def _scen(high: dict[str, object], low: bool = True, duration: float = 10.0,
          slo: str = "P99") -> object:
    wls = [{"name": "high", "priority": "high", **high}]
    if low:
        wls.append({"name": "low", "priority": "low", "model": "resnet50"})
    return parse_scenario({"duration_s": duration, "workload": wls,
                           "slo": {"workload": "high", "percentile": float(slo[1:]),
                                   "latency_ms": 10}})


def _run(scen: object, **kw: object) -> object:
    return make_run(scen, Options(**kw), ["native"], {}, Backends(),  # type: ignore[arg-type]
                    say=lambda _: None)


def test_a_closed_loop_high_is_refused_naming_the_rate_to_set() -> None:
    with pytest.raises(UsageError) as e:
        _run(_scen({"model": "resnet18"}))
    assert e.value.title == "Closed loop has no capacity"
    assert "set rate = N" in str(e.value) and 'name = "high"' in str(e.value)


def test_a_scenario_without_an_objective_is_refused_naming_capacity_and_its_workload() -> None:
    """The how-to's own programs have no [slo]: the error named advise and a workload
    ``high`` they do not have; now the command and the scenario's top workload."""
    scen = parse_scenario({"name": "own", "duration_s": 10, "workload": [
        {"name": "infer", "priority": "high", "command": ["true"], "rate": 20,
         "honours_rate": True},
        {"name": "train", "priority": "low", "command": ["true"]}]})
    with pytest.raises(UsageError) as e:
        _run(scen)
    assert e.value.title == "No SLO"
    assert str(e.value).startswith("capacity needs an objective: the scenario own"), e.value
    assert "--slo infer.P99=10" in str(e.value)


def test_a_command_is_refused_unless_it_honours_xwatch_rate() -> None:
    with pytest.raises(UsageError) as e:
        _run(_scen({"command": ["true"], "rate": 50}))
    assert e.value.title == "Command without a rate"
    assert "XWATCH_RATE" in str(e.value) and "honours_rate = true" in str(e.value)
    run = _run(_scen({"command": ["true"], "rate": 50, "honours_rate": True}, duration=40))
    assert run.lo == 12.5 and run.hi == 800.0  # type: ignore[attr-defined]


def test_a_delayed_slo_workloads_runs_count_only_the_seconds_it_sends() -> None:
    """The how-to's ``infer`` starts 6 s into a run (``start_delay_s``): at 15 req/s a
    25 s run held 307 of its requests on this CPU, not 375, and its P99 had no upper
    bound, so that load could never be met. Refused before anything starts, naming
    the delay: 368 requests need 25 s of sending at 15 req/s, 31 s of run, 32 to spare
    a second."""
    def scen(delay: float) -> object:
        return parse_scenario({"name": "own", "duration_s": 25, "slo": {
            "workload": "infer", "percentile": 99, "latency_ms": 10}, "workload": [
            {"name": "infer", "priority": "high", "command": ["true"], "rate": 20,
             "honours_rate": True, "start_delay_s": delay},
            {"name": "train", "priority": "low", "command": ["true"]}]})

    assert _run(scen(0.0), rates="15:120").lo == 15.0  # type: ignore[attr-defined]
    with pytest.raises(UsageError) as e:
        _run(scen(6.0), rates="15:120")
    msg = str(e.value)
    assert e.value.title == "Runs too short to decide"
    assert "a 25 s run of infer (it starts 6 s in: its start_delay_s) gives about 285" \
        in msg, msg
    assert "--duration 32 or more" in msg and "--rates from 19.37" in msg, msg


def test_runs_too_short_for_the_percentile_at_the_lowest_rate_are_refused() -> None:
    # P99 needs 368 requests a run; 10 req/s x 10 s gives 100
    with pytest.raises(UsageError) as e:
        _run(_scen({"model": "resnet18", "rate": 40}), rates="10:200")
    msg = str(e.value)
    assert e.value.title == "Runs too short to decide"
    assert "--duration 38 or more" in msg and "--rates from 36.8" in msg, msg
    _run(_scen({"model": "resnet18", "rate": 40}, duration=40.0), rates="10:200")


def test_rates_must_be_a_range() -> None:
    for bad in ("10", "0:5", "9:3", "a:b", "5:inf"):
        with pytest.raises(UsageError, match="--rates"):
            parse_rates(bad, None)  # type: ignore[arg-type]
    assert parse_rates("5:80", None) == (5.0, 80.0)  # type: ignore[arg-type]


def test_the_searches_are_the_candidates_and_the_dedicated_one() -> None:
    run = _run(_scen({"model": "resnet18", "rate": 40}), rates="40:400")
    labels = [s.label for s in run.hunt.searches]  # type: ignore[attr-defined]
    assert labels == ["native", "dedicated"]
    alone = _run(_scen({"model": "resnet18", "rate": 40}, low=False), rates="40:400")
    assert [s.label for s in alone.hunt.searches] == ["dedicated"]  # type: ignore[attr-defined]
    assert not alone.hunt.needs_low_alone()  # type: ignore[attr-defined]


def test_a_command_gets_its_rate_in_xwatch_rate() -> None:
    sc = parse_scenario({"duration_s": 1, "workload": [
        {"name": "q", "priority": "high", "command": ["true"], "rate": 12.5,
         "honours_rate": True}]})
    spec = build_launch(sc.workloads[0], base_env={})
    assert spec.env_added[RATE_ENV] == "12.5"


def _record(status: str, met: float | None, failed: float | None) -> M.Capacity:
    est = M.Estimate(estimate=0.81, lo=0.74, hi=0.87)
    low = M.Estimate(estimate=0.62, lo=0.58, hi=0.66)
    tot = M.Estimate(estimate=1.43, lo=1.32, hi=1.53)
    loads = [M.CapacityLoad(rate=20.0, runs=2, verdict="failed",
                            slo_metric=M.Estimate(estimate=14.0, lo=12.5, hi=15.8))]
    return M.Capacity(
        slo=M.Slo(workload="chat", metric="P99", percentile=99, latency_ms=10),
        rates=[20.0, 320.0], low_workloads=["trainer"],
        low_alone=M.Estimate(estimate=7400.0, lo=7300.0, hi=7500.0),
        records=[M.CapacityRecord(candidate="mps low pri=1 sm=50%", mode="mps",
                                  settings={"low.mps.active_thread_percentage": 50},
                                  workload="chat", metric="P99", slo_ms=10, met=met,
                                  failed=failed, status=status, high_share=est,
                                  low_share=low, total=tot, runs=12, loads=loads),
                 M.CapacityRecord(candidate="dedicated", mode="native", dedicated=True,
                                  workload="chat", metric="P99", slo_ms=10, met=100.0,
                                  failed=108.0, status="decided", runs=10)],
        decided=status == "decided", final=True, rounds=6, runs=22, seconds=600.0,
        budget_s=1200.0, intervals="brackets ...")


def test_the_lines_end_with_the_table_the_consolidation_and_the_toml() -> None:
    lines = capacity_lines(_record("decided", 81.0, 88.0))
    text = "\n".join(lines)
    assert ("MPS at 50%: 0.81 [0.74, 0.87] of a dedicated GPU's chat capacity and 0.62 "
            "[0.58, 0.66] of the trainer's: 1.43 GPUs of work on one [1.32, 1.53]") in text
    assert "81-88 (9%)" in text
    assert toml_lines(_record("decided", 81.0, 88.0)) == [
        "# mps low pri=1 sm=50%: the highest rate that met the SLO with confidence; run it "
        "with: xwatch run SCENARIO --mode mps",
        '# in the [[workload]] table with name = "chat":', "rate = 81",
        '# in the [[workload]] table with name = "low":', "[workload.mps]",
        "active_thread_percentage = 50"]


def test_even_the_lowest_rate_missing_is_said_with_what_it_showed() -> None:
    rec = _record("below-range", None, 20.0)
    rec = M.Capacity(**{**{f: getattr(rec, f) for f in rec.__struct_fields__},
                        "records": [M.CapacityRecord(**{
                            **{f: getattr(rec.records[0], f)
                               for f in rec.records[0].__struct_fields__},
                            "reason": "even 20 req/s misses"}), rec.records[1]]})
    text = "\n".join(capacity_lines(rec))
    assert ("even 20 req/s misses: P99 14.00 [12.50, 15.80] ms at 20 req/s against 10 ms"
            in text), text


def test_loads_whose_runs_lie_far_apart_are_said_with_what_that_means() -> None:
    """A search whose runs of one load lay 46x apart (a queue that ran away in some, as
    on two H200s at 210 req/s) says so under the table; one without says nothing."""
    rec = _record("undecided", 188.0, 400.0)
    assert "ran away" not in "\n".join(capacity_lines(rec))
    first = M.CapacityRecord(**{**{f: getattr(rec.records[0], f)
                                   for f in rec.records[0].__struct_fields__},
                                "runaways": [[200.0, 7.0], [210.0, 45.9]]})
    rec = M.Capacity(**{**{f: getattr(rec, f) for f in rec.__struct_fields__},
                        "records": [first, rec.records[1]]})
    text = "\n".join(capacity_lines(rec))
    assert ("- mps low pri=1 sm=50%: runs of one load lie up to 46x apart at 200, 210 "
            "req/s (a queue that ran away in some)") in text, text
    assert "a verdict near these loads may be wrong" in text


def test_an_older_snapshot_has_no_capacity_and_a_new_one_keeps_it(tmp_path: Path) -> None:
    import msgspec

    from xwatch.core.export.snapshot import encode_document, load_snapshot, snapshot_document

    snap = load_snapshot(ROOT / "tests" / "data" / "snapshot_two_phases.json")
    assert snap.capacity is None  # written before capacity existed: read as none
    rec = _record("decided", 81.0, 88.0)
    p = tmp_path / "snapshot.json"
    p.write_bytes(encode_document(snapshot_document(msgspec.structs.replace(snap, capacity=rec))))
    assert json.loads(p.read_text())["capacity"]["records"][0]["met"] == 81.0
    assert load_snapshot(p).capacity == rec


def test_a_budget_shorter_than_one_run_is_refused() -> None:
    with pytest.raises(UsageError) as e:
        _run(_scen({"model": "resnet18", "rate": 40}, duration=120.0), budget_min=1.5)
    assert e.value.title == "Budget shorter than one run"
    assert "--budget 2 or more" in str(e.value) and "120 s" in str(e.value)


def test_the_first_round_runs_only_what_its_measured_time_fits() -> None:
    """Before any phase has run, a phase costs at least its measured time: 3 probes of
    60 s (native, dedicated, LOW alone) do not fit 2 minutes; the two most informative
    do (the budget once let a first round of three 120 s phases run 5 minutes on 2)."""
    said: list[str] = []
    run = make_run(_scen({"model": "resnet18", "rate": 40}, duration=60.0),  # type: ignore[arg-type]
                   Options(budget_min=2.0), ["native"], {}, Backends(), say=said.append)
    phases = run.round()
    assert len(phases) == 2
    assert any("a partial first round: 2 of 3 runs fit" in s for s in said), said
    whole = make_run(_scen({"model": "resnet18", "rate": 40}, duration=60.0),  # type: ignore[arg-type]
                     Options(budget_min=3.0), ["native"], {}, Backends(), say=said.append)
    assert len(whole.round()) == 3
