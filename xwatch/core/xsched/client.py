"""xserver's HTTP API (``/xqueues``, ``/policy``, ``/hint``, ``/config``): a blocking
client to call from a thread, the port choice, and checks made before sending."""

from __future__ import annotations

import contextlib
import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from xwatch.errors import XschedError
from xwatch.scenario import POLICIES


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
    """Blocking client for xserver's HTTP API (call it from a thread)."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 2.0) -> None:
        self.base = f"http://{host}:{port}"
        self.timeout = timeout

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            with contextlib.suppress(ValueError):
                detail = json.loads(detail).get("error", detail)
            raise XschedError(f"xserver refused {method} {path}: HTTP {e.code}: {detail}",
                              title="xserver refused")
        except (urllib.error.URLError, OSError) as e:
            raise XschedError(f"xserver at {self.base} not reachable: {e}",
                              title="xserver unreachable")
        return json.loads(raw) if raw else {}

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
