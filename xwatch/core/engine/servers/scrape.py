"""A server's own view: its Prometheus metrics (vLLM's and SGLang's ``/metrics``,
llama.cpp's with ``--metrics``), scraped by the load generator during a phase and
summed up over the phase as the model's ``ServerView``: the server-side TTFT and queue
time (histograms: their buckets' increase since the phase's first scrape, percentiles
interpolated within a bucket as Prometheus' ``histogram_quantile`` does), the queue
and the requests running (gauges, sampled at each scrape) and the tokens per second.
Set beside the client-side TTFT, it shows the time a request spends outside the engine
(the HTTP front end, the network, the generator). It lives beside the servers xwatch
ships (what xwatch knows of inference servers: their metric names); the load generator
(``serve.loadgen``) runs the scrapes and sends each view as its ``server`` event.

Only the known names are read (``ENGINES``; a line of any other family is skipped
before it is split), so a scrape costs a few hundred microseconds. The first scrape is
taken after the warm-up, before the first measured request; then one every
``SCRAPE_S``. A server without metrics (HTTP 404, 501, ...) is "not exported", named
with its answer; a scrape that fails mid-phase is counted, never fatal.
"""

from __future__ import annotations

import asyncio
import math
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

from xwatch.core import model as M

PATH = "/metrics"
SCRAPE_S = 1.0  # one scrape a second: a GET of a few kB, parsed off the event loop
TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Engine:
    """One server's metric names (``None``: it exports no such metric)."""

    name: str
    running: str  # gauge: requests being processed (the engine's batch)
    waiting: str  # gauge: requests queued inside the engine
    prompt_tokens: str  # counter
    generation_tokens: str  # counter
    ttft: str | None = None  # histogram (seconds)
    queue_time: str | None = None  # histogram (seconds)


#: vLLM: docs/design/metrics.md (V1); SGLang: its production metrics page and
#: ``metrics_collector.py``; llama.cpp: ``tools/server/server-task.cpp``
#: (``server_task_result_metrics::to_metrics``), which exports no latency histogram
ENGINES = (
    Engine("vllm", "vllm:num_requests_running", "vllm:num_requests_waiting",
           "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
           "vllm:time_to_first_token_seconds", "vllm:request_queue_time_seconds"),
    Engine("sglang", "sglang:num_running_reqs", "sglang:num_queue_reqs",
           "sglang:prompt_tokens_total", "sglang:generation_tokens_total",
           "sglang:time_to_first_token_seconds", "sglang:queue_time_seconds"),
    Engine("llama.cpp", "llamacpp:requests_processing", "llamacpp:requests_deferred",
           "llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total"),
)
_HISTS = tuple(h for e in ENGINES for h in (e.ttft, e.queue_time) if h)
_WANTED = tuple(n for e in ENGINES for n in (e.running, e.waiting, e.prompt_tokens,
                                             e.generation_tokens)) + _HISTS


@dataclass
class Reading:
    """One scrape, reduced to the known names: plain values (summed over their label
    sets, e.g. vLLM's ``model_name`` or SGLang's ranks) and histograms (cumulative
    bucket counts by upper bound, their count and sum, summed the same way)."""

    t: float
    values: dict[str, float] = field(default_factory=dict)
    buckets: dict[str, dict[float, float]] = field(default_factory=dict)


def _le(labels: str) -> float | None:
    i = labels.find('le="')
    if i < 0:
        return None
    j = labels.find('"', i + 4)
    return float(labels[i + 4:j])  # "+Inf" reads as inf


def parse(text: str, t: float = 0.0) -> Reading:
    """The Prometheus text format's sample lines of the known names (comments and
    other families skipped)."""
    out = Reading(t)
    values, buckets = out.values, out.buckets
    for line in text.splitlines():
        if not line.startswith(_WANTED):
            continue
        brace = line.find("{")
        if brace >= 0:
            end = line.rfind("}")
            name, labels, rest = line[:brace], line[brace + 1:end], line[end + 1:]
        else:
            name, _, rest = line.partition(" ")
            labels = ""
        parts = rest.split()
        if not parts:
            continue
        try:
            v = float(parts[0])
        except ValueError:
            continue
        if name.endswith("_bucket") and name[:-7] in _HISTS:
            le = _le(labels)
            if le is not None:
                b = buckets.setdefault(name[:-7], {})
                b[le] = b.get(le, 0.0) + v
                continue
        values[name] = values.get(name, 0.0) + v
    return out


def engine_of(r: Reading) -> Engine | None:
    for e in ENGINES:
        if e.running in r.values:
            return e
    return None


def quantile(q: float, bounds: list[tuple[float, float]]) -> float | None:
    """Prometheus' ``histogram_quantile``: ``bounds`` are (upper bound, cumulative
    count) in order, the last one ``+Inf``; the rank's bucket is found and the value
    interpolated linearly inside it (from 0 for the first bucket); a rank in the
    ``+Inf`` bucket gives the highest finite bound. None: no observation."""
    if not bounds or bounds[-1][1] <= 0:
        return None
    rank = q * bounds[-1][1]
    lo_b, lo_c = 0.0, 0.0
    for ub, c in bounds:
        if c >= rank:
            if math.isinf(ub):
                return lo_b
            if c == lo_c:
                return ub
            return lo_b + (ub - lo_b) * (rank - lo_c) / (c - lo_c)
        lo_b, lo_c = ub, c
    return lo_b


def _latency(name: str, first: Reading, last: Reading) -> M.ServerLatency | None:
    """A histogram's increase from ``first`` to ``last`` in ms (a server restarted in
    between, counts going down, gives None)."""
    b1 = last.buckets.get(name)
    if not b1:
        return None
    b0 = first.buckets.get(name, {})
    bounds = [(ub, b1[ub] - b0.get(ub, 0.0)) for ub in sorted(b1)]
    n = last.values.get(name + "_count", 0.0) - first.values.get(name + "_count", 0.0)
    s = last.values.get(name + "_sum", 0.0) - first.values.get(name + "_sum", 0.0)
    if n < 0 or any(c < 0 for _, c in bounds):
        return None

    def ms(x: float | None) -> float | None:
        return None if x is None else round(x * 1e3, 3)

    return M.ServerLatency(metric=name, count=int(round(n)),
                           mean_ms=ms(s / n) if n > 0 else None,
                           p50_ms=ms(quantile(0.5, bounds)), p99_ms=ms(quantile(0.99, bounds)))


class Scraper:
    """The scrapes of one phase and their sum: ``scrape`` blocks (run it on a thread),
    ``view`` is what they say so far."""

    def __init__(self, base: str, path: str = PATH) -> None:
        self.url = base + path
        self.path = path
        self.first: Reading | None = None
        self.last: Reading | None = None
        self.engine: Engine | None = None
        self.note = ""  # why nothing was exported
        self.failed = 0
        self.running: list[float] = []
        self.waiting: list[float] = []
        #: when the measurement began (``follow``): the rates' start (the baseline may
        #: be older: taken before the start gate, with nothing sent since)
        self.t0: float | None = None

    def fetch(self) -> Reading:
        with urllib.request.urlopen(self.url, timeout=TIMEOUT_S) as r:
            return parse(r.read().decode("utf-8", "replace"), time.monotonic())

    def scrape(self) -> None:
        try:
            got = self.fetch()
        except urllib.error.HTTPError as e:
            if self.first is None:
                self.note = f"GET {self.path}: HTTP {e.code}"
            self.failed += 1
            return
        except Exception as e:  # a refused, cut or malformed answer: never the workload's end
            if self.first is None:
                self.note = f"GET {self.path}: {type(e).__name__}: {e}"[:200]
            self.failed += 1
            return
        if self.first is None:
            self.engine = engine_of(got)
            if self.engine is None:
                self.note = f"GET {self.path} answered, but with none of the known metrics"
                return
            self.first = got
            self.note = ""
            return  # the baseline: its gauges were read before the first measured request
        assert self.engine is not None
        self.last = got
        if (v := got.values.get(self.engine.running)) is not None:
            self.running.append(v)
        if (v := got.values.get(self.engine.waiting)) is not None:
            self.waiting.append(v)

    def view(self) -> M.ServerView:
        e, first, last = self.engine, self.first, self.last
        if e is None or first is None:
            return M.ServerView(path=self.path, exported=False,
                                note=self.note or "not scraped yet")
        scrapes = 1 + len(self.running)
        if last is None:
            return M.ServerView(engine=e.name, path=self.path, exported=True, scrapes=scrapes,
                                failed_scrapes=self.failed)
        span = last.t - (first.t if self.t0 is None else self.t0)

        def rate(name: str) -> float | None:
            d = last.values.get(name, math.nan) - first.values.get(name, math.nan)
            return round(d / span, 3) if span > 0 and d >= 0 else None

        return M.ServerView(
            engine=e.name, path=self.path, exported=True, scrapes=scrapes,
            failed_scrapes=self.failed, span_s=round(span, 3),
            ttft=_latency(e.ttft, first, last) if e.ttft else None,
            queue_time=_latency(e.queue_time, first, last) if e.queue_time else None,
            waiting=_gauge(e.waiting, self.waiting), running=_gauge(e.running, self.running),
            prompt_tokens_per_s=rate(e.prompt_tokens),
            generation_tokens_per_s=rate(e.generation_tokens))


def _gauge(name: str, xs: list[float]) -> M.ServerGauge | None:
    if not xs:
        return None
    return M.ServerGauge(metric=name, samples=len(xs), mean=round(sum(xs) / len(xs), 3),
                         max=max(xs))


#: where a view goes, with its time (the load generator: its ``server`` event,
#: ``model.events.Server``, read back by ``model.events.event_of``)
Emit = Callable[[M.ServerView, float], None]


async def first_scrape(s: Scraper, emit: Emit) -> None:
    """The phase's baseline, taken after the warm-up; a server that exports nothing is
    said at once (``exported`` false)."""
    await asyncio.to_thread(s.scrape)
    if s.first is None:
        emit(s.view(), time.monotonic())


async def follow(s: Scraper, emit: Emit) -> None:
    """One scrape every ``SCRAPE_S`` (on a thread: the loop reads the streams), each
    followed by the view so far; until cancelled. Nothing if there was no baseline."""
    s.t0 = time.monotonic()
    while s.first is not None:
        await asyncio.sleep(SCRAPE_S)
        await asyncio.to_thread(s.scrape)
        emit(s.view(), time.monotonic())
