"""The workloads people co-locate now, on the CPU: each built-in shape (harvest, llm,
multi-model) loads, and its CPU-sized variant runs headless with real torch workers:
a training loop as LOW, an LLM decoder reporting ttft/tpot/itl per request with an
SLO on tpot, three models at three priorities."""

from __future__ import annotations

import dataclasses
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


def test_decode_applies_to_llms_and_a_graph_runs_in_the_weights_dtype() -> None:
    base = {"name": "c", "priority": "high"}
    w = parse_scenario({"workload": [{**base, "model": "llama-tiny", "decode": "graphed",
                                      "dtype": "bf16"}]}).workloads[0]
    assert w.decode == "graphed"
    with pytest.raises(ScenarioError, match="'decode' applies to the LLM decoders"):
        parse_scenario({"workload": [{**base, "model": "resnet18", "decode": "graphed"}]})
    with pytest.raises(ScenarioError, match="instead of amp"):
        parse_scenario({"workload": [{**base, "model": "llama-tiny", "decode": "graphed",
                                      "amp": "bf16"}]})
    with pytest.raises(ScenarioError, match="must be one of 'eager', 'graphed'"):
        parse_scenario({"workload": [{**base, "model": "llama-tiny", "decode": "static"}]})


def test_the_static_cache_decode_gives_the_eager_tokens() -> None:
    """The graphed decode replays the static-cache step; run without capture (the CPU
    has no graphs) that step must decode exactly the tokens the eager, growing-cache
    path does, request after request (the cache is reset between them)."""
    import torch

    from xwatch.core.engine.worker.config import WorkerConfig
    from xwatch.core.engine.worker.models import _llm

    cfg = WorkerConfig(name="c", model="llama-tiny", prompt_len=16, new_tokens=12,
                       device="cpu", seed=3)
    got = []
    for static in (False, True):
        torch.manual_seed(3)  # the same random weights and prompt for both
        forward, _, info = _llm(torch, cfg, torch.device("cpu"), torch.float32, {},
                                keep_tokens=True, static=static)
        with torch.inference_mode():
            first, second = forward(), forward()
        assert len(first) == len(first.tokens or []) == 12
        assert info["decode"] == "eager" and info["decoder"]
        got.append([int(t) for t in first.tokens or []])
        assert [int(t) for t in second.tokens or []] == got[-1]
    assert got[0] == got[1]
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        _llm(torch, dataclasses.replace(cfg, decode="graphed"), torch.device("cpu"),
             torch.float32, {})


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
