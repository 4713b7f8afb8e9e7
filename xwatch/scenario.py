"""Scenario files: TOML -> frozen, validated ``Scenario`` / ``Workload`` objects.

Every key a scenario may hold is declared once, in the ``*_KEYS`` tables below,
with its type, default and documentation; validation, the error messages and
the manual's key reference (``xwatch scenarios --keys``, docs/scenarios.md) all come
from them.
Unknown keys, wrong types and out-of-range values are errors that name the
file, the key and what is allowed. Nothing here imports torch or textual.
"""

from __future__ import annotations

import difflib
import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from xwatch.core.engine.worker.archs import BERT_ARCHS as _BERT_ARCHS
from xwatch.core.engine.worker.archs import LLM_ARCHS
from xwatch.core.xsched.meta import KNOWN_POLICIES
from xwatch.errors import ScenarioError, UsageError

BUILTIN_DIR = Path(__file__).parent / "scenarios"
DEFAULT_SCENARIO = "demo"

PRIORITY_NUMBERS = {"high": 1, "low": 0}
DTYPES = ("fp32", "fp16", "bf16")
ARRIVALS = ("fixed", "poisson")
STREAMS = ("created", "default")
STREAM_PRIORITIES = ("high", "normal")
AMP_MODES = ("off", "bf16", "fp16")
DECODE_MODES = ("eager", "graphed")
#: per-workload tables of mode settings ([workload.xsched], [workload.mps])
MODE_TABLES = ("xsched", "mps")
STDOUTS = ("pty", "pipe")
BERT_TASKS = ("qa", "classification", "base")
PLATFORMS = ("cuda", "hip")
#: the HTTP APIs a server workload's load generator speaks (streaming, OpenAI's shapes)
SERVER_APIS = ("openai-chat", "openai-completions")
#: a server command left to the command line (``--server``; the built-in serve-own)
SERVER_FROM_CLI = "{server}"
#: the /xqueues polls' settled pace by default (``[xsched] settled_poll_ms``): on recorded
#: H100 phases, 5 polls a second gave 90% of slow requests the attribution that 10 gave
#: (``benchmarks/attribution_pace.py``) for 40% less of the observer's poll CPU
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


# --------------------------------------------------------------------------- key specs
@dataclass(frozen=True)
class Key:
    """One documented scenario key."""

    name: str
    type: str  # shown to users: "string", "number", ...
    default: Any
    doc: str
    check: Callable[[Any], Any] | None = None  # returns the normalized value or raises ValueError
    choices: tuple[str, ...] = ()
    required: bool = False

    def default_text(self) -> str:
        if self.required:
            return "(required)"
        if self.default is None:
            return "-"
        if isinstance(self.default, str):
            return self.default if self.default.startswith("(") else f'"{self.default}"'
        if isinstance(self.default, bool):
            return "true" if self.default else "false"  # as TOML writes it
        return str(self.default)


def _s(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("a string")
    return v


def _num(lo: float | None = None, hi: float | None = None, positive: bool = False) -> Callable[[Any], float]:
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


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("an integer")
        if lo is not None and v < lo:
            raise ValueError(f"must be >= {lo}")
        if hi is not None and v > hi:
            raise ValueError(f"must be <= {hi}")
        return v
    return check


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError("true or false")
    return v


def _metric(v: Any) -> str:
    text = _s(v)
    if not re.fullmatch(r"[a-z][a-z0-9_]*_ms", text):
        raise ValueError("a metric name in lower case ending in _ms, e.g. 'tpot_ms'")
    return text


def _stall(v: Any) -> float | bool:
    if v is False:
        return False
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("a number of seconds (> 0) or false")
    if not 0 < v <= 86400:
        raise ValueError("must be > 0 and <= 86400 seconds, or false for never")
    return float(v)


_MEM_LIMIT = re.compile(r"^\d+=\d+[KMG]?(,\d+=\d+[KMG]?)*$")


def _mem_limit(v: Any) -> str:
    text: str = _s(v)
    if not _MEM_LIMIT.match(text):
        raise ValueError("expected DEVICE=SIZE[,DEVICE=SIZE...] such as '0=8G' (sizes in "
                         "bytes or with K, M, G)")
    return text


def _choice(*allowed: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if not isinstance(v, str):
            raise TypeError("a string")
        if v not in allowed:
            raise ValueError("must be one of " + ", ".join(repr(a) for a in allowed))
        return v
    return check


def _str_list(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        raise TypeError("a non-empty list of strings")
    return tuple(v)


def _route(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("a string")
    if not v.startswith("/") or any(c.isspace() for c in v):
        raise ValueError("must be a URL path starting with '/' (e.g. '/health')")
    return v


def _str_map(v: Any) -> Mapping[str, str]:
    if not isinstance(v, dict):
        raise TypeError("a table of strings")
    out: dict[str, str] = {}
    for k, x in v.items():
        if isinstance(x, bool) or not isinstance(x, (str, int, float)):
            raise TypeError(f"a table of strings (value of {k!r} is {type(x).__name__})")
        out[str(k)] = str(x)
    return MappingProxyType(out)


def _priority(v: Any) -> int | str:
    if isinstance(v, str):
        if v not in PRIORITY_NUMBERS:
            raise ValueError("must be 'high', 'low' or an integer from -255 to 255")
        return v
    return _int(-255, 255)(v)


def _device(v: Any) -> str:
    s = _s(v)
    if not _DEVICE_RE.match(s):
        raise ValueError("must be 'auto', 'cpu', 'cuda' or 'cuda:N'")
    return s


def _gpus(v: Any) -> tuple[int, ...]:
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
        return _gpus([int(x) for x in text.split(",") if x.strip()])
    except (TypeError, ValueError) as e:
        raise UsageError(f"--gpus {text!r}: expected GPU indices like 0,1 ({e})")


def _shape(v: Any) -> tuple[int, ...]:
    if (not isinstance(v, list) or len(v) != 3
            or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v)):
        raise TypeError("a list of three positive integers [channels, height, width]")
    return tuple(v)


def _regex(v: Any) -> str:
    s = _s(v)
    try:
        rx = re.compile(s)
    except re.error as e:
        raise ValueError(f"is not a valid regular expression ({e})")
    if "latency_ms" not in rx.groupindex:
        raise ValueError("needs a named group (?P<latency_ms>...)")
    return s


def _name(v: Any) -> str:
    s = _s(v)
    if not _NAME_RE.match(s):
        raise ValueError("must be 1-32 characters of letters, digits, '_', '-', '.'")
    return s


def _model(v: Any) -> str:
    s = _s(v)
    if not _MODEL_RE.match(s):
        raise ValueError("must be a torchvision model name (e.g. 'resnet18') or a BERT name")
    if s.startswith("bert") and s not in BERT_ARCHS:
        raise ValueError("BERT models must be one of " + ", ".join(BERT_ARCHS))
    if s.startswith("llama") and s not in LLM_ARCHS:
        raise ValueError("LLM decoders must be one of " + ", ".join(LLM_ARCHS))
    return s


def _policy(v: Any) -> str:
    return _choice(*POLICIES)(v)


SCENARIO_KEYS: tuple[Key, ...] = (
    Key("name", "string", "(file name)", "Short name shown in the header and reports.", _name),
    Key("description", "string", "", "One line saying what the scenario measures.", _s),
    Key("duration_s", "number", 60.0,
        "Planned measurement time of a phase, counted from the first measured request "
        "(model build and warm-up are not counted).", _num(positive=True)),
    Key("device", "string", "auto",
        "Default device for built-in workloads: 'auto' (cuda:0 if torch sees a GPU, else cpu), "
        "'cpu', 'cuda:N' (also the HIP device on ROCm builds).", _device),
    Key("window_s", "number", 10.0, "Length of the sliding window for 'window' percentiles.",
        _num(lo=1, hi=3600)),
    Key("gpus", "list", [], "Run a copy of every workload on each of these GPUs (indices in PCI "
        "bus order, as nvidia-smi / amd-smi number them), named NAME@GPU and pinned with "
        "CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES. Empty: one copy, on its own device. "
        "--gpus overrides.", _gpus),
    Key("start_together", "boolean", True,
        "Built-in workloads start measuring at once: each, warmed up, waits until every "
        "built-in workload of the phase is warm (or has ended), so none is measured while "
        "another still loads. false: each starts when it is warm, and start_delay_s "
        "staggers their arrival (e.g. to watch LOW arrive). Command workloads start when "
        "they start.", _bool),
)

SLO_KEYS: tuple[Key, ...] = (
    Key("workload", "string", "(highest priority)", "Workload the objective applies to.", _s),
    Key("percentile", "number", 99.0, "Percentile the objective is about (e.g. 99 for P99).",
        _num(lo=1, hi=99.99)),
    Key("latency_ms", "number", None,
        "Objective: that percentile must stay below this many ms. Goodput is the share of "
        "requests at or under it.", _num(positive=True), required=True),
    Key("metric", "string", "latency_ms", "The per-request metric the objective is about: "
        "'latency_ms', or a named metric the workload reports with each request (e.g. "
        "'ttft_ms', 'tpot_ms', 'itl_ms'; the name ends in _ms).", _metric),
)

XSCHED_KEYS: tuple[Key, ...] = (
    Key("root", "string", None, "XSched install folder (holds lib/ and bin/xserver). "
        "--xsched and XSCHED_HOME take precedence.", _s),
    Key("policy", "string", "HPF", "xserver policy, by XSched's short name. Its number, "
        "and whether this build can create it, come from the install (include/xsched/"
        "types.h and the policy classes in its binaries): a policy the install lacks is an "
        "error when XSched mode starts. 1.2.0 added SPUP to its list but cannot create it.",
        _policy, POLICIES),
    Key("port", "integer", 50000, "xserver HTTP port (a free one is chosen if taken).",
        _int(1, 65535)),
    Key("platform", "string", "(detected)", "Shim platform: 'cuda' or 'hip'.",
        _choice(*PLATFORMS), PLATFORMS),
    Key("poll_ms", "integer", 100, "How often xserver's /xqueues is polled for engagement "
        "evidence, the scheduler lane and tail attribution (20-10000 ms; the mean: each "
        "interval is 0.5-1.5x this, so a periodic workload is not always met at the same "
        "point of its cycle).", _int(20, 10000)),
    Key("settled_poll_ms", "integer", "(200, or poll_ms if slower)", "The slower pace of the "
        "polls once every workload's engagement verdict is settled, more than 20 s into the "
        "measurement and 10 s after a live change: the lane and tail attribution sample "
        "less often, the verdicts are not delayed (>= poll_ms; equal to it: one pace).",
        _int(20, 10000)),
    Key("join", "string", "no", "An xserver already running on this machine (any user's: "
        "XSched's shims reach their server through one fixed IPC channel, so there is one per "
        "machine): 'no' refuses to start (naming its pid, user, port and command line); "
        "'keep-policy' uses it (its port for /xqueues and engagement, never stopped) and "
        "refuses if its policy differs from this scenario's; 'set-policy' uses it and sets "
        "this scenario's policy, said in the log (it changes the policy for every session "
        "it serves). --join-xserver[=set-policy] overrides.", _choice(*JOIN_XSERVER),
        JOIN_XSERVER),
)

#: the MPS control daemon another session runs (``[mps] join``)
MPS_KEYS: tuple[Key, ...] = (
    Key("join", "boolean", False, "An MPS control daemon already running on this machine "
        "(any user's) that serves a GPU this scenario uses: false refuses to start (naming "
        "its pid, user and pipe directory); true makes the workloads its clients (through "
        "its CUDA_MPS_PIPE_DIRECTORY) instead of starting a private daemon, never stops it "
        "and changes no daemon-wide setting. --join-mps overrides.", _bool),
)

WORKLOAD_XSCHED_KEYS: tuple[Key, ...] = (
    Key("priority", "integer", "(high 1, low 0)", "XSCHED_AUTO_XQUEUE_PRIORITY.", _int(-255, 255)),
    Key("level", "integer", 1, "XSCHED_AUTO_XQUEUE_LEVEL (preemption level 1-3).", _int(1, 3)),
    Key("threshold", "integer", "(high 16, low 4)", "XSCHED_AUTO_XQUEUE_THRESHOLD.", _int(1, 65536)),
    Key("batch_size", "integer", "(high 8, low 2)", "XSCHED_AUTO_XQUEUE_BATCH_SIZE.", _int(1, 65536)),
    Key("lv3_impl", "string", None, "XSCHED_CUDA_LV3_IMPL: how level 3 preempts on CUDA, "
        "'TSG' (suspends the whole context; what preempting a CUDA graph needs, XSched 1.2) "
        "or 'TRAP' (XSched's default).", _choice(*LV3_IMPLS), LV3_IMPLS),
    Key("single_stream", "boolean", None, "XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS (XSched "
        "1.2): each XQueue uses one CUDA stream.", _bool),
    Key("suspend_sync_hwq", "boolean", None, "XSCHED_SCHEDULER_SUSPEND_SYNC_HWQ (XSched "
        "1.2): a suspend waits for the hardware queue to drain.", _bool),
    Key("suspend_wait_all", "boolean", None, "XSCHED_SCHEDULER_SUSPEND_WAIT_ALL (XSched "
        "1.2): a suspend waits for all in-flight commands.", _bool),
    Key("suspend_wait_idle", "boolean", None, "XSCHED_SCHEDULER_SUSPEND_WAIT_IDLE (XSched "
        "1.2): a suspend waits until the queue is idle.", _bool),
    Key("env", "table", {}, "Extra environment variables for XSched mode only (XSCHED_* "
        "ones are checked against the settings the install knows).", _str_map),
)

WORKLOAD_MPS_KEYS: tuple[Key, ...] = (
    Key("priority", "integer", "(high 0, low 1)", "CUDA_MPS_CLIENT_PRIORITY: 0 normal, 1 below "
        "normal (MPS favours normal-priority clients' work).", _int(0, 1)),
    Key("active_thread_percentage", "integer", None, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: the "
        "share of SMs this client may use (1-100). Live-changeable per server (k).",
        _int(1, 100)),
    Key("pinned_mem_limit", "string", None, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, e.g. '0=8G' "
        "(device=limit, comma-separated).", _mem_limit),
    Key("env", "table", {}, "Extra environment variables for MPS mode only.", _str_map),
)

WORKLOAD_COMMON_KEYS: tuple[Key, ...] = (
    Key("name", "string", None, "Unique workload name (letters, digits, '_', '-', '.').", _name,
        required=True),
    Key("priority", "string or integer", None,
        "'high', 'low' or an integer -255..255 (bigger is more important).", _priority,
        required=True),
    Key("start_delay_s", "number", 0.0, "Delay before this workload's process is started.",
        _num(lo=0, hi=3600)),
    Key("env", "table", {}, "Extra environment variables for the process.", _str_map),
    Key("batch", "integer", 1, "Samples per request (images or sequences); samples/s = batch x req/s.",
        _int(1, 1 << 20)),
    Key("stall_s", "number or false", "(automatic)", "Seconds without a completed request (or "
        "a heartbeat) after which the workload is stalled and its phase fails; false: never "
        "(a trainer writing checkpoints, a server reloading a model). Automatic: max(2 s, "
        "20x its recent service time, 3 request gaps).", _stall),
)

WORKLOAD_MODEL_KEYS: tuple[Key, ...] = (
    Key("model", "string", None,
        "Built-in model: any torchvision classification model (resnet18, resnet50, ...), a "
        "BERT architecture (" + ", ".join(BERT_ARCHS) + ") or an LLM decoder ("
        + ", ".join(LLM_ARCHS) + "; each request decodes `new_tokens` after a `prompt_len` "
        "prompt and reports ttft_ms, tpot_ms and itl_ms), random weights. "
        "Either this or `command`.", _model, required=True),
    Key("input", "list", [3, 224, 224], "Image shape [C, H, W] for torchvision models.", _shape),
    Key("seq_len", "integer", 128, "Sequence length for BERT models.", _int(1, 8192)),
    Key("task", "string", "qa", "BERT head: 'qa' (question answering), 'classification', 'base'.",
        _choice(*BERT_TASKS), BERT_TASKS),
    Key("dtype", "string", "fp32", "Model and input dtype.", _choice(*DTYPES), DTYPES),
    Key("device", "string", "(scenario device)", "'auto', 'cpu' or 'cuda:N'.", _device),
    Key("rate", "number", None, "Requests per second (open loop). Leave out for closed loop "
        "(back to back).", _num(positive=True, hi=1e6)),
    Key("arrival", "string", "fixed", "Spacing of open-loop requests: 'fixed' or 'poisson'.",
        _choice(*ARRIVALS), ARRIVALS),
    Key("requests", "integer", None, "Stop after this many measured requests (exit 0).",
        _int(1)),
    Key("warmup", "integer", 10, "Warm-up iterations, never counted.", _int(0, 100000)),
    Key("python", "string", "(xwatch's python)",
        "Interpreter for this workload, e.g. a ROCm PyTorch environment.", _s),
    Key("threads", "integer", None, "torch intra-op CPU threads (torch.set_num_threads).",
        _int(1, 1024)),
    Key("stream", "string", "created", "Run requests on a created stream ('created', needed for "
        "XSched to schedule them) or the default stream ('default'). No effect on CPU.",
        _choice(*STREAMS), STREAMS),
    Key("seed", "integer", 0, "Seed for random weights, inputs and Poisson arrivals.", _int(0)),
    Key("prompt_len", "integer", 128, "LLM decoders: prompt tokens per sequence (prefill).",
        _int(1, 32768)),
    Key("new_tokens", "integer", 32, "LLM decoders: tokens generated per request (greedy, "
        "KV cache; each token synchronized before its clock stops).", _int(2, 8192)),
    Key("decode", "string", "eager", "LLM decoders: 'eager' (a growing KV cache, one "
        "launch per kernel, as HF eager) or 'graphed' (a static KV cache and each decode "
        "step replayed as one captured CUDA graph, as serving engines do; needs a CUDA GPU). "
        "Both synchronize each token before its clock stops.", _choice(*DECODE_MODES),
        DECODE_MODES),
    Key("train", "boolean", False, "Train instead of serving: each request is one iteration "
        "of forward, loss against random labels (fixed seed), backward and an SGD step (lr "
        "0.01, momentum 0.9); its time is the latency, `batch` x iterations/s the samples/s. "
        "torchvision models, and BERT with task 'classification' or 'qa'.", _bool),
    Key("amp", "string", "off", "Mixed precision by autocast around the forward pass (and "
        "the loss): 'off', 'bf16' or 'fp16' (training in fp16 scales the loss). Weights stay "
        "in `dtype`.", _choice(*AMP_MODES), AMP_MODES),
    Key("stream_priority", "string", "(high for the highest-priority workloads, else normal)",
        "Priority of the created stream: 'high' (the device's greatest stream priority) or "
        "'normal'. Orders work within one process, and across processes under MPS; the "
        "hello line records it.", _choice(*STREAM_PRIORITIES), STREAM_PRIORITIES),
)

WORKLOAD_COMMAND_KEYS: tuple[Key, ...] = (
    Key("command", "list", None, "External program and arguments (no shell). "
        "Either this or `model`.", _str_list, required=True),
    Key("cwd", "string", "(scenario folder)", "Working directory of the command.", _s),
    Key("regex", "string", None,
        "Read latencies from stdout with this regex (named group latency_ms). "
        "Leave out to read JSON lines from the fd in XWATCH_EVENT_FD.", _regex),
    Key("rate", "number", None, "Target request rate: for display, and to count requests that "
        "were due but never reported when a phase ends.", _num(positive=True)),
    Key("stdout", "string", "(pty with regex, else pipe)",
        "How the command's stdout is connected: 'pty' (a pseudo-terminal, so C stdio flushes "
        "every line and latencies arrive live) or 'pipe' (block-buffered by most programs).",
        _choice(*STDOUTS), STDOUTS),
    Key("platform", "string", "(scenario default)", "XSched shim platform: 'cuda' or 'hip'.",
        _choice(*PLATFORMS), PLATFORMS),
)


WORKLOAD_SERVER_KEYS: tuple[Key, ...] = (
    Key("server", "list", None, "An inference server's command and arguments (no shell), "
        "started under the phase's mode (the XSched shim, an MPS client, or natively); "
        "xwatch's load generator (a process of its own, no GPU) then streams requests at it "
        "and reports ttft_ms, tpot_ms, itl_ms per request (docs/serving.md). Either this, "
        "`model` or `command`.", _str_list, required=True),
    Key("port", "integer", 8000, "The TCP port the server listens on (127.0.0.1); taken "
        "before the server starts is an error.", _int(1, 65535)),
    Key("ready", "string", "/health", "The route that answers HTTP 200 once the server is "
        "ready (transformers serve, vLLM, SGLang, llama-server: /health).", _route),
    Key("ready_timeout_s", "number", 300.0, "How long the server may take to answer "
        "`ready`; after that the workload fails, naming the last answer and the server's "
        "last stderr lines.", _num(positive=True, hi=86400)),
    Key("api", "string", "openai-chat", "'openai-chat' (POST /v1/chat/completions) or "
        "'openai-completions' (POST /v1/completions), always streamed.",
        _choice(*SERVER_APIS), SERVER_APIS),
    Key("served_model", "string", None, "The `model` field of every request (transformers "
        "serve: the model's path; vLLM: its --served-model-name). Left out: not sent.", _s),
    Key("rate", "number", None, "Requests per second, open loop (latency counts from each "
        "request's scheduled send).", _num(positive=True), required=True),
    Key("arrival", "string", "fixed", "Spacing of requests: 'fixed' or 'poisson'.",
        _choice(*ARRIVALS), ARRIVALS),
    Key("requests", "integer", None, "Stop after this many measured requests (exit 0).",
        _int(1)),
    Key("warmup", "integer", 2, "Requests sent one at a time before measuring (never "
        "counted); the first also proves the API is OpenAI's.", _int(1, 10000)),
    Key("seed", "integer", 0, "Seed for Poisson arrivals, lengths and prompts.", _int(0)),
    Key("prompt_len", "integer", 128, "Prompt length in words (the generator holds no "
        "tokenizer; a word of the synthetic prompt is about one token).", _int(1, 1 << 20)),
    Key("new_tokens", "integer", 32, "`max_tokens` of each request (with `dataset`: the "
        "most any request asks for).", _int(1, 1 << 20)),
    Key("range_ratio", "number", 0.0, "Lengths drawn uniformly from [L(1-r), L(1+r)] "
        "around `prompt_len` and `new_tokens` (vLLM's random-range-ratio); 0: fixed.",
        _num(lo=0, hi=1)),
    Key("dataset", "string", None, "A JSONL file of conversations in the ShareGPT shape "
        "(`{\"conversations\": [{\"from\": \"human\", \"value\": ...}, {\"from\": \"gpt\", "
        "...}]}` a line): prompts from the first human turn, `max_tokens` from the reply's "
        "words; relative to the scenario's folder.", _s),
    Key("ignore_eos", "boolean", False, "Send `ignore_eos: true` (vLLM, SGLang: every request "
        "makes `max_tokens`); transformers serve rejects the field with HTTP 422.", _bool),
    Key("cwd", "string", "(scenario folder)", "Working directory of the server.", _s),
    Key("platform", "string", "(scenario default)", "XSched shim platform: 'cuda' or 'hip'.",
        _choice(*PLATFORMS), PLATFORMS),
)

# --------------------------------------------------------------------------- models
@dataclass(frozen=True)
class WorkloadXsched:
    """Per-workload XSched settings; None means "derive from priority"."""

    priority: int | None = None
    level: int | None = None
    threshold: int | None = None
    batch_size: int | None = None
    lv3_impl: str | None = None  # XSCHED_CUDA_LV3_IMPL
    single_stream: bool | None = None  # XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS
    suspend_sync_hwq: bool | None = None  # XSCHED_SCHEDULER_SUSPEND_*
    suspend_wait_all: bool | None = None
    suspend_wait_idle: bool | None = None
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class WorkloadMps:
    """Per-workload MPS client settings; None means "derive from priority" / unset."""

    priority: int | None = None
    active_thread_percentage: int | None = None
    pinned_mem_limit: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Workload:
    """One workload process. Exactly one of ``model``, ``command`` or ``server`` is set
    (a server workload is two processes: xwatch's load generator and the server it
    starts)."""

    name: str
    priority: int | str
    start_delay_s: float = 0.0
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    batch: int = 1
    stall_s: float | bool | None = None  # None: automatic; False: never stalled
    # built-in model
    model: str | None = None
    input: tuple[int, ...] = (3, 224, 224)
    seq_len: int = 128
    task: str = "qa"
    dtype: str = "fp32"
    device: str = "auto"
    rate: float | None = None
    arrival: str = "fixed"
    requests: int | None = None
    warmup: int = 10
    python: str | None = None
    threads: int | None = None
    stream: str = "created"
    seed: int = 0
    stream_priority: str | None = None  # None: high for the highest-priority workloads
    prompt_len: int = 128  # LLM decoders
    new_tokens: int = 32
    decode: str = "eager"  # LLM decoders: eager | graphed
    train: bool = False  # one training iteration per request
    amp: str = "off"  # autocast: off | bf16 | fp16
    # inference server (with the load generator's settings above and below)
    server: tuple[str, ...] | None = None
    port: int = 8000
    ready: str = "/health"
    ready_timeout_s: float = 300.0
    api: str = "openai-chat"
    served_model: str | None = None
    range_ratio: float = 0.0
    dataset: str | None = None
    ignore_eos: bool = False
    # external command
    command: tuple[str, ...] | None = None
    cwd: str | None = None
    regex: str | None = None
    stdout: str | None = None  # None: pty when regex is set, else pipe
    platform: str | None = None
    xsched: WorkloadXsched = field(default_factory=WorkloadXsched)
    mps: WorkloadMps = field(default_factory=WorkloadMps)
    #: the GPU this copy is pinned to (multi-GPU runs); None: the workload's own device
    gpu: int | None = None

    @property
    def base_name(self) -> str:
        """The scenario's name for this workload (``high`` for the copy ``high@1``)."""
        return self.name.partition("@")[0]

    @property
    def kind(self) -> str:
        return "model" if self.model is not None else \
            "server" if self.server is not None else "command"

    @property
    def priority_value(self) -> int:
        """Numeric priority: high=1, low=0, integers as given."""
        p = self.priority
        return PRIORITY_NUMBERS[p] if isinstance(p, str) else p

    @property
    def stdout_mode(self) -> str:
        """'pty' or 'pipe': how a command's stdout is connected (built-in workers: pipe)."""
        if self.command is None:  # built-in workers and the load generator: pipe
            return "pipe"
        return self.stdout or ("pty" if self.regex else "pipe")

    @property
    def is_bert(self) -> bool:
        return self.model is not None and self.model.startswith("bert")

    @property
    def closed_loop(self) -> bool:
        return self.rate is None

    def describe(self) -> str:
        """Short human description: 'resnet18 b1 @20/s' or the command."""
        if self.model is not None:
            load = f"@{self.rate:g}/s" if self.rate else "closed"
            return f"{self.model} b{self.batch}{' train' if self.train else ''} {load}"
        if self.server is not None:  # the program, or the module of `python -m M`
            argv = self.server
            prog = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else argv[0]
            return f"{prog.rsplit('/', 1)[-1].rsplit('.', 1)[-1]} server @{self.rate:g}/s"
        assert self.command is not None
        return " ".join(self.command)[:40]


@dataclass(frozen=True)
class Slo:
    workload: str
    percentile: float
    latency_ms: float
    metric: str = "latency_ms"  # or a named per-request metric ("tpot_ms")

    @property
    def named(self) -> str | None:
        """The named metric the objective is about; None: the request latency."""
        return None if self.metric == "latency_ms" else self.metric


@dataclass(frozen=True)
class XschedSettings:
    root: str | None = None
    policy: str = "HPF"
    port: int = 50000
    platform: str | None = None
    poll_ms: int = 100
    settled_poll_ms: int | None = None  # None: max(poll_ms, SETTLED_POLL_MS)
    join: str = "no"  # an xserver already running: JOIN_XSERVER

    @property
    def settled_ms(self) -> int:
        """The settled pace (see ``settled_poll_ms``)."""
        return self.settled_poll_ms if self.settled_poll_ms is not None else \
            max(self.poll_ms, SETTLED_POLL_MS)


@dataclass(frozen=True)
class MpsSettings:
    join: bool = False  # use an MPS control daemon already running (``[mps] join``)


@dataclass(frozen=True)
class Scenario:
    """A validated scenario. ``source`` is the file it came from."""

    name: str
    description: str
    duration_s: float
    device: str
    window_s: float
    workloads: tuple[Workload, ...]
    slo: Slo | None = None
    xsched: XschedSettings = field(default_factory=XschedSettings)
    source: str = "<memory>"
    gpus: tuple[int, ...] = ()  # replicated onto these GPUs (workloads already expanded)
    #: the workloads as written, before replication onto ``gpus`` (empty: not replicated)
    single: tuple[Workload, ...] = ()
    start_together: bool = True  # built-in workloads start measuring at once (start gate)
    mps: MpsSettings = field(default_factory=MpsSettings)

    def gpu_indices(self) -> set[int]:
        """The GPUs the workloads use, in PCI bus order (a copy's ``gpus`` index, else its
        ``cuda:N``; 'auto' and a bare 'cuda': 0)."""
        out = set()
        for w in self.workloads:
            dev = w.device if w.device != "auto" else self.device
            if w.gpu is not None:
                out.add(w.gpu)
            elif dev.startswith("cuda") or dev == "auto":
                out.add(int(dev.partition(":")[2] or 0))
        return out

    def workload(self, name: str) -> Workload:
        for w in self.workloads:
            if w.name == name:
                return w
        raise KeyError(name)

    def with_overrides(self, duration_s: float | None = None, device: str | None = None,
                       gpus: tuple[int, ...] | None = None) -> Scenario:
        """A copy with CLI overrides applied (``--duration``, ``--device``, ``--gpus``)."""
        import dataclasses

        keep_gpus = self.gpus if gpus is None else gpus
        s = self.unreplicated()
        if duration_s is not None:
            s = dataclasses.replace(s, duration_s=duration_s)
        if device is not None:
            try:
                _device(device)
            except ValueError as e:
                raise UsageError(f"--device {device!r} {e}")
            s = dataclasses.replace(
                s, device=device,
                workloads=tuple(dataclasses.replace(w, device=device) if w.model else w
                                for w in s.workloads))
        return s.on_gpus(keep_gpus)

    def on_gpus(self, gpus: tuple[int, ...]) -> Scenario:
        """A copy with every workload replicated onto each GPU of ``gpus``: names
        ``NAME@GPU``, built-in models on ``cuda:0`` of a process that sees only that
        GPU (``CUDA_VISIBLE_DEVICES`` and ``HIP_VISIBLE_DEVICES`` = the index, indices
        in PCI bus order), commands with the same variables. ``()`` undoes nothing:
        the scenario as it is."""
        import dataclasses

        if not gpus:
            return self
        if self.gpus:
            raise UsageError(f"scenario {self.name} is already replicated onto GPUs "
                             f"{list(self.gpus)}")
        servers = [w.name for w in self.workloads if w.server is not None]
        if servers and len(gpus) > 1:
            raise UsageError(f"scenario {self.name}: the server workload {servers[0]} listens "
                             "on one port, so it cannot be copied onto each of several GPUs "
                             f"({', '.join(map(str, gpus))}): run one GPU (--gpus N), or one "
                             "scenario per GPU with its own port")
        wls = []
        for g in gpus:
            for w in self.workloads:
                pin = {"CUDA_VISIBLE_DEVICES": str(g), "HIP_VISIBLE_DEVICES": str(g),
                       "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
                wls.append(dataclasses.replace(
                    w, name=f"{w.name}@{g}", gpu=g, env=MappingProxyType({**w.env, **pin}),
                    device="cuda:0" if w.device.startswith("cuda") else w.device))
        return dataclasses.replace(self, workloads=tuple(wls), gpus=tuple(gpus),
                                   single=self.workloads)

    def with_server(self, command: str | None, served_model: str | None) -> Scenario:
        """Every server workload with the command line's server command and ``model``
        field; a scenario whose server is ``["{server}"]`` (serve-own) needs them."""
        import dataclasses
        import shlex

        servers = [w for w in self.workloads if w.server is not None]
        if (command or served_model) and not servers:
            raise UsageError(f"--server/--served-model: scenario {self.name} has no server "
                             "workload (serve-train and serve-own have)")
        argv = tuple(shlex.split(command)) if command else None
        if command is not None and not argv:
            raise UsageError("--server: an empty command")
        if argv is None and any(w.server == (SERVER_FROM_CLI,) for w in servers):
            raise UsageError(f"scenario {self.name} serves the command given on the command "
                             "line: add --server 'CMD' (e.g. --server 'vllm serve MODEL --port "
                             "8000') and, if the server needs it, --served-model NAME")
        return dataclasses.replace(self, workloads=tuple(
            dataclasses.replace(w, server=argv or w.server,
                                served_model=served_model or w.served_model)
            if w.server is not None else w for w in self.workloads))

    def unreplicated(self) -> Scenario:
        """The scenario as written, one copy of each workload."""
        import dataclasses

        if not self.gpus:
            return self
        return dataclasses.replace(self, workloads=self.single, gpus=(), single=())

    def to_dict(self) -> dict[str, Any]:
        """The resolved scenario as plain data (for snapshots)."""
        import dataclasses

        def conv(v: Any) -> Any:
            if isinstance(v, Mapping):
                return {k: conv(x) for k, x in v.items()}
            if isinstance(v, tuple):
                return [conv(x) for x in v]
            if dataclasses.is_dataclass(v) and not isinstance(v, type):
                return {f.name: conv(getattr(v, f.name)) for f in dataclasses.fields(v)}
            return v

        d: dict[str, Any] = conv(self)
        d.pop("single", None)
        if self.gpus:  # recorded as written; loading replicates again
            d["workloads"] = conv(self.single)
        for w in d["workloads"]:
            w.pop("gpu", None)
        return d


# --------------------------------------------------------------------------- loading
class _Ctx:
    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, where: str, msg: str) -> ScenarioError:
        return ScenarioError(f"{self.path}: {where}: {msg}", title="Invalid scenario")


def _apply(ctx: _Ctx, where: str, table: Mapping[str, Any], keys: tuple[Key, ...],
           allowed_extra: tuple[str, ...] = ()) -> dict[str, Any]:
    by_name = {k.name: k for k in keys}
    out: dict[str, Any] = {}
    for raw_key, value in table.items():
        if raw_key in allowed_extra:
            continue
        spec = by_name.get(raw_key)
        if spec is None:
            raise _unknown(ctx, where, raw_key, [*by_name, *allowed_extra])
        try:
            out[raw_key] = spec.check(value) if spec.check else value
        except TypeError as e:
            raise ctx.error(f"{where}.{raw_key}" if where else raw_key,
                            f"expected {e}, got {type(value).__name__} {value!r}")
        except ValueError as e:
            raise ctx.error(f"{where}.{raw_key}" if where else raw_key, f"{value!r} {e}")
    return out


def did_you_mean(word: str, known: list[str] | set[str]) -> str:
    """' (did you mean 'rate'?)' for a near miss, else ''."""
    close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unknown(ctx: _Ctx, where: str, key: str, known: list[str] | set[str]) -> ScenarioError:
    return ctx.error(f"{where}.{key}" if where else key,
                     f"unknown key {key!r}{did_you_mean(key, known)}; allowed keys here: "
                     + ", ".join(sorted(known)))


#: the key that names a workload's kind, and the keys of that kind
KIND_KEYS: Mapping[str, tuple[Key, ...]] = MappingProxyType({
    "model": WORKLOAD_MODEL_KEYS, "command": WORKLOAD_COMMAND_KEYS,
    "server": WORKLOAD_SERVER_KEYS})
KIND_NAMES = {"model": "built-in model", "command": "external command", "server": "server"}


def _workload(ctx: _Ctx, i: int, raw: Any, default_device: str) -> Workload:
    where = f"workload[{i}]"
    if not isinstance(raw, dict):
        raise ctx.error(where, "each [[workload]] must be a table")
    label = raw.get("name")
    if isinstance(label, str):
        where = f"workload[{i}] ({label})"
    kinds = [k for k in KIND_KEYS if k in raw]
    known = {k.name for t in KIND_KEYS.values() for k in WORKLOAD_COMMON_KEYS + t}
    own = WORKLOAD_COMMON_KEYS + (KIND_KEYS[kinds[0]] if len(kinds) == 1 else
                                  WORKLOAD_MODEL_KEYS + WORKLOAD_COMMAND_KEYS)
    for key in raw:  # a typo first: "modle" must not be reported as "no model"
        if key not in known and key not in MODE_TABLES:
            close = did_you_mean(key, known)
            raise ctx.error(f"{where}.{key}", f"unknown key {key!r}{close}; allowed keys here: "
                            + ", ".join(sorted({k.name for k in own} | set(MODE_TABLES))))
    if len(kinds) != 1:
        raise ctx.error(where, "set exactly one of 'model' (built-in), 'command' (external) "
                        "or 'server' (an inference server driven by xwatch's load generator)")
    kind = kinds[0]
    keys = WORKLOAD_COMMON_KEYS + KIND_KEYS[kind]
    wrong = sorted(set(raw) - {k.name for k in keys} - set(MODE_TABLES))
    if wrong:
        raise ctx.error(f"{where}.{wrong[0]}",
                        f"key {wrong[0]!r} does not apply to a {KIND_NAMES[kind]} workload; "
                        "allowed keys here: "
                        + ", ".join(sorted({k.name for k in keys} | set(MODE_TABLES))))
    vals = _apply(ctx, where, raw, keys, allowed_extra=MODE_TABLES)
    for req in ("name", "priority"):
        if req not in vals:
            raise ctx.error(where, f"missing required key {req!r}")
    if vals.get("train") and str(vals.get("model", "")).startswith("llama"):
        raise ctx.error(f"{where}.train", "LLM decoders serve (decode); train a torchvision "
                        "or BERT model as the background work")
    if vals.get("decode", "eager") != "eager" and \
            not str(vals.get("model", "")).startswith("llama"):
        raise ctx.error(f"{where}.decode", "'decode' applies to the LLM decoders ("
                        + ", ".join(LLM_ARCHS) + ")")
    if vals.get("decode") == "graphed" and vals.get("amp", "off") != "off":
        raise ctx.error(f"{where}.decode", "a graphed decode runs in the weights' dtype: set "
                        "dtype = 'bf16' (or 'fp16') instead of amp")
    if vals.get("train") and vals.get("task") == "base":
        raise ctx.error(f"{where}.train", "training needs a loss: BERT task 'classification' "
                        "or 'qa' (task 'base' has no head)")
    if vals.get("amp", "off") != "off" and vals.get("dtype", "fp32") != "fp32":
        raise ctx.error(f"{where}.amp", f"amp autocasts fp32 weights; with dtype "
                        f"{vals['dtype']!r} the model already runs in that precision: set one")
    if "arrival" in vals and "rate" not in vals:
        raise ctx.error(f"{where}.arrival", "'arrival' needs 'rate' (closed loop has no spacing)")
    xs_raw = raw.get("xsched", {})
    if not isinstance(xs_raw, dict):
        raise ctx.error(f"{where}.xsched", "must be a table [workload.xsched]")
    xs = WorkloadXsched(**_apply(ctx, f"{where}.xsched", xs_raw, WORKLOAD_XSCHED_KEYS))
    if xs.threshold is not None and xs.batch_size is not None and xs.batch_size > xs.threshold:
        raise ctx.error(f"{where}.xsched.batch_size",
                        f"batch_size {xs.batch_size} must not exceed threshold {xs.threshold}")
    mps_raw = raw.get("mps", {})
    if not isinstance(mps_raw, dict):
        raise ctx.error(f"{where}.mps", "must be a table [workload.mps]")
    mps = WorkloadMps(**_apply(ctx, f"{where}.mps", mps_raw, WORKLOAD_MPS_KEYS))
    if kind == "model":
        vals.setdefault("device", default_device)
    if kind != "model":
        vals.setdefault("cwd", str(Path(ctx.path).resolve().parent) if ctx.path[0] != "<" else None)
    if kind == "server" and "rate" not in vals:
        raise ctx.error(f"{where}.rate", "a server workload is driven open loop: set 'rate' "
                        "(requests per second)")
    if kind == "server" and "dataset" in vals and vals.get("range_ratio"):
        raise ctx.error(f"{where}.range_ratio", "lengths come from 'dataset': leave out "
                        "'range_ratio' (it draws synthetic lengths)")
    return Workload(**vals, xsched=xs, mps=mps)


def parse_scenario(data: Mapping[str, Any], path: str = "<memory>",
                   default_name: str = "scenario") -> Scenario:
    """Validate already-decoded TOML data into a ``Scenario``."""
    ctx = _Ctx(path)
    top = _apply(ctx, "", data, SCENARIO_KEYS, allowed_extra=("workload", "slo", "xsched", "mps"))
    raw_wls = data.get("workload")
    if not isinstance(raw_wls, list) or not raw_wls:
        raise ctx.error("workload", "needs at least one [[workload]] table")
    device = top.get("device", "auto")
    wls = tuple(_workload(ctx, i, w, device) for i, w in enumerate(raw_wls))
    seen: set[str] = set()
    for w in wls:
        if w.name in seen:
            raise ctx.error("workload.name", f"duplicate workload name {w.name!r}")
        seen.add(w.name)
    slo = None
    if "slo" in data:
        if not isinstance(data["slo"], dict):
            raise ctx.error("slo", "must be a table [slo]")
        s = _apply(ctx, "slo", data["slo"], SLO_KEYS)
        if "latency_ms" not in s:
            raise ctx.error("slo", "missing required key 'latency_ms'")
        target = s.get("workload") or max(wls, key=lambda w: w.priority_value).name
        if target not in seen:
            raise ctx.error("slo.workload", f"{target!r} is not a workload; workloads: "
                            + ", ".join(w.name for w in wls))
        slo = Slo(workload=target, percentile=s.get("percentile", 99.0), latency_ms=s["latency_ms"],
                  metric=s.get("metric", "latency_ms"))
    xs = XschedSettings()
    if "xsched" in data:
        if not isinstance(data["xsched"], dict):
            raise ctx.error("xsched", "must be a table [xsched]")
        xs = XschedSettings(**_apply(ctx, "xsched", data["xsched"], XSCHED_KEYS))
        if xs.settled_poll_ms is not None and xs.settled_poll_ms < xs.poll_ms:
            raise ctx.error("xsched.settled_poll_ms", f"{xs.settled_poll_ms} is faster than "
                            f"poll_ms ({xs.poll_ms}): the settled pace is the slower one "
                            "(set both equal to poll at one pace)")
    mps = MpsSettings()
    if "mps" in data:
        if not isinstance(data["mps"], dict):
            raise ctx.error("mps", "must be a table [mps]")
        mps = MpsSettings(**_apply(ctx, "mps", data["mps"], MPS_KEYS))
    return Scenario(
        name=top.get("name", default_name),
        description=top.get("description", ""),
        duration_s=top.get("duration_s", 60.0),
        device=device,
        window_s=top.get("window_s", 10.0),
        workloads=wls,
        slo=slo,
        xsched=xs,
        source=path,
        start_together=top.get("start_together", True),
        mps=mps,
    ).on_gpus(top.get("gpus", ()))


def builtin_scenarios() -> dict[str, Path]:
    """Shipped scenarios by name."""
    return {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.toml"))}


def resolve_path(ref: str) -> Path:
    """A built-in name (``demo``) or a path to a TOML file."""
    builtins = builtin_scenarios()
    if ref in builtins:
        return builtins[ref]
    p = Path(ref)
    if p.suffix == ".toml" or p.exists() or "/" in ref:
        if not p.is_file():
            raise ScenarioError(f"{ref}: no such scenario file", title="Scenario not found")
        return p
    raise ScenarioError(
        f"{ref!r} is neither a built-in scenario ({', '.join(builtins)}) nor a .toml file",
        title="Scenario not found")


def load_scenario(ref: str) -> Scenario:
    """Load and validate a scenario by built-in name or path."""
    path = resolve_path(ref)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read: {e}", title="Scenario not found")
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML: {e}")
    return parse_scenario(data, str(path), default_name=path.stem)


def keys_reference_markdown() -> str:
    """The scenario key reference (docs/scenarios.md), generated from the key tables."""
    lines: list[str] = []

    def table(title: str, keys: tuple[Key, ...]) -> None:
        lines.append(f"**{title}**\n")
        lines.append("| key | type | default | meaning |")
        lines.append("|---|---|---|---|")
        for k in keys:
            lines.append(f"| `{k.name}` | {k.type} | {k.default_text()} | {k.doc} |")
        lines.append("")

    table("Top level", SCENARIO_KEYS)
    table("[[workload]] (every workload)", WORKLOAD_COMMON_KEYS)
    table("[[workload]] with a built-in `model`", WORKLOAD_MODEL_KEYS)
    table("[[workload]] with an external `command`", WORKLOAD_COMMAND_KEYS)
    table("[[workload]] with an inference `server`", WORKLOAD_SERVER_KEYS)
    table("[workload.xsched] (XSched mode only)", WORKLOAD_XSCHED_KEYS)
    table("[workload.mps] (MPS mode only, NVIDIA)", WORKLOAD_MPS_KEYS)
    table("[slo] (optional)", SLO_KEYS)
    table("[xsched] (optional)", XSCHED_KEYS)
    table("[mps] (optional, NVIDIA)", MPS_KEYS)
    return "\n".join(lines)
