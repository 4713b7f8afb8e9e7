"""The server workload's parts: OpenAI's stream lines, request bodies, prompts and
lengths, the built-in server scenarios, and a server's queues read from its process tree."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from xwatch.core.engine.serve import openai
from xwatch.core.engine.serve.prompts import Asks, DatasetError, load_sharegpt
from xwatch.core.model.events import events_of


def test_chat_and_completion_chunks_are_read_as_the_api_sends_them() -> None:
    role = b'data: {"choices":[{"delta":{"role":"assistant"},"index":0}]}'
    got = openai.parse_event(role)
    assert isinstance(got, openai.Chunk) and got.text == "" and not got.finished
    got = openai.parse_event(b'data: {"choices":[{"delta":{"content":"Hi"},"index":0}]}\n')
    assert isinstance(got, openai.Chunk) and got.text == "Hi"
    got = openai.parse_event(b'data: {"choices":[{"text":"x","index":0}]}')
    assert isinstance(got, openai.Chunk) and got.text == "x"
    last = (b'data: {"choices":[{"delta":{},"index":0,"finish_reason":"length"}],'
            b'"usage":{"completion_tokens":8,"prompt_tokens":3}}')
    got = openai.parse_event(last)
    assert isinstance(got, openai.Chunk) and got.finished and got.completion_tokens == 8
    assert openai.parse_event(b"data: [DONE]") is openai.DONE
    assert openai.parse_event(b"") is None and openai.parse_event(b": keep-alive") is None


@pytest.mark.parametrize("line", [b"<html>", b"data: not json", b'data: {"result": 1}',
                                  b"data: [1, 2]"])
def test_answers_that_are_not_openais_are_named(line: bytes) -> None:
    with pytest.raises(openai.NotOpenAI):
        openai.parse_event(line)


def test_bodies_follow_each_api() -> None:
    chat = openai.body("openai-chat", "hello", 5, "m", False)
    assert chat["messages"] == [{"role": "user", "content": "hello"}] and chat["stream"]
    assert chat["max_tokens"] == 5 and chat["model"] == "m" and "ignore_eos" not in chat
    comp = openai.body("openai-completions", "hello", 5, None, True)
    assert comp["prompt"] == "hello" and "model" not in comp and comp["ignore_eos"] is True


def test_lengths_fixed_drawn_and_the_same_for_a_seed() -> None:
    fixed = Asks(10, 4)
    assert [fixed.ask(i).max_tokens for i in range(5)] == [4] * 5
    assert fixed.ask(0).prompt_words == 10 == len(fixed.ask(0).prompt.split())
    drawn = Asks(100, 50, range_ratio=0.5, seed=3)
    outs = [drawn.ask(i).max_tokens for i in range(200)]
    assert min(outs) >= 25 and max(outs) <= 75 and len(set(outs)) > 10
    assert outs == [Asks(100, 50, 0.5, 3).ask(i).max_tokens for i in range(200)]


def test_sharegpt_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "d.jsonl"
    rows = [{"conversations": [{"from": "human", "value": "what is a gpu"},
                               {"from": "gpt", "value": "a b c d e f"}]},
            {"conversations": [{"from": "gpt", "value": "no question"}]},
            {"conversations": [{"role": "user", "content": "hi"},
                               {"role": "assistant", "content": " ".join(["w"] * 900)}]}]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    asks = load_sharegpt(str(f), cap_tokens=512)
    assert [(a.prompt, a.max_tokens) for a in asks] == [("what is a gpu", 6), ("hi", 512)]
    cyc = Asks(1, 1, dataset=asks)
    assert cyc.ask(2).prompt == "what is a gpu"
    (tmp_path / "bad.jsonl").write_text('{"text": "x"}\n')
    with pytest.raises(DatasetError, match="no 'conversations' list"):
        load_sharegpt(str(tmp_path / "bad.jsonl"), 10)


def test_serve_own_takes_the_server_from_the_command_line() -> None:
    from xwatch.errors import UsageError
    from xwatch.scenario import load_scenario

    own = load_scenario("serve-own")
    with pytest.raises(UsageError, match="--server"):
        own.with_server(None, None)
    s = own.with_server("vllm serve m --port {port}", "m").workload("chat")
    assert s.server == ("vllm", "serve", "m", "--port", "{port}") and s.served_model == "m"
    assert s.port_auto
    with pytest.raises(UsageError, match=r"must say \{port\} where the port goes"):
        own.with_server("vllm serve m --port 8000", "m")
    with pytest.raises(UsageError, match="no server workload"):
        load_scenario("demo").with_server("x", None)
    train = load_scenario("serve-train").workload("chat")
    assert train.kind == "server" and train.rate == 4 and train.server[0] == "{python}"


def test_a_servers_queues_are_those_of_its_process_tree() -> None:
    import os
    import subprocess
    import sys
    from types import SimpleNamespace

    from xwatch.core.xsched.client import XQueueRow
    from xwatch.core.xsched.xqueues.polling import Answer, ProcessTrees

    ans = Answer.of([XQueueRow(handle=1, pid=11, ready=True), XQueueRow(handle=2, pid=12),
                     XQueueRow(handle=3, pid=12, ready=True), XQueueRow(handle=4, pid=99)])
    c = ans.counts_of((10, 11, 12))
    assert (c.queues, c.ready, sorted(c.handles)) == (3, 2, [1, 2, 3])
    assert ans.counts_of((11,)) == ans.counts(11) and ans.counts_of((5, 6)).queues == 0
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        me = os.getpid()
        trees = ProcessTrees()
        server = SimpleNamespace(pid=me, spec=SimpleNamespace(server=("x",)))
        plain = SimpleNamespace(pid=me, spec=SimpleNamespace(server=None))
        assert child.pid in trees.of(server) and trees.of(server)[0] == me
        assert trees.of(plain) == (me,)  # other workloads: their own pid alone
        assert trees.of(SimpleNamespace(pid=None, spec=plain.spec)) == ()
    finally:
        child.kill()
        child.wait()


def test_a_servers_unfinished_requests_count_the_ones_that_end_out_of_order(
        tmp_path: Path) -> None:
    """Requests 3 and 6 still in flight while 7 is counted: both are unfinished (with
    every request after 7 that was due), not skipped because a higher number ended."""
    import time

    from xwatch.core.engine.live.phase import Phase
    from xwatch.core.engine.live.session import Session
    from xwatch.scenario import parse_scenario

    scen = parse_scenario({"duration_s": 5, "workload": [{
        "name": "chat", "priority": "high", "server": ["true"], "port": 18099,
        "rate": 10, "arrival": "fixed"}]}, "<test>")
    session = Session(scen, spool_dir=str(tmp_path / "spool"))
    phase = Phase(session, 0, "native", "native")
    run = phase.runs["chat"]
    t0 = time.monotonic() - 2.0
    run.ready_t0 = t0
    events = [{"type": "req", "seq": s, "t": t0 + s / 10 + 0.05, "latency_ms": 50.0}
              for s in (1, 2, 4, 7, 5)]
    run.on_events(events_of(events[:3]))
    run.on_events(events_of(events[3:]))
    run.count_unfinished(t0 + 1.05)  # requests 1..11 were due (t0 + (n - 1) / 10)
    assert run.rec.count == 5
    assert run.unfinished == 6  # 3, 6, 8, 9, 10, 11
    assert run.unfinished_m is not None and run.unfinished_m.n == 6
    assert run.unfinished_m.max == pytest.approx((1.05 - 0.2) * 1e3)  # request 3's wait
    run.on_events(events_of([{"type": "req", "seq": 3, "t": t0 + 1.0, "latency_ms": 800.0}]))
    run.count_unfinished(t0 + 1.05)
    assert run.unfinished == 5


def _one_server(rate: float, service_s: float, seconds: float, rng: random.Random
                ) -> tuple[int, int]:
    """A server that serves one request at a time under Poisson arrivals: (completed,
    unfinished) at ``seconds``."""
    t = free = 0.0
    done = left = 0
    while True:
        t += rng.expovariate(rate)
        if t > seconds:
            return done, left
        free = max(free, t) + service_s
        if free <= seconds:
            done += 1
        else:
            left += 1


def test_the_saturation_rule_by_simulation() -> None:
    """Against a known truth: a one-at-a-time server at 80% load is (almost) never
    called saturated; one offered twice what it serves always is (12 s at 4 req/s, the
    H100 run's phases; and 60 s)."""
    from xwatch.core.analysis.saturation import saturated

    rng = random.Random(5)
    for seconds in (12.0, 60.0):
        calm = sum(saturated(4.0, d, seconds, u)
                   for d, u in (_one_server(4.0, 0.2, seconds, rng) for _ in range(2000)))
        assert calm <= 2000 * 0.002, calm
        busy = [_one_server(4.0, 0.5, seconds, rng) for _ in range(2000)]
        hit = sum(saturated(4.0, d, seconds, u) for d, u in busy)
        assert hit >= 2000 * 0.99, hit
    assert saturated(4.0, 15, 12.0, 31)  # the H100 phase: served 1.25 of 4 req/s
    assert not saturated(4.0, 15, 12.0, 2)  # no backlog at the end: not this rule
    assert not saturated(None, 0, 12.0, 40) and not saturated(4.0, 0, 1.0, 4)


def test_the_local_model_never_generates_a_token_without_text(tmp_path: Path) -> None:
    """On an H100 3-6 streams a phase carried no text: the random model repeated a
    byte-level piece of a multi-byte character, which decodes to nothing alone. Every
    such id (and every special token) is suppressed in its generation config."""
    pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from xwatch.core.engine.servers.localmodel import SPECIAL, make

    path = make("tiny", root=tmp_path)
    tok = transformers.AutoTokenizer.from_pretrained(path)
    gen = json.loads((path / "generation_config.json").read_text())
    pieces = {i for i in range(len(tok)) if not (t := tok.decode([i])) or "\ufffd" in t}
    assert len(pieces) >= 100  # the 0x80-0xff byte pieces at least
    assert set(gen["suppress_tokens"]) == pieces | set(range(len(SPECIAL)))


def test_llama_without_llama_cpp_names_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """``localmodel gguf|llama`` without llama.cpp: the variable is named before any
    model is made (the server workload's failure quotes the line)."""
    from xwatch.core.engine.servers import localmodel

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(localmodel.LLAMA_CPP_ENV, raising=False)
    monkeypatch.delenv(localmodel.LLAMA_SERVER_ENV, raising=False)
    for verb in ("gguf", "llama"):
        with pytest.raises(SystemExit, match=f"set {localmodel.LLAMA_CPP_ENV} to llama.cpp"):
            localmodel.main([verb, "tiny"])
    assert not any(tmp_path.rglob("config.json"))
