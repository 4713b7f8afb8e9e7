"""A server workload end to end: xwatch starts the (fake or real) server, its load
generator streams requests, and the named metrics arrive as the built-in decoder's do."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import psutil
import pytest

from tests.conftest import PY, run_xwatch
from tests.helpers.serving import (
    config,
    fake_server,
    free_port,
    gone,
    run_loadgen,
    write_scenario,
)


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
    # stopped once 21 requests were measured, however long a busy machine takes to get
    # there (it was 3 s after the start: 19 requests on a loaded box, and it ran alone)
    r = run_loadgen(config(port, rate=20.0), stop_after_requests=21)
    assert r.rc == 0, r.stderr
    assert r.of("bye") and len(r.requests) > 20
    assert all(e.get("ok") is not False for e in r.requests)  # a stop is no error
    assert gone(port)


def test_a_stop_while_the_server_loads_is_clean_and_says_how_far_it_got() -> None:
    port = free_port()
    r = run_loadgen(config(port, "--fault", "never-ready"), stop_after_s=3.0, timeout=10)
    assert r.rc == 0 and r.of("bye"), r.stderr
    said = [e["message"] for e in r.of("error")]
    assert len(said) == 1 and re.fullmatch(r"not ready after \d+ s \(GET /health: "
                                           r"(HTTP 503: .*|ClientConnectorError.*)\)", said[0]), said
    assert gone(port)


def test_xwatch_runs_a_server_beside_a_low_workload(tmp_path: Path) -> None:
    port = free_port()
    # ended by its requests, not by a clock: the phase measures from LOW's start (a
    # command starts measuring when it starts), and on a busy machine the server took
    # longer than a 3 s phase to answer /health; now the phase ends once chat has made
    # its 10 requests and LOW its 60, whenever that is (60 s: only a bound)
    scen = write_scenario(tmp_path, fake_server(port), port, duration=60,
                          extra="requests = 10", low_count=60)
    out = run_xwatch("run", str(scen), "--headless", "--telemetry", "off",
                     "--export", str(tmp_path / "out"))
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((tmp_path / "out" / "snapshot.json").read_text())
    chat = doc["phases"][0]["workloads"]["chat"]
    assert chat["count"] >= 8 and chat["errors"] == 0  # (the command LOW is not gated)
    assert {"ttft_ms", "tpot_ms", "itl_ms"} <= set(chat["metrics"])
    assert chat["hello"]["server_pid"] != chat["hello"]["pid"]
    assert not any(a.get("kind") == "saturated" for a in doc["phases"][0]["annotations"])
    assert "saturated" not in out.stdout and chat["error_causes"] == {}
    assert gone(port)  # the phase's end stopped the server too


def test_a_saturated_server_and_failed_requests_are_named(tmp_path: Path) -> None:
    """A server that serves one request at a time (~4 req/s) offered 20 req/s is called
    saturated in the phase, the console and the report; every 4th stream ends without
    text: each such failure is counted by its cause, and the requests still queued at
    the stop are unfinished, never errors."""
    port = free_port()
    argv = ", ".join(json.dumps(a) for a in fake_server(
        port, "--serial", "--first-ms", "200", "--token-ms", "5", "--fault", "empty-every=4"))
    scen = tmp_path / "sat.toml"
    scen.write_text(f"""
duration_s = 4
[[workload]]
name = "chat"
priority = "high"
server = [{argv}]
port = {port}
rate = 20
warmup = 1
new_tokens = 4
prompt_len = 16
ready_timeout_s = 20
""")
    out = run_xwatch("run", str(scen), "--headless", "--telemetry", "off",
                     "--export", str(tmp_path / "out"))
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((tmp_path / "out" / "snapshot.json").read_text())
    phase = doc["phases"][0]
    chat = phase["workloads"]["chat"]
    assert chat["errors"] >= 2 and chat["error_causes"] == {"empty stream": chat["errors"]}
    assert chat["unfinished"]["count"] >= 20
    # the fake's schedule: no request completes in under 200 + 3 x 5 ms, and a request
    # unfinished at the end never enters below the fastest completed one
    assert chat["latency_ms"]["min"] >= 215 and chat["latency_ms"]["mean"] >= 215
    # the TTFT counts every request due, not the answered alone: a cut request by its
    # first token (a ``first`` event) or, queued before it, at least its wait
    cut = chat["unfinished"]["count"]
    ttft = chat["metrics"]["ttft_ms"]
    assert ttft["count"] == chat["count"] + cut, (ttft["count"], chat["count"], cut)
    said = re.search(r"their TTFT in its percentiles: (\d+) from their first token, (\d+) "
                     r"at least their wait", chat["unfinished"]["note"])
    assert said and int(said[1]) + int(said[2]) == cut and int(said[2]) >= 1, chat["unfinished"]
    assert ttft["summary"]["max"] >= chat["unfinished"]["max_wait_ms"] / 2
    sat = [a for a in phase["annotations"] if a.get("kind") == "saturated"]
    assert len(sat) == 1 and "the server is saturated: offered 20.0 req/s, answered" in \
        sat[0]["text"] and "mostly queueing" in sat[0]["text"], phase["annotations"]
    assert "chat: the server is saturated: offered 20.0 req/s" in out.stdout
    assert f"request(s) failed: empty stream ({chat['errors']})" in out.stdout
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| errors by cause | empty stream (" in md and "Saturated: " in md
    assert gone(port)


@pytest.mark.slow
def test_the_real_transformers_serve_with_a_random_model(tmp_path: Path) -> None:
    """``transformers serve`` (its serving extras) on the CPU, the built-in random model."""
    pytest.importorskip("fastapi")  # the test extra installs them (pyproject)
    pytest.importorskip("uvicorn")
    port = free_port()
    server = (PY, "-m", "xwatch.core.engine.servers.localmodel", "serve", "tiny",
              "--port", str(port), "--device", "cpu")
    r = run_loadgen(config(port, rate=4.0, requests=8, warmup=1, ready_timeout_s=120,
                           server=server), timeout=180)
    assert r.rc == 0, r.stderr[-3000:]
    assert len(r.requests) == 8 and all(e.get("ok") is not False for e in r.requests)
    assert all(e["output_tokens"] == 8 and e["ttft_ms"] > 0 for e in r.requests)
    assert not [p for p in psutil.process_iter(["cmdline"])
                if "localmodel" in " ".join(p.info["cmdline"] or []) and str(port) in
                " ".join(p.info["cmdline"] or [])]


def test_xsched_engagement_reads_the_servers_process_tree(tmp_path: Path) -> None:
    """Under the fake XSched (HIP: the shim by LD_PRELOAD) the shim reaches the server,
    never the load generator; the server's queues (a child of the generator, matched by
    the process tree) make it engaged; a server whose queues are never ready is not
    scheduled, with a server's cause named."""
    from tests.helpers.fake_xsched import have_cc, make_install

    if not have_cc():
        pytest.skip("needs a C compiler for the fake shim")
    install = make_install(tmp_path / "xsched", platforms=("hip",))
    p1, p2, p3, px = free_port(), free_port(), free_port(), free_port()
    s1 = ", ".join(json.dumps(a) for a in fake_server(p1))
    s2 = ", ".join(json.dumps(a) for a in fake_server(p2))
    s3 = ", ".join(json.dumps(a) for a in fake_server(p3))
    f = tmp_path / "x.toml"
    f.write_text(f"""
duration_s = 3
[xsched]
platform = "hip"
port = {px}
[[workload]]
name = "chat"
priority = "high"
server = [{s1}]
port = {p1}
rate = 20
warmup = 1
new_tokens = 4
[[workload]]
name = "bulk"
priority = "low"
server = [{s2}]
port = {p2}
rate = 20
warmup = 1
new_tokens = 4
[workload.xsched]
env = {{ FAKE_XQUEUE_READY = "never" }}
[[workload]]
name = "side"
priority = "low"
server = [{s3}]
port = {p3}
rate = 20
warmup = 1
new_tokens = 4
[workload.xsched]
env = {{ FAKE_XQUEUE_READY = "gone" }}
""")
    r = run_xwatch("compare", str(f), "--xsched", str(install), "--telemetry", "off",
                   "--export", str(tmp_path / "o"), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    xs = doc["phases"][1]
    chat = xs["workloads"]["chat"]
    assert "LD_PRELOAD" not in chat["hello"]["env"]  # the generator's own: no shim
    x = xs["xsched"]["workloads"]
    assert x["chat"]["status"] == "engaged", x["chat"]
    assert {q["pid"] for q in x["chat"]["queues"]} == {chat["hello"]["server_pid"]}
    assert x["bulk"]["status"] == "not-scheduled"
    assert any("server's process tree" in w and "default stream" in w
               for w in x["bulk"]["warnings"])
    # its one XQueue logged created and destroyed, none ever listed: its work bypassed
    # the shim, said plainly with the evidence (as the H100 run's transformers serve)
    side = x["side"]
    assert side["status"] == "not-scheduled", side
    w = side["warnings"][0]
    assert w.startswith("not scheduled by XSched: its GPU work bypassed the shim"), w
    assert "created 1 XQueue(s) and destroyed 1" in w and "default stream" in w
    assert "request(s) while xserver listed no XQueue of its process tree" in w
    assert {"ttft_ms", "itl_ms"} <= set(chat["metrics"])
    assert gone(p1) and gone(p2) and gone(p3)
