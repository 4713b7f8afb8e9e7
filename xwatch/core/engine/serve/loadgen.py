"""The load generator process: it holds the server (``server``: its lifecycle) and the
client (``client``: the open-loop streamed requests), proves the API with the warm-up,
waits at the start gate, beats, and ends with its ``bye``.

Timing: as vLLM's ``bench serve`` defines it (``events.Request``; the rule for an output
chunk in ``openai.Chunk``), with the clock started at each request's *scheduled* send so
that a late generator or a stalled server shows up as latency. The output tokens are
the usage's ``completion_tokens`` if the server sent it, else the output chunks that
carry text or tool calls. ``sched_delay_ms``: the real send minus the scheduled one
(``late`` above 1 ms).

A request that fails (HTTP 4xx/5xx, a stream cut short, a connection error) is an
event with ``ok: false``, its ``error`` and a short ``cause`` (``HTTP 503``, ``stream cut
short``, ``empty stream``, ...: the snapshot counts failures by it). A request still in
flight when xwatch stops the phase is cut without an event: xwatch counts it as
unfinished, never as an error; ``fail_streak`` failures in a row fail the
workload. The server's death, a readiness that never comes, a port already taken and an
answer that is not OpenAI's fail it at once, naming the server's exit status and its
last stderr lines; measured requests are written before the error event.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

import aiohttp

from xwatch.core import model as M
from xwatch.core.engine.protocol import (
    GATE_ENV,
    PROTOCOL_VERSION,
    EventWriter,
    open_workload_pipe,
)
from xwatch.core.engine.serve import openai
from xwatch.core.engine.serve.client import Client
from xwatch.core.engine.serve.config import ServeConfig
from xwatch.core.engine.serve.prompts import Asks, load_sharegpt
from xwatch.core.engine.serve.server import Fatal, Server, Stopped
from xwatch.core.engine.servers import scrape
from xwatch.core.engine.worker import REPORTED_ENV_PREFIXES
from xwatch.core.model import events


class Generator:
    """One server and its load. ``run`` returns the exit status."""

    def __init__(self, cfg: ServeConfig, writer: EventWriter) -> None:
        self.cfg = cfg
        self.w = writer
        self.server = Server(cfg)
        self.cfg = cfg = self.server.cfg  # its port chosen (``port = "auto"``)
        self.base = self.server.base
        self.client = Client(cfg, writer, self.base, self.server.last_lines)
        self.stages: dict[str, float] = {"python": round(time.monotonic(), 6)}
        self.cpu_s: float | None = None  # the generator's own CPU while it measured

    def mark(self, name: str) -> None:
        self.stages[name] = round(time.monotonic(), 6)

    def stop(self, fatal: Fatal | None = None) -> None:
        """Ends the phase: with ``fatal``, as a failure."""
        if fatal is not None:
            self.client.fatal = fatal
        self.client.stop_event.set()

    async def watch_server(self) -> None:
        """Fail the workload when the server exits while it should be serving."""
        fatal = await self.server.watch_server(lambda: self.client.stopping)
        if fatal is not None:
            self.stop(fatal)

    async def warm_up(self) -> float:
        """``warmup`` requests one at a time; the first proves the API. Returns ms."""
        client, server = self.client, self.server
        assert client.asks is not None
        t0 = time.monotonic()
        for i in range(self.cfg.warmup):
            if client.stop_event.is_set():
                raise Stopped
            try:
                ev = await client.stream_one(client.asks.ask(i), time.monotonic())
            except openai.NotOpenAI as e:
                raise Fatal(f"the server at {self.base} does not speak OpenAI's streaming "
                            f"API ('{self.cfg.api}'): {e}{server.last_lines()}", 6) from None
            if not ev.ok:
                if server.proc is not None and server.proc.returncode is not None:
                    await server._drain_pumps()
                    raise server.died("during the warm-up")
                raise Fatal(f"the server's answer to warm-up request {i + 1} failed: "
                            f"{ev.error}{server.last_lines()}", 4)
            if i == 0:
                self.mark("first")
        self.mark("warm")
        return (time.monotonic() - t0) * 1e3

    async def heartbeat(self) -> None:
        client = self.client
        ppid = os.getppid()
        while True:
            await asyncio.sleep(self.cfg.heartbeat_s)
            if os.getppid() != ppid:  # xwatch is gone: never outlive it
                self.stop(Fatal("xwatch is gone", 70))
                return
            self.w.flush()  # a request that ended alone is never held past a beat
            now = time.monotonic()
            oldest = min(client.inflight.values(), default=0.0)
            self.w.write_line(f'{{"type":"hb","t":{now:.6f},"count":{client.count},'
                              f'"inflight_s":{(now - oldest) if oldest else 0.0:.3f}}}\n')

    async def gate(self) -> float:
        """The start gate: wait for SIGUSR2 (blocked since the start, so never lost)."""
        t = time.monotonic()
        while not self.client.stop_event.is_set():
            got = await asyncio.to_thread(signal.sigtimedwait, (signal.SIGUSR2,), 0.5)
            if got is not None:
                break
        self.mark("released")
        return round((time.monotonic() - t) * 1e3, 3)

    def hello(self) -> events.Hello:
        cfg = self.cfg
        assert self.server.proc is not None
        info: dict[str, object] = dict(
            v=PROTOCOL_VERSION, pid=os.getpid(), name=cfg.name,
            python=sys.version.split()[0], executable=sys.executable,
            model=cfg.served_model or " ".join(
                [os.path.basename(cfg.server[0]), *cfg.server[1:]])[:80],
            server=list(cfg.server), server_pid=self.server.proc.pid, api=cfg.api,
            url=self.base + openai.ROUTES[cfg.api], batch=1, rate=cfg.rate,
            arrival=cfg.arrival, device="n/a (the server's)", stream="n/a (server)",
            env={k: v for k, v in sorted(os.environ.items())
                 if k.startswith(REPORTED_ENV_PREFIXES)})
        if cfg.arrival == "gamma":
            info["burstiness"] = cfg.burstiness
        return events.Hello(info=info, stages=dict(self.stages))

    def emit(self, ev: events.Event) -> None:
        self.w.emit_line(events.line(ev))

    def server_view(self, view: M.ServerView, t: float) -> None:
        """The server's own metrics so far, as the ``server`` event."""
        self.emit(events.server(view, t))

    async def run(self) -> int:
        cfg, client, server = self.cfg, self.client, self.server
        loop = asyncio.get_running_loop()

        def on_stop() -> None:
            client.stopping = True
            client.stop_event.set()

        for s in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(s, on_stop)
        loop.add_signal_handler(signal.SIGUSR1, client.drain.set)
        hb = asyncio.create_task(self.heartbeat())
        watcher: asyncio.Task[None] | None = None
        try:
            dataset = load_sharegpt(cfg.dataset, cfg.new_tokens) if cfg.dataset else None
            client.asks = Asks(cfg.prompt_len, cfg.new_tokens, cfg.range_ratio, cfg.seed,
                               dataset)
            # one connection per request (``force_close``): llama-server closes it after
            # each streamed answer, and a request sent on a kept-alive one that the server
            # had closed failed before any text (docs/serving.md, deviations from vLLM)
            client.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, force_close=True),
                timeout=aiohttp.ClientTimeout(total=6 * 3600))
            await server.start_server()
            self.mark("server")
            self.emit(self.hello())
            await server.wait_ready(client.session, client.stop_event)
            self.mark("ready")
            warm_ms = await self.warm_up()
            scraper = scrape.Scraper(self.base)  # the server's own metrics (servers.scrape)
            await scrape.first_scrape(scraper, self.server_view)
            watcher = asyncio.create_task(self.watch_server())
            waited = None
            if os.environ.get(GATE_ENV) == "1":
                self.emit(events.Warm(warmup=cfg.warmup, warmup_ms=round(warm_ms, 3),
                                      stages=dict(self.stages)))
                waited = await self.gate()
            if not client.stop_event.is_set():
                t0 = time.monotonic() + 0.001
                self.emit(events.Ready(t0=t0, warmup=cfg.warmup, warmup_ms=round(warm_ms, 3),
                                       stages=dict(self.stages), gate_wait_ms=waited))
                cpu0 = time.process_time()
                scraping = asyncio.create_task(scrape.follow(scraper, self.server_view))
                await client.drive(t0)
                scraping.cancel()
                self.cpu_s = time.process_time() - cpu0
            if client.fatal is not None:
                raise client.fatal
        except Stopped as e:  # a clean stop while loading: bye below
            if str(e):  # how far the server got, for the phase's account of it
                self.w.emit({"type": "error", "message": str(e)[:4000]})
        except Fatal as e:
            client.stopping = True
            self.w.flush()
            self.emit(events.Error(message=str(e)[:4000]))
            print(f"xwatch loadgen: {e}", file=sys.stderr, flush=True)
            return e.code
        except Exception as e:  # the generator's own failure: named, the server stopped
            client.stopping = True
            self.w.flush()
            self.emit(events.Error(message=f"{type(e).__name__}: {e}"[:4000]))
            print(f"xwatch loadgen: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            return 1
        finally:
            client.stopping = True
            hb.cancel()
            if watcher is not None:
                watcher.cancel()
            await server.stop_server()
            if client.session is not None:
                await client.session.close()
        self.w.flush()
        self.emit(events.Bye(count=client.count, errors=client.errors,
                             output_tokens=client.tokens, t=time.monotonic(),
                             cpu_s=None if self.cpu_s is None else round(self.cpu_s, 4),
                             stopped=self.cfg.requests is None
                             or client.count < self.cfg.requests))
        return 0


def main() -> int:
    from xwatch.core.engine.serve import CONFIG_ENV

    writer = open_workload_pipe("loadgen")
    if writer is None:
        return 2
    try:
        cfg = ServeConfig.from_json(os.environ[CONFIG_ENV])
    except (KeyError, ValueError, TypeError) as e:
        writer.emit_line(events.line(events.Error(
            message=f"bad load generator config: {e!r}")))
        return 2
    return asyncio.run(Generator(cfg, writer).run())
