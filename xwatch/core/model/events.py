"""The event protocol's events, typed (``docs/protocol.md``): one msgspec Struct per
``type``, a tagged union on the wire's ``type`` key, and how a line becomes one.

The wire format is the protocol's and does not change: a request line carries no
``type`` (or ``"type": "req"``); every other event is tagged by it. The load
generator writes these structs (``line``); xwatch reads every workload's lines into
them (``engine.protocol.LineParser``), so the engine, the live run and the spool read
named, typed fields and never a dict.

Reading is two ways, one result. The hot path: a chunk of plain request lines is
decoded by one ``Decoder`` straight into ``Request`` (in C; a request line carries no
tag, so the union's own tagged decoding cannot take it). A chunk with any other line
(control events, requests with metrics of their own or odd values) is decoded as
JSON and typed by ``event_of``, the one place that says what the protocol tolerates:
a request needs a finite ``latency_ms`` >= 0, an event a known ``type``; a field of
the wrong type counts as absent (as each reader treated it when events were dicts);
unknown fields are kept where the protocol keeps them (a ``hello`` as it was sent, a
request's ``*_ms`` keys as named metrics) and ignored elsewhere. The worker writes its
lines by hand (stdlib only, any interpreter), so it does not import this module.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, TypeGuard

import msgspec

from xwatch.core.model.base import RawJSON
from xwatch.core.model.phase import ServerView

#: every ``type`` of the protocol (``engine.protocol.KNOWN_TYPES``; a test keeps them
#: equal): a line without one is a request
REQ = "req"

#: the request's keys that are not named metrics (``docs/protocol.md``)
REQUEST_KEYS = frozenset({"type", "seq", "t", "latency_ms", "service_ms", "sched_delay_ms",
                          "late", "batch", "ok"})

_Ms = Annotated[int, msgspec.Meta(ge=0)] | Annotated[float, msgspec.Meta(ge=0)]


class Request(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True,
              gc=False):
    """One measured request; only ``latency_ms`` is required (a finite number >= 0,
    kept as sent, as ``service_ms`` and ``sched_delay_ms`` are: an integer stays one in
    the spool). ``t``: when it ended (monotonic seconds; absent: its arrival). Times of
    a server's request as vLLM's ``bench serve`` defines them, from the request's
    scheduled send: ``ttft_ms`` to the first output chunk, ``latency_ms`` (end to end)
    to the last, ``itl_ms`` the gaps between output chunks, ``tpot_ms`` = (e2e - TTFT)
    / (tokens - 1); ``tail_ms``: the stream's end (the usage chunk and ``[DONE]``) after
    the last output chunk, which vLLM leaves out of e2e. A failure: ``ok`` false, its
    ``error`` and short ``cause``.

    Unknown keys are refused here, so that a line with named metrics of its own takes
    the careful path (``event_of``: a ``NamedRequest``); a field left at its default
    is not written (``omit_defaults``)."""

    seq: int | None = None
    #: an integer is no monotonic time: the arrival is used for it (as it always was)
    t: int | float | None = None
    latency_ms: _Ms
    service_ms: int | float | None = None
    sched_delay_ms: int | float | None = None
    late: bool | None = None
    batch: int | None = None
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


class NamedRequest(Request, kw_only=True, omit_defaults=True, forbid_unknown_fields=False,
                   gc=False):
    """A request line with keys beyond ``Request``'s fields (named metrics of its own,
    keys the protocol ignores): every named metric's numbers, its fields' too, in the
    order sent (a run keeps its metrics in the order it first meets them). Only
    ``event_of`` makes one, never the wire decoder; it ignores the keys that are not
    fields."""

    named: dict[str, list[float]] = msgspec.field(default_factory=dict)


#: a request's named metrics that are ``Request`` fields: a run meets them in this
#: order on a line that holds no other (a ``NamedRequest`` keeps the line's order)
NAMED_FIELDS = ("ttft_ms", "tpot_ms", "itl_ms", "tail_ms")


class Hello(msgspec.Struct, kw_only=True, tag_field="type", tag="hello"):
    """Who the workload is. ``info``: everything it said but its ``stages``, as it said
    it (the protocol's open set: the snapshot's raw ``hello``); ``stages``: its start's
    stages reached so far (monotonic seconds; numbers only)."""

    info: RawJSON
    stages: dict[str, float]


class Warm(msgspec.Struct, kw_only=True, tag_field="type", tag="warm"):
    """The start gate: warm-up over, waiting for SIGUSR2."""

    warmup: int | None = None
    warmup_ms: float | None = None
    stages: dict[str, float]


class Ready(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="ready"):
    """Measurement starts; ``t0``: its first scheduled request (absent: the arrival)."""

    t0: float | None = None
    warmup: int | None = None
    warmup_ms: float | None = None
    stages: dict[str, float]
    gate_wait_ms: float | None = None


class Heartbeat(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="hb"):
    """About 1 Hz; ``inflight_s``: how long the current request has run."""

    t: float | None = None
    count: int | None = None
    inflight_s: float | None = None


class Error(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="error"):
    """A fatal error; the process then exits non-zero."""

    message: str
    traceback: str | None = None


class Bye(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="bye"):
    """The clean end; ``t``: the stage ``bye``."""

    count: int | None = None
    errors: int | None = None
    output_tokens: int | None = None
    t: float | None = None
    cpu_s: float | None = None
    stopped: bool | None = None


class Drain(msgspec.Struct, kw_only=True, tag_field="type", tag="drain"):
    """Asked to drain: no request after the ``sent`` first; ``done``: none in flight
    (``sent`` absent: an event that says nothing)."""

    sent: int | None = None
    done: bool = False


class First(msgspec.Struct, kw_only=True, tag_field="type", tag="first"):
    """A server's request ``seq`` had its first output token ``ttft_ms`` after its
    scheduled send, at ``t``: a request cut at the end before its answer has its TTFT
    known from this, and one cut before it has a TTFT of at least its wait."""

    seq: int
    ttft_ms: float
    t: float | None = None


class Trace(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="trace"):
    """A kernel capture written (``path``) or failed (``error``)."""

    id: int | None = None
    path: str | None = None
    error: str | None = None
    kernels: int | None = None
    requests: int | None = None
    t0: float | None = None
    t1: float | None = None
    cost_s: float | None = None


class Server(ServerView, frozen=True, kw_only=True, tag_field="type", tag="server"):
    """The server's own metrics summed over the phase so far (``servers.scrape``), at
    ``t``: the snapshot's ``ServerView``, flat, with its time (absent: the arrival)."""

    t: float | None = None


def server(view: ServerView, t: float) -> Server:
    """A view as its event."""
    return Server(t=round(t, 6), **msgspec.structs.asdict(view))


def view_of(ev: Server) -> ServerView:
    """The event's view, without its time."""
    return ServerView(**{f: getattr(ev, f) for f in ServerView.__struct_fields__})


Control = Hello | Warm | Ready | Heartbeat | Error | Bye | Drain | First | Trace | Server
Event = Request | Control
TYPES = frozenset({REQ, "hello", "warm", "ready", "hb", "error", "bye", "drain", "first",
                   "trace", "server"})

_encode = msgspec.json.Encoder().encode


def line(ev: Event) -> str:
    """One event as its protocol line (with the newline); a ``Hello`` flat, as sent."""
    if isinstance(ev, Hello):
        return _encode({"type": "hello", **ev.info, "stages": ev.stages}).decode() + "\n"
    return _encode(ev).decode() + "\n"


# ------------------------------------------------------------------ reading lines
_requests = msgspec.json.Decoder(Request)
_json = msgspec.json.Decoder()
DecodeError = msgspec.DecodeError  # a chunk or line this module cannot take: any of them


class Unreadable(Exception):
    """A ``server`` event whose view this xwatch cannot read: ignored, as it always was
    (neither an event nor a malformed line)."""


def requests_of(body: bytes) -> list[Request]:
    """Every line of ``body`` as a plain request (the hot path), or ``DecodeError``
    (``ValidationError`` is one) at the first line that is not one."""
    return _requests.decode_lines(body)


_named_requests = msgspec.json.Decoder(NamedRequest)


def named_of(obj: RawJSON) -> dict[str, list[float]]:
    """A request line's named metrics (its fields' too), in the line's order."""
    named: dict[str, list[float]] = {}
    for k, v in obj.items():
        if k[-3:] == "_ms" and k not in REQUEST_KEYS:
            if type(v) is float or type(v) is int:
                named[k] = [float(v)]
            elif vals := _values(v):
                named[k] = vals
    return named


def named_requests_of(body: bytes) -> list[Request] | None:
    """Every line of ``body`` as a request with keys of its own (a command's named
    metrics): typed in C, the named metrics read from the same lines as JSON; None
    where a line is not such a request (an event of another type, a value of another
    type)."""
    try:
        evs = _named_requests.decode_lines(body)
        objs = _json.decode_lines(body)
    except msgspec.DecodeError:
        return None
    if len(evs) != len(objs):
        return None
    for ev, obj in zip(evs, objs):
        if type(obj) is not dict or obj.get("type", REQ) != REQ:
            return None
        ev.named = named_of(obj)
    return evs  # type: ignore[return-value]


def jsons_of(body: bytes) -> list[object]:
    """Every line of ``body`` as plain JSON, or ``DecodeError`` (then line by line)."""
    return _json.decode_lines(body)  # type: ignore[no-any-return]


def json_of(line: bytes) -> object:
    """One line as plain JSON, as Python's ``json`` reads it (numbers out of a double's
    range, ``NaN``: its checks then say what they mean); ``DecodeError`` if it is not."""
    try:
        return _json.decode(line)  # type: ignore[no-any-return]
    except msgspec.DecodeError:
        try:
            return json.loads(line)  # type: ignore[no-any-return]
        except ValueError as e:
            raise msgspec.DecodeError(str(e)) from None


def _num(v: object) -> TypeGuard[int | float]:
    """A number, not a bool nor NaN."""
    return (type(v) is float or type(v) is int) and v == v


def _float(v: object) -> float | None:
    """A number (bools, as every reader took them: ``isinstance(v, (int, float))``)."""
    return float(v) if isinstance(v, (int, float)) else None


def _int(v: object) -> int | None:
    return v if type(v) is int else None


def _str(v: object) -> str | None:
    return v if type(v) is str else None


def _stages(v: object) -> dict[str, float]:
    """A start's stages: names with finite numbers; the rest ignored."""
    if type(v) is not dict:
        return {}
    return {k: float(x) for k, x in v.items()
            if type(k) is str and type(x) in (int, float) and math.isfinite(x)}


def _float_ms(v: object) -> float | None:
    """A named metric's one number, as a float."""
    return float(v) if _num(v) else None


def _values(v: object) -> list[float]:
    """A named metric's numbers (one, or a list); what is not a number is dropped."""
    return [float(x) for x in (v if type(v) is list else (v,)) if _num(x)]


_FIELDS = frozenset(Request.__struct_fields__)


def _request(obj: RawJSON) -> Request | None:
    """A request line that the wire decoder could not take: msgspec types it (in C);
    a value of another type sends it field by field."""
    lat = obj.get("latency_ms")
    if (type(lat) is not float and type(lat) is not int) or not 0.0 <= lat < math.inf:
        return None
    try:
        if obj.keys() <= _FIELDS:  # only the fields (a value of another type somewhere)
            return msgspec.convert(obj, Request)
        return msgspec.convert({**obj, "named": named_of(obj)}, NamedRequest)
    except msgspec.ValidationError:
        return _request_field_by_field(obj, lat)


def _request_field_by_field(obj: RawJSON, lat: float) -> Request:
    """A field of the wrong type is absent; a named metric that does not fit its field
    (``ttft_ms`` as a list, ``itl_ms`` as one number) is counted by name."""
    g = obj.get
    # the named metrics that are fields, where they fit one; the others by name
    ttft, tpot, tail = (_float_ms(g(k)) for k in ("ttft_ms", "tpot_ms", "tail_ms"))
    itl = g("itl_ms")
    itl_ms = _values(itl) if type(itl) is list else None
    fits = {"ttft_ms": ttft, "tpot_ms": tpot, "tail_ms": tail, "itl_ms": itl_ms}
    named = {k: vals for k, v in obj.items() if k.endswith("_ms") and k not in REQUEST_KEYS
             and (vals := _values(v))}
    if list(named) == [k for k in NAMED_FIELDS if fits[k] is not None]:
        named = {}  # the fields say it all, in their order
    t, sv, sd = g("t"), g("service_ms"), g("sched_delay_ms")
    ev = Request(
        seq=_int(g("seq")), t=t if type(t) is float else None, latency_ms=lat,
        service_ms=sv if _num(sv) else None, sched_delay_ms=sd if _num(sd) else None,
        late=g("late") is True, batch=_int(g("batch")), prompt_words=_int(g("prompt_words")),
        ok=g("ok") is not False, error=_str(g("error")), status=_int(g("status")),
        cause=_str(g("cause")), ttft_ms=ttft, tpot_ms=tpot, itl_ms=itl_ms, tail_ms=tail,
        output_tokens=_int(g("output_tokens")), chunks=_int(g("chunks")))
    return NamedRequest(named=named, **msgspec.structs.asdict(ev)) if named else ev


def _server(obj: RawJSON) -> Server:
    try:
        view = msgspec.convert({k: v for k, v in obj.items() if k not in ("type", "t")},
                               ServerView)
    except msgspec.ValidationError:
        raise Unreadable from None
    t = obj.get("t")
    return Server(t=float(t) if _num(t) else None, **msgspec.structs.asdict(view))


def _control(kind: object, obj: RawJSON) -> Control | None:
    g = obj.get
    if kind == "hello":
        return Hello(info={k: v for k, v in obj.items() if k not in ("type", "stages")},
                     stages=_stages(g("stages")))
    if kind == "warm":
        return Warm(warmup=_int(g("warmup")), warmup_ms=_float(g("warmup_ms")),
                    stages=_stages(g("stages")))
    if kind == "ready":
        w = g("warmup")
        return Ready(t0=_float(g("t0")), warmup=int(w) if _num(w) and math.isfinite(w) else None,
                     warmup_ms=_float(g("warmup_ms")), gate_wait_ms=_float(g("gate_wait_ms")),
                     stages=_stages(g("stages")))
    if kind == "hb":
        return Heartbeat(t=_float(g("t")), count=_int(g("count")),
                         inflight_s=_float(g("inflight_s")))
    if kind == "error":
        return Error(message=str(g("message", "error")),
                     traceback=str(g("traceback", "")) or None)
    if kind == "bye":
        stopped = g("stopped")
        return Bye(count=_int(g("count")), errors=_int(g("errors")),
                   output_tokens=_int(g("output_tokens")), t=_float(g("t")),
                   cpu_s=_float(g("cpu_s")),
                   stopped=stopped if type(stopped) is bool else None)
    if kind == "drain":
        return Drain(sent=_int(g("sent")), done=g("done") is True)
    if kind == "first":
        seq, ttft = _int(g("seq")), g("ttft_ms")
        if seq is None or not _num(ttft) or not 0 <= ttft < math.inf:
            return None  # malformed: nothing to keep
        return First(seq=seq, ttft_ms=float(ttft), t=_float(g("t")))
    if kind == "trace":
        err, path, cost = g("error"), g("path"), g("cost_s")
        return Trace(id=_int(g("id")), path=str(path) if path else None,
                     error=str(err) if err else None, kernels=_int(g("kernels")),
                     requests=_int(g("requests")), t0=_float(g("t0")), t1=_float(g("t1")),
                     cost_s=cost if _num(cost) else None)  # as sent: it is printed
    if kind == "server":
        return _server(obj)
    return None


def event_of(obj: object) -> Event | None:
    """A line's JSON as its event, or None when it is malformed (not an object, a
    request without a finite ``latency_ms`` >= 0, an unknown ``type``); ``Unreadable``
    for a ``server`` event this xwatch cannot read."""
    if type(obj) is not dict:
        return None
    kind = obj.get("type", REQ)
    if kind == REQ:
        return _request(obj)
    return _control(kind, obj)


def events_of(objs: list[RawJSON]) -> list[Event]:
    """Events from JSON objects (tests and synthetic producers); malformed ones are an
    error here."""
    out = []
    for o in objs:
        ev = event_of(o)
        if ev is None:
            raise ValueError(f"not an event: {o!r}")
        out.append(ev)
    return out
