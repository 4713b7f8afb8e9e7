"""The workloads people co-locate now, on the CPU: each built-in shape (harvest, llm,
multi-model) loads, and its CPU-sized variant runs headless with real torch workers:
a training loop as LOW, an LLM decoder reporting ttft/tpot/itl per request with an
SLO on tpot, three models at three priorities."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import DATA, run_xwatch
from xwatch.errors import ScenarioError
from xwatch.scenario import load_scenario, parse_scenario


@pytest.mark.parametrize("name", ["harvest", "llm", "multi-model"])
def test_the_built_in_shapes_load(name: str) -> None:
    s = load_scenario(name)
    assert s.slo is not None
    if name == "llm":
        assert s.slo.metric == "tpot_ms" and s.workload("chat").model == "llama-1b"
    if name == "multi-model":
        assert sorted(w.priority_value for w in s.workloads) == [0, 1, 2]
    if name != "multi-model":
        assert s.workload("trainer").train


def test_an_llm_decoder_cannot_train_and_unknown_llms_are_named() -> None:
    base = {"name": "c", "priority": "high"}
    with pytest.raises(ScenarioError, match="LLM decoders serve"):
        parse_scenario({"workload": [{**base, "model": "llama-tiny", "train": True}]})
    with pytest.raises(ScenarioError, match="llama-tiny, llama-1b, llama-7b"):
        parse_scenario({"workload": [{**base, "model": "llama-70b"}]})


@pytest.mark.slow
@pytest.mark.parametrize("name", ["harvest-cpu", "llm-cpu", "multi-model-cpu"])
def test_the_cpu_variants_run(name: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run_xwatch("run", str(DATA / "scenarios" / f"{name}.toml"), "--headless",
                   "--telemetry", "off", "--export", str(out), timeout=200)
    assert r.returncode == 0, r.stdout + r.stderr
    ws = json.loads((out / "snapshot.json").read_text())["phases"][0]["workloads"]
    assert all(w["count"] > 0 for w in ws.values()), {k: w["count"] for k, w in ws.items()}
    if name == "llm-cpu":
        chat = ws["chat"]
        m = chat["metrics"]
        assert m["itl_ms"]["count"] == 7 * chat["count"] == 7 * m["tpot_ms"]["count"]
        # the first token comes before the last: TTFT under the request latency
        assert m["ttft_ms"]["summary"]["p50"] < chat["latency_ms"]["p50"]
        assert chat["goodput"] is not None
        assert "chat tpot_ms (n=" in r.stdout
    if name != "multi-model-cpu":
        assert ws["trainer"]["hello"]["train"] is True
