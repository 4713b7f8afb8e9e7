"""The load generator's events, typed: what it writes on the event pipe (``protocol``:
one JSON object a line), as msgspec Structs encoded once at the edge. A request event
carries no ``type`` (the protocol's plain request line); the others are tagged by it.
Fields left at their default are not written (``omit_defaults``), so an event reads as
it did when it was a dict.
"""

from __future__ import annotations

import msgspec

from xwatch.core import model as M
from xwatch.core.engine.protocol import BYE, DRAIN, ERROR, HELLO, READY, SERVER, WARM


class Request(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One measured request. Times as vLLM's ``bench serve`` defines them, from the
    request's scheduled send: ``ttft_ms`` to the first output chunk, ``latency_ms`` (end
    to end) to the last, ``itl_ms`` the gaps between output chunks, ``tpot_ms`` =
    (e2e - TTFT) / (tokens - 1); ``tail_ms``: the stream's end (the usage chunk and
    ``[DONE]``) after the last output chunk, which vLLM leaves out of e2e.
    A failure: ``ok`` false, its ``error`` and short ``cause``."""

    seq: int = 0
    t: float
    latency_ms: float
    service_ms: float | None = None
    sched_delay_ms: float | None = None
    late: bool
    batch: int
    prompt_words: int | None = None
    ok: bool = True
    error: str | None = None
    status: int | None = None
    cause: str | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    itl_ms: list[float] | None = None
    tail_ms: float | None = None
    output_tokens: int | None = None
    chunks: int | None = None


class Hello(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag=HELLO):
    v: int
    pid: int
    name: str
    python: str
    executable: str
    model: str
    server: list[str]
    server_pid: int
    api: str
    url: str
    batch: int
    rate: float
    arrival: str
    device: str
    stream: str
    env: dict[str, str]
    stages: dict[str, float]
    burstiness: float | None = None


class Warm(msgspec.Struct, kw_only=True, tag_field="type", tag=WARM):
    warmup: int
    warmup_ms: float
    stages: dict[str, float]


class Ready(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag=READY):
    t0: float
    warmup: int
    warmup_ms: float
    stages: dict[str, float]
    gate_wait_ms: float | None = None


class Error(msgspec.Struct, kw_only=True, tag_field="type", tag=ERROR):
    message: str


class Bye(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag=BYE):
    count: int
    errors: int
    output_tokens: int
    t: float
    cpu_s: float | None = None
    stopped: bool


class Drain(msgspec.Struct, kw_only=True, tag_field="type", tag=DRAIN):
    """Asked to drain: no request after the ``sent`` first; ``done``: none in flight."""

    sent: int
    done: bool


class Server(M.ServerView, frozen=True, kw_only=True, tag_field="type", tag=SERVER):
    """The server's own metrics summed over the phase so far (``servers.scrape``), at
    ``t``: the snapshot's ``ServerView``, flat, with its time."""

    t: float


def server(view: M.ServerView, t: float) -> Server:
    """A view as its event."""
    return Server(t=round(t, 6), **msgspec.structs.asdict(view))


Event = Request | Hello | Warm | Ready | Error | Bye | Drain | Server

_encode = msgspec.json.Encoder().encode


def line(ev: Event) -> str:
    """One event as its protocol line (with the newline)."""
    return _encode(ev).decode() + "\n"

