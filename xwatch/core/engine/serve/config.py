"""The load generator's settings, as the launcher sends them (JSON in the environment)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ServeConfig:
    name: str
    server: tuple[str, ...]  # the server's argv
    rate: float
    cwd: str | None = None
    port: int = 8000  # 0: "auto", chosen by the generator (``server.with_port``)
    port_auto: bool = False  # the port was chosen free by the generator
    ready: str = "/health"
    ready_timeout_s: float = 300.0
    api: str = "openai-chat"
    served_model: str | None = None
    arrival: str = "fixed"
    burstiness: float = 1.0
    requests: int | None = None
    warmup: int = 2
    seed: int = 0
    prompt_len: int = 128
    new_tokens: int = 32
    range_ratio: float = 0.0
    dataset: str | None = None
    ignore_eos: bool = False
    #: the mode's LD_PRELOAD (XSched on HIP): for the server only, never the generator
    preload: str | None = None
    heartbeat_s: float = 1.0
    #: this many requests failing in a row fail the workload (a server answering only errors)
    fail_streak: int = 20
    #: SIGUSR1 (xwatch, at the phase's planned end): no new request, those in flight
    #: awaited (the scenario's ``drain_s`` bounds the wait)
    drain_s: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeConfig:
        d = json.loads(text)
        d["server"] = tuple(d["server"])
        return cls(**d)
