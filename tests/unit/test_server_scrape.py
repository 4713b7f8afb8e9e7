"""The server's own view (``engine.servers.scrape``, ``analysis.server_view``): the
Prometheus text read as prometheus_client's own parser reads it, the histogram's
quantile as an independent interpolation computes it, the phase's sum of scrapes, and
the sentence the console and the report print."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from xwatch.core import model as M
from xwatch.core.analysis.server_view import server_line
from xwatch.core.engine.protocol import LineParser
from xwatch.core.engine.servers import scrape
from xwatch.core.engine.servers.scrape import Reading, Scraper, parse, quantile
from xwatch.core.model import events

BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0)


def vllm_text(ttfts: list[float], waiting: float, tokens: float) -> str:
    """vLLM's names through prometheus_client (as vLLM exports them), two models' label
    sets, and families xwatch does not read."""
    reg = CollectorRegistry()
    h = Histogram("vllm:time_to_first_token_seconds", "ttft", ["model_name"], registry=reg,
                  buckets=BUCKETS)
    g = Gauge("vllm:num_requests_waiting", "w", ["model_name"], registry=reg)
    r = Gauge("vllm:num_requests_running", "r", ["model_name"], registry=reg)
    c = Counter("vllm:generation_tokens", "g", ["model_name"], registry=reg)
    Counter("vllm:request_success", "s", ["model_name", "finished_reason"],
            registry=reg).labels("a", "stop").inc(3)
    for i, x in enumerate(ttfts):
        h.labels(("a", "b")[i % 2]).observe(x)
    g.labels("a").set(waiting)
    g.labels("b").set(1)
    r.labels("a").set(2)
    c.labels("a").inc(tokens)
    return generate_latest(reg).decode()


def test_the_parser_reads_what_prometheus_clients_parser_reads() -> None:
    rnd = random.Random(3)
    ttfts = [rnd.expovariate(1 / 0.05) for _ in range(500)]
    text = vllm_text(ttfts, 4, 1234)
    got = parse(text)
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    ttft = fams["vllm:time_to_first_token_seconds"]
    want: dict[float, float] = {}
    for s in ttft.samples:
        if s.name.endswith("_bucket"):
            le = float(s.labels["le"])
            want[le] = want.get(le, 0.0) + s.value
    assert got.buckets["vllm:time_to_first_token_seconds"] == want
    assert got.values["vllm:time_to_first_token_seconds_count"] == 500
    assert got.values["vllm:time_to_first_token_seconds_sum"] == pytest.approx(sum(ttfts))
    assert got.values["vllm:num_requests_waiting"] == 5  # summed over the two models
    assert got.values["vllm:generation_tokens_total"] == 1234
    assert not any(k.startswith("vllm:request_success") for k in got.values)
    assert scrape.engine_of(got) is scrape.ENGINES[0]


def test_the_quantile_is_prometheus_interpolation_within_the_bucket() -> None:
    """Against an independent computation: the smallest value at which the
    piecewise-linear cumulative curve through (0, 0) and each (bound, count) (numpy's
    interp) reaches the rank, found by bisection; and the
    true sample quantile lies inside the bucket the estimate is in."""
    rnd = random.Random(11)
    for trial in range(40):
        xs = sorted(rnd.lognormvariate(-3.0, 1.0) for _ in range(rnd.randint(1, 400)))
        bounds = [*BUCKETS, float("inf")]
        cum = [float(sum(x <= b for x in xs)) for b in bounds]
        for q in (0.5, 0.9, 0.99):
            got = quantile(q, list(zip(bounds, cum)))
            assert got is not None
            rank = q * len(xs)
            if rank > cum[-2]:  # in the +Inf bucket: the highest finite bound
                assert got == BUCKETS[-1]
                continue
            # the smallest x where the curve reaches the rank, by bisection
            lo, hi = 0.0, BUCKETS[-1]
            for _ in range(200):
                mid = (lo + hi) / 2
                if np.interp(mid, [0.0, *BUCKETS], [0.0, *cum[:-1]]) >= rank:
                    hi = mid
                else:
                    lo = mid
            assert got == pytest.approx(hi, abs=1e-9), trial
            true = xs[max(0, int(np.ceil(rank)) - 1)]
            i = next(i for i, b in enumerate(bounds) if got <= b)
            assert (bounds[i - 1] if i else 0.0) <= true <= bounds[i]
    assert quantile(0.5, [(0.1, 0.0), (float("inf"), 0.0)]) is None


def reading(t: float, ttfts: list[float], waiting: float, tokens: float) -> Reading:
    return parse(vllm_text(ttfts, waiting, tokens), t)


def test_the_phase_is_the_increase_from_the_first_scrape() -> None:
    """Warm-up requests before the baseline are not counted; gauges are the later
    scrapes' mean and maximum; rates run from the measurement's start."""
    warm = [0.5, 0.5, 0.5]
    s = Scraper("http://127.0.0.1:1")
    readings = iter([reading(10.0, warm, 0, 100),
                     reading(12.0, [*warm, *[0.05] * 10], 2, 300),
                     reading(13.0, [*warm, *[0.05] * 10, *[0.07] * 10], 0, 500)])
    s.fetch = lambda: next(readings)  # type: ignore[method-assign]
    s.scrape()
    assert s.view().exported and s.view().ttft is None
    s.t0 = 11.0
    s.scrape()
    s.scrape()
    v = s.view()
    assert v.engine == "vllm" and v.scrapes == 3 and v.span_s == 2.0
    assert v.ttft is not None and v.ttft.count == 20
    assert v.ttft.mean_ms == pytest.approx(60.0)
    # 10 in (0.04, 0.06], 10 in (0.06, 0.08]: P50 is the 10th of 20, the top of the first
    assert v.ttft.p50_ms == pytest.approx(60.0) and v.ttft.p99_ms == pytest.approx(79.6)
    assert v.waiting == M.ServerGauge(metric="vllm:num_requests_waiting", samples=2,
                                      mean=2.0, max=3.0)  # + 1 of the other model
    assert v.generation_tokens_per_s == 200.0


def test_a_server_without_metrics_is_named() -> None:
    s = Scraper("http://127.0.0.1:9", "/metrics")  # the discard port: refused
    s.scrape()
    v = s.view()
    assert not v.exported and v.note.startswith("GET /metrics: URLError")
    assert server_line(v, None) == f"the server's own metrics: not exported ({v.note})"
    got = events.event_of(json.loads(events.line(events.server(v, 1.0))))
    assert isinstance(got, events.Server) and events.view_of(got) == v


def test_the_server_event_is_the_view_flat_with_its_type_and_time() -> None:
    """The load generator's typed ``server`` event: the snapshot's view, flat, read back
    whole by the supervisor (``event_of``), nested parts included; one this xwatch cannot
    read is ignored, as it always was (neither an event nor a malformed line)."""
    v = M.ServerView(engine="vllm", exported=True, scrapes=3, span_s=2.0,
                     ttft=M.ServerLatency(metric="x", count=4, p50_ms=50.0, p99_ms=59.8),
                     running=M.ServerGauge(metric="r", samples=2, mean=1.5, max=2.0))
    e = json.loads(events.line(events.server(v, 12.3456789)))
    assert e["type"] == "server" and e["t"] == 12.345679 and e["engine"] == "vllm"
    assert e["ttft"]["p99_ms"] == 59.8
    got = events.event_of(e)
    assert isinstance(got, events.Server) and got.t == 12.345679
    assert events.view_of(got) == v
    with pytest.raises(events.Unreadable):
        events.event_of({"type": "server", "t": 1.0, "scrapes": "many"})
    p = LineParser()
    r = p.feed(b'{"type":"server","t":1.0,"scrapes":"many"}\n{"latency_ms":1}\n')
    assert len(r.events) == 1 and r.malformed == []


def test_the_line_sets_the_servers_ttft_beside_the_clients() -> None:
    v = M.ServerView(engine="vllm", exported=True, scrapes=12,
                     ttft=M.ServerLatency(metric="x", count=40, p50_ms=50.0, p99_ms=59.8),
                     waiting=M.ServerGauge(metric="w", samples=11, mean=0.5, max=3.0),
                     generation_tokens_per_s=321.04)
    client = M.Summary(p50=62.25, p99=80.0)
    assert server_line(v, client) == (
        "the server's own metrics (vllm /metrics, 12 scrapes): TTFT P50 50.0 / P99 59.8 ms "
        "over 40 (client: 62.2 / 80.0 ms; +12.2 ms at P50 outside the engine); waiting mean "
        "0.5, max 3; 321.0 tokens/s generated")
    llama = M.ServerView(engine="llama.cpp", exported=True, scrapes=3,
                         running=M.ServerGauge(metric="r", samples=2, mean=1.5, max=2.0))
    assert server_line(llama, client) == (
        "the server's own metrics (llama.cpp /metrics, 3 scrapes): TTFT not exported; "
        "running mean 1.5, max 2")
    assert server_line(None, client) is None
