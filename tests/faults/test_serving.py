"""A server workload's faults (``docs/serving.md``): each is named with the server's
exit status or answer and its last stderr lines, what was measured is kept, and no
server process is left. The server is the fake OpenAI server (``tests/helpers``)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.conftest import run_xwatch
from tests.helpers.serving import (
    config,
    fake_server,
    free_port,
    gone,
    left,
    run_loadgen,
    write_scenario,
)


def test_a_server_that_is_never_ready_is_named() -> None:
    port = free_port()
    r = run_loadgen(config(port, "--fault", "never-ready", ready_timeout_s=2.0))
    assert r.rc == 4, r.stderr
    msg = r.of("error")[0]["message"]
    assert "was never ready" in msg and "within 2 s" in msg and "HTTP 503" in msg
    assert "fake_openai: serving on" in msg  # its last stderr lines
    assert not r.requests and gone(port)


def test_a_server_that_dies_mid_phase_is_named_and_its_requests_kept() -> None:
    port = free_port()
    r = run_loadgen(config(port, "--fault", "die-after=8", rate=20.0))
    assert r.rc == 3, r.stderr
    msg = r.of("error")[0]["message"]
    assert "exited with status 3 mid-phase" in msg and "illegal memory access" in msg
    ok = [e for e in r.requests if e.get("ok") is not False]
    assert len(ok) >= 5 and all(e["ttft_ms"] > 0 for e in ok)  # measured before: kept
    assert gone(port)


def test_http_errors_are_counted_then_named() -> None:
    port = free_port()
    # the warm-up is the first request: an error there is named at once
    r = run_loadgen(config(port, "--fault", "status=500"))
    assert r.rc == 4 and "HTTP 500" in r.of("error")[0]["message"]
    # a server that rejects a field (transformers serve: ignore_eos) is named with the 422
    r = run_loadgen(config(port, ignore_eos=True))
    assert r.rc == 4 and "HTTP 422" in r.of("error")[0]["message"] and \
        "ignore_eos" in r.of("error")[0]["message"]
    assert gone(port)


def test_streams_cut_short_are_errors_and_a_run_of_them_fails_the_workload() -> None:
    port = free_port()
    r = run_loadgen(config(port, "--fault", "cut-after=4", rate=40.0, fail_streak=10))
    assert r.rc == 4, r.stderr
    bad = [e for e in r.requests if e.get("ok") is False]
    assert len(bad) >= 10 and all("stream cut short after" in e["error"] for e in bad)
    assert {e["cause"] for e in bad} == {"stream cut short"}  # the kind, counted by xwatch
    assert sum(1 for e in r.requests if e.get("ok") is not False) >= 3
    assert "10 requests in a row failed" in r.of("error")[0]["message"]
    assert gone(port)


def test_a_port_already_taken_is_named_before_the_server_starts() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run_loadgen(config(port))
    assert r.rc == 5
    assert f"port {port} is already taken" in r.of("error")[0]["message"]
    assert not r.of("hello") and not left(port)


def test_an_api_that_is_not_openais_is_named() -> None:
    port = free_port()
    r = run_loadgen(config(port, "--fault", "not-openai"))
    assert r.rc == 6
    msg = r.of("error")[0]["message"]
    assert "does not speak OpenAI's streaming API" in msg and "text/html" in msg
    assert gone(port)


def test_a_server_dying_under_xwatch_fails_the_phase_naming_it(tmp_path: Path) -> None:
    port = free_port()
    scen = write_scenario(tmp_path, fake_server(port, "--fault", "die-after=10"), port,
                          duration=6)
    out = run_xwatch("run", str(scen), "--headless", "--telemetry", "off",
                     "--export", str(tmp_path / "out"))
    assert out.returncode == 1, out.stdout + out.stderr
    doc = json.loads((tmp_path / "out" / "snapshot.json").read_text())
    chat = doc["phases"][0]["workloads"]["chat"]
    assert "exited with status 3 mid-phase" in json.dumps(chat)
    assert chat["count"] >= 5 and "ttft_ms" in chat["metrics"]  # measured: kept
    assert doc["phases"][0]["workloads"]["low"]["count"] > 0
    assert gone(port)
