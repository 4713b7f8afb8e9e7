"""Scenario values: the allowed choices (dtypes, arrivals, policies, ...) and the
parsers that check one value each (``check_*``) and return it normalized, raising ``TypeError``
(what was expected) or ``ValueError`` (why the value is out of range). The key
tables (``keys.py``) name them; nothing here knows which key uses which."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from xwatch.core.archs import BERT_ARCHS as _BERT_ARCHS
from xwatch.core.archs import LLM_ARCHS
from xwatch.core.schedulers import KNOWN_POLICIES
from xwatch.errors import UsageError

PRIORITY_NUMBERS = {"high": 1, "low": 0}
DTYPES = ("fp32", "fp16", "bf16")
ARRIVALS = ("fixed", "poisson", "gamma")
STREAMS = ("created", "default")
STREAM_PRIORITIES = ("high", "normal")
AMP_MODES = ("off", "bf16", "fp16")
DECODE_MODES = ("eager", "graphed")
STDOUTS = ("pty", "pipe")
BERT_TASKS = ("qa", "classification", "base")
PLATFORMS = ("cuda", "hip")
#: the HTTP APIs a server workload's load generator speaks (streaming, OpenAI's shapes)
SERVER_APIS = ("openai-chat", "openai-completions")
#: a server command left to the command line (``--server``; the built-in serve-own)
SERVER_FROM_CLI = "{server}"
#: ``port = "auto"``: a free port for each copy of a server, put where its command says
PORT_AUTO = "auto"
#: where a server's command takes its port and its device (inside any argument)
PORT_PLACEHOLDER = "{port}"
DEVICE_PLACEHOLDER = "{device}"
#: the /xqueues polls' settled pace by default (``[xsched] settled_poll_ms``): on recorded
#: H100 phases, 5 polls a second gave 90% of slow requests the attribution that 10 gave
#: (``benchmarks/stats/attribution_pace.py``) for 40% less of the observer's poll CPU
SETTLED_POLL_MS = 200
#: every policy name an XSched release has had; which an install has, and their numbers,
#: come from the install itself (``xwatch.core.xsched.meta``) when XSched mode starts
POLICIES: tuple[str, ...] = KNOWN_POLICIES
LV3_IMPLS = ("TSG", "TRAP")
#: ``[xsched] join``: refuse, use it as it is, use it with this scenario's policy
JOIN_XSERVER = ("no", "keep-policy", "set-policy")
#: BERT architectures xwatch can build from a config (random weights, no download).
BERT_ARCHS: Mapping[str, tuple[int, int, int, int, int]] = MappingProxyType(_BERT_ARCHS)
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")
_MODEL_RE = re.compile(r"^[a-z0-9_.-]+$")
_DEVICE_RE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")


def check_string(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("a string")
    return v


def check_number(lo: float | None = None, hi: float | None = None,
                 positive: bool = False) -> Callable[[Any], float]:
    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise TypeError("a finite number")
        if positive and v <= 0:
            raise ValueError("must be > 0")
        if lo is not None and v < lo:
            raise ValueError(f"must be >= {lo:g}")
        if hi is not None and v > hi:
            raise ValueError(f"must be <= {hi:g}")
        return float(v)
    return check


def check_integer(lo: int | None = None, hi: int | None = None) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("an integer")
        if lo is not None and v < lo:
            raise ValueError(f"must be >= {lo}")
        if hi is not None and v > hi:
            raise ValueError(f"must be <= {hi}")
        return v
    return check


def check_bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError("true or false")
    return v


def check_metric(v: Any) -> str:
    text = check_string(v)
    if not re.fullmatch(r"[a-z][a-z0-9_]*_ms", text):
        raise ValueError("a metric name in lower case ending in _ms, e.g. 'tpot_ms'")
    return text


def check_stall(v: Any) -> float | bool:
    if v is False:
        return False
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("a number of seconds (> 0) or false")
    if not 0 < v <= 86400:
        raise ValueError("must be > 0 and <= 86400 seconds, or false for never")
    return float(v)


_MEM_LIMIT = re.compile(r"^\d+=\d+[KMG]?(,\d+=\d+[KMG]?)*$")


def check_mem_limit(v: Any) -> str:
    text: str = check_string(v)
    if not _MEM_LIMIT.match(text):
        raise ValueError("expected DEVICE=SIZE[,DEVICE=SIZE...] such as '0=8G' (sizes in "
                         "bytes or with K, M, G)")
    return text


def check_choice(*allowed: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if not isinstance(v, str):
            raise TypeError("a string")
        if v not in allowed:
            raise ValueError("must be one of " + ", ".join(repr(a) for a in allowed))
        return v
    return check


def check_str_list(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        raise TypeError("a non-empty list of strings")
    return tuple(v)


GOODPUT_SLOS = ("ttft", "tpot", "e2el")


def check_goodput(v: Any) -> tuple[str, ...]:
    """vLLM's ``--goodput`` SLOs: ``["ttft:200", "tpot:50", "e2el:2000"]`` (ms)."""
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise TypeError("a list of strings such as 'ttft:200'")
    seen: set[str] = set()
    for x in v:
        name, sep, ms = x.partition(":")
        name = name.strip()
        if not sep or name not in GOODPUT_SLOS:
            raise ValueError(f"{x!r}: expected NAME:MS, NAME one of "
                             + ", ".join(GOODPUT_SLOS) + " (as vLLM's --goodput)")
        try:
            bound = float(ms)
        except ValueError:
            raise ValueError(f"{x!r}: {ms!r} is not a number of milliseconds") from None
        if not (0 < bound < math.inf):
            raise ValueError(f"{x!r}: the bound must be a positive number of ms")
        if name in seen:
            raise ValueError(f"{name!r} is given twice")
        seen.add(name)
    return tuple(v)


def check_route(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("a string")
    if not v.startswith("/") or any(c.isspace() for c in v):
        raise ValueError("must be a URL path starting with '/' (e.g. '/health')")
    return v


def check_str_map(v: Any) -> Mapping[str, str]:
    if not isinstance(v, dict):
        raise TypeError("a table of strings")
    out: dict[str, str] = {}
    for k, x in v.items():
        if isinstance(x, bool) or not isinstance(x, (str, int, float)):
            raise TypeError(f"a table of strings (value of {k!r} is {type(x).__name__})")
        out[str(k)] = str(x)
    return MappingProxyType(out)


def check_priority(v: Any) -> int | str:
    if isinstance(v, str):
        if v not in PRIORITY_NUMBERS:
            raise ValueError("must be 'high', 'low' or an integer from -255 to 255")
        return v
    return check_integer(-255, 255)(v)


def check_port(v: Any) -> int | str:
    if v == PORT_AUTO:
        return PORT_AUTO
    if isinstance(v, str):
        raise ValueError(f"must be an integer from 1 to 65535 or {PORT_AUTO!r}")
    return check_integer(1, 65535)(v)


def check_device(v: Any) -> str:
    s = check_string(v)
    if not _DEVICE_RE.match(s):
        raise ValueError("must be 'auto', 'cpu', 'cuda' or 'cuda:N'")
    return s


def check_gpus(v: Any) -> tuple[int, ...]:
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                          for x in v):
        raise TypeError("a list of GPU indices, e.g. [0, 1]")
    if any(x < 0 or x > 255 for x in v):
        raise ValueError("GPU indices must be 0-255")
    if len(set(v)) != len(v):
        raise ValueError("lists a GPU twice")
    return tuple(v)


def parse_gpus(text: str) -> tuple[int, ...]:
    """``--gpus 0,1`` -> (0, 1); a UsageError naming what is wrong."""
    try:
        return check_gpus([int(x) for x in text.split(",") if x.strip()])
    except (TypeError, ValueError) as e:
        raise UsageError(f"--gpus {text!r}: expected GPU indices like 0,1 ({e})")


def check_shape(v: Any) -> tuple[int, ...]:
    if (not isinstance(v, list) or len(v) != 3
            or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v)):
        raise TypeError("a list of three positive integers [channels, height, width]")
    return tuple(v)


def check_regex(v: Any) -> str:
    s = check_string(v)
    try:
        rx = re.compile(s)
    except re.error as e:
        raise ValueError(f"is not a valid regular expression ({e})")
    if "latency_ms" not in rx.groupindex:
        raise ValueError("needs a named group (?P<latency_ms>...)")
    return s


def check_name(v: Any) -> str:
    s = check_string(v)
    if not _NAME_RE.match(s):
        raise ValueError("must be 1-32 characters of letters, digits, '_', '-', '.'")
    return s


def check_model(v: Any) -> str:
    s = check_string(v)
    if not _MODEL_RE.match(s):
        raise ValueError("must be a torchvision model name (e.g. 'resnet18') or a BERT name")
    if s.startswith("bert") and s not in BERT_ARCHS:
        raise ValueError("BERT models must be one of " + ", ".join(BERT_ARCHS))
    if s.startswith("llama") and s not in LLM_ARCHS:
        raise ValueError("LLM decoders must be one of " + ", ".join(LLM_ARCHS))
    return s


def check_policy(v: Any) -> str:
    return check_choice(*POLICIES)(v)
