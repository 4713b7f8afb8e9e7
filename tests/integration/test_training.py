"""Training as a workload (``train = true``): the built step really trains (the
loss on the fixed random batch falls), BERT heads compute their
own loss (classification, QA), AMP autocasts, and a training workload runs end to end on the CPU as a
closed loop whose samples/s is batch x iterations/s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_xwatch
from xwatch.core.engine.worker.config import WorkerConfig
from xwatch.core.engine.worker.models import build
from xwatch.errors import ScenarioError
from xwatch.scenario import parse_scenario

torch = pytest.importorskip("torch")


@pytest.mark.slow
@pytest.mark.parametrize("model,extra", [("resnet18", {"input": (3, 32, 32)}),
                                         ("bert-tiny", {"task": "classification",
                                                        "seq_len": 16}),
                                         ("bert-tiny", {"task": "qa", "seq_len": 16,
                                                        "amp": "bf16"})])
def test_the_step_trains(model: str, extra: dict[str, object]) -> None:
    torch.set_num_threads(1)
    cfg = WorkerConfig(name="t", model=model, batch=4, device="cpu", train=True,
                       **extra)  # type: ignore[arg-type]
    step, _, info = build(cfg)
    assert info["train"] is True
    losses = [float(step()) for _ in range(8)]
    assert all(x == x for x in losses)
    assert min(losses[-3:]) < losses[0], losses  # it fits the fixed random batch


def test_train_keys_are_validated() -> None:
    base = {"name": "t", "priority": "low", "model": "bert-tiny"}
    w = parse_scenario({"workload": [{**base, "task": "classification", "train": True,
                                      "amp": "bf16"}]}).workloads[0]
    assert w.train and w.amp == "bf16" and w.describe() == "bert-tiny b1 train closed"
    with pytest.raises(ScenarioError, match="training needs a loss"):
        parse_scenario({"workload": [{**base, "task": "base", "train": True}]})
    with pytest.raises(ScenarioError, match="amp autocasts fp32 weights"):
        parse_scenario({"workload": [{**base, "dtype": "bf16", "amp": "fp16"}]})
    with pytest.raises(ScenarioError, match="true or false"):
        parse_scenario({"workload": [{**base, "train": "yes"}]})


@pytest.mark.slow
def test_a_training_workload_runs_headless(scenario_file, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = scenario_file("""
        name = "train"
        duration_s = 3
        [[workload]]
        name = "trainer"
        priority = "low"
        model = "resnet18"
        input = [3, 32, 32]
        batch = 4
        train = true
        warmup = 1
        threads = 1
    """)
    r = run_xwatch("run", str(f), "--headless", "--telemetry", "off", "--export",
                   str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    w = json.loads((tmp_path / "out" / "snapshot.json").read_text())["phases"][0][
        "workloads"]["trainer"]
    assert w["hello"]["train"] is True and w["count"] > 3
    assert w["samples"] == 4 * w["count"]
    assert abs(w["throughput"]["samples_per_s"] - 4 * w["achieved_rate"]) < 1e-6 + \
        0.01 * w["throughput"]["samples_per_s"]
