"""Pure XSched logic: environment per priority and overrides, engagement
decisions, /config validation, sweep parsing and the frontier."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from xwatch.core import model as M
from xwatch.core.engine.launch import build_launch
from xwatch.core.xsched.client import validate_config
from xwatch.core.xsched.engagement import QueueStats, engagement
from xwatch.core.xsched.env import queue_params, xsched_env
from xwatch.core.xsched.install import XschedError, XschedInstall
from xwatch.errors import UsageError
from xwatch.scenario import Workload, load_scenario
from xwatch.scenario.model import WorkloadXsched

INST = XschedInstall(Path("/opt/xsched"), "--xsched")


def wl(**kw: object) -> Workload:
    base = {"name": "w", "priority": "high", "model": "resnet18"}
    base.update(kw)
    return Workload(**base)  # type: ignore[arg-type]


def _controller_in_phase(tmp_path: Path) -> tuple[Any, Any, Any, dict[str, QueueStats]]:
    """The demo scenario's XSched controller on a fresh phase of a session, its evidence
    per workload empty: (controller, session, phase, stats)."""
    from xwatch.core.engine.live.session import Session
    from xwatch.core.xsched.controller import XschedController

    scen = load_scenario("demo")
    ctl = XschedController(XschedInstall(tmp_path, "--xsched"), scen)
    s = Session(scen)
    ph = s.new_phase("xsched")
    ctl.phase = ph
    ph.xsched = M.Xsched(root="")
    stats = {w.name: QueueStats() for w in scen.workloads}
    ctl.evidence.stats = stats
    return ctl, s, ph, stats


def test_defaults_by_priority_match_the_reference() -> None:
    assert queue_params(wl(priority="high")) == {"priority": 1, "level": 1, "threshold": 16,
                                                 "batch_size": 8}
    assert queue_params(wl(priority="low")) == {"priority": 0, "level": 1, "threshold": 4,
                                                "batch_size": 2}
    assert queue_params(wl(priority=7))["priority"] == 7
    assert queue_params(wl(priority=-3))["threshold"] == 4


def test_overrides_and_extra_env() -> None:
    w = wl(priority="low", xsched=WorkloadXsched(threshold=1, batch_size=1, level=2,
                                                 env={"XSCHED_LOG_LEVEL": "TRACE"}))
    env = xsched_env(w, INST, "cuda")
    assert env["XSCHED_AUTO_XQUEUE_THRESHOLD"] == "1" and env["XSCHED_AUTO_XQUEUE_BATCH_SIZE"] == "1"
    assert env["XSCHED_AUTO_XQUEUE_LEVEL"] == "2" and env["XSCHED_LOG_LEVEL"] == "TRACE"
    assert env["XSCHED_SCHEDULER"] == "GLB" and env["XSCHED_AUTO_XQUEUE"] == "ON"


def test_cuda_uses_library_path_hip_uses_preload() -> None:
    cuda = xsched_env(wl(), INST, "cuda")
    assert cuda["LD_LIBRARY_PATH"] == "/opt/xsched/lib" and "LD_PRELOAD" not in cuda
    hip = xsched_env(wl(), INST, "hip")
    assert hip["LD_PRELOAD"] == "/opt/xsched/lib/libshimhip.so"
    assert hip["LD_LIBRARY_PATH"] == "/opt/xsched/lib"


def test_launch_prepends_library_path_and_passes_xsched_vars() -> None:
    base = {"LD_LIBRARY_PATH": "/usr/lib/x", "XSCHED_LOG_LEVEL": "INFO", "PATH": "/bin"}
    spec = build_launch(wl(), xsched_env(wl(), INST, "cuda"), base_env=base)
    assert spec.env["LD_LIBRARY_PATH"] == "/opt/xsched/lib:/usr/lib/x"  # lib/ first
    assert spec.env["XSCHED_LOG_LEVEL"] == "INFO"  # other XSCHED_* pass through
    assert spec.env_added["XSCHED_AUTO_XQUEUE_PRIORITY"] == "1"
    assert spec.argv[-2:] == ("-m", "xwatch.core.engine.worker")
    assert "XWATCH_WORKER_CONFIG" in spec.env and "PYTHONPATH" in spec.env
    native = build_launch(wl(), None, base_env=base)
    assert not any(k.startswith("XSCHED_AUTO") for k in native.env)


def test_command_workload_launch() -> None:
    w = Workload(name="e", priority="low", command=("./app", "-x"), cwd="/tmp",
                 env={"A": "1"})
    spec = build_launch(w, None, base_env={"PATH": "/bin"})
    assert spec.argv == ("./app", "-x") and spec.cwd == "/tmp" and spec.env["A"] == "1"
    assert "XWATCH_WORKER_CONFIG" not in spec.env


def test_engagement_statuses() -> None:
    q0 = QueueStats(polls=5)
    assert engagement(False, None, q0, 10, True) == ("native", [])
    assert engagement(True, "app-managed", q0, 10, True)[0] == "app-managed"
    assert engagement(True, "local HPF", q0, 10, True)[0] == "local"
    assert engagement(True, None, q0, 10, True)[0] == "shim-not-loaded"
    assert engagement(True, "global", q0, 10, True)[0] == "no-xqueue"
    assert engagement(True, None, QueueStats(polls=1), 0, True)[0] == "pending"
    idle = QueueStats(samples=5, polls=5, ready=0, queues=3)
    status, warns = engagement(True, "global", idle, 100, True)
    assert status == "not-scheduled" and "default stream" in warns[0]
    busy = QueueStats(samples=5, polls=5, ready=2, suspended=1, queues=3)
    assert engagement(True, "global", busy, 100, True) == ("engaged", [])


def test_a_server_whose_work_bypasses_the_shim_is_not_scheduled_with_its_evidence() -> None:
    """As on the H100: the server's process made one XQueue at priority 1 and destroyed
    it at once, the shim was mapped, and /xqueues never listed a queue of its tree while
    it served requests: not scheduled by XSched, the evidence and the cause named. A
    workload that is not a server keeps no-xqueue; a server before any request waits."""
    from xwatch.core.xsched.engagement import XserverLog

    log = XserverLog(maxlen=3)
    log.append("[XSCHED INFO @ T 1 @ 0] XQueue (0xb3d0000399d0740) from process 2877 created")
    for line in ("[XSCHED INFO @ T 2870 @ 17:09:09] XQueue (0xb3f7fe332c0f4c0) from "
                 "process 2879 created", "set priority 1 for XQueue 0xb3f7fe332c0f4c0",
                 "[XSCHED INFO @ T 2870 @ 17:09:24] XQueue (0xb3f7fe332c0f4c0) from "
                 "process 2879 destroyed"):
        log.append(line)
    assert len(log) == 3 and log.of({2875, 2879}) == (1, 1) and log.of({2877}) == (1, 0)
    assert XserverLog(maxlen=4).of({1}) is None  # no XQueue line at all: not ours to say
    q0 = QueueStats(polls=342)
    status, warns = engagement(True, "global", q0, 15, True, shim_mapped=True, server=True,
                               logged=log.of({2875, 2879}))
    assert status == "not-scheduled"
    w = warns[0]
    assert w.startswith("not scheduled by XSched: its GPU work bypassed the shim")
    assert "served 15 request(s)" in w and "342 poll(s)" in w and "maps" in w
    assert "created 1 XQueue(s) and destroyed 1" in w and "default stream" in w
    assert engagement(True, "global", q0, 15, True, shim_mapped=True)[0] == "no-xqueue"
    assert engagement(True, "global", q0, 0, True, shim_mapped=True,
                      server=True)[0] == "no-xqueue"  # served nothing: no evidence
    log.clear()
    assert log.of({2879}) is None


def test_not_scheduled_waits_for_enough_expected_ready_polls() -> None:
    """As on the H100 (2026-11-23): HIGH at 20 req/s with 4.76 ms service is busy ~10%
    of the time; its queues were first seen ready in poll 95. Three polls without a
    ready queue said not-scheduled (a false alarm, logged as a warning); the verdict
    now waits until ~10 ready polls were expected."""
    from xwatch.core.xsched.engagement import EXPECTED_READY_MIN, expected_ready_polls

    # 6 s of requests at 10 Hz polls: 120 requests x 4.76 ms = 0.57 s busy -> 5.7 polls
    early = expected_ready_polls(120, 4.76, 0.1, active_polls=60)
    assert early == pytest.approx(5.712)
    idle = QueueStats(samples=60, polls=70, active_polls=60, ready=0, queues=144)
    # half the evidence: still pending, said live as provisional (participation.SO_FAR)
    status, warns = engagement(True, "global", idle, 120, True, early)
    assert status == "pending" and warns == [
        "not seen scheduled so far: its XQueues were never seen ready in 70 polls while "
        "120 requests completed, 5.7 ready polls expected; the verdict waits for 10"]
    assert engagement(True, "global", idle, 80, True, 3.8) == ("pending", [])  # too early
    status, warns = engagement(True, "global", idle, 120, False, early, final=True)
    assert status == "pending" and "not enough evidence" in warns[0] and "5.7" in warns[0]
    late = expected_ready_polls(300, 4.76, 0.1, active_polls=150)  # 14.3 expected
    assert late >= EXPECTED_READY_MIN
    status, warns = engagement(True, "global", idle, 300, True, late)
    assert status == "not-scheduled" and "never seen ready" in warns[0]
    # a saturating LOW: capped at one per poll, decided after 10 polls with requests
    assert expected_ready_polls(40, 170.0, 0.1, active_polls=9) == 9.0
    assert expected_ready_polls(44, 170.0, 0.1, active_polls=10) == 10.0
    assert expected_ready_polls(5, 0.0, 0.1, active_polls=7) == 7.0  # no service time known


@pytest.mark.parametrize(("lv", "th", "bs", "ok"), [
    (1, 4, 2, True), (None, 8, 4, True), (1, 4, 4, False), (1, 2, 3, False), (4, 4, 2, False),
    (None, 0, None, False), (None, None, 0, False), (None, 1, 1, False)])
def test_validate_config(lv: int | None, th: int | None, bs: int | None, ok: bool) -> None:
    if ok:
        validate_config(lv, th, bs)
    else:
        with pytest.raises(XschedError):
            validate_config(lv, th, bs)


def test_validate_config_uses_current_values() -> None:
    with pytest.raises(XschedError, match="must stay below threshold"):
        validate_config(None, None, 16, {"threshold": 16, "batch_size": 8, "level": 1})


def test_sweep_settings_parse_zip_and_errors() -> None:
    from xwatch.core.plans.sweep import apply_setting, parse_settings, setting_label

    scen = load_scenario("intensive")
    s = parse_settings(["low.threshold=1,2,4,8", "low.batch_size=1,1,2,4"], scen)
    assert [x["low"] for x in s] == [{"threshold": 1, "batch_size": 1},
                                     {"threshold": 2, "batch_size": 1},
                                     {"threshold": 4, "batch_size": 2},
                                     {"threshold": 8, "batch_size": 4}]
    assert setting_label(s[2]) == "low.threshold=4, low.batch_size=2"
    applied = apply_setting(scen, s[0])
    assert applied.workload("low").xsched.threshold == 1
    assert applied.workload("high").xsched == scen.workload("high").xsched
    broadcast = parse_settings(["low.threshold=4", "low.batch_size=1,2,3"], scen)
    assert [x["low"]["threshold"] for x in broadcast] == [4, 4, 4]
    for bad, msg in ((["nope.threshold=1"], "no workload"), (["low.speed=1"], "cannot be swept"),
                     (["low.threshold=1,2", "low.batch_size=1,1,1"], "zipped"),
                     (["low.threshold=a"], "integers"), (["lowthreshold=1"], "expected"),
                     (["low.threshold=1", "low.batch_size=2"], "exceeds"), ([], "at least one")):
        with pytest.raises(UsageError, match=msg):
            parse_settings(bad, scen)


def test_frontier() -> None:
    from typing import cast

    from xwatch.core.analysis.frontier import SweepPoint, frontier
    from xwatch.core.engine.snapshot import PhaseSnapshot

    def pt(label: str, p99: float, sps: float, ok: bool = True) -> SweepPoint:
        return SweepPoint(cast(PhaseSnapshot, None), label, "done" if ok else "failed", ok,
                          p99 / 2, p99, sps, label == "native")

    pts = [pt("native", 6.5, 6223), pt("t4/b2", 13.0, 6091), pt("t1/b1", 7.35, 5373),
           pt("t2/b1", 5.0, 5000), pt("crash", float("nan"), float("nan"), ok=False),
           pt("dominated", 8.0, 5300)]
    assert frontier(pts) == {"native", "t2/b1"}  # t1/b1 is dominated by native here
    pts.append(pt("best-tail", 3.0, 4000))
    assert "best-tail" in frontier(pts)
    assert dataclasses is not None


def test_xserver_get_parses_responses_and_refuses_broken_ones() -> None:
    """The poll's own HTTP reader: Content-Length, chunked (as cpp-httplib may send),
    and cut-short or non-HTTP answers are errors, never partial JSON."""
    import http.client

    from xwatch.core.xsched.client import _expected_length, _parse_response

    body = b'{"xqueues": [{"handle": 1, "ready": true}]}'
    ok = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" \
        % (len(body), body)
    assert _parse_response(ok) == (200, body)
    assert _expected_length(ok) == len(ok) and _expected_length(ok[:20]) == -1
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"a\r\n" + body[:10] + b"\r\n" + b"%x;ext=1\r\n" % (len(body) - 10)
               + body[10:] + b"\r\n0\r\n\r\n")
    assert _parse_response(chunked) == (200, body)
    assert _expected_length(chunked) == -1  # read to the end of the connection
    assert _parse_response(b"HTTP/1.0 404 Not Found\r\n\r\n{\"error\": \"x\"}") == (
        404, b'{"error": "x"}')
    for broken in (ok[:-5], ok[:30], chunked[:-12], b"SSH-2.0-OpenSSH\r\n\r\n", b""):
        with pytest.raises(http.client.HTTPException):
            _parse_response(broken)


def test_poll_folding_keeps_the_last_queue_table_of_a_stopping_process(tmp_path: Path) -> None:
    """/xqueues rows -> evidence per workload (by pid); a poll in which a still-running
    process lists no queue (the real shim drops them while the process shuts down)
    keeps the last queue table and handles, while the queue count says 0."""
    from xwatch.core.engine.live.session import Session
    from xwatch.core.xsched.client import XQueueRow, decode_xqueues
    from xwatch.core.xsched.controller import XschedController
    from xwatch.core.xsched.install import XschedInstall
    from xwatch.core.xsched.xqueues.polling import Answer
    from xwatch.scenario import load_scenario

    scen = load_scenario("demo")
    ctl = XschedController(XschedInstall(tmp_path, "--xsched"), scen)
    s = Session(scen)
    ph = s.new_phase("xsched")
    ph.xsched = M.Xsched(root="")
    ph.runs["high"].pid, ph.runs["low"].pid = 11, 22
    ph.runs["high"].state = ph.runs["low"].state = "running"
    stats = {w.name: QueueStats() for w in scen.workloads}
    ctl.evidence.stats = stats
    raw = json.dumps({"xqueues": [
        {"handle": 7, "device": 0, "level": 1, "pid": 22, "threshold": 1, "batch_size": 1,
         "ready": True, "suspended": True, "extra": "ignored"},
        {"handle": 5, "device": 0, "level": 1, "pid": 11, "threshold": 16, "batch_size": 8,
         "ready": True, "suspended": False},
        {"handle": 9, "device": 0, "level": 1, "pid": 22, "threshold": 1, "batch_size": 1,
         "ready": False, "suspended": False},
        {"handle": 3, "pid": 99}]}).encode()
    rows = decode_xqueues(raw)
    assert rows[3] == XQueueRow(handle=3, pid=99)
    runs = [(n, (r.pid,), r.state, r.rec.count) for n, r in ph.runs.items()]
    ctl.evidence.ingest(ph, Answer.of(rows), stats, ph.t_start + 0.1, runs)
    assert (stats["low"].queues, stats["low"].ready, stats["low"].suspended) == (2, 1, 1)
    assert stats["low"].handles == (7, 9) and stats["high"].handles == (5,)
    ctl.evidence.ingest(ph, Answer.of([]), stats, ph.t_start + 0.2, runs)  # shutting down: no queues listed
    ctl.evidence.refresh(ph, final=True)
    low = ph.xsched.workloads["low"]
    assert low.stats.queues == 0 and low.stats.max_queues == 2
    assert [q.handle for q in low.queues] == [7, 9] and low.stats.handles == [7, 9]
    assert [p[1] for p in low.lane] == ["suspended", "none"]
    assert ph.xsched.samples[0].workloads["low"] == M.QueueCounts(
        queues=2, ready=1, suspended=1)
    with pytest.raises(ValueError, match="not understood"):
        decode_xqueues(b'{"xqueues": [{"handle": "7", "pid": 1}]}')
    s.close()


def test_drained_polls_count_outages_deaths_and_bad_answers_in_order(tmp_path: Path) -> None:
    """The poll thread hands polls over in batches; folded oldest first, a batch gives
    the same verdicts as polls folded one by one: an outage is reported once and fails
    the phase after UNREACHABLE_POLLS over UNREACHABLE_S, a good answer ends it, a dead
    xserver fails the phase with its exit status, a malformed answer is only noted."""
    from collections import deque

    from xwatch.core.xsched.client import XQueueRow
    from xwatch.core.xsched.install import XschedError
    from xwatch.core.xsched.xqueues.polling import Answer, Fails, Poll

    ctl, s, ph, stats = _controller_in_phase(tmp_path)
    runs = [("high", (11,), "running", 5), ("low", (22,), "running", 0)]
    good = Answer.of([XQueueRow(handle=1, pid=11, ready=True), XQueueRow(handle=2, pid=22)])
    down = XschedError("xserver at x not reachable: refused")
    t = ph.t_start
    fails = Fails()

    def drain(*polls: Poll) -> list[str]:
        before = len(s.logs)
        ctl.evidence.drain(ph, deque(polls), stats, fails)
        return [ln.text for ln in list(s.logs)[before:]]

    # an outage shorter than UNREACHABLE_S is noted once, and a good poll ends it
    out = drain(*(Poll(t + 0.1 * i, None, down, runs) for i in range(8)),
                Poll(t + 0.9, None, good, runs))
    assert sum("poll failed" in x for x in out) == 1 and ctl.failure() is None
    assert fails.count == 0 and stats["high"].polls == 1 and stats["high"].ready == 1
    assert stats["high"].active_polls == 1 and stats["low"].active_polls == 0
    # a malformed answer is noted, not counted as an outage
    out = drain(Poll(t + 1.0, None, ValueError("bad json"), runs))
    assert any("not understood" in x for x in out) and fails.count == 0
    # UNREACHABLE_POLLS failures over UNREACHABLE_S fail the phase, in one batch
    n = ctl.evidence.UNREACHABLE_POLLS
    step = ctl.evidence.UNREACHABLE_S / (n - 1)
    drain(*(Poll(t + 2 + step * i, None, down, runs) for i in range(n)))
    assert ctl.failure() is not None and "has not answered" in ctl.failure()  # type: ignore[operator]
    # a dead xserver: its exit status, even when the same batch holds good polls
    ctl._failure = None
    ctl.proc = type("P", (), {"pid": 4242})()  # type: ignore[assignment]
    drain(Poll(t + 9, None, good, runs), Poll(t + 9.1, -9, down, runs))
    assert "died (killed by signal 9)" in (ctl.failure() or "")
    assert ph.xsched.xserver_exit and ph.xsched.xserver_exit.returncode == -9
    assert len(ph.xsched.samples) == 2  # the good polls, folded in order
    s.close()


def test_poll_socket_reads_answers_larger_than_its_buffer_in_pieces() -> None:
    """The poll's GET reads into a per-thread buffer of 64 KiB that grows: an answer of
    ~200 KB (XSched's pretty-printed JSON for a few hundred queues) sent in pieces, with
    Content-Length or until the server closes, comes back whole, twice in a row."""
    import socket
    import threading
    import time

    from xwatch.core.xsched.client import XserverClient

    body = json.dumps({"xqueues": [{"handle": i, "pid": 7, "ready": i % 2 == 0,
                                     "pad": "x" * 100} for i in range(1500)]}).encode()
    assert len(body) > 3 * (1 << 16)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]

    def serve(n: int) -> None:
        for i in range(n):
            c, _ = srv.accept()
            with c:
                c.recv(4096)
                length = f"Content-Length: {len(body)}\r\n" if i % 2 == 0 else ""
                c.sendall(f"HTTP/1.1 200 OK\r\n{length}Connection: close\r\n\r\n".encode())
                for k in range(0, len(body), 70_000):
                    c.sendall(body[k:k + 70_000])
                    time.sleep(0.01)

    t = threading.Thread(target=serve, args=(4,), daemon=True)
    t.start()
    client = XserverClient(port)
    try:
        for _ in range(4):
            rows = client.xqueue_rows()
            assert len(rows) == 1500 and rows[-1].handle == 1499 and rows[0].ready
    finally:
        srv.close()


def test_an_answer_repeated_byte_for_byte_is_decoded_once_and_still_counted(
        tmp_path: Path) -> None:
    """The poll decodes an /xqueues answer only when its bytes differ from the last
    one's, and counts each process's queues once per answer; every poll still counts
    (polls, samples, ready), exactly as if each answer had been decoded afresh."""
    from xwatch.core.engine.live.session import Session
    from xwatch.core.xsched.client import decode_xqueues
    from xwatch.core.xsched.controller import XschedController
    from xwatch.core.xsched.engagement import QueueStats
    from xwatch.core.xsched.install import XschedInstall
    from xwatch.core.xsched.xqueues.polling import Answer, AnswerCache
    from xwatch.scenario import load_scenario

    def answer(ready: bool) -> bytes:
        return json.dumps({"xqueues": [
            {"handle": 1, "pid": 11, "ready": ready, "suspended": False},
            {"handle": 2, "pid": 22, "ready": True, "suspended": ready},
            {"handle": 3, "pid": 22, "ready": False, "suspended": ready}]}).encode()

    cache = AnswerCache()
    a1 = cache.answer(answer(False))
    assert cache.answer(answer(False)) is a1 and (cache.hits, cache.misses) == (1, 1)
    a2 = cache.answer(answer(True))
    assert a2 is not a1 and (cache.hits, cache.misses) == (1, 2)
    c = a2.counts(22)
    assert (c.queues, c.ready, c.suspended, c.handles) == (2, 1, 2, (2, 3))
    assert a2.counts(22) is c and a2.counts(99).queues == 0
    with pytest.raises(ValueError):
        cache.answer(b'{"xqueues": [{"pid": "x"}]}')
    assert cache.answer(answer(True)) is a2  # a bad answer did not replace the last good one

    scen = load_scenario("demo")
    seqs = [answer(False), answer(False), answer(True), answer(True), answer(True),
            answer(False)]
    results = []
    for cached in (True, False):
        ctl = XschedController(XschedInstall(tmp_path, "--xsched"), scen)
        s = Session(scen)
        ph = s.new_phase("xsched")
        ph.xsched = M.Xsched(root="")
        stats = {w.name: QueueStats() for w in scen.workloads}
        ctl.evidence.stats = stats
        runs = [("high", (11,), "running", 3), ("low", (22,), "running", 3)]
        cache = AnswerCache()
        for i, raw in enumerate(seqs):
            ans = cache.answer(raw) if cached else Answer.of(decode_xqueues(raw))
            ctl.evidence.ingest(ph, ans, stats, ph.t_start + 0.1 * (i + 1), runs)
        results.append(([(st.polls, st.samples, st.ready, st.suspended, st.handles)
                          for st in stats.values()], ph.xsched.workloads["low"].lane,
                         [x.workloads for x in ph.xsched.samples]))
        s.close()
    assert results[0] == results[1]
    high, low = results[0][0]
    assert high[:4] == (6, 6, 3, 0) and low[:4] == (6, 6, 6, 3)


def test_polls_are_jittered_so_a_periodic_workload_is_not_aliased() -> None:
    """HIGH at 20 req/s with 4 ms of GPU work (busy 8% of the time) sampled every
    100 ms: a fixed interval sees the same point of its cycle every time (here: never
    busy, so 'never seen ready'); the jittered one sees it busy in about 8% of polls,
    as ``expected_ready_polls`` assumes."""
    import random

    from xwatch.core.xsched.xqueues.polling import next_poll_wait

    def busy(t: float) -> bool:
        return (t % 0.05) < 0.004

    def sample(waits: list[float], start: float = 0.02) -> float:
        t, seen = start, 0
        for w in waits:
            seen += busy(t)
            t += w
        return seen / len(waits)

    n = 2000
    assert sample([0.1] * n) == 0.0  # phase-locked, in the idle part of the cycle
    rng = random.Random(3)
    waits = [next_poll_wait(0.1, 0.0, rng) for _ in range(n)]
    assert min(waits) >= 0.05 and max(waits) <= 0.15
    assert abs(sum(waits) / n - 0.1) < 0.003  # the mean interval is the poll interval
    assert 0.06 <= sample(waits) <= 0.10
    assert next_poll_wait(0.1, 0.2, rng) == 0.02  # a slow poll: the next soon, not at once


def test_polls_slow_to_the_settled_pace_only_once_nothing_waits_on_them(tmp_path: Path) -> None:
    """The pace: ``poll_s`` while a running workload's verdict is pending, for the
    measurement's first FAST_FIRST_S, CHANGE_FAST_S after a live change and while polls
    fail; ``settled_s`` otherwise. The negative verdict's expected ready polls use the
    mean interval of the polls actually taken, whatever the pace was."""
    from collections import deque

    from xwatch.core.xsched.client import XQueueRow
    from xwatch.core.xsched.xqueues.polling import Answer, Fails, Poll

    assert load_scenario("demo").xsched.settled_ms == 200
    ctl, s, ph, stats = _controller_in_phase(tmp_path)
    assert (ctl.pace.fast_s, ctl.pace.settled_s) == (0.1, 0.2)
    for r in ph.runs.values():
        r.state = "running"
    ph.runs["high"].pid, ph.runs["low"].pid = 11, 22
    fails = Fails()
    t0 = ph.t_start
    ready = Answer.of([XQueueRow(handle=1, pid=11, ready=True),
                       XQueueRow(handle=2, pid=22, ready=True)])

    def drain(ans: Answer | Exception, t: float) -> None:
        ctl.evidence.drain(ph, deque([Poll(t, None, ans, [(n, (r.pid,), r.state, 1)
                                                     for n, r in ph.runs.items()])]),
                   stats, fails)

    for r in ph.runs.values():
        r.rec.add(5.0, t0 + 0.5)  # requests completing: the verdicts can be judged
    drain(ready, t0 + 1)
    assert {w.status for w in ph.xsched.workloads.values()} == {"engaged"}
    assert ctl.pace.now_s == 0.1  # not measuring yet
    ph.t_measure = t0 - ctl.pace.FAST_FIRST_S  # measuring long enough
    drain(ready, t0 + 2)
    assert ctl.pace.now_s == 0.2
    ctl._annotate("high: priority -> 3")  # a live change: fast again for a while
    assert ctl.pace.now_s == 0.1
    drain(ready, t0 + 3)
    assert ctl.pace.now_s == 0.1
    ctl.pace._fast_until = 0.0
    drain(XschedError("xserver at x not reachable: refused"), t0 + 4)
    assert ctl.pace.now_s == 0.1  # a failing poll: fast until one answers
    drain(ready, t0 + 5)
    assert ctl.pace.now_s == 0.2
    ph.runs["low"].state = "starting"  # pending while not running does not hold the pace
    stats["low"] = QueueStats()
    drain(Answer.of([XQueueRow(handle=1, pid=11, ready=True)]), t0 + 6)
    assert ctl.pace.now_s == 0.2
    ph.runs["low"].state = "running"  # pending while running does
    drain(Answer.of([XQueueRow(handle=1, pid=11, ready=True)]), t0 + 7)
    assert ph.xsched.workloads["low"].status == "pending" and ctl.pace.now_s == 0.1
    s.close()
    # the mean interval of the polls taken, not the configured one
    q = QueueStats(active_polls=11, active_first=100.0, active_last=102.0)
    assert q.mean_gap(0.1) == pytest.approx(0.2)
    assert QueueStats(active_polls=1, active_first=5.0, active_last=5.0).mean_gap(0.1) == 0.1


def test_settled_poll_ms_defaults_to_the_slower_pace_and_is_never_faster(tmp_path: Path) -> None:
    from xwatch.errors import ScenarioError

    f = tmp_path / "s.toml"
    body = '[[workload]]\nname="h"\npriority="high"\nmodel="resnet18"\n'
    f.write_text(body + "[xsched]\npoll_ms = 500\n")
    assert load_scenario(str(f)).xsched.settled_ms == 500
    f.write_text(body + "[xsched]\npoll_ms = 50\nsettled_poll_ms = 50\n")
    assert load_scenario(str(f)).xsched.settled_ms == 50
    f.write_text(body + "[xsched]\npoll_ms = 300\nsettled_poll_ms = 200\n")
    with pytest.raises(ScenarioError, match=r"xsched\.settled_poll_ms.*faster than poll_ms \(300\)"):
        load_scenario(str(f))


def test_a_process_that_left_or_is_leaving_is_told_apart_from_a_live_one() -> None:
    import os
    import subprocess
    import sys

    from xwatch.core.xsched.xqueues.polling import Answer, Stalls, leaving

    assert not leaving(os.getpid())
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    while True:  # a zombie until reaped
        try:
            with open(f"/proc/{p.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except OSError:
            break
    assert leaving(p.pid)
    p.wait()
    assert leaving(p.pid)  # gone
    s = Stalls()
    s.answered(Answer({os.getpid(): [], p.pid: [object()] * 3}), 10.0)  # type: ignore[list-item]
    assert "left just before" in s.began(11.0, [("low", (p.pid,), "finished", 5)], OSError("x"))
    assert s.limit(2.0, True) == Stalls.LIMIT_S and s.limit(2.0, False) == 2.0
    assert s.answered(Answer({}), 19.5) == \
        f"xserver stalled 8.5 s after pid {p.pid} (low's copy, 3 XQueues) left"
    s.began(20.0, [], OSError("x"))  # nobody left: the usual limit, no line after
    assert s.limit(2.0, True) == 2.0 and s.answered(Answer({}), 21.0) is None
