"""The event line protocol: parsing into typed events (valid, malformed, split chunks,
what a program's own lines may hold) and the emitter."""

from __future__ import annotations

import json
import math
import os

import pytest

from xwatch.core.engine.protocol import (
    KNOWN_TYPES,
    MAX_LINE_BYTES,
    EventWriter,
    LineParser,
    encode_events,
)
from xwatch.core.model import events as E


def test_minimal_and_full_events() -> None:
    p = LineParser()
    r = p.feed(b'{"latency_ms": 12.5}\n{"type":"hello","pid":1}\n'
               b'{"seq":1,"t":1.5,"latency_ms":3,"batch":8,"late":false}\n')
    assert [type(e) for e in r.events] == [E.Request, E.Hello, E.Request]
    assert r.events[0] == E.Request(latency_ms=12.5) and r.malformed == []
    assert r.events[1] == E.Hello(info={"pid": 1}, stages={})
    assert r.events[2] == E.Request(seq=1, t=1.5, latency_ms=3, batch=8, late=False)
    assert type(r.events[2].latency_ms) is int  # kept as sent: the spool writes "3"


def test_malformed_lines_are_counted_not_fatal() -> None:
    p = LineParser()
    bad = [b"not json", b"[1,2]", b'{"x":1}', b'{"latency_ms":-1}', b'{"latency_ms":"5"}',
           b'{"latency_ms":NaN}', b'{"latency_ms":Infinity}', b'{"type":"weird"}',
           b'{"latency_ms":true}']
    r = p.feed(b"\n".join(bad) + b'\n{"latency_ms":1}\n')
    assert len(r.malformed) == len(bad)
    assert len(r.events) == 1


def test_lines_split_across_chunks_and_close() -> None:
    data = encode_events([{"latency_ms": float(i), "seq": i} for i in range(100)])
    p = LineParser()
    got = []
    for i in range(0, len(data), 7):
        got += p.feed(data[i:i + 7]).events
    assert [e.seq for e in got if isinstance(e, E.Request)] == list(range(100))
    p2 = LineParser()
    assert p2.feed(b'{"latency_ms":1}\n{"latency_ms":2}').events == [E.Request(latency_ms=1)]
    assert p2.close().events == [E.Request(latency_ms=2)]


def test_overlong_line_is_dropped_and_parser_recovers() -> None:
    p = LineParser()
    r = p.feed(b"x" * (MAX_LINE_BYTES + 10))
    assert r.malformed and "too long" in r.malformed[0]
    r = p.feed(b'yyy\n{"latency_ms":4}\n')
    assert r.events == [E.Request(latency_ms=4)]


def test_writer_batches_and_round_trips() -> None:
    r, w = os.pipe()
    writer = EventWriter(w, max_lines=10, max_delay_s=100.0)
    for i in range(9):
        writer.request(i + 1, 1.0 + i, 2.5, 2.0, 0.5, i == 3, 8, now=0.0)
    os.set_blocking(r, False)
    try:
        assert os.read(r, 65536) == b""  # nothing flushed yet: batched
    except BlockingIOError:
        pass
    writer.request(10, 11.0, 2.5, 2.0, 0.5, False, 8, now=0.0)  # 10th line -> flush
    writer.write_line('{"type":"hb","t":1.0}\n')
    writer.emit({"type": "bye", "count": 10})
    os.close(w)
    os.set_blocking(r, True)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    p = LineParser()
    evs = p.feed(data).events
    reqs = [e for e in evs if isinstance(e, E.Request)]
    assert [e.seq for e in reqs] == list(range(1, 11))
    assert reqs[3].late is True and reqs[0].batch == 8 and reqs[0].service_ms == 2.0
    assert evs[10] == E.Heartbeat(t=1.0) and evs[11] == E.Bye(count=10)
    assert all(json.loads(line) for line in data.splitlines())


def test_the_read_pause_follows_the_rate_and_never_lets_the_pipe_fill() -> None:
    """A slow workload's events are read a few at a time (one wake-up per 250 ms, not
    per request); a fast one's so often that the pipe holds at most an eighth of its
    capacity between reads."""
    from xwatch.core.engine.supervisor import grow_pipe, next_window

    cap = 1 << 20
    assert next_window(60, 0.05, cap, 0.005, 0.25) == 0.25  # 20 req/s
    assert next_window(0, 0.25, cap, 0.005, 0.25) == 0.25
    fast = next_window(800_000, 1.0, cap, 0.005, 0.25)  # 20k events/s of 40 bytes
    assert 0.005 < fast < 0.25 and fast * 800_000 <= cap / 8 + 1
    assert next_window(50_000_000, 1.0, cap, 0.005, 0.25) == 0.005  # the floor
    import os

    r, w = os.pipe()
    try:
        got = grow_pipe(r)
        assert got >= 1 << 16  # Linux grants 1 MiB to a user unless its quota is spent
        if os.path.exists("/proc/sys/fs/pipe-max-size"):
            with open("/proc/sys/fs/pipe-max-size") as f:
                assert got == min(1 << 20, int(f.read())) or got == 1 << 16
    finally:
        os.close(r)
        os.close(w)


def test_the_tagged_union_is_the_protocols_types() -> None:
    """Every ``type`` the protocol knows is one struct's tag (a request has none)."""
    tags = {c.__struct_config__.tag for c in (E.Hello, E.Warm, E.Ready, E.Heartbeat,
                                              E.Error, E.Bye, E.Drain, E.First, E.Trace,
                                              E.Server)}
    assert E.TYPES == KNOWN_TYPES == tags | {E.REQ}


def test_a_programs_own_lines_are_read_as_before() -> None:
    """What a program may write and how it reads: ``"type": "req"``, unknown keys (kept
    as named metrics when they end in ``_ms``, in the line's order; ignored otherwise),
    values of the wrong type taken as absent."""
    r = LineParser().feed(
        b'{"type":"req","latency_ms":2.5,"seq":"x","batch":2.0,"late":1,"ok":null}\n'
        b'{"latency_ms":1,"t":7,"gpu_ms":[1,"x",2],"id":3,"tpot_ms":4,"ttft_ms":"no"}\n'
        b'{"latency_ms":1,"itl_ms":5,"ttft_ms":[1,2]}\n'
        b'{"latency_ms":1,"ok":false,"error":"boom","cause":7}\n'
        b'{"latency_ms":1,"service_ms":1e400,"sched_delay_ms":NaN}\n')
    a, b, c, d, e = r.events
    assert isinstance(e, E.Request) and e.service_ms == math.inf  # kept, as json reads it
    assert e.sched_delay_ms is not None and math.isnan(e.sched_delay_ms)
    assert a == E.Request(latency_ms=2.5, late=False) and r.malformed == []
    assert a.ok and a.seq is None and a.batch is None
    assert isinstance(b, E.NamedRequest) and b.named == {"gpu_ms": [1.0, 2.0],
                                                          "tpot_ms": [4.0]}
    assert b.t is None and b.tpot_ms == 4.0 and b.ttft_ms is None  # integer t: the arrival
    assert isinstance(c, E.NamedRequest) and c.named == {"itl_ms": [5.0], "ttft_ms": [1.0, 2.0]}
    assert c.itl_ms is None and c.ttft_ms is None
    assert not d.ok and d.error == "boom" and d.cause is None


@pytest.mark.parametrize(("line", "want"), [
    (b'{"type":"hello","pid":"odd","stages":{"python":1,"x":"no","y":true}}',
     E.Hello(info={"pid": "odd"}, stages={"python": 1.0})),
    (b'{"type":"ready","t0":"x","warmup":4.0,"warmup_ms":20}',
     E.Ready(t0=None, warmup=4, warmup_ms=20.0, stages={})),
    (b'{"type":"hb","inflight_s":"x"}', E.Heartbeat()),
    (b'{"type":"error"}', E.Error(message="error")),
    (b'{"type":"error","message":3,"traceback":""}', E.Error(message="3")),
    (b'{"type":"drain","sent":"x","done":true}', E.Drain(sent=None, done=True)),
    (b'{"type":"bye","t":"x","stopped":true}', E.Bye(stopped=True)),
    (b'{"type":"trace","id":2,"error":"no room","kernels":3}',
     E.Trace(id=2, error="no room", kernels=3)),
    (b'{"type":"warm","stages":[1]}', E.Warm(stages={})),
])
def test_control_events_take_what_they_can(line: bytes, want: E.Event) -> None:
    r = LineParser().feed(line + b"\n")
    assert r.events == [want] and r.malformed == []


def test_a_bad_line_in_a_chunk_of_requests_costs_only_itself() -> None:
    """The hot path decodes a chunk at once; a line it cannot take sends the chunk line
    by line, and the malformed one is named as it was written."""
    good = encode_events([{"latency_ms": float(i), "seq": i} for i in range(5)])
    r = LineParser().feed(good + b'{"latency_ms": -1}\n' + good)
    assert len(r.events) == 10 and r.malformed == ['{"latency_ms": -1}']


def test_a_commands_own_named_metrics_are_typed_by_the_chunk() -> None:
    """Request lines with keys of their own (a command's named metrics, an id) are
    typed in one call too, their named metrics in the line's order; a key ``named``
    of the program's own is no metric."""
    lines = b"".join(b'{"seq":%d,"latency_ms":1.5,"gpu_ms":%d,"id":"r%d","tpot_ms":2}\n'
                     % (i, i, i) for i in range(3))
    r = LineParser().feed(lines + b'{"latency_ms":2,"named":{"x":[1.0]},"q_ms":[3]}\n')
    assert r.malformed == [] and all(type(e) is E.NamedRequest for e in r.events)
    assert [e.named for e in r.events if isinstance(e, E.NamedRequest)] == [
        {"gpu_ms": [0.0], "tpot_ms": [2.0]}, {"gpu_ms": [1.0], "tpot_ms": [2.0]},
        {"gpu_ms": [2.0], "tpot_ms": [2.0]}, {"q_ms": [3.0]}]
    first = r.events[0]
    assert isinstance(first, E.Request) and first.seq == 0 and first.tpot_ms == 2.0
    # a control event among them: each typed on its own, the same requests
    r2 = LineParser().feed(lines + b'{"type":"hb","inflight_s":0.5}\n')
    assert r2.events[:3] == r.events[:3] and r2.events[3] == E.Heartbeat(inflight_s=0.5)


def test_a_first_token_event_is_read_and_a_bad_one_is_malformed() -> None:
    """A server's load generator says each request's first token (``first``): its
    number and TTFT; one without a number or with a TTFT that is no time is malformed."""
    r = LineParser().feed(
        b'{"type":"first","seq":3,"ttft_ms":12.5,"t":101.25}\n'
        b'{"type":"first","seq":4,"ttft_ms":7}\n'
        b'{"type":"first","ttft_ms":12.5}\n'
        b'{"type":"first","seq":5,"ttft_ms":-1}\n')
    assert r.events == [E.First(seq=3, ttft_ms=12.5, t=101.25), E.First(seq=4, ttft_ms=7.0)]
    assert len(r.malformed) == 2
    assert E.line(E.First(seq=3, ttft_ms=12.5, t=101.25)) == \
        '{"type":"first","seq":3,"ttft_ms":12.5,"t":101.25}\n'
