"""A server workload end to end: xwatch starts the (fake or real) server, its load
generator streams requests, and the named metrics arrive as the built-in decoder's do."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from tests.conftest import PY, run_xwatch
from tests.helpers.serving import config, fake_server, free_port, run_loadgen, write_scenario


def test_metrics_follow_vllms_definitions_against_a_known_server() -> None:
    """The fake server waits 40 ms before the first token and 10 ms between tokens:
    TTFT >= 40 ms from the scheduled send, ITL ~10 ms, TPOT = (e2e - TTFT)/(n - 1)."""
    port = free_port()
    r = run_loadgen(config(port, "--first-ms", "40", "--token-ms", "10", "--no-done",
                           rate=10.0, requests=12, new_tokens=6))
    assert r.rc == 0, r.stderr
    reqs = r.requests
    assert len(reqs) == 12 and [e["seq"] for e in sorted(reqs, key=lambda e: e["seq"])] == \
        list(range(1, 13))
    for e in reqs:
        assert e["output_tokens"] == 6 and len(e["itl_ms"]) == 5
        assert 40 <= e["ttft_ms"] < e["latency_ms"]
        assert e["tpot_ms"] == pytest.approx((e["latency_ms"] - e["ttft_ms"]) / 5, abs=0.01)
        assert e["latency_ms"] >= e["service_ms"] and e["sched_delay_ms"] >= 0
    assert 9.0 <= statistics.median(x for e in reqs for x in e["itl_ms"]) < 20
    assert r.of("bye")[0]["output_tokens"] == 72 and r.of("ready")


def test_a_stop_ends_the_generator_and_the_server_cleanly() -> None:
    port = free_port()
    r = run_loadgen(config(port, rate=20.0), stop_after_s=3.0)
    assert r.rc == 0, r.stderr
    assert r.of("bye") and len(r.requests) > 20
    assert all(e.get("ok") is not False for e in r.requests)  # a stop is no error


def test_xwatch_runs_a_server_beside_a_low_workload(tmp_path: Path) -> None:
    port = free_port()
    scen = write_scenario(tmp_path, fake_server(port), port, duration=3)
    out = run_xwatch("run", str(scen), "--headless", "--telemetry", "off",
                     "--export", str(tmp_path / "out"))
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((tmp_path / "out" / "snapshot.json").read_text())
    chat = doc["phases"][0]["workloads"]["chat"]
    assert chat["count"] >= 8 and chat["errors"] == 0  # (the command LOW is not gated)
    assert {"ttft_ms", "tpot_ms", "itl_ms"} <= set(chat["metrics"])


@pytest.mark.slow
def test_the_real_transformers_serve_with_a_random_model(tmp_path: Path) -> None:
    """``transformers serve`` (its serving extras) on the CPU, the built-in random model."""
    pytest.importorskip("fastapi")  # the test extra installs them (pyproject)
    pytest.importorskip("uvicorn")
    port = free_port()
    server = (PY, "-m", "xwatch.core.engine.serve.localmodel", "serve", "tiny",
              "--port", str(port), "--device", "cpu")
    r = run_loadgen(config(port, rate=4.0, requests=8, warmup=1, ready_timeout_s=120,
                           server=server), timeout=180)
    assert r.rc == 0, r.stderr[-3000:]
    assert len(r.requests) == 8 and all(e.get("ok") is not False for e in r.requests)
    assert all(e["output_tokens"] == 8 and e["ttft_ms"] > 0 for e in r.requests)
