"""The raw-event spool: every request event (``model.events.Request``) as a CSV row,
gzip-compressed on disk.

Memory stays bounded whatever the rate: rows are buffered briefly and written as
independent gzip members, so the file is valid after every flush (an export copies
it while the session runs, and a session killed with SIGKILL leaves a readable
file up to its last flush). Owned by ``Session``; read back by exports and by
``export.sessions`` when an interrupted session is recovered.
"""

from __future__ import annotations

import gzip
import operator
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from xwatch.core.model.events import Request

EVENT_CSV_HEADER = ("phase", "workload", "seq", "t", "latency_ms", "service_ms",
                    "sched_delay_ms", "late", "batch", "ok")


_FIELDS = ("seq", "t", "latency_ms", "service_ms", "sched_delay_ms", "late", "batch", "ok")
_fast_get = operator.attrgetter(*_FIELDS)
_encode = msgspec.json.Encoder().encode


def _rows_fast(prefix: str, events: list[Request]) -> bytes | None:
    """CSV rows for events that carry every column (the built-in worker's), or None
    (then ``_rows_any``).

    The hot path of the spool, once per request: the eight values of every event are
    encoded as one JSON array of arrays by msgspec (in C, floats as shortest
    round-trip text like Python's ``repr``), then turned into rows by a few byte
    replacements; about a third of formatting each row with ``%``. An absent value
    (``null``: a command workload's own events) takes the other path.
    """
    if not events:
        return None
    body = _encode(list(map(_fast_get, events)))[2:-2]  # [[a,b,...],[...]] -> a,b,...],[...
    if b"null" in body:
        return None
    p = prefix.encode()
    return p + body.replace(b"false", b"0").replace(b"true", b"1").replace(
        b"],[", b"\n" + p) + b"\n"


def _rows_any(prefix: str, events: list[Request]) -> bytes:
    """CSV rows for events with any subset of the fields (a command workload's own
    events: ``seq``, ``t``, ``latency_ms``, maybe ``batch``), through msgspec like
    ``_rows_fast``: absent values become empty cells, an absent batch 1."""
    rows = [(e.seq, e.t, e.latency_ms, e.service_ms, e.sched_delay_ms, 1 if e.late else 0,
             1 if e.batch is None else e.batch, 1 if e.ok else 0) for e in events]
    p = prefix.encode()
    return p + _encode(rows)[2:-2].replace(b"null", b"").replace(b"],[", b"\n" + p) + b"\n"


class EventSpool:
    """Every request event as a CSV row, gzip-compressed on disk (bounded memory and
    disk).

    Rows are buffered (at most ``BUFFER_BYTES`` or ``BUFFER_S``) and written as
    independent gzip members: the file is a valid ``.csv.gz`` after every flush, so an
    export copies it while the session runs. Past ``max_bytes`` of compressed spool,
    further rows are dropped (counted; statistics stay exact: they never read the
    spool) and a warning is logged once.
    """

    BUFFER_BYTES = 1 << 18
    BUFFER_S = 2.0
    FILE_NAME = "events.csv.gz"

    def __init__(self, directory: str | None = None, max_bytes: int | None = 1 << 30,
                 on_full: Callable[[str], None] | None = None) -> None:
        self._tmp = None if directory else tempfile.TemporaryDirectory(prefix="xwatch-")
        self.dir = Path(directory or self._tmp.name)  # type: ignore[union-attr]
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / self.FILE_NAME
        self._f = open(self.path, "wb")
        self.max_bytes = max_bytes
        self._on_full = on_full
        self._buf: list[bytes] = [(",".join(EVENT_CSV_HEADER) + "\n").encode()]
        self._buf_len = 0
        self._buf_t = time.monotonic()
        self.rows = 0  # rows kept (written or buffered)
        self.dropped = 0  # rows not kept: the spool reached max_bytes, or its disk failed
        self.bytes_written = 0  # compressed
        self.failed: str | None = None  # the write error that stopped the spool (disk full)
        self._rows_buffered = 0

    @property
    def full(self) -> bool:
        return self.failed is not None or (self.max_bytes is not None
                                           and self.bytes_written >= self.max_bytes)

    def write_many(self, phase: int, name: str, events: list[Request]) -> None:
        if self.full:
            self.dropped += len(events)
            return
        prefix = f"{phase},{name},"
        text = _rows_fast(prefix, events) or _rows_any(prefix, events)
        self._buf.append(text)
        self._buf_len += len(text)
        self.rows += len(events)
        self._rows_buffered += len(events)
        if self._buf_len >= self.BUFFER_BYTES or time.monotonic() - self._buf_t >= self.BUFFER_S:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one gzip member (the file stays a valid .gz)."""
        self._buf_t = time.monotonic()
        if not self._buf or self._f.closed:
            return
        data = gzip.compress(b"".join(self._buf), compresslevel=1, mtime=0)
        self._buf.clear()
        self._buf_len = 0
        rows, self._rows_buffered = self._rows_buffered, 0
        try:
            self._f.write(data)
            self._f.flush()
        except OSError as e:  # disk full (ENOSPC), quota, I/O error: the run goes on
            self.failed = f"{type(e).__name__}: {e}"
            self.rows -= rows
            self.dropped += rows
            if self._on_full is not None:
                cb, self._on_full = self._on_full, None
                cb(f"raw event spool could not be written ({self.failed}): raw events are "
                   "dropped from events.csv.gz from here on (counted); statistics stay exact")
            return
        self.bytes_written += len(data)
        if self.full and self._on_full is not None:
            cb, self._on_full = self._on_full, None  # say it once
            cb(f"raw event spool reached {self.bytes_written / 2**20:.0f} MiB "
               f"(--spool-max-mb): further raw events are dropped from events.csv.gz "
               "(counted); statistics stay exact")

    def close(self) -> None:
        if not self._f.closed:
            self.flush()
            self._f.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None




def read_rows(path: str | Path) -> Iterator[list[str]]:
    """The spooled rows (header skipped), member by member, stopping quietly at a
    member cut short (the spool of a session killed mid-write)."""
    import zlib

    with open(path, "rb") as f:
        data = f.read()
    tail = b""
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(data)
        except zlib.error:
            return
        if not d.eof:  # an incomplete last member
            return
        data = d.unused_data
        text = (tail + chunk).decode("utf-8", "replace")
        lines = text.split("\n")
        tail = lines.pop().encode()
        for ln in lines:
            if ln and not ln.startswith("phase,"):
                yield ln.split(",")
