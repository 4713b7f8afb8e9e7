"""The load generator process: the server's lifecycle (port check, start, readiness,
death, stop of its whole process tree), the API proof and warm-up, the open-loop
streaming requests and their events.

Timing (as vLLM's ``bench serve`` defines it, with the clock started at each request's
*scheduled* send so that a late generator or a stalled server shows up as latency):
``ttft_ms`` from the scheduled send to the first chunk that carries text; ``itl_ms`` the
gaps between consecutive text chunks; ``latency_ms`` (end to end) from the scheduled send
to the stream's end; ``tpot_ms`` = (end to end - TTFT) / (output tokens - 1), where the
output tokens are the usage's ``completion_tokens`` if the server sent it, else the text
chunks. ``sched_delay_ms``: the real send minus the scheduled one (``late`` above 1 ms).

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
import collections
import contextlib
import ctypes
import errno
import os
import signal
import socket
import sys
import threading
import time
from typing import Any

import aiohttp

from xwatch.core.engine.protocol import (
    GATE_ENV,
    PROTOCOL_VERSION,
    WARM,
    EventWriter,
    open_workload_pipe,
)
from xwatch.core.engine.serve import openai, scrape
from xwatch.core.engine.serve.config import ServeConfig
from xwatch.core.engine.serve.prompts import Ask, Asks, load_sharegpt
from xwatch.core.engine.worker import LATE_THRESHOLD_S, REPORTED_ENV_PREFIXES
from xwatch.core.engine.worker.arrivals import Schedule

HOST = "127.0.0.1"
#: the server's stderr lines a failure quotes
TAIL_LINES = 12
#: how long a stopped server may take to exit before its tree is killed
STOP_GRACE_S = 2.0
#: readiness is asked this often
READY_POLL_S = 0.2
_PR_SET_PDEATHSIG = 1
#: the interpreter's thread switch interval in the generator (``benchmarks/loadgen.py``)
SWITCH_S = 0.0005


class Fatal(Exception):
    """The workload fails: ``message`` names why; ``code`` is the generator's exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Stopped(Exception):
    """xwatch stopped the workload before it measured (the server still loading)."""


def port_holder(port: int) -> str | None:
    """Who listens on ``port`` already (a description), or None if it is free."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no holder
    try:
        s.bind(("", port))
        return None
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            return None
    finally:
        s.close()
    who = "another process"
    with contextlib.suppress(Exception):
        import psutil

        for c in psutil.net_connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                who = f"pid {c.pid} ({psutil.Process(c.pid).name()})"
                break
    return who


def _server_preexec() -> None:
    """The server dies with the generator (PDEATHSIG) and hears SIGINT/SIGTERM."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR2})


def tree(pid: int) -> list[int]:
    """``pid`` and every process below it (psutil; the server's workers)."""
    try:
        import psutil

        return [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
    except Exception:
        return [pid]


def kill_tree(pids: list[int], sig: int) -> None:
    for p in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, sig)


class Generator:
    """One server and its load. ``run`` returns the exit status."""

    def __init__(self, cfg: ServeConfig, writer: EventWriter) -> None:
        self.cfg = cfg
        self.w = writer
        self.base = f"http://{HOST}:{cfg.port}"
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.proc: asyncio.subprocess.Process | None = None
        self.stopping = False  # a stop asked by xwatch (or the request limit): no failure
        self.stop_event = asyncio.Event()
        self.count = 0  # measured requests reported (ok or not)
        self.errors = 0
        self.streak = 0  # failures in a row
        self.tokens = 0
        self.inflight: dict[int, float] = {}  # seq -> scheduled time
        self.seen_errors: set[str] = set()
        self.fatal: Fatal | None = None
        self.stages: dict[str, float] = {"python": round(time.monotonic(), 6)}
        self.session: aiohttp.ClientSession | None = None
        self.asks: Asks | None = None
        self._pumps: list[asyncio.Task[None]] = []
        self.cpu_s: float | None = None  # the generator's own CPU while it measured

    def mark(self, name: str) -> None:
        self.stages[name] = round(time.monotonic(), 6)

    # ------------------------------------------------------------------ server
    def last_lines(self) -> str:
        lines = [ln for ln in self.tail if ln.strip()]
        return ("; its last stderr lines:\n  " + "\n  ".join(lines)) if lines \
            else "; it wrote nothing to stderr"

    def died(self, when: str) -> Fatal:
        assert self.proc is not None and self.proc.returncode is not None
        rc = self.proc.returncode
        how = f"was killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"
        return Fatal(f"the server (pid {self.proc.pid}) {how} {when}{self.last_lines()}", 3)

    async def _pump(self, stream: asyncio.StreamReader, out: Any, keep: bool) -> None:
        """The server's output passed through as it comes (chunks, not lines: a progress
        bar redrawn with carriage returns is no line); ``keep``: its last lines kept."""
        partial = b""
        while True:
            data = await stream.read(1 << 16)
            if not data:
                if keep and partial.strip():
                    self.tail.append(partial.decode("utf-8", "replace").strip()[:300])
                return
            if keep:
                *lines, partial = (partial + data).replace(b"\r", b"\n").split(b"\n")
                partial = partial[-4096:]
                self.tail.extend(ln.decode("utf-8", "replace").rstrip()[:300]
                                 for ln in lines[-TAIL_LINES:] if ln.strip())
            with contextlib.suppress(OSError, ValueError):
                out.buffer.write(data)
                out.buffer.flush()

    async def start_server(self) -> None:
        cfg = self.cfg
        holder = port_holder(cfg.port)
        if holder is not None:
            raise Fatal(f"port {cfg.port} is already taken by {holder} before the server "
                        f"started: free it or set the workload's 'port' (and the server's) "
                        "to a free one", 5)
        env = dict(os.environ)
        for k in ("XWATCH_EVENT_FD", "XWATCH_SERVE_CONFIG", GATE_ENV):  # the generator's own
            env.pop(k, None)
        if cfg.preload:
            env["LD_PRELOAD"] = cfg.preload
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *cfg.server, cwd=cfg.cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                preexec_fn=_server_preexec, pass_fds=())
        except OSError as e:
            raise Fatal(f"the server could not be started: {cfg.server[0]}: {e}", 2) from None
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._pumps = [asyncio.create_task(self._pump(self.proc.stdout, sys.stdout, False)),
                       asyncio.create_task(self._pump(self.proc.stderr, sys.stderr, True))]
        self.mark("server")

    async def wait_ready(self) -> None:
        cfg, proc, session = self.cfg, self.proc, self.session
        assert proc is not None and session is not None
        deadline = time.monotonic() + cfg.ready_timeout_s
        last = "no answer yet"
        url = self.base + cfg.ready
        while True:
            if self.stop_event.is_set():
                raise Stopped
            if proc.returncode is not None:
                await self._drain_pumps()
                raise self.died("before it was ready")
            try:
                async with session.get(url, timeout=aiohttp.ClientTimeout(total=2.0)) as r:
                    if r.status == 200:
                        break
                    last = f"HTTP {r.status}: {(await r.text())[:120]!r}"
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
                last = type(e).__name__ + (f": {e}" if str(e) else "")
            if time.monotonic() >= deadline:
                raise Fatal(f"the server (pid {proc.pid}) was never ready: GET {cfg.ready} "
                            f"did not answer 200 within {cfg.ready_timeout_s:g} s (the last "
                            f"try: {last[:200]}){self.last_lines()}", 4)
            await asyncio.sleep(READY_POLL_S)
        self.mark("ready")

    async def _drain_pumps(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*self._pumps), 1.0)

    async def watch_server(self) -> None:
        """Fail the workload when the server exits while it should be serving."""
        assert self.proc is not None
        await self.proc.wait()
        # a stop signal reaches the server's group and the generator at once: a server
        # that dies of it at once must not be blamed before the generator's handler ran
        await asyncio.sleep(0.1)
        if not self.stopping:
            await self._drain_pumps()
            self.fatal = self.died("mid-phase, while it was being measured")
            self.stop_event.set()

    async def stop_server(self) -> None:
        """The server and every process it started: SIGTERM (unless the stop signal
        already reached its group), then SIGKILL after ``STOP_GRACE_S``."""
        proc = self.proc
        if proc is None:
            return
        pids = tree(proc.pid)
        if proc.returncode is None:
            kill_tree(pids, signal.SIGTERM)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
        kill_tree([p for p in pids if p != proc.pid or proc.returncode is None],
                  signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
        await self._drain_pumps()

    # ------------------------------------------------------------------ requests
    async def stream_one(self, ask: Ask, t_sched: float) -> dict[str, Any]:
        """One streamed request; the event to send (``ok`` false with ``error`` when it
        failed). Raises ``openai.NotOpenAI`` when the answer is not OpenAI's."""
        cfg, session = self.cfg, self.session
        assert session is not None
        body = openai.body(cfg.api, ask.prompt, ask.max_tokens, cfg.served_model,
                           cfg.ignore_eos)
        route = openai.ROUTES[cfg.api]
        monotonic = time.monotonic
        start = monotonic()
        first = last = 0.0
        itl: list[float] = []
        chunks = 0
        usage: int | None = None
        done = finished = False
        ev: dict[str, Any] = {}
        try:
            async with session.post(self.base + route, json=body) as r:
                if r.status >= 400:
                    text = (await r.text())[:300]
                    if r.status in (404, 405):
                        raise openai.NotOpenAI(f"POST {route} answered HTTP {r.status}: "
                                               f"{text!r}")
                    ev = {"error": f"HTTP {r.status}: {text}", "status": r.status,
                          "cause": f"HTTP {r.status}"}
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
                        if got.text:
                            now = monotonic()
                            if chunks:
                                itl.append((now - last) * 1e3)
                            else:
                                first = now
                            last = now
                            chunks += 1
                    if not (done or finished):
                        ev = {"error": f"stream cut short after {chunks} text chunks "
                                       "(neither a finish_reason nor data: [DONE])",
                              "cause": "stream cut short"}
        except openai.StreamError as e:
            ev = {"error": str(e), "cause": "malformed stream"}
        except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError) as e:
            ev = {"error": f"stream cut short after {chunks} text chunks ({type(e).__name__}"
                           + (f": {str(e)[:160]}" if str(e) else "") + ")",
                  "cause": "stream cut short" if chunks else f"no answer ({type(e).__name__})"}
        end = monotonic()
        if not ev and not chunks:
            ev = {"error": "the stream ended without any text (it finished with no "
                           "text chunk)", "cause": "empty stream"}
        delay = start - t_sched
        ev.update({"t": end, "latency_ms": round((end - t_sched) * 1e3, 4),
                   "service_ms": round((end - start) * 1e3, 4),
                   "sched_delay_ms": round(delay * 1e3, 4),
                   "late": delay > LATE_THRESHOLD_S, "batch": 1,
                   "prompt_words": ask.prompt_words})
        if "error" in ev:
            ev["ok"] = False
            return ev
        out = usage if usage is not None else chunks
        ev["ttft_ms"] = round((first - t_sched) * 1e3, 4)
        if out > 1:
            ev["tpot_ms"] = round((end - first) * 1e3 / (out - 1), 4)
        if itl:
            ev["itl_ms"] = [round(x, 4) for x in itl]
        ev["output_tokens"] = out
        ev["chunks"] = chunks
        return ev

    async def warm_up(self) -> float:
        """``warmup`` requests one at a time; the first proves the API. Returns ms."""
        assert self.asks is not None
        t0 = time.monotonic()
        for i in range(self.cfg.warmup):
            if self.stop_event.is_set():
                raise Stopped
            try:
                ev = await self.stream_one(self.asks.ask(i), time.monotonic())
            except openai.NotOpenAI as e:
                raise Fatal(f"the server at {self.base} does not speak OpenAI's streaming "
                            f"API ('{self.cfg.api}'): {e}{self.last_lines()}", 6) from None
            if ev.get("ok") is False:
                if self.proc is not None and self.proc.returncode is not None:
                    await self._drain_pumps()
                    raise self.died("during the warm-up")
                raise Fatal(f"the server's answer to warm-up request {i + 1} failed: "
                            f"{ev['error']}{self.last_lines()}", 4)
            if i == 0:
                self.mark("first")
        self.mark("warm")
        return (time.monotonic() - t0) * 1e3

    def report(self, seq: int, ev: dict[str, Any]) -> None:
        if self.stopping and ev.get("ok") is False:
            return  # cut by the stop itself: not measured, counted as unfinished
        self.inflight.pop(seq, None)
        ev = {"seq": seq, **ev}
        self.count += 1
        if ev.get("ok") is False:
            self.errors += 1
            self.streak += 1
            kind = str(ev.get("cause", ev["error"][:24]))
            if kind not in self.seen_errors or self.errors % 100 == 0:
                self.seen_errors.add(kind)
                print(f"xwatch loadgen: request {seq} failed: {ev['error']} "
                      f"({self.errors} failed so far)", file=sys.stderr, flush=True)
            if self.streak >= self.cfg.fail_streak and not self.stopping:
                self.fatal = Fatal(f"{self.streak} requests in a row failed; the last: "
                                   f"{ev['error']}{self.last_lines()}", 4)
                self.stop_event.set()
        else:
            self.streak = 0
            self.tokens += int(ev.get("output_tokens", 0))
        self.w.emit(ev, flush=False)
        self.w.maybe_flush(time.monotonic())

    async def one(self, seq: int, t_sched: float, ask: Ask) -> None:
        try:
            ev = await self.stream_one(ask, t_sched)
        except openai.NotOpenAI as e:
            ev = {"t": time.monotonic(), "ok": False, "error": f"not OpenAI's answer: {e}",
                  "cause": "not OpenAI's answer",
                  "latency_ms": round((time.monotonic() - t_sched) * 1e3, 4)}
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
            if self.stop_event.is_set():
                return
            self.inflight[seq] = t_sched
            task = loop.create_task(self.one(seq, t_sched, asks.ask(cfg.warmup + seq - 1)))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        def tick() -> None:
            schedule = Schedule(t0, cfg.rate, cfg.arrival, cfg.seed)
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
        await asyncio.wait([stop, done], return_when=asyncio.FIRST_COMPLETED)
        while tasks and not self.stop_event.is_set():
            await asyncio.wait([*tasks, stop], return_when=asyncio.FIRST_COMPLETED)
        halt.set()
        stop.cancel()
        done.cancel()
        self.stopping = True
        for t in list(tasks):
            t.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.to_thread(ticker.join)

    async def heartbeat(self) -> None:
        ppid = os.getppid()
        while True:
            await asyncio.sleep(self.cfg.heartbeat_s)
            if os.getppid() != ppid:  # xwatch is gone: never outlive it
                self.fatal = Fatal("xwatch is gone", 70)
                self.stop_event.set()
                return
            self.w.flush()  # a request that ended alone is never held past a beat
            now = time.monotonic()
            oldest = min(self.inflight.values(), default=0.0)
            self.w.write_line(f'{{"type":"hb","t":{now:.6f},"count":{self.count},'
                              f'"inflight_s":{(now - oldest) if oldest else 0.0:.3f}}}\n')

    async def gate(self) -> float:
        """The start gate: wait for SIGUSR2 (blocked since the start, so never lost)."""
        t = time.monotonic()
        while not self.stop_event.is_set():
            got = await asyncio.to_thread(signal.sigtimedwait, (signal.SIGUSR2,), 0.5)
            if got is not None:
                break
        self.mark("released")
        return round((time.monotonic() - t) * 1e3, 3)

    def hello(self) -> dict[str, Any]:
        cfg = self.cfg
        assert self.proc is not None
        return {"type": "hello", "v": PROTOCOL_VERSION, "pid": os.getpid(), "name": cfg.name,
                "python": sys.version.split()[0], "executable": sys.executable,
                "model": cfg.served_model or " ".join(
                    [os.path.basename(cfg.server[0]), *cfg.server[1:]])[:80],
                "server": list(cfg.server), "server_pid": self.proc.pid, "api": cfg.api,
                "url": self.base + openai.ROUTES[cfg.api], "batch": 1, "rate": cfg.rate,
                "arrival": cfg.arrival, "device": "n/a (the server's)",
                "stream": "n/a (server)", "env": {k: v for k, v in sorted(os.environ.items())
                                                  if k.startswith(REPORTED_ENV_PREFIXES)},
                "stages": dict(self.stages)}

    async def run(self) -> int:
        cfg = self.cfg
        loop = asyncio.get_running_loop()

        def on_stop() -> None:
            self.stopping = True
            self.stop_event.set()

        for s in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(s, on_stop)
        hb = asyncio.create_task(self.heartbeat())
        watcher: asyncio.Task[None] | None = None
        try:
            dataset = load_sharegpt(cfg.dataset, cfg.new_tokens) if cfg.dataset else None
            self.asks = Asks(cfg.prompt_len, cfg.new_tokens, cfg.range_ratio, cfg.seed,
                             dataset)
            self.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, force_close=False),
                timeout=aiohttp.ClientTimeout(total=6 * 3600))
            await self.start_server()
            self.w.emit(self.hello())
            await self.wait_ready()
            warm_ms = await self.warm_up()
            scraper = scrape.Scraper(self.base)  # the server's own metrics (scrape.py)
            await scrape.first_scrape(scraper, self.w.emit)
            watcher = asyncio.create_task(self.watch_server())
            waited = None
            if os.environ.get(GATE_ENV) == "1":
                self.w.emit({"type": WARM, "warmup": cfg.warmup, "warmup_ms": round(warm_ms, 3),
                             "stages": dict(self.stages)})
                waited = await self.gate()
            if not self.stop_event.is_set():
                t0 = time.monotonic() + 0.001
                self.w.emit({"type": "ready", "t0": t0, "warmup": cfg.warmup,
                             "warmup_ms": round(warm_ms, 3), "stages": dict(self.stages),
                             **({} if waited is None else {"gate_wait_ms": waited})})
                cpu0 = time.process_time()
                scraping = asyncio.create_task(scrape.follow(scraper, self.w.emit))
                await self.drive(t0)
                scraping.cancel()
                self.cpu_s = time.process_time() - cpu0
            if self.fatal is not None:
                raise self.fatal
        except Stopped:
            pass  # a clean stop while loading: bye below
        except Fatal as e:
            self.stopping = True
            self.w.flush()
            self.w.emit({"type": "error", "message": str(e)[:4000]})
            print(f"xwatch loadgen: {e}", file=sys.stderr, flush=True)
            return e.code
        except Exception as e:  # the generator's own failure: named, the server stopped
            self.stopping = True
            self.w.flush()
            self.w.emit({"type": "error", "message": f"{type(e).__name__}: {e}"[:4000]})
            print(f"xwatch loadgen: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            return 1
        finally:
            self.stopping = True
            hb.cancel()
            if watcher is not None:
                watcher.cancel()
            await self.stop_server()
            if self.session is not None:
                await self.session.close()
        self.w.flush()
        self.w.emit({"type": "bye", "count": self.count, "errors": self.errors,
                     "output_tokens": self.tokens, "t": time.monotonic(),
                     **({} if self.cpu_s is None else {"cpu_s": round(self.cpu_s, 4)}),
                     "stopped": self.cfg.requests is None or self.count < self.cfg.requests})
        return 0


def main() -> int:
    from xwatch.core.engine.serve import CONFIG_ENV

    writer = open_workload_pipe("loadgen")
    if writer is None:
        return 2
    try:
        cfg = ServeConfig.from_json(os.environ[CONFIG_ENV])
    except (KeyError, ValueError, TypeError) as e:
        writer.emit({"type": "error", "message": f"bad load generator config: {e!r}"})
        return 2
    return asyncio.run(Generator(cfg, writer).run())
