"""The event line protocol between a workload process and xwatch (version 1).

A workload writes one JSON object per line to the file descriptor named by the
environment variable ``XWATCH_EVENT_FD``. The smallest valid line is a request
event ``{"latency_ms": 12.5}``. Everything about the format lives here: the
emitter used by the built-in worker (stdlib only, so it runs under any Python
the user points at) and the incremental parser used by the supervisor, which reads
lines into the typed events of ``model.events`` (msgspec, imported only there).
``docs/protocol.md`` is the human-readable version of this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

PROTOCOL_VERSION = 1
EVENT_FD_ENV = "XWATCH_EVENT_FD"

#: Event types. A line without ``type`` is a request event.
REQ = "req"
HELLO = "hello"
READY = "ready"
HEARTBEAT = "hb"
ERROR = "error"
BYE = "bye"
TRACE = "trace"
WARM = "warm"
#: a server's load generator asked to drain (SIGUSR1): ``sent`` requests in all, then
#: ``done`` once none is in flight
DRAIN = "drain"
#: a server workload's load generator: the server's own metrics so far (``servers.scrape``)
SERVER = "server"
#: a server's request had its first output token (``seq``, ``ttft_ms``, ``t``): the TTFT
#: of a request cut at the end before its answer
FIRST = "first"
KNOWN_TYPES = frozenset({REQ, HELLO, READY, HEARTBEAT, ERROR, BYE, TRACE, WARM, DRAIN,
                         SERVER, FIRST})

#: The start gate: a built-in worker started with ``XWATCH_START_GATE=1`` sends
#: ``{"type": "warm"}`` after its warm-up, then waits for SIGUSR2 (blocked from its
#: start, so an early one is kept, never fatal) before its first measured request.
GATE_ENV = "XWATCH_START_GATE"

#: Lines longer than this are dropped as malformed (a runaway writer must not
#: make xwatch buffer without bound).
MAX_LINE_BYTES = 1 << 20

if TYPE_CHECKING:
    from xwatch.core.model.events import Event


@dataclass
class ParseResult:
    """Events decoded from one chunk, typed (``model.events``), plus the malformed
    lines (truncated)."""

    events: list[Event] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)


def _bad(line: bytes) -> str:
    return line[:200].decode("utf-8", "replace")


def _dumps(obj: object) -> bytes:
    try:
        return json.dumps(obj).encode()
    except (TypeError, ValueError):
        return repr(obj).encode()


class LineParser:
    """Incremental parser: feed raw chunks from a pipe, get typed events back.

    Keeps the partial last line between chunks. A chunk of plain request lines is
    decoded in one call (``model.events.requests_of``); a chunk with any other line
    is read as JSON in one call and typed event by event (``event_of``: what the
    protocol tolerates), or line by line where a line is not JSON. Malformed lines
    (bad JSON, not an object, missing/invalid ``latency_ms``, unknown type, too long)
    are returned separately and never raise. xwatch's side only: it imports msgspec and
    the model when it reads (the worker, which may run under another interpreter,
    never does).
    """

    __slots__ = ("_partial", "_skipping")

    def __init__(self) -> None:
        self._partial = b""
        self._skipping = False

    def feed(self, chunk: bytes) -> ParseResult:
        from xwatch.core.model import events as ev  # xwatch's side only (see above)

        out = ParseResult()
        data = self._partial + chunk if self._partial else chunk
        cut = data.rfind(b"\n")
        body, self._partial = (data[: cut + 1], data[cut + 1:]) if cut >= 0 else (b"", data)
        if len(self._partial) > MAX_LINE_BYTES:
            out.malformed.append(_bad(self._partial) + " ... (line too long)")
            self._partial = b""
            self._skipping = True
        if not body:
            return out
        events, malformed = out.events, out.malformed
        if not self._skipping:
            try:  # the hot path: every line a plain request, in one call
                events.extend(ev.requests_of(body))
                return out
            except ev.DecodeError:
                pass
            named = ev.named_requests_of(body)  # requests with named metrics of their own
            if named is not None:
                events.extend(named)
                return out
            try:  # any other line: the chunk as JSON in one call, each typed
                objs = ev.jsons_of(body)
            except ev.DecodeError:
                objs = None
            if objs is not None:
                for obj in objs:
                    try:
                        e = ev.event_of(obj)
                    except ev.Unreadable:
                        continue
                    if e is None:
                        malformed.append(_bad(_dumps(obj)))
                    else:
                        events.append(e)
                return out
        for line in body.split(b"\n"):  # a line that is not JSON: one at a time
            if self._skipping:  # tail of an over-long line
                self._skipping = False
                continue
            if not line or line.isspace():
                continue
            try:
                e = ev.event_of(ev.json_of(line))
            except ev.DecodeError:
                e = None
            except ev.Unreadable:
                continue
            if e is None:
                malformed.append(_bad(line))
            else:
                events.append(e)
        return out

    def close(self) -> ParseResult:
        """Parse whatever is left without a trailing newline (writer exited)."""
        if not self._partial:
            return ParseResult()
        rest, self._partial = self._partial, b""
        return self.feed(rest + b"\n")


class EventWriter:
    """Worker-side emitter: buffers lines and writes them in batches.

    Request events are formatted by hand (no ``json.dumps``) to keep the
    per-request cost to about a microsecond; a flush happens when the buffer
    holds ``max_lines`` lines or ``max_delay_s`` has passed since the last one,
    so a 20 req/s workload still shows up live while a 10k req/s one costs one
    syscall per 64 events.
    """

    def __init__(self, fd: int, max_lines: int = 64, max_delay_s: float = 0.05) -> None:
        self.fd = fd
        self.max_lines = max_lines
        self.max_delay_s = max_delay_s
        self._buf: list[str] = []
        self._last_flush = time.monotonic()
        # serializes writes of the main loop and the heartbeat thread, so that
        # batches larger than PIPE_BUF never interleave with a heartbeat line
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls) -> EventWriter | None:
        raw = os.environ.get(EVENT_FD_ENV)
        if not raw:
            return None
        return cls(int(raw))

    def request(
        self,
        seq: int,
        t: float,
        latency_ms: float,
        service_ms: float,
        sched_delay_ms: float,
        late: bool,
        batch: int,
        now: float,
        named: str = "",
    ) -> None:
        """One request event; ``named``: its named metrics as a JSON fragment that
        starts with a comma (``,"ttft_ms":40.1,...``)."""
        self._buf.append(
            f'{{"seq":{seq},"t":{t:.6f},"latency_ms":{latency_ms:.4f},'
            f'"service_ms":{service_ms:.4f},"sched_delay_ms":{sched_delay_ms:.4f},'
            f'"late":{"true" if late else "false"},"batch":{batch}{named}}}\n'
        )
        if len(self._buf) >= self.max_lines or now - self._last_flush >= self.max_delay_s:
            self.flush(now)

    def maybe_flush(self, now: float) -> None:
        """Flush if ``max_lines`` wait or ``max_delay_s`` passed (after ``emit(flush=False)``)."""
        if len(self._buf) >= self.max_lines or now - self._last_flush >= self.max_delay_s:
            self.flush(now)

    def emit(self, obj: dict[str, Any], flush: bool = True) -> None:
        self.emit_line(json.dumps(obj, separators=(",", ":"), default=str) + "\n", flush)

    def emit_line(self, line: str, flush: bool = True) -> None:
        """One event already encoded (a typed event's line, with its newline)."""
        self._buf.append(line)
        if flush:
            self.flush()

    def flush(self, now: float | None = None) -> None:
        if self._buf:
            data = "".join(self._buf).encode()
            self._buf.clear()
            self._write(data)
        self._last_flush = time.monotonic() if now is None else now

    def write_line(self, line: str) -> None:
        """Write one complete line now (thread-safe; used by the heartbeat)."""
        self._write(line.encode())

    def _write(self, data: bytes) -> None:
        with self._lock:
            view = memoryview(data)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]


def encode_events(events: Iterable[dict[str, Any]]) -> bytes:
    """Encode events as protocol lines (used by tests and synthetic producers)."""
    return b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)


def open_workload_pipe(who: str) -> EventWriter | None:
    """The start of a workload process (the worker, the load generator): with the start
    gate on, SIGUSR2 blocked before any thread starts (the gate's signal must wait for
    sigtimedwait in every thread, never take its default action, termination); then its
    event pipe, or None with a line on stderr when it was not started through xwatch."""
    if os.environ.get(GATE_ENV) == "1":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
    writer = EventWriter.from_env()
    if writer is None:
        print(f"xwatch {who}: {EVENT_FD_ENV} is not set (start me through xwatch)",
              file=sys.stderr)
    return writer


# ------------------------------------------------------------------ the event pipe
PIPE_BYTES = 1 << 20  # event pipes are grown to this (Linux's default cap for a user)


def grow_pipe(fd: int, size: int = PIPE_BYTES) -> int:
    """Make the pipe behind ``fd`` hold ``size`` bytes where the OS lets us; its
    capacity afterwards (64 KiB, Linux's default, when it cannot be read)."""
    try:
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)  # refused: e.g. over the user's quota
        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (ImportError, AttributeError, OSError):  # not Linux
        return 1 << 16


def next_window(nbytes: int, elapsed_s: float, capacity: int, lo: float, hi: float) -> float:
    """The next read pause: the time the pipe takes, at the rate just seen (``nbytes``
    over ``elapsed_s``), to fill an eighth of its ``capacity``; within [lo, hi]."""
    rate = nbytes / max(elapsed_s, 1e-3)
    return min(hi, max(lo, capacity / 8 / rate)) if rate > 0 else hi
