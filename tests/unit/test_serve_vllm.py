"""The server workload's measures as vLLM defines them, on plain inputs: which chunk is
an output chunk, vLLM's goodput against a count made independently, gamma arrivals by
their moments, and the saturation rule on requests answered."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import pytest

from xwatch.core import model as M
from xwatch.core.analysis.saturation import saturation
from xwatch.core.engine.live.goodput import SloCounter
from xwatch.core.engine.protocol import LineParser
from xwatch.core.engine.serve import openai
from xwatch.core.engine.worker.arrivals import Schedule, due_times
from xwatch.core.model import events
from xwatch.errors import ScenarioError
from xwatch.scenario import load_scenario


def chat(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice: dict[str, object] = {"index": 0, "delta": delta}
    if finish:
        choice["finish_reason"] = finish
    return b"data: " + json.dumps({"choices": [choice]}).encode()


@pytest.mark.parametrize(("delta", "output", "token"), [
    ({"content": "Hi"}, True, True),
    ({"reasoning": "think"}, True, True),
    ({"reasoning_content": "think"}, True, True),
    ({"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]}, True, True),
    ({"content": ""}, True, False),  # vLLM's finish chunk: a gap, no token
    ({"role": "assistant", "content": ""}, False, False),  # the opening chunk
    ({"role": "assistant"}, False, False),
    ({}, False, False),  # OpenAI's finish chunk
    ({"content": None}, False, False),
    ({"tool_calls": []}, False, False),
])
def test_an_output_chunk_is_content_reasoning_or_tool_calls(
        delta: dict[str, object], output: bool, token: bool) -> None:
    got = openai.parse_event(chat(delta, "stop"))
    assert isinstance(got, openai.Chunk) and got.output is output and got.token is token


def test_completions_count_every_chunk_with_a_choice_and_never_usage() -> None:
    got = openai.parse_event(b'data: {"choices":[{"text":"","index":0}]}')
    assert isinstance(got, openai.Chunk) and got.output and not got.token
    got = openai.parse_event(b'data: {"choices":[],"usage":{"completion_tokens":3}}')
    assert isinstance(got, openai.Chunk) and not got.output and got.completion_tokens == 3


def test_vllms_goodput_against_an_independent_count() -> None:
    """Random requests (some failed, some of one token, some without a metric) against
    every SLO set: the good ones counted here by vLLM's rule, written out again."""
    rng = random.Random(3)
    evs: list[dict[str, object]] = []
    for _ in range(3000):
        e: dict[str, object] = {"latency_ms": rng.uniform(50, 900),
                                "ttft_ms": rng.uniform(10, 400)}
        if rng.random() < 0.8:
            e["tpot_ms"] = rng.uniform(5, 60)  # else one token: vLLM's TPOT is 0
        if rng.random() < 0.15:
            e = {"ok": False, "latency_ms": rng.uniform(1, 100)}
        evs.append(e)
    for slos in (("ttft:200",), ("tpot:30",), ("e2el:500",), ("ttft:200", "tpot:30"),
                 ("ttft:200", "tpot:30", "e2el:500")):
        bounds = dict((k, float(v)) for k, v in (s.split(":") for s in slos))
        truth = 0
        for e in evs:
            if e.get("ok") is False:
                continue
            vals = {"ttft": e["ttft_ms"], "tpot": e.get("tpot_ms", 0.0),
                    "e2el": e["latency_ms"]}
            truth += all(vals[k] <= b for k, b in bounds.items())  # type: ignore[operator]
        c = SloCounter(slos)
        for ev in events.events_of(evs):  # type: ignore[arg-type]
            assert isinstance(ev, events.Request)
            c.add(ev)
        ok = sum(e.get("ok") is not False for e in evs)
        failed = len(evs) - ok
        g = c.snapshot(ok, failed, 7, 30.0)
        assert g.good == truth and 0 < truth < ok
        assert g.requests == len(evs) + 7
        assert g.share == round(truth / (len(evs) + 7), 6)
        assert g.requests_per_s == round(truth / 30.0, 6)


@pytest.mark.parametrize("k", [0.25, 1.0, 4.0])
def test_gamma_arrivals_have_vllms_moments(k: float) -> None:
    """Gaps of shape k and scale 1/(rate k): mean 1/rate, variance 1/(rate^2 k); within
    5 standard errors over 40000 gaps."""
    rate, n = 20.0, 40000
    s = Schedule(0.0, rate, "gamma", 11, burstiness=k)
    t = [s.next() for _ in range(n + 1)]
    gaps = [b - a for a, b in itertools.pairwise(t)]
    mean = sum(gaps) / n
    var = sum((g - mean) ** 2 for g in gaps) / (n - 1)
    assert t[0] == 0.0
    assert abs(mean - 1 / rate) < 5 * math.sqrt(1 / (rate**2 * k) / n)
    # the variance of a sample variance of gamma gaps: (mu4 - sigma^4)/n, mu4 = (3k+6)θ^4 k
    theta = 1 / (rate * k)
    sd_var = math.sqrt(((3 * k + 6) * k * theta**4 - (k * theta**2) ** 2) / n)
    assert abs(var - k * theta**2) < 5 * sd_var
    # xwatch's count of unfinished requests replays the same schedule
    assert due_times(0.0, rate, "gamma", 11, t[100], burstiness=k) == t[:101]


def server(count: int, errors: int, unfinished: int, causes: dict[str, int]) -> M.Workload:
    return M.Workload(count=count, errors=errors, target_rate=10.0, measured_s=10.0,
                      unfinished=M.Unfinished(count=unfinished), error_causes=causes,
                      hello={"server": ["x"]})


def test_saturation_counts_failures_as_answers_and_names_them() -> None:
    """1 in 5 failing at the offered rate: answered in full, not saturated; a server that
    answers 40 of 100 is, and its failures are named in the message."""
    assert saturation(server(80, 20, 1, {"HTTP 500": 20})) is None
    msg = saturation(server(30, 10, 50, {"HTTP 500": 10}))
    assert msg is not None and "answered 4.0 req/s" in msg
    assert "10 failed: HTTP 500 (10)" in msg


def test_the_generators_events_read_as_the_protocols_lines() -> None:
    ok = events.Request(seq=3, t=1.5, latency_ms=10.0, service_ms=9.0, sched_delay_ms=1.0,
                        late=False, batch=1, ttft_ms=2.0, itl_ms=[1.0, 2.0], tail_ms=0.5,
                        output_tokens=3, chunks=3)
    d = json.loads(events.line(ok))
    assert "ok" not in d and "type" not in d and d["itl_ms"] == [1.0, 2.0]
    assert list(d)[:3] == ["seq", "t", "latency_ms"]
    bad = json.loads(events.line(events.Request(t=1.0, latency_ms=4.0, late=False, batch=1,
                                                ok=False, error="x", cause="HTTP 500")))
    assert bad["ok"] is False and "ttft_ms" not in bad
    assert json.loads(events.line(events.Bye(count=1, errors=0, output_tokens=3, t=2.0,
                                             stopped=True)))["type"] == "bye"
    # typed end to end: what the generator writes, xwatch reads back as the same structs
    hello = events.Hello(info={"v": 1, "name": "chat", "burstiness": 0.5},
                         stages={"python": 1.0})
    lines = "".join(events.line(e) for e in (hello, ok, events.Drain(sent=3, done=True)))
    assert json.loads(events.line(hello)) == {"type": "hello", "v": 1, "name": "chat",
                                              "burstiness": 0.5, "stages": {"python": 1.0}}
    assert LineParser().feed(lines.encode()).events == [hello, ok,
                                                        events.Drain(sent=3, done=True)]


@pytest.mark.parametrize(("extra", "must"), [
    ('goodput = ["ttft:200", "e2el:2000"]\narrival = "gamma"\nburstiness = 0.5', None),
    ('goodput = ["latency:200"]', ["chat", "goodput", "ttft, tpot, e2el"]),
    ('goodput = ["ttft:-1"]', ["goodput", "positive"]),
    ('goodput = ["ttft:1", "ttft:2"]', ["goodput", "twice"]),
    ("burstiness = 0.5", ["burstiness", "arrival = 'gamma'", "fixed, poisson, gamma"]),
])
def test_goodput_and_burstiness_keys(tmp_path: Path, extra: str, must: list[str] | None
                                     ) -> None:
    f = tmp_path / "s.toml"
    f.write_text(f"""
[[workload]]
name = "chat"
priority = "high"
server = ["srv"]
rate = 4
{extra}
""")
    if must is None:
        w = load_scenario(str(f)).workloads[0]
        assert w.goodput == ("ttft:200", "e2el:2000") and w.burstiness == 0.5
        assert w.arrival == "gamma"
        return
    with pytest.raises(ScenarioError) as ei:
        load_scenario(str(f))
    text = str(ei.value) + getattr(ei.value, "title", "")
    assert all(m in text for m in must), text
