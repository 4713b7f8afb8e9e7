"""xserver's HTTP API (``/xqueues``, ``/policy``, ``/hint``, ``/config``): a blocking
client to call from a thread, the port choice, and checks made before sending."""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import json
import os
import socket
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any

import msgspec

from xwatch.core.xsched.install import XschedError


def _decode(raw: bytes) -> Any:
    """JSON -> Python (msgspec)."""
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as e:
        raise ValueError(str(e)) from None


class XQueueRow(msgspec.Struct, frozen=True, gc=False):
    """One entry of ``GET /xqueues`` (XSched's documented fields; others ignored)."""

    handle: int = 0
    device: int | None = None
    level: int | None = None
    pid: int = -1
    threshold: int | None = None
    batch_size: int | None = None
    ready: bool = False
    suspended: bool = False

    def settings(self) -> dict[str, int | None]:
        """Its level, threshold and batch size (``validate_config``'s ``current``)."""
        return {"level": self.level, "threshold": self.threshold,
                "batch_size": self.batch_size}


class _XQueuesAnswer(msgspec.Struct, gc=False):
    xqueues: list[XQueueRow] | None = None


_decode_rows = msgspec.json.Decoder(_XQueuesAnswer).decode


def decode_xqueues(raw: bytes) -> list[XQueueRow]:
    """``/xqueues`` -> its queues, typed: a third of the time of decoding to dicts and
    no per-queue dictionary lookups afterwards (the poll runs ten times a second over
    ~150 queues per PyTorch process). A field of the wrong type is a ValueError."""
    try:
        return _decode_rows(raw).xqueues or []
    except msgspec.DecodeError as e:  # ValidationError included
        raise ValueError(f"/xqueues answer not understood: {e}") from None


def _head(data: bytes) -> tuple[int, dict[bytes, bytes], int] | None:
    """(status, lower-cased headers, where the body starts) once a response's head has
    arrived, else None."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = data[:end].split(b"\r\n")
    parts = lines[0].split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise http.client.HTTPException(f"not an HTTP response: {lines[0][:80]!r}")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower()] = v.strip()
    return int(parts[1]), headers, end + 4


def _expected_length(data: bytes) -> int:
    """Head + Content-Length of a response whose head has arrived, else -1 (not yet,
    or no length announced: read to the end of the connection)."""
    head = _head(data)
    if head is None or b"content-length" not in head[1]:
        return -1
    return head[2] + int(head[1][b"content-length"])


def _parse_response(data: bytes) -> tuple[int, bytes]:
    """(status, body) of a whole HTTP/1.x response (Content-Length or chunked)."""
    head = _head(data)
    if head is None:
        raise http.client.HTTPException("connection closed before the response's head ended")
    status, headers, start = head
    body = data[start:]
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        out, pos = [], 0
        while True:
            eol = body.find(b"\r\n", pos)
            if eol < 0:
                raise http.client.HTTPException("chunked response cut short")
            size = int(body[pos:eol].split(b";")[0], 16)
            if size == 0:
                break
            out.append(body[eol + 2: eol + 2 + size])
            if len(out[-1]) < size:
                raise http.client.HTTPException("chunked response cut short")
            pos = eol + 2 + size + 2
        body = b"".join(out)
    elif b"content-length" in headers:
        n = int(headers[b"content-length"])
        if len(body) < n:
            raise http.client.HTTPException(f"response cut short ({len(body)} of {n} bytes)")
        body = body[:n]
    return status, body


def free_port(preferred: int) -> int:
    """``preferred`` if nothing listens there, else a free port from the OS."""
    for port in (preferred, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise XschedError("no free TCP port for xserver")


class XserverClient:
    """Blocking client for xserver's HTTP API (call it from a thread).

    A fresh connection per call: GETs (the ``/xqueues`` poll) on a plain socket,
    control calls through ``http.client``. Not keep-alive: against XSched's real
    xserver (cpp-httplib, H100, 2026-11-22) a kept-alive connection's ``/xqueues`` never
    once showed a ready XQueue while fresh connections saw them ready in 62 of ~70
    polls, so the engagement verdict was wrong. ``XWATCH_XSERVER_KEEPALIVE=1`` turns keep-alive on
    (one connection per calling thread), for xserver builds that serve it correctly.
    Against 1.2.0 (H100, 2026-11-25, ``benchmarks/investigations/xsched/keepalive_probe.py``) one plain
    kept-alive socket read what fresh connections read, for 0.12 ms a poll less, but
    with kept-alive connections held open another client's polls timed out: not worth
    0.03-0.06% of a core (``docs/results/h100-2026-11-25e.md``).
    """

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 2.0) -> None:
        self.host, self.port = host, port
        self.base = f"http://{host}:{port}"
        self.timeout = timeout
        self._local = threading.local()
        self.keepalive = os.environ.get("XWATCH_XSERVER_KEEPALIVE", "0") == "1"
        try:  # an address: connect without a name lookup (see _connect)
            ip = ipaddress.ip_address(host)
            self._family: int | None = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        except ValueError:
            self._family = None

    def _conn(self) -> http.client.HTTPConnection:
        c: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if c is None or c.timeout != self.timeout:
            c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self._local.conn = c
        return c

    def _drop(self) -> None:
        c = getattr(self._local, "conn", None)
        if c is not None:
            with contextlib.suppress(Exception):
                c.close()
        self._local.conn = None

    def _get_closing(self, path: str) -> tuple[int, bytes]:
        """GET on a fresh socket with ``Connection: close``: (status, body).

        The poll's path, ten times a second: about a third of the CPU of
        ``http.client`` (whose header parsing goes through ``email``), with the same
        fresh connection per call. Reads to the announced length (or, chunked or
        unannounced, to the end of the connection) into a buffer kept per thread (a
        fresh 128 KiB ``recv`` buffer per call was mapped and unmapped every poll)."""
        req = (f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
               "Accept: application/json\r\nConnection: close\r\n\r\n").encode()
        buf: bytearray | None = getattr(self._local, "buf", None)
        if buf is None:
            buf = self._local.buf = bytearray(1 << 16)
        got, need = 0, -1  # bytes read; head + Content-Length once known
        with self._connect() as s:
            s.sendall(req)
            while need < 0 or got < need:
                if got == len(buf):
                    buf.extend(bytes(len(buf)))  # a larger answer: the buffer doubles
                n = s.recv_into(memoryview(buf)[got:])
                if not n:
                    break
                got += n
                if need < 0:
                    need = _expected_length(bytes(buf[:got]))
        return _parse_response(bytes(buf[:got]))

    def _connect(self) -> socket.socket:
        """A connected socket; an IP address skips the name lookup."""
        if self._family is None:
            return socket.create_connection((self.host, self.port), timeout=self.timeout)
        s = socket.socket(self._family, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect((self.host, self.port))
        except BaseException:
            s.close()
            raise
        return s

    def _fetch(self, method: str, path: str, body: dict[str, Any] | None = None) -> bytes:
        """One call's answer body; an unreachable xserver or an HTTP error status is an
        XschedError saying which."""
        try:
            if method == "GET" and not self.keepalive:
                status, raw = self._get_closing(path)
            else:
                status, raw = self._request(method, path, body)
        except (http.client.HTTPException, OSError, ValueError) as e:
            raise XschedError(f"xserver at {self.base} not reachable: {e}",
                              title="xserver unreachable") from None
        if status >= 400:
            detail = raw.decode(errors="replace")
            with contextlib.suppress(ValueError, AttributeError):
                detail = json.loads(detail).get("error", detail)
            raise XschedError(f"xserver refused {method} {path}: HTTP {status}: {detail}",
                              title="xserver refused")
        return raw

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, bytes]:
        """Through ``http.client`` (control calls; every call with keep-alive on)."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        retry = True  # a kept-alive connection the server closed: once more, afresh
        while True:
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                r = conn.getresponse()
                status, raw = r.status, r.read()
                if r.will_close or not self.keepalive:
                    self._drop()
                return status, raw
            except (http.client.HTTPException, OSError) as e:
                self._drop()
                if not retry or isinstance(e, TimeoutError):
                    raise
                retry = False

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        raw = self._fetch(method, path, body)
        return _decode(raw) if raw else {}

    def xqueues(self) -> dict[str, Any]:
        return self._call("GET", "/xqueues")  # type: ignore[no-any-return]

    def xqueue_rows(self) -> list[XQueueRow]:
        """``GET /xqueues``, typed; errors as for every call."""
        raw = self._fetch("GET", "/xqueues")
        return decode_xqueues(raw) if raw else []

    def xqueues_raw(self) -> bytes:
        """``GET /xqueues``'s body, undecoded (the poll's path: ``polling.AnswerCache``
        decodes only an answer that differs from the last)."""
        return self._fetch("GET", "/xqueues")

    def get_policy(self) -> int:
        return int(self._call("GET", "/policy")["policy"])

    def set_policy(self, number: int) -> Any:
        """POST /policy with the install's own number for a policy (``meta``: the
        numbering changed between XSched releases, so the caller looks it up)."""
        return self._call("POST", f"/policy?policy={int(number)}")

    def hint_priority(self, handle: int, priority: int) -> Any:
        return self._call("POST", "/hint", {"hint_type": 1, "handle": handle,
                                            "priority": priority})

    def config(self, handle: int, level: int | None = None, threshold: int | None = None,
               batch_size: int | None = None) -> Any:
        q = {k: v for k, v in (("level", level), ("threshold", threshold),
                               ("batch_size", batch_size)) if v is not None}
        return self._call("POST", f"/config/{handle:x}?" + urllib.parse.urlencode(q))


def validate_config(level: int | None, threshold: int | None, batch_size: int | None,
                    current: Mapping[str, int | None] | None = None) -> None:
    """Refuse values xserver would refuse, before sending (batch < threshold);
    ``current``: the queue's values now (``XQueueRow.settings``)."""
    cur = current or {}
    lv = level if level is not None else cur.get("level")
    th = threshold if threshold is not None else cur.get("threshold")
    bs = batch_size if batch_size is not None else cur.get("batch_size")
    if lv is not None and not 1 <= int(lv) <= 3:
        raise XschedError(f"level must be 1..3 (got {lv})", title="Invalid XQueue setting")
    if th is not None and int(th) < 1:
        raise XschedError(f"threshold must be >= 1 (got {th})", title="Invalid XQueue setting")
    if bs is not None and int(bs) < 1:
        raise XschedError(f"batch_size must be >= 1 (got {bs})", title="Invalid XQueue setting")
    if th is not None and bs is not None and int(bs) >= int(th):
        raise XschedError(f"batch_size ({bs}) must stay below threshold ({th})",
                          title="Invalid XQueue setting")
