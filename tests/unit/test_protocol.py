"""The event line protocol: parsing (valid, malformed, split chunks) and the emitter."""

from __future__ import annotations

import json
import os

from xwatch.core.engine.protocol import MAX_LINE_BYTES, EventWriter, LineParser, encode_events


def test_minimal_and_full_events() -> None:
    p = LineParser()
    r = p.feed(b'{"latency_ms": 12.5}\n{"type":"hello","pid":1}\n'
               b'{"seq":1,"t":1.5,"latency_ms":3,"batch":8,"late":false}\n')
    assert [e.get("type") for e in r.events] == [None, "hello", None]
    assert r.events[0]["latency_ms"] == 12.5 and r.malformed == []


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
    assert [e["seq"] for e in got] == list(range(100))
    p2 = LineParser()
    assert p2.feed(b'{"latency_ms":1}\n{"latency_ms":2}').events == [{"latency_ms": 1}]
    assert p2.close().events == [{"latency_ms": 2}]


def test_overlong_line_is_dropped_and_parser_recovers() -> None:
    p = LineParser()
    r = p.feed(b"x" * (MAX_LINE_BYTES + 10))
    assert r.malformed and "too long" in r.malformed[0]
    r = p.feed(b'yyy\n{"latency_ms":4}\n')
    assert r.events == [{"latency_ms": 4}]


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
    assert [e.get("seq") for e in evs[:10]] == list(range(1, 11))
    assert evs[3]["late"] is True and evs[0]["batch"] == 8
    assert evs[10]["type"] == "hb" and evs[11] == {"type": "bye", "count": 10}
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
