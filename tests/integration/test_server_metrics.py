"""The server's own view end to end: the load generator scrapes the fake server's
``/metrics`` (vLLM's names, a TTFT histogram that observes exactly ``--first-ms``),
xwatch keeps the phase's view in the snapshot and prints it beside the client's TTFT;
a server without metrics is "not exported"; and the real llama-server where one is
built (``XWATCH_LLAMA_SERVER`` and ``XWATCH_LLAMA_CPP``, docs/serving.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import PY, run_xwatch
from tests.helpers.serving import config, fake_server, free_port, gone, run_loadgen, write_scenario


def test_the_generator_scrapes_the_servers_metrics() -> None:
    """50 ms to the first token, observed as 0.05 s in vLLM's (0.04, 0.06] bucket: P50
    is 50 ms and P99 59.8 ms by Prometheus' interpolation, the mean 50 ms; the client's
    TTFT is longer (it counts from the scheduled send)."""
    port = free_port()
    r = run_loadgen(config(port, "--metrics", "vllm", "--first-ms", "50", "--token-ms", "5",
                           rate=10.0, requests=25, new_tokens=4), timeout=60)
    assert r.rc == 0, r.stderr
    views = r.of("server")
    assert len(views) >= 2, r.stderr  # one a second over the ~2.5 s of requests
    v = views[-1]
    assert v["exported"] and v["engine"] == "vllm" and v["scrapes"] == len(views) + 1
    t = v["ttft"]
    assert 0 < t["count"] <= 25
    assert (t["p50_ms"], t["p99_ms"], t["mean_ms"]) == (50.0, 59.8, 50.0)
    assert v["running"]["metric"] == "vllm:num_requests_running"
    assert v["generation_tokens_per_s"] > 0
    assert min(e["ttft_ms"] for e in r.requests) >= 50


def test_xwatch_shows_the_servers_view_and_says_not_exported(tmp_path: Path) -> None:
    port = free_port()
    scen = write_scenario(tmp_path, fake_server(port, "--metrics", "vllm", "--first-ms", "30"),
                          port, duration=3, low=False)
    out = run_xwatch("run", str(scen), "--headless", "--telemetry", "off",
                     "--export", str(tmp_path / "out"))
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((tmp_path / "out" / "snapshot.json").read_text())
    server = doc["phases"][0]["workloads"]["chat"]["server"]
    assert server["engine"] == "vllm" and server["ttft"]["p50_ms"] == 30.0  # (0.02, 0.04]
    assert "chat: the server's own metrics (vllm /metrics, " in out.stdout
    assert "TTFT P50 30.0 / P99 39.8 ms over" in out.stdout
    assert "Server-side: " in (tmp_path / "out" / "report.md").read_text()
    assert gone(port)
    port = free_port()
    r = run_loadgen(config(port, rate=10.0, requests=3), timeout=60)
    assert r.rc == 0 and [e["note"] for e in r.of("server")] == \
        ["GET /metrics: HTTP 404"], r.stderr


@pytest.mark.slow
def test_the_real_llama_server_with_the_random_model() -> None:
    """llama.cpp's server (CPU) on the tiny random model converted by its own
    converter: its metrics are llama.cpp's (no TTFT histogram), its answers stream."""
    if not os.environ.get("XWATCH_LLAMA_SERVER") or not os.environ.get("XWATCH_LLAMA_CPP"):
        pytest.skip("no llama-server here (XWATCH_LLAMA_SERVER, XWATCH_LLAMA_CPP)")
    port = free_port()
    server = (PY, "-m", "xwatch.core.engine.servers.localmodel", "llama", "tiny", "--port",
              str(port), "--host", "127.0.0.1", "--metrics", "-c", "2048", "-np", "4")
    r = run_loadgen(config(port, rate=4.0, requests=8, warmup=1, ready_timeout_s=300,
                           server=server, ignore_eos=True), timeout=400)
    assert r.rc == 0, r.stderr[-3000:]
    assert len(r.requests) == 8 and all(e.get("ok") is not False for e in r.requests)
    v = r.of("server")[-1]
    assert v["engine"] == "llama.cpp" and v["ttft"] is None
    assert v["running"]["metric"] == "llamacpp:requests_processing"
