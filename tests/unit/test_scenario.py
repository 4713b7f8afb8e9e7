"""Scenario validation: shipped scenarios, every error path, the manual's key table."""

from __future__ import annotations

from pathlib import Path

import pytest

from xwatch.errors import ScenarioError, UsageError
from xwatch.scenario import builtin_scenarios, keys_reference_markdown, load_scenario

DATA = Path(__file__).resolve().parent.parent / "data" / "scenarios"
ROOT = Path(__file__).resolve().parents[2]


def test_builtins_load_and_match_the_seed() -> None:
    names = set(builtin_scenarios())
    assert {"demo", "standard", "intensive", "bert"} <= names
    e3 = load_scenario("intensive")
    hi, lo = e3.workload("high"), e3.workload("low")
    assert (e3.duration_s, hi.model, hi.batch, hi.rate, hi.arrival) == (180, "resnet18", 1, 20,
                                                                         "fixed")
    assert (lo.model, lo.batch, lo.rate, lo.start_delay_s) == ("resnet50", 1024, None, 1)
    e2 = load_scenario("standard")
    assert (e2.duration_s, e2.workload("high").rate, e2.workload("low").batch) == (60, 10, 8)
    bert = load_scenario("bert")
    assert [w.model for w in bert.workloads] == ["bert-base-uncased"] * 3
    assert all(w.requests == 20 and w.task == "qa" for w in bert.workloads)
    assert [w.priority for w in bert.workloads] == ["high", "low", "low"]
    demo = load_scenario("demo")
    assert all(w.input[1] <= 64 for w in demo.workloads)  # small enough for a 2-core CPU


@pytest.mark.parametrize(("fname", "must_contain"), [
    ("bad_unknown_top.toml", ["duraton_s", "unknown key", "duration_s", "description"]),
    ("bad_unknown_workload_key.toml", ["workload[0] (a).batchsize", "batch", "allowed keys"]),
    ("bad_dtype.toml", ["dtype", "'fp64'", "'fp32', 'fp16', 'bf16'"]),
    ("bad_type_rate.toml", ["rate", "expected a finite number", "str"]),
    ("bad_both.toml", ["exactly one of 'model'", "'command'"]),
    ("bad_neither.toml", ["exactly one of 'model'"]),
    ("bad_duplicate.toml", ["duplicate workload name 'a'"]),
    ("bad_arrival.toml", ["'arrival' needs 'rate'"]),
    ("bad_regex.toml", ["regex", "(?P<latency_ms>"]),
    ("bad_xsched_batch.toml", ["xsched.batch_size", "must not exceed threshold 2"]),
    ("bad_slo.toml", ["slo.workload", "'nope'", "workloads: a"]),
    ("bad_toml.toml", ["not valid TOML"]),
    ("bad_priority.toml", ["priority", "'high', 'low' or an integer"]),
    ("bad_model_key_on_command.toml", ["dtype", "does not apply to a external command",
                                       "command"]),
    ("bad_policy.toml", ["xsched.policy", "'FIFO'", "'HPF'"]),
    ("bad_no_workloads.toml", ["at least one [[workload]]"]),
    ("bad_bert.toml", ["bert-huge", "bert-base-uncased"]),
    # a typo is named first, with a suggestion, not reported as a missing model
    ("bad_typo_model.toml", ["workload[0] (a).modle", "unknown key 'modle'",
                             "did you mean 'model'?"]),
    ("bad_typo_rate.toml", ["workload[0] (a).ratee", "did you mean 'rate'?", "allowed keys"]),
    ("bad_stdout.toml", ["stdout", "'tty'", "'pty', 'pipe'"]),
    ("bad_unknown_top.toml", ["did you mean 'duration_s'?"]),
])
def test_bad_scenarios_name_file_key_and_allowed(fname: str, must_contain: list[str]) -> None:
    with pytest.raises(ScenarioError) as ei:
        load_scenario(str(DATA / fname))
    msg = str(ei.value)
    assert str(DATA / fname) in msg  # the file
    for part in must_contain:
        assert part in msg, msg
    assert ei.value.title


def test_missing_file_and_unknown_name() -> None:
    with pytest.raises(ScenarioError, match="no such scenario file"):
        load_scenario("/nonexistent/x.toml")
    with pytest.raises(ScenarioError, match="neither a built-in scenario"):
        load_scenario("nosuchscenario")


def test_overrides_and_priority_numbers() -> None:
    s = load_scenario("intensive").with_overrides(duration_s=5, device="cpu")
    assert s.duration_s == 5 and all(w.device == "cpu" for w in s.workloads)
    assert s.workload("high").priority_value == 1 and s.workload("low").priority_value == 0
    with pytest.raises(UsageError, match="--device 'tpu' must be"):
        s.with_overrides(device="tpu")


def test_command_workload_defaults_cwd_to_scenario_folder(tmp_path: Path) -> None:
    f = tmp_path / "ext.toml"
    f.write_text('[[workload]]\nname="e"\npriority=3\ncommand=["./app","-n","3"]\n'
                 "regex='completed in (?P<latency_ms>[0-9.]+) ms'\n")
    w = load_scenario(str(f)).workload("e")
    assert w.cwd == str(tmp_path) and w.command == ("./app", "-n", "3") and w.priority_value == 3


def test_python_in_a_command_is_xwatchs_own_interpreter(tmp_path: Path) -> None:
    import sys

    from xwatch.core.engine.launch import build_launch

    f = tmp_path / "own.toml"
    f.write_text('[[workload]]\nname="e"\npriority="high"\ncommand=["{python}","infer.py"]\n')
    spec = build_launch(load_scenario(str(f)).workload("e"), base_env={})
    assert spec.argv == (sys.executable, "infer.py") and spec.cwd == str(tmp_path)


def test_the_manuals_key_reference_is_generated_from_the_code() -> None:
    page = (ROOT / "docs" / "scenarios.md").read_text()
    assert keys_reference_markdown().strip() in page, \
        "docs/scenarios.md key table is stale: python -m tools.docs rewrites it"


def test_typo_never_reported_as_missing_model() -> None:
    with pytest.raises(ScenarioError) as ei:
        load_scenario(str(DATA / "bad_typo_model.toml"))
    assert "exactly one of" not in str(ei.value)


def test_stdout_mode_defaults() -> None:
    from xwatch.scenario import parse_scenario

    s = parse_scenario({"workload": [
        {"name": "r", "priority": "high", "command": ["x"], "regex": "(?P<latency_ms>\\d+)"},
        {"name": "p", "priority": "low", "command": ["x"]},
        {"name": "q", "priority": "low", "command": ["x"], "regex": "(?P<latency_ms>\\d+)",
         "stdout": "pipe"},
        {"name": "m", "priority": "low", "model": "resnet18"}]})
    assert [w.stdout_mode for w in s.workloads] == ["pty", "pipe", "pipe", "pipe"]


def test_gpus_replicate_every_workload_pinned_and_round_trip() -> None:
    from xwatch.scenario import parse_gpus, parse_scenario

    base = load_scenario("intensive")
    s = base.with_overrides(gpus=(0, 1))
    assert [w.name for w in s.workloads] == ["high@0", "low@0", "high@1", "low@1"]
    h1 = s.workload("high@1")
    assert h1.gpu == 1 and h1.base_name == "high"
    assert h1.env["CUDA_VISIBLE_DEVICES"] == "1" and h1.env["HIP_VISIBLE_DEVICES"] == "1"
    assert h1.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert h1.rate == base.workload("high").rate and h1.xsched == base.workload("high").xsched
    # recorded as written; loading replicates again (snapshots)
    d = s.to_dict()
    assert d["gpus"] == [0, 1] and [w["name"] for w in d["workloads"]] == ["high", "low"]
    # --gpus replaces the scenario's list; () undoes it
    s2 = s.with_overrides(gpus=(2,))
    assert [w.name for w in s2.workloads] == ["high@2", "low@2"]
    assert [w.name for w in s.with_overrides(gpus=()).workloads] == ["high", "low"]
    assert parse_gpus("0, 3") == (0, 3)
    with pytest.raises(UsageError, match="--gpus"):
        parse_gpus("0,0")
    with pytest.raises(UsageError, match="--gpus"):
        parse_gpus("a,b")
    with pytest.raises(ScenarioError, match="gpus"):
        parse_scenario({"gpus": [0, "x"], "workload": [
            {"name": "a", "priority": 1, "command": ["true"]}]}, "f.toml")
    scen = parse_scenario({"gpus": [1, 0], "workload": [
        {"name": "a", "priority": 1, "command": ["true"]}]}, "f.toml")
    assert [w.name for w in scen.workloads] == ["a@1", "a@0"]


def test_each_mode_table_fills_the_typed_field_of_its_name() -> None:
    """The loader fills ``Scenario``'s and ``Workload``'s field of each mode table's name
    (``ModeTable``): a table declared without its field, or with a default other than its
    empty table's settings, is caught here rather than by a scenario that sets it."""
    import dataclasses

    from xwatch.scenario import MODE_TOP_TABLES, WORKLOAD_MODE_TABLES, Scenario, Workload

    for cls, tables in ((Scenario, MODE_TOP_TABLES), (Workload, WORKLOAD_MODE_TABLES)):
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for t in tables:
            f = fields[t.name]
            default = f.default_factory() if callable(f.default_factory) else f.default
            assert default == t.settings(), (cls.__name__, t.name)
            assert {k.name for k in t.keys} <= {g.name for g in dataclasses.fields(default)}
