"""The server workload's load generator run alone (as the supervisor starts it: its own
process group, the event pipe on a fd) against the fake OpenAI server
(``xwatch/testing/fake_openai.py``) or a real one, and its events read back; and free
ports for them. Shared by ``benchmarks/measure/loadgen.py`` and the serving tests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from xwatch.core.engine.serve import CONFIG_ENV
from xwatch.core.engine.serve.config import ServeConfig

#: the folder that holds the ``xwatch`` package (a checkout's root): the processes start
#: there, so ``python -m xwatch...`` finds this xwatch, installed or not
ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
#: the fake server's module (``python -m``), how ``left`` recognises its processes
FAKE = "xwatch.testing.fake_openai"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fake_server(port: int, *extra: str) -> tuple[str, ...]:
    return (PY, "-m", FAKE, str(port), *extra)


@dataclass
class Ran:
    rc: int
    events: list[dict[str, Any]]
    stderr: str

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type", "req") == kind]

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.of("req")


def config(port: int, *extra: str, **kw: Any) -> ServeConfig:
    base = ServeConfig(name="chat", server=fake_server(port, *extra), rate=20.0, port=port,
                       cwd=str(ROOT), ready_timeout_s=20.0, warmup=1, new_tokens=8,
                       prompt_len=16)
    return replace(base, **kw)


def run_loadgen(cfg: ServeConfig, timeout: float = 60.0, stop_after_s: float | None = None,
                env: dict[str, str] | None = None, stop_after_requests: int | None = None
                ) -> Ran:
    """The generator as the supervisor starts it (its own process group, the event pipe
    on a fd); ``stop_after_s``: SIGINT to its group then, as xwatch stops a phase;
    ``stop_after_requests``: the same once that many requests were reported (a condition,
    not a time a busy machine outlasts; ``timeout`` bounds the wait)."""
    r, w = os.pipe()
    e = {**os.environ, **(env or {}), CONFIG_ENV: cfg.to_json(), "XWATCH_EVENT_FD": str(w),
         "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([PY, "-m", "xwatch.core.engine.serve"], env=e, pass_fds=(w,),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, cwd=str(ROOT))
    os.close(w)
    chunks: list[bytes] = []
    enough = threading.Event()

    def drain() -> None:  # read as it comes: a full pipe would block the generator
        with os.fdopen(r, "rb") as f:
            while data := f.read1(1 << 16):
                chunks.append(data)
                if stop_after_requests is not None and not enough.is_set() and \
                        _requests(b"".join(chunks)) >= stop_after_requests:
                    enough.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    if stop_after_requests is not None:
        end = time.monotonic() + timeout
        while not enough.wait(0.1) and p.poll() is None and time.monotonic() < end:
            pass
        if p.poll() is None:
            os.killpg(p.pid, 2)
    if stop_after_s is not None:
        try:
            p.wait(stop_after_s)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 2)
    try:
        _, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, 9)
    reader.join(timeout)
    events = [json.loads(x) for x in b"".join(chunks).splitlines() if x.strip()]
    return Ran(p.returncode, events, err)


def _requests(data: bytes) -> int:
    """How many request events the complete lines of ``data`` hold."""
    n = 0
    for x in data.splitlines()[:-1] if not data.endswith(b"\n") else data.splitlines():
        if x.strip() and json.loads(x).get("type", "req") == "req":
            n += 1
    return n
