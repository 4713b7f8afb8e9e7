"""The worker's configuration, as sent by the supervisor (JSON in the env)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class WorkerConfig:
    name: str
    model: str
    batch: int = 1
    input: tuple[int, ...] = (3, 224, 224)
    seq_len: int = 128
    task: str = "qa"
    dtype: str = "fp32"
    device: str = "auto"
    rate: float | None = None
    arrival: str = "fixed"
    burstiness: float = 1.0
    requests: int | None = None
    warmup: int = 10
    threads: int | None = None
    stream: str = "created"
    seed: int = 0
    stream_priority: str = "normal"  # "high": the device's greatest stream priority
    heartbeat_s: float = 1.0
    prompt_len: int = 128  # LLM decoders: prompt tokens (prefill)
    new_tokens: int = 32  # LLM decoders: tokens generated per request
    decode: str = "eager"  # LLM decoders: eager | graphed (static KV cache, CUDA graph)
    train: bool = False  # one training iteration (forward, backward, step) per request
    amp: str = "off"  # autocast: off | bf16 | fp16

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerConfig:
        d = json.loads(text)
        d["input"] = tuple(d.get("input", (3, 224, 224)))
        return cls(**d)
