"""OpenAI's streaming API as the load generator speaks it: the request body of each API
(``openai-chat``, ``openai-completions``), the route, and what one server-sent event
(``data: {...}`` / ``data: [DONE]``) says. Pure (stdlib only)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ROUTES = {"openai-chat": "/v1/chat/completions", "openai-completions": "/v1/completions"}

DONE = object()  # the stream's end marker (``data: [DONE]``)

#: the delta's keys that carry text: the answer and a reasoning model's thinking
#: (``reasoning``; older servers: ``reasoning_content``)
TEXT_KEYS = ("content", "reasoning", "reasoning_content")


class NotOpenAI(ValueError):
    """The server's answer is not OpenAI's streaming shape."""


def body(api: str, prompt: str, max_tokens: int, model: str | None,
         ignore_eos: bool) -> dict[str, Any]:
    """The JSON body of one streamed request. ``stream_options.include_usage`` asks for
    the token counts in the last chunk (servers that ignore it: chunks are counted)."""
    out: dict[str, Any] = {"max_tokens": max_tokens, "stream": True,
                           "stream_options": {"include_usage": True}}
    if api == "openai-chat":
        out["messages"] = [{"role": "user", "content": prompt}]
    else:
        out["prompt"] = prompt
    if model is not None:
        out["model"] = model
    if ignore_eos:
        out["ignore_eos"] = True
    return out


@dataclass(frozen=True)
class Chunk:
    """One streamed event: whether it is an output chunk (``output``: its arrival is a
    token's, as vLLM's request function times it), the text it adds (content and
    reasoning; empty for the role, usage and finish chunks), whether it carries tool
    calls, the completion's token count if the server sent its usage, and whether it
    ends the answer (a ``finish_reason``; transformers serve sends no ``[DONE]``).

    An output chunk (chat): a delta with ``content``, ``reasoning`` or
    ``reasoning_content`` (a string: an empty one counts, as vLLM counts it, unless the
    delta also carries the ``role``: the opening chunk some servers send before the
    prefill), or with ``tool_calls``. Completions: every chunk with a choice (its text
    may be empty, as vLLM counts it). A usage chunk (no choice) is never one."""

    text: str
    completion_tokens: int | None = None
    finished: bool = False  # a choice carried its finish_reason (the answer is whole)
    output: bool = False
    tools: bool = False  # the delta streams tool calls

    @property
    def token(self) -> bool:
        """It carries output (text or tool calls): chunks counted as tokens when the
        server sends no usage."""
        return bool(self.text) or self.tools


def parse_event(line: bytes) -> Chunk | object | None:
    """One line of the stream: a ``Chunk``, ``DONE``, or None for what carries no event
    (blank lines, SSE comments and fields other than ``data``). ``NotOpenAI`` if a data
    line is not an OpenAI completion chunk."""
    line = line.strip()
    if not line or line.startswith(b":"):
        return None
    if not line.startswith(b"data:"):
        if line.split(b":", 1)[0] in (b"event", b"id", b"retry"):
            return None
        raise NotOpenAI(f"not a server-sent event line: {line[:120]!r}")
    data = line[5:].strip()
    if data == b"[DONE]":
        return DONE
    try:
        obj = json.loads(data)
    except ValueError:
        raise NotOpenAI(f"a data line that is not JSON: {data[:120]!r}") from None
    if not isinstance(obj, dict):
        raise NotOpenAI(f"a data line that is not a JSON object: {data[:120]!r}")
    if "error" in obj and "choices" not in obj:
        raise StreamError(f"the server sent an error in the stream: {str(obj['error'])[:200]}")
    choices = obj.get("choices")
    usage = obj.get("usage")
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
    if not isinstance(choices, list):
        if tokens is not None:
            return Chunk("", tokens, True)
        raise NotOpenAI(f"a chunk without 'choices': {data[:120]!r}")
    text = ""
    finished = output = tools = False
    if choices:
        c = choices[0]
        if not isinstance(c, dict):
            raise NotOpenAI(f"a choice that is not an object: {data[:120]!r}")
        delta = c.get("delta")
        if isinstance(delta, dict):  # chat
            parts = [delta.get(k) for k in TEXT_KEYS]
            if not all(p is None or isinstance(p, str) for p in parts):
                raise NotOpenAI(f"a chunk whose text is not a string: {data[:120]!r}")
            text = "".join(p for p in parts if p)
            calls = delta.get("tool_calls")
            tools = isinstance(calls, list) and bool(calls)
            output = bool(text) or tools or (
                "role" not in delta and any(p is not None for p in parts))
        else:  # completions
            text = c.get("text") or ""
            if not isinstance(text, str):
                raise NotOpenAI(f"a chunk whose text is not a string: {data[:120]!r}")
            output = True
        finished = bool(c.get("finish_reason"))
    return Chunk(text, tokens, finished, output, tools)


class StreamError(RuntimeError):
    """The server reported an error inside the stream."""
