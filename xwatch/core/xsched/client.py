"""xserver's HTTP API (``/xqueues``, ``/policy``, ``/hint``, ``/config``): a blocking
client to call from a thread, the port choice, and checks made before sending."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import threading
import urllib.parse
from typing import Any

from xwatch.errors import XschedError
from xwatch.scenario import POLICIES


def _decode(raw: bytes) -> Any:
    """JSON -> Python; msgspec when installed (``/xqueues`` with a few hundred queues is
    ~40 KB, polled ten times a second)."""
    try:
        import msgspec
    except ImportError:
        return json.loads(raw)
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as e:
        raise ValueError(str(e)) from None


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

    A fresh ``http.client`` connection per call (cheaper than ``urllib``'s request
    machinery). Not keep-alive: against XSched's real xserver (cpp-httplib, H100,
    2026-11-22) a kept-alive connection's ``/xqueues`` never once showed a ready
    XQueue while fresh connections saw them ready in 62 of ~70 polls, so the
    engagement verdict was wrong. ``XWATCH_XSERVER_KEEPALIVE=1`` turns keep-alive on
    (one connection per calling thread), for xserver builds that serve it correctly.
    """

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 2.0) -> None:
        self.host, self.port = host, port
        self.base = f"http://{host}:{port}"
        self.timeout = timeout
        self._local = threading.local()
        self.keepalive = os.environ.get("XWATCH_XSERVER_KEEPALIVE", "0") == "1"

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

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        for attempt in (0, 1):  # a kept-alive connection the server closed: retry once
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                r = conn.getresponse()
                status, raw = r.status, r.read()
                if r.will_close or not self.keepalive:
                    self._drop()
                break
            except (http.client.HTTPException, OSError) as e:
                self._drop()
                if attempt or isinstance(e, TimeoutError):
                    raise XschedError(f"xserver at {self.base} not reachable: {e}",
                                      title="xserver unreachable")
        if status >= 400:
            detail = raw.decode(errors="replace")
            with contextlib.suppress(ValueError, AttributeError):
                detail = json.loads(detail).get("error", detail)
            raise XschedError(f"xserver refused {method} {path}: HTTP {status}: {detail}",
                              title="xserver refused")
        return _decode(raw) if raw else {}

    def xqueues(self) -> dict[str, Any]:
        return self._call("GET", "/xqueues")  # type: ignore[no-any-return]

    def get_policy(self) -> int:
        return int(self._call("GET", "/policy")["policy"])

    def set_policy(self, name: str) -> Any:
        if name not in POLICIES:
            raise XschedError(f"unknown policy {name!r}; one of {', '.join(POLICIES)}")
        return self._call("POST", f"/policy?policy={POLICIES[name]}")

    def hint_priority(self, handle: int, priority: int) -> Any:
        return self._call("POST", "/hint", {"hint_type": 1, "handle": handle,
                                            "priority": priority})

    def config(self, handle: int, level: int | None = None, threshold: int | None = None,
               batch_size: int | None = None) -> Any:
        q = {k: v for k, v in (("level", level), ("threshold", threshold),
                               ("batch_size", batch_size)) if v is not None}
        return self._call("POST", f"/config/{handle:x}?" + urllib.parse.urlencode(q))


def validate_config(level: int | None, threshold: int | None, batch_size: int | None,
                    current: dict[str, Any] | None = None) -> None:
    """Refuse values xserver would refuse, before sending (batch < threshold)."""
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
