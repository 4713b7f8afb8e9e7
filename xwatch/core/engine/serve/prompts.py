"""What each request asks: its prompt and its ``max_tokens``. Fixed lengths, lengths
drawn uniformly around them (vLLM's ``random-range-ratio``), or a user's JSONL file of
conversations in the ShareGPT shape, cycled in order. Synthetic prompts are words drawn
from a small vocabulary (the generator holds no tokenizer: a word is about one token of
a BPE tokenizer). Stdlib only."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

_WORDS = ("the", "model", "serves", "a", "request", "while", "training", "runs", "on",
          "same", "gpu", "and", "every", "token", "counts", "time", "from", "first",
          "send", "to", "last", "chunk", "stream", "ends", "when", "done", "late", "queue")


@dataclass(frozen=True)
class Ask:
    prompt: str
    max_tokens: int
    prompt_words: int


class DatasetError(ValueError):
    """A dataset file that cannot be read as ShareGPT conversations."""


def _turn_text(turn: object) -> tuple[str, str] | None:
    if not isinstance(turn, dict):
        return None
    who = turn.get("from", turn.get("role"))
    text = turn.get("value", turn.get("content"))
    if not isinstance(who, str) or not isinstance(text, str):
        return None
    return who, text


def load_sharegpt(path: str, cap_tokens: int) -> list[Ask]:
    """Conversations from a JSONL file: each line an object with ``conversations``, a
    list of turns ``{"from": "human"|"gpt", "value": text}`` (``role``/``content`` are
    taken too). The prompt is the first human turn; ``max_tokens`` the first reply's
    word count (at least 1, at most ``cap_tokens``). Lines without both are skipped;
    none usable is an error naming the file."""
    asks: list[Ask] = []
    bad = 0
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise DatasetError(f"{path}: cannot read the dataset: {e}") from None
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                raise DatasetError(f"{path}, line {n}: not JSON (a JSONL file holds one "
                                   "conversation object a line)") from None
            turns = obj.get("conversations") if isinstance(obj, dict) else None
            if not isinstance(turns, list):
                raise DatasetError(f"{path}, line {n}: no 'conversations' list (ShareGPT "
                                   "shape: {\"conversations\": [{\"from\": \"human\", "
                                   "\"value\": ...}, {\"from\": \"gpt\", \"value\": ...}]})")
            parsed = [t for t in map(_turn_text, turns) if t is not None]
            human = next((i for i, (w, _) in enumerate(parsed) if w in ("human", "user")), None)
            if human is None or human + 1 >= len(parsed) or not parsed[human][1].strip():
                bad += 1
                continue
            prompt, reply = parsed[human][1], parsed[human + 1][1]
            asks.append(Ask(prompt, max(1, min(cap_tokens, len(reply.split()))),
                            len(prompt.split())))
    if not asks:
        raise DatasetError(f"{path}: no conversation with a human turn and a reply "
                           f"({bad} skipped)")
    return asks


class Asks:
    """The request ``i`` asks for ``ask(i)``: the same sequence for a seed, so every
    phase and mode sends the same requests."""

    def __init__(self, prompt_len: int, new_tokens: int, range_ratio: float = 0.0,
                 seed: int = 0, dataset: list[Ask] | None = None) -> None:
        self.prompt_len = prompt_len
        self.new_tokens = new_tokens
        self.range_ratio = range_ratio
        self.seed = seed
        self.dataset = dataset

    def _length(self, rng: random.Random, n: int) -> int:
        if not self.range_ratio:
            return n
        lo = max(1, round(n * (1 - self.range_ratio)))
        return rng.randint(lo, max(lo, round(n * (1 + self.range_ratio))))

    def ask(self, i: int) -> Ask:
        if self.dataset is not None:
            return self.dataset[i % len(self.dataset)]
        rng = random.Random(self.seed * 1_000_003 + i)
        words = self._length(rng, self.prompt_len)
        out = self._length(rng, self.new_tokens)
        text = " ".join(rng.choice(_WORDS) for _ in range(words))
        return Ask(text, out, words)
