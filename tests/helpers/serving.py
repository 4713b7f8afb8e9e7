"""The serving tests' own helpers (a scenario with a server workload, the fake servers
left behind); running the load generator alone lives in ``xwatch.testing.serving``,
shared with ``benchmarks/measure/loadgen.py``, and is re-exported here."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil

from xwatch.testing.serving import FAKE, Ran, config, fake_server, free_port, run_loadgen

__all__ = ["Ran", "config", "fake_server", "free_port", "gone", "left", "run_loadgen",
           "write_scenario"]


def write_scenario(tmp_path: Path, server: tuple[str, ...], port: int, duration: float = 3,
                   extra: str = "", low: bool = True, low_count: int | None = None) -> Path:
    """A scenario with the server workload ``chat`` (HIGH) and, with ``low``, a LOW
    pipe producer beside it (``low_count``: it exits after that many requests)."""
    from tests.helpers.scenarios import producer

    argv = ", ".join(json.dumps(a) for a in server)
    f = tmp_path / "serve.toml"
    f.write_text(f"""
duration_s = {duration}
[[workload]]
name = "chat"
priority = "high"
server = [{argv}]
port = {port}
rate = 10
warmup = 1
new_tokens = 8
prompt_len = 16
ready_timeout_s = 20
{extra}
""" + (f"""
[[workload]]
name = "low"
priority = "low"
command = {producer(20, *([str(low_count)] if low_count else []), "--service-ms", "20")}
""" if low else ""))
    return f


def left(port: int) -> list[int]:
    """Fake servers still alive for ``port``."""
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = p.info["cmdline"] or []
        if FAKE in cmd and str(port) in cmd:
            out.append(p.info["pid"])
    return out


def gone(port: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while left(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not left(port)
