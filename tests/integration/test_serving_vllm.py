"""The load generator's metrics as vLLM's ``bench serve`` defines them, one fake server
per case (``xwatch/testing/fake_openai.py``), each checked against the fake's own
schedule: the first token ``--first-ms`` after the request arrives, then one every
``--token-ms``. The sleeps make lower bounds exact whatever the machine's load; the
counts (gaps, chunks, tokens, failures) are exact."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_xwatch
from tests.helpers.serving import config, fake_server, free_port, gone, run_loadgen

FIRST, TOKEN, N = 40.0, 10.0, 8


def measured(*fake: str, n: int = N) -> list[dict[str, Any]]:
    port = free_port()
    r = run_loadgen(config(port, "--first-ms", str(FIRST), "--token-ms", str(TOKEN), *fake,
                           rate=10.0, requests=6, new_tokens=n))
    assert r.rc == 0, r.stderr
    assert len(r.requests) == 6 and all(e.get("ok") is not False for e in r.requests), \
        r.requests
    assert gone(port)
    return r.requests


def check_vllm_identities(e: dict[str, Any], gaps: int, tokens: int) -> None:
    """vLLM's definitions, exact on every request: e2e ends at the last output chunk
    (TTFT + the gaps), TPOT = (e2e - TTFT) / (tokens - 1)."""
    assert len(e["itl_ms"]) == gaps and e["output_tokens"] == tokens
    assert e["latency_ms"] == pytest.approx(e["ttft_ms"] + sum(e["itl_ms"]), abs=0.01)
    assert e["tpot_ms"] == pytest.approx((e["latency_ms"] - e["ttft_ms"]) / (tokens - 1),
                                         abs=0.01)
    # the role chunk comes at once: it is no output (TTFT waits for the first token)
    assert e["ttft_ms"] >= FIRST


def test_the_wait_for_done_is_its_own_figure_not_e2e() -> None:
    """vLLM's server ends with ``{"content": ""}`` and the finish_reason 10 ms after the
    last token (an output chunk: one more gap, e2e ends there, 40 + 8 x 10 = 120 ms at
    least); the usage chunk and [DONE] come 100 ms later: ``tail_ms``, not in e2e nor
    in TPOT."""
    reqs = measured("--empty-finish", "--tail-ms", "100")
    for e in reqs:
        check_vllm_identities(e, N, N)
        assert e["chunks"] == N + 1
        assert e["latency_ms"] >= FIRST + N * TOKEN
    # with the tail inside, e2e would be >= 220 ms and TPOT >= 25.7 ms
    assert statistics.median(e["latency_ms"] for e in reqs) < 200
    assert statistics.median(e["tpot_ms"] for e in reqs) < 22
    assert statistics.median(e["tail_ms"] for e in reqs) > 60


def test_reasoning_chunks_are_output() -> None:
    """4 of 8 tokens stream as ``delta.reasoning``: TTFT is the first of them (40 ms,
    not the first content token's 80), and every token chunk is a gap (the older
    ``reasoning_content`` key: ``tests/unit/test_serve_vllm.py``)."""
    reqs = measured("--reasoning", "4")
    for e in reqs:
        check_vllm_identities(e, N - 1, N)
        assert e["chunks"] == N
    assert statistics.median(e["ttft_ms"] for e in reqs) < FIRST + 4 * TOKEN


def test_tool_call_chunks_are_output() -> None:
    """Every token a ``tool_calls`` delta (no content at all): measured, not an empty
    stream."""
    for e in measured("--tools"):
        check_vllm_identities(e, N - 1, N)
        assert e["chunks"] == N


def test_a_server_that_closes_after_each_stream_answers_every_request() -> None:
    """llama-server closed the connection after each streamed answer: a request sent on
    the kept-alive one failed before any text. The generator opens one per request, so
    the warm-up and two measured requests in a row all succeed."""
    port = free_port()
    r = run_loadgen(config(port, "--close-after-stream", "--first-ms", "5", "--token-ms",
                           "1", rate=20.0, requests=2, new_tokens=4))
    assert r.rc == 0, r.stderr
    assert [e.get("ok") is not False for e in r.requests] == [True, True], r.requests
    assert gone(port)


def test_failures_are_counted_exactly() -> None:
    """Every 5th POST answers HTTP 500 (the warm-up is the first): of the 6 measured
    requests (POSTs 2-7), POST 5 fails."""
    port = free_port()
    r = run_loadgen(config(port, "--fault", "fail-every=5", rate=10.0, requests=6))
    assert r.rc == 0, r.stderr
    bad = [e for e in r.requests if e.get("ok") is False]
    assert len(r.requests) == 6 and len(bad) == 1 and bad[0]["cause"] == "HTTP 500"
    assert "ttft_ms" not in bad[0] and r.of("bye")[0]["errors"] == 1


def test_a_failing_server_is_named_failing_not_saturated(tmp_path: Path) -> None:
    """A server that keeps up but fails every 5th request: no saturation, its failures
    named by cause, and vLLM's goodput counts them as misses (every answered request
    meets the loose SLOs, so good = completed and the share = completed / due)."""
    port = free_port()
    scen = tmp_path / "f.toml"
    argv = ", ".join(json.dumps(a) for a in fake_server(port, "--fault", "fail-every=5"))
    scen.write_text(f"""
duration_s = 3
[[workload]]
name = "chat"
priority = "high"
server = [{argv}]
port = {port}
rate = 10
warmup = 1
new_tokens = 4
prompt_len = 16
ready_timeout_s = 20
goodput = ["ttft:5000", "tpot:5000", "e2el:10000"]
[slo]
workload = "chat"
latency_ms = 10000
""")
    out = run_xwatch("run", str(scen), "--headless", "--telemetry", "off",
                     "--export", str(tmp_path / "out"))
    assert out.returncode == 0, out.stdout + out.stderr
    phase = json.loads((tmp_path / "out" / "snapshot.json").read_text())["phases"][0]
    chat = phase["workloads"]["chat"]
    assert chat["errors"] >= 3 and chat["error_causes"] == {"HTTP 500": chat["errors"]}
    assert not [a for a in phase["annotations"] if a.get("kind") == "saturated"]
    assert "saturated" not in out.stdout
    g = chat["slo_goodput"]
    due = chat["count"] + chat["errors"] + chat["unfinished"]["count"]
    assert g["good"] == chat["count"] and g["requests"] == due
    assert g["share"] == pytest.approx(chat["count"] / due, abs=1e-6) and g["share"] < 1
    assert g["requests_per_s"] == pytest.approx(chat["count"] / chat["measured_s"], rel=1e-4)
    assert chat["goodput"] == pytest.approx(chat["count"] / due, abs=1e-6)  # the [slo]'s
    assert "goodput" in out.stdout and "a failed or unfinished request is a miss" in out.stdout
    assert gone(port)


def test_drain_measures_every_request_sent(tmp_path: Path) -> None:
    """A one-at-a-time server (~50 ms a request: 20 + 3 x 10) offered 40 req/s for 2 s:
    without a drain most requests are cut unfinished; with ``drain_s`` every request
    the generator sent is measured (none unfinished) and the mean is over them all."""
    port = free_port()
    scen = tmp_path / "d.toml"
    argv = ", ".join(json.dumps(a) for a in fake_server(
        port, "--serial", "--first-ms", "20", "--token-ms", "10"))
    scen.write_text(f"""
duration_s = 2
[[workload]]
name = "chat"
priority = "high"
server = [{argv}]
port = {port}
rate = 40
warmup = 1
new_tokens = 4
prompt_len = 16
ready_timeout_s = 20
drain_s = 30
""")
    out = run_xwatch("run", str(scen), "--headless", "--telemetry", "off",
                     "--export", str(tmp_path / "out"))
    assert out.returncode == 0, out.stdout + out.stderr
    phase = json.loads((tmp_path / "out" / "snapshot.json").read_text())["phases"][0]
    chat = phase["workloads"]["chat"]
    assert chat["unfinished"]["count"] == 0 and chat["errors"] == 0, chat["unfinished"]
    assert chat["count"] >= 40 and chat["after_end"] == 0  # ~80 sent in 2 s
    # a queue behind a 50 ms server: the last of n requests waits about n x 50 ms
    assert chat["latency_ms"]["max"] >= 0.5 * chat["count"] * 50 - 2000
    assert chat["unfinished"]["drained"] is True
    assert [a for a in phase["annotations"] if a.get("kind") == "saturated"]
    assert gone(port)
