"""The load generator's client: open-loop streamed requests on aiohttp (the schedule on a
thread of its own), the parse of each stream into a request event, and the failures it
counts (a streak of them fails the workload).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import Callable

import aiohttp

from xwatch.core.engine.protocol import EventWriter
from xwatch.core.engine.serve import openai
from xwatch.core.engine.serve.config import ServeConfig
from xwatch.core.engine.serve.prompts import Ask, Asks
from xwatch.core.engine.serve.server import Fatal
from xwatch.core.engine.worker import LATE_THRESHOLD_S
from xwatch.core.engine.worker.arrivals import Schedule
from xwatch.core.model.events import Drain, First, Request, line

#: the interpreter's thread switch interval in the generator (``benchmarks/measure/loadgen.py``)
SWITCH_S = 0.0005


class Client:
    """The requests against one server at ``base``; ``note()`` adds the server's last
    stderr lines to a failure. ``stop_event``, ``stopping`` and ``fatal`` are the
    workload's stop, shared with the process that holds it."""

    def __init__(self, cfg: ServeConfig, writer: EventWriter, base: str,
                 note: Callable[[], str]) -> None:
        self.cfg = cfg
        self.w = writer
        self.base = base
        self.note = note
        self.stopping = False  # a stop asked by xwatch (or the request limit): no failure
        self.stop_event = asyncio.Event()
        self.count = 0  # measured requests reported (ok or not)
        self.errors = 0
        self.streak = 0  # failures in a row
        self.tokens = 0
        self.inflight: dict[int, float] = {}  # seq -> scheduled time
        self.seen_errors: set[str] = set()
        self.fatal: Fatal | None = None
        self.session: aiohttp.ClientSession | None = None
        self.asks: Asks | None = None
        self.drain = asyncio.Event()  # SIGUSR1: no new request, those in flight awaited
        self.sent = 0  # requests launched (in order of their number)

    async def stream_one(self, ask: Ask, t_sched: float, seq: int | None = None) -> Request:
        """One streamed request; the event to send (``ok`` false with ``error`` when it
        failed). Raises ``openai.NotOpenAI`` when the answer is not OpenAI's. With
        ``seq``, its first output token is said at once (a ``first`` event): a request
        cut at the end before its answer then still has its TTFT known."""
        cfg, session = self.cfg, self.session
        assert session is not None
        body = openai.body(cfg.api, ask.prompt, ask.max_tokens, cfg.served_model,
                           cfg.ignore_eos)
        route = openai.ROUTES[cfg.api]
        monotonic = time.monotonic
        start = monotonic()
        first = last = 0.0
        itl: list[float] = []
        chunks = 0  # output chunks (vLLM's: their arrivals time the tokens)
        tokens = 0  # output chunks that carry text or tool calls
        usage: int | None = None
        done = finished = False
        error: str | None = None
        cause: str | None = None
        status: int | None = None
        try:
            async with session.post(self.base + route, json=body) as r:
                if r.status >= 400:
                    text = (await r.text())[:300]
                    if r.status in (404, 405):
                        raise openai.NotOpenAI(f"POST {route} answered HTTP {r.status}: "
                                               f"{text!r}")
                    error, status, cause = f"HTTP {r.status}: {text}", r.status, \
                        f"HTTP {r.status}"
                else:
                    ctype = r.headers.get("Content-Type", "")
                    if "text/event-stream" not in ctype:
                        text = (await r.text())[:200]
                        raise openai.NotOpenAI(f"POST {route} answered HTTP {r.status} with "
                                               f"{ctype or 'no content type'}, not a stream "
                                               f"of server-sent events: {text!r}")
                    async for line in r.content:
                        got = openai.parse_event(line)
                        if got is None:
                            continue
                        if got is openai.DONE:
                            done = True
                            break
                        assert isinstance(got, openai.Chunk)
                        if got.completion_tokens is not None:
                            usage = got.completion_tokens
                        finished = finished or got.finished
                        if got.output:
                            now = monotonic()
                            if chunks:
                                itl.append((now - last) * 1e3)
                            else:
                                first = now
                                if seq is not None:
                                    self.first_token(seq, now, (now - t_sched) * 1e3)
                            last = now
                            chunks += 1
                            tokens += got.token
                    if not (done or finished):
                        error = (f"stream cut short after {chunks} output chunks "
                                 "(neither a finish_reason nor data: [DONE])")
                        cause = "stream cut short"
        except openai.StreamError as e:
            error, cause = str(e), "malformed stream"
        except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError) as e:
            error = (f"stream cut short after {chunks} output chunks ({type(e).__name__}"
                     + (f": {str(e)[:160]}" if str(e) else "") + ")")
            cause = "stream cut short" if chunks else f"no answer ({type(e).__name__})"
        end = monotonic()
        if error is None and not tokens:
            error = ("the stream ended without any output (no chunk with text or tool "
                     "calls)")
            cause = "empty stream"
        delay = start - t_sched
        if error is not None:  # a failure ends when it is known
            return Request(t=end, latency_ms=round((end - t_sched) * 1e3, 4),
                           service_ms=round((end - start) * 1e3, 4),
                           sched_delay_ms=round(delay * 1e3, 4),
                           late=delay > LATE_THRESHOLD_S, batch=1, prompt_words=ask.prompt_words,
                           ok=False, error=error, status=status, cause=cause)
        out = usage if usage is not None else tokens
        return Request(
            t=end, latency_ms=round((last - t_sched) * 1e3, 4),
            service_ms=round((last - start) * 1e3, 4), sched_delay_ms=round(delay * 1e3, 4),
            late=delay > LATE_THRESHOLD_S, batch=1, prompt_words=ask.prompt_words,
            ttft_ms=round((first - t_sched) * 1e3, 4),
            tpot_ms=round((last - first) * 1e3 / (out - 1), 4) if out > 1 else None,
            itl_ms=[round(x, 4) for x in itl] or None,
            tail_ms=round((end - last) * 1e3, 4), output_tokens=out, chunks=chunks)

    def first_token(self, seq: int, t: float, ttft_ms: float) -> None:
        """A request's first output token, said at once (``First``), unless the stop
        has begun (what follows it is not measured)."""
        if self.stopping:
            return
        self.w.emit_line(line(First(seq=seq, ttft_ms=round(ttft_ms, 4), t=round(t, 6))),
                         flush=False)
        self.w.maybe_flush(time.monotonic())

    def report(self, seq: int, ev: Request) -> None:
        if self.stopping and not ev.ok:
            return  # cut by the stop itself: not measured, counted as unfinished
        self.inflight.pop(seq, None)
        ev.seq = seq
        self.count += 1
        if not ev.ok:
            self.errors += 1
            self.streak += 1
            kind = ev.cause or (ev.error or "")[:24]
            if kind not in self.seen_errors or self.errors % 100 == 0:
                self.seen_errors.add(kind)
                print(f"xwatch loadgen: request {seq} failed: {ev.error} "
                      f"({self.errors} failed so far)", file=sys.stderr, flush=True)
            if self.streak >= self.cfg.fail_streak and not self.stopping:
                self.fatal = Fatal(f"{self.streak} requests in a row failed; the last: "
                                   f"{ev.error}{self.note()}", 4)
                self.stop_event.set()
        else:
            self.streak = 0
            self.tokens += ev.output_tokens or 0
        self.w.emit_line(line(ev), flush=False)
        self.w.maybe_flush(time.monotonic())

    async def one(self, seq: int, t_sched: float, ask: Ask) -> None:
        try:
            ev = await self.stream_one(ask, t_sched, seq)
        except openai.NotOpenAI as e:
            now = time.monotonic()
            ev = Request(t=now, ok=False, error=f"not OpenAI's answer: {e}",
                         cause="not OpenAI's answer", late=False, batch=1,
                         latency_ms=round((now - t_sched) * 1e3, 4))
        self.report(seq, ev)

    async def drive(self, t0: float) -> None:
        """Open-loop requests until stopped or ``requests`` were sent, then waits for
        those in flight (a stop cancels them). The schedule is kept by a thread of its
        own (``time.sleep`` to the due time, then a hand-off to the loop): the loop's
        own timers round up to whole milliseconds."""
        cfg, asks = self.cfg, self.asks
        assert asks is not None
        loop = asyncio.get_running_loop()
        tasks: set[asyncio.Task[None]] = set()
        halt = threading.Event()
        sent = asyncio.Event()  # every request of a ``requests`` limit was sent

        def launch(seq: int, t_sched: float) -> None:
            if self.stop_event.is_set() or self.drain.is_set():
                return
            self.sent = seq
            self.inflight[seq] = t_sched
            task = loop.create_task(self.one(seq, t_sched, asks.ask(cfg.warmup + seq - 1)))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        def tick() -> None:
            schedule = Schedule(t0, cfg.rate, cfg.arrival, cfg.seed, cfg.burstiness)
            seq = 0
            while cfg.requests is None or seq < cfg.requests:
                t_sched = schedule.next()
                wait = t_sched - time.monotonic()
                if wait > 0 and halt.wait(wait):
                    return
                if halt.is_set():
                    return
                seq += 1
                loop.call_soon_threadsafe(launch, seq, t_sched)
            loop.call_soon_threadsafe(sent.set)

        # the ticker waits for the GIL after its sleep: at the default 5 ms switch interval
        # a loop busy reading streams held it for up to 5 ms past the due time
        sys.setswitchinterval(SWITCH_S)
        ticker = threading.Thread(target=tick, name="xwatch-loadgen-schedule", daemon=True)
        ticker.start()
        stop = asyncio.ensure_future(self.stop_event.wait())
        done = asyncio.ensure_future(sent.wait())
        drain = asyncio.ensure_future(self.drain.wait())
        await asyncio.wait([stop, done, drain], return_when=asyncio.FIRST_COMPLETED)
        if self.drain.is_set() and not self.stop_event.is_set():
            halt.set()
            self.w.emit_line(line(Drain(sent=self.sent, done=False)))
        while tasks and not self.stop_event.is_set():
            await asyncio.wait([*tasks, stop], return_when=asyncio.FIRST_COMPLETED)
        if self.drain.is_set() and not self.stop_event.is_set():
            self.w.emit_line(line(Drain(sent=self.sent, done=True)))
            await stop  # every request sent is measured: wait for xwatch's stop
        drain.cancel()
        halt.set()
        stop.cancel()
        done.cancel()
        self.stopping = True
        for t in list(tasks):
            t.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.to_thread(ticker.join)
