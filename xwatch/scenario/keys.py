"""The scenario key specs: every key a scenario may hold, declared once in the
``*_KEYS`` tables with its type, default, documentation and value check, and the
key reference generated from them (``xwatch scenarios --keys``, docs/scenarios.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from xwatch.core.archs import LLM_ARCHS
from xwatch.core.schedulers import XSERVER_DEFAULT_POLICY, XSERVER_DEFAULT_PORT
from xwatch.scenario.model import MpsSettings, WorkloadMps, WorkloadXsched, XschedSettings
from xwatch.scenario.values import (
    AMP_MODES,
    ARRIVALS,
    BERT_ARCHS,
    BERT_TASKS,
    DECODE_MODES,
    DTYPES,
    JOIN_XSERVER,
    LV3_IMPLS,
    PLATFORMS,
    POLICIES,
    SERVER_APIS,
    STDOUTS,
    STREAM_PRIORITIES,
    STREAMS,
    check_bool,
    check_choice,
    check_device,
    check_goodput,
    check_gpus,
    check_integer,
    check_mem_limit,
    check_metric,
    check_model,
    check_name,
    check_number,
    check_policy,
    check_port,
    check_priority,
    check_regex,
    check_route,
    check_shape,
    check_stall,
    check_str_list,
    check_str_map,
    check_string,
)


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



SCENARIO_KEYS: tuple[Key, ...] = (
    Key("name", "string", "(file name)", "Short name shown in the header and reports.", check_name),
    Key("description", "string", "", "One line saying what the scenario measures.", check_string),
    Key("duration_s", "number", 60.0,
        "Planned measurement time of a phase, counted from the first measured request "
        "(model build and warm-up are not counted).", check_number(positive=True)),
    Key("device", "string", "auto",
        "Default device for built-in workloads: 'auto' (cuda:0 if torch sees a GPU, else cpu), "
        "'cpu', 'cuda:N' (also the HIP device on ROCm builds).", check_device),
    Key("window_s", "number", 10.0, "Length of the sliding window for 'window' percentiles.",
        check_number(lo=1, hi=3600)),
    Key("gpus", "list", [], "Run a copy of every workload on each of these GPUs (indices in PCI "
        "bus order, as nvidia-smi / amd-smi number them), named NAME@GPU and pinned with "
        "CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES. Empty: one copy, on its own device. "
        "--gpus overrides.", check_gpus),
    Key("start_together", "boolean", True,
        "Built-in workloads start measuring at once: each, warmed up, waits until every "
        "built-in workload of the phase is warm (or has ended), so none is measured while "
        "another still loads. false: each starts when it is warm, and start_delay_s "
        "staggers their arrival (e.g. to watch LOW arrive). Command workloads start when "
        "they start.", check_bool),
)

SLO_KEYS: tuple[Key, ...] = (
    Key("workload", "string", "(highest priority)", "Workload the objective applies to.", check_string),
    Key("percentile", "number", 99.0, "Percentile the objective is about (e.g. 99 for P99).",
        check_number(lo=1, hi=99.99)),
    Key("latency_ms", "number", None,
        "Objective: that percentile must stay below this many ms. Goodput is the share of "
        "requests at or under it.", check_number(positive=True), required=True),
    Key("metric", "string", "latency_ms", "The per-request metric the objective is about: "
        "'latency_ms', or a named metric the workload reports with each request (e.g. "
        "'ttft_ms', 'tpot_ms', 'itl_ms'; the name ends in _ms).", check_metric),
)

XSCHED_KEYS: tuple[Key, ...] = (
    Key("root", "string", None, "XSched install folder (holds lib/ and bin/xserver). "
        "--xsched and XSCHED_HOME take precedence.", check_string),
    Key("policy", "string", XSERVER_DEFAULT_POLICY, "xserver policy, by XSched's short name. Its number, "
        "and whether this build can create it, come from the install (include/xsched/"
        "types.h and the policy classes in its binaries): a policy the install lacks is an "
        "error when XSched mode starts. 1.2.0 added SPUP to its list but cannot create it.",
        check_policy, POLICIES),
    Key("port", "integer", XSERVER_DEFAULT_PORT, "xserver HTTP port (a free one is chosen if taken).",
        check_integer(1, 65535)),
    Key("platform", "string", "(detected)", "Shim platform: 'cuda' or 'hip'.",
        check_choice(*PLATFORMS), PLATFORMS),
    Key("poll_ms", "integer", 100, "How often xserver's /xqueues is polled for engagement "
        "evidence, the scheduler lane and tail attribution (20-10000 ms; the mean: each "
        "interval is 0.5-1.5x this, so a periodic workload is not always met at the same "
        "point of its cycle).", check_integer(20, 10000)),
    Key("settled_poll_ms", "integer", "(200, or poll_ms if slower)", "The slower pace of the "
        "polls once every workload's engagement verdict is settled, more than 20 s into the "
        "measurement and 10 s after a live change: the lane and tail attribution sample "
        "less often, the verdicts are not delayed (>= poll_ms; equal to it: one pace).",
        check_integer(20, 10000)),
    Key("join", "string", "no", "An xserver already running on this machine (any user's: "
        "XSched's shims reach their server through one fixed IPC channel, so there is one per "
        "machine): 'no' refuses to start (naming its pid, user, port and command line); "
        "'keep-policy' uses it (its port for /xqueues and engagement, never stopped) and "
        "refuses if its policy differs from this scenario's; 'set-policy' uses it and sets "
        "this scenario's policy, said in the log (it changes the policy for every session "
        "it serves). --join-xserver[=set-policy] overrides.", check_choice(*JOIN_XSERVER),
        JOIN_XSERVER),
)

#: the MPS control daemon another session runs (``[mps] join``)
MPS_KEYS: tuple[Key, ...] = (
    Key("join", "boolean", False, "An MPS control daemon already running on this machine "
        "(any user's) that serves a GPU this scenario uses: false refuses to start (naming "
        "its pid, user and pipe directory); true makes the workloads its clients (through "
        "its CUDA_MPS_PIPE_DIRECTORY) instead of starting a private daemon, never stops it "
        "and changes no daemon-wide setting. --join-mps overrides.", check_bool),
)

WORKLOAD_XSCHED_KEYS: tuple[Key, ...] = (
    Key("priority", "integer", "(high 1, low 0)", "XSCHED_AUTO_XQUEUE_PRIORITY.", check_integer(-255, 255)),
    Key("level", "integer", 1, "XSCHED_AUTO_XQUEUE_LEVEL (preemption level 1-3).", check_integer(1, 3)),
    Key("threshold", "integer", "(high 16, low 4)", "XSCHED_AUTO_XQUEUE_THRESHOLD.", check_integer(1, 65536)),
    Key("batch_size", "integer", "(high 8, low 2)", "XSCHED_AUTO_XQUEUE_BATCH_SIZE.",
        check_integer(1, 65536)),
    Key("lv3_impl", "string", None, "XSCHED_CUDA_LV3_IMPL: how level 3 preempts on CUDA, "
        "'TSG' (suspends the whole context; what preempting a CUDA graph needs, XSched 1.2) "
        "or 'TRAP' (XSched's default).", check_choice(*LV3_IMPLS), LV3_IMPLS),
    Key("single_stream", "boolean", None, "XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS (XSched "
        "1.2): each XQueue uses one CUDA stream.", check_bool),
    Key("suspend_sync_hwq", "boolean", None, "XSCHED_SCHEDULER_SUSPEND_SYNC_HWQ (XSched "
        "1.2): a suspend waits for the hardware queue to drain.", check_bool),
    Key("suspend_wait_all", "boolean", None, "XSCHED_SCHEDULER_SUSPEND_WAIT_ALL (XSched "
        "1.2): a suspend waits for all in-flight commands.", check_bool),
    Key("suspend_wait_idle", "boolean", None, "XSCHED_SCHEDULER_SUSPEND_WAIT_IDLE (XSched "
        "1.2): a suspend waits until the queue is idle.", check_bool),
    Key("env", "table", {}, "Extra environment variables for XSched mode only (XSCHED_* "
        "ones are checked against the settings the install knows).", check_str_map),
)

WORKLOAD_MPS_KEYS: tuple[Key, ...] = (
    Key("priority", "integer", "(high 0, low 1)", "CUDA_MPS_CLIENT_PRIORITY: 0 normal, 1 below "
        "normal (MPS favours normal-priority clients' work).", check_integer(0, 1)),
    Key("active_thread_percentage", "integer", None, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: the "
        "share of SMs this client may use (1-100). Live-changeable per server (k).",
        check_integer(1, 100)),
    Key("pinned_mem_limit", "string", None, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, e.g. '0=8G' "
        "(device=limit, comma-separated).", check_mem_limit),
    Key("env", "table", {}, "Extra environment variables for MPS mode only.", check_str_map),
)

WORKLOAD_COMMON_KEYS: tuple[Key, ...] = (
    Key("name", "string", None, "Unique workload name (letters, digits, '_', '-', '.').", check_name,
        required=True),
    Key("priority", "string or integer", None,
        "'high', 'low' or an integer -255..255 (bigger is more important).", check_priority,
        required=True),
    Key("start_delay_s", "number", 0.0, "Delay before this workload's process is started.",
        check_number(lo=0, hi=3600)),
    Key("env", "table", {}, "Extra environment variables for the process.", check_str_map),
    Key("batch", "integer", 1, "Samples per request (images or sequences); samples/s = batch x req/s.",
        check_integer(1, 1 << 20)),
    Key("stall_s", "number or false", "(automatic)", "Seconds without a completed request (or "
        "a heartbeat) after which the workload is stalled and its phase fails; false: never "
        "(a trainer writing checkpoints, a server reloading a model). Automatic: max(2 s, "
        "20x its recent service time, 3 request gaps).", check_stall),
)

WORKLOAD_MODEL_KEYS: tuple[Key, ...] = (
    Key("model", "string", None,
        "Built-in model: any torchvision classification model (resnet18, resnet50, ...), a "
        "BERT architecture (" + ", ".join(BERT_ARCHS) + ") or an LLM decoder ("
        + ", ".join(LLM_ARCHS) + "; each request decodes `new_tokens` after a `prompt_len` "
        "prompt and reports ttft_ms, tpot_ms and itl_ms), random weights. "
        "Either this or `command`.", check_model, required=True),
    Key("input", "list", [3, 224, 224], "Image shape [C, H, W] for torchvision models.", check_shape),
    Key("seq_len", "integer", 128, "Sequence length for BERT models.", check_integer(1, 8192)),
    Key("task", "string", "qa", "BERT head: 'qa' (question answering), 'classification', 'base'.",
        check_choice(*BERT_TASKS), BERT_TASKS),
    Key("dtype", "string", "fp32", "Model and input dtype.", check_choice(*DTYPES), DTYPES),
    Key("device", "string", "(scenario device)", "'auto', 'cpu' or 'cuda:N'.", check_device),
    Key("rate", "number", None, "Requests per second (open loop). Leave out for closed loop "
        "(back to back).", check_number(positive=True, hi=1e6)),
    Key("arrival", "string", "fixed", "Spacing of open-loop requests: 'fixed', 'poisson' or "
        "'gamma' (see burstiness).",
        check_choice(*ARRIVALS), ARRIVALS),
    Key("burstiness", "number", 1.0, "With arrival = 'gamma': the shape of the gamma "
        "gaps (vLLM's --burstiness; their mean stays 1/rate): below 1 burstier than "
        "Poisson, 1 Poisson, above 1 more even.", check_number(positive=True, hi=1e6)),
    Key("requests", "integer", None, "Stop after this many measured requests (exit 0).",
        check_integer(1)),
    Key("warmup", "integer", 10, "Warm-up iterations, never counted.", check_integer(0, 100000)),
    Key("python", "string", "(xwatch's python)",
        "Interpreter for this workload, e.g. a ROCm PyTorch environment.", check_string),
    Key("threads", "integer", None, "torch intra-op CPU threads (torch.set_num_threads).",
        check_integer(1, 1024)),
    Key("stream", "string", "created", "Run requests on a created stream ('created', needed for "
        "XSched to schedule them) or the default stream ('default'). No effect on CPU.",
        check_choice(*STREAMS), STREAMS),
    Key("seed", "integer", 0, "Seed for random weights, inputs and Poisson arrivals.", check_integer(0)),
    Key("prompt_len", "integer", 128, "LLM decoders: prompt tokens per sequence (prefill).",
        check_integer(1, 32768)),
    Key("new_tokens", "integer", 32, "LLM decoders: tokens generated per request (greedy, "
        "KV cache; each token synchronized before its clock stops).", check_integer(2, 8192)),
    Key("decode", "string", "eager", "LLM decoders: 'eager' (a growing KV cache, one "
        "launch per kernel, as HF eager) or 'graphed' (a static KV cache and each decode "
        "step replayed as one captured CUDA graph, as serving engines do; needs a CUDA GPU). "
        "Both synchronize each token before its clock stops.", check_choice(*DECODE_MODES),
        DECODE_MODES),
    Key("train", "boolean", False, "Train instead of serving: each request is one iteration "
        "of forward, loss against random labels (fixed seed), backward and an SGD step (lr "
        "0.01, momentum 0.9); its time is the latency, `batch` x iterations/s the samples/s. "
        "torchvision models, and BERT with task 'classification' or 'qa'.", check_bool),
    Key("amp", "string", "off", "Mixed precision by autocast around the forward pass (and "
        "the loss): 'off', 'bf16' or 'fp16' (training in fp16 scales the loss). Weights stay "
        "in `dtype`.", check_choice(*AMP_MODES), AMP_MODES),
    Key("stream_priority", "string", "(high for the highest-priority workloads, else normal)",
        "Priority of the created stream: 'high' (the device's greatest stream priority) or "
        "'normal'. Orders work within one process, and across processes under MPS; the "
        "hello line records it.", check_choice(*STREAM_PRIORITIES), STREAM_PRIORITIES),
)

WORKLOAD_COMMAND_KEYS: tuple[Key, ...] = (
    Key("command", "list", None, "External program and arguments (no shell); an "
        "argument \"{python}\" is xwatch's own Python interpreter (it has torch). "
        "Either this or `model`.", check_str_list, required=True),
    Key("cwd", "string", "(scenario folder)", "Working directory of the command.", check_string),
    Key("regex", "string", None,
        "Read latencies from stdout with this regex (named group latency_ms). "
        "Leave out to read JSON lines from the fd in XWATCH_EVENT_FD.", check_regex),
    Key("rate", "number", None, "Target request rate: for display, and to count requests that "
        "were due but never reported when a phase ends. The command gets it in XWATCH_RATE "
        "(requests per second).", check_number(positive=True)),
    Key("honours_rate", "boolean", False, "The command sends requests at the rate in "
        "XWATCH_RATE (open loop), so `xwatch capacity` may vary its load; without it "
        "capacity refuses a command as the SLO workload.", check_bool),
    Key("stdout", "string", "(pty with regex, else pipe)",
        "How the command's stdout is connected: 'pty' (a pseudo-terminal, so C stdio flushes "
        "every line and latencies arrive live) or 'pipe' (block-buffered by most programs).",
        check_choice(*STDOUTS), STDOUTS),
    Key("platform", "string", "(scenario default)", "XSched shim platform: 'cuda' or 'hip'.",
        check_choice(*PLATFORMS), PLATFORMS),
)


WORKLOAD_SERVER_KEYS: tuple[Key, ...] = (
    Key("server", "list", None, "An inference server's command and arguments (no shell), "
        "started under the phase's mode (the XSched shim, an MPS client, or natively); "
        "xwatch's load generator (a process of its own, no GPU) then streams requests at it "
        "and reports ttft_ms, tpot_ms, itl_ms per request (docs/serving.md). Either this, "
        "`model` or `command`.", check_str_list, required=True),
    Key("port", "integer or \"auto\"", 8000, "The TCP port the server listens on "
        "(127.0.0.1), put where the command says `{port}`. 'auto' (the built-ins'): a free "
        "port for each copy, chosen when its server starts (the command must say `{port}`); "
        "a fixed port is checked before anything starts (taken: an error naming who holds "
        "it) and cannot be copied onto several GPUs.", check_port),
    Key("device", "string", "(scenario device)", "The GPU the server's whole process tree "
        "is pinned to (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES, indices in PCI bus "
        "order): 'cuda:N' (it sees GPU N as its only one), 'auto' (GPU 0, or the first of "
        "xwatch's own CUDA_VISIBLE_DEVICES), 'cpu' (no GPU visible). `{device}` in the "
        "command becomes what the server sees: 'cuda:0', 'auto' or 'cpu'.", check_device),
    Key("ready", "string", "/health", "The route that answers HTTP 200 once the server is "
        "ready (transformers serve, vLLM, SGLang, llama-server: /health).", check_route),
    Key("ready_timeout_s", "number", 300.0, "How long the server may take to answer "
        "`ready`; after that the workload fails, naming the last answer and the server's "
        "last stderr lines.", check_number(positive=True, hi=86400)),
    Key("api", "string", "openai-chat", "'openai-chat' (POST /v1/chat/completions) or "
        "'openai-completions' (POST /v1/completions), always streamed.",
        check_choice(*SERVER_APIS), SERVER_APIS),
    Key("served_model", "string", None, "The `model` field of every request (transformers "
        "serve: the model's path; vLLM: its --served-model-name). Left out: not sent.", check_string),
    Key("rate", "number", None, "Requests per second, open loop (latency counts from each "
        "request's scheduled send).", check_number(positive=True), required=True),
    Key("arrival", "string", "fixed", "Spacing of requests: 'fixed', 'poisson' or 'gamma' "
        "(see burstiness).",
        check_choice(*ARRIVALS), ARRIVALS),
    Key("burstiness", "number", 1.0, "With arrival = 'gamma': the shape of the gamma "
        "gaps (vLLM's --burstiness; their mean stays 1/rate): below 1 burstier than "
        "Poisson, 1 Poisson, above 1 more even.", check_number(positive=True, hi=1e6)),
    Key("requests", "integer", None, "Stop after this many measured requests (exit 0).",
        check_integer(1)),
    Key("warmup", "integer", 2, "Requests sent one at a time before measuring (never "
        "counted); the first also proves the API is OpenAI's.", check_integer(1, 10000)),
    Key("seed", "integer", 0, "Seed for Poisson arrivals, lengths and prompts.", check_integer(0)),
    Key("prompt_len", "integer", 128, "Prompt length in words (the generator holds no "
        "tokenizer; a word of the synthetic prompt is about one token).", check_integer(1, 1 << 20)),
    Key("new_tokens", "integer", 32, "`max_tokens` of each request (with `dataset`: the "
        "most any request asks for).", check_integer(1, 1 << 20)),
    Key("range_ratio", "number", 0.0, "Lengths drawn uniformly from [L(1-r), L(1+r)] "
        "around `prompt_len` and `new_tokens` (vLLM's random-range-ratio); 0: fixed.",
        check_number(lo=0, hi=1)),
    Key("dataset", "string", None, "A JSONL file of conversations in the ShareGPT shape "
        "(`{\"conversations\": [{\"from\": \"human\", \"value\": ...}, {\"from\": \"gpt\", "
        "...}]}` a line): prompts from the first human turn, `max_tokens` from the reply's "
        "words; relative to the scenario's folder.", check_string),
    Key("ignore_eos", "boolean", False, "Send `ignore_eos: true` (vLLM, SGLang: every request "
        "makes `max_tokens`); transformers serve rejects the field with HTTP 422.", check_bool),
    Key("drain_s", "number", 0.0, "At the phase's planned end, send no new request and "
        "wait up to this many seconds for those in flight, so that every request sent is "
        "measured, as vLLM's bench serve does (the other workloads run on meanwhile); 0: "
        "none, the requests in flight are cut and counted unfinished.", check_number(lo=0, hi=3600)),
    Key("goodput", "list", None, "vLLM's goodput SLOs (its --goodput), e.g. ['ttft:200', "
        "'tpot:50', 'e2el:2000'] (ms): the requests meeting all of them, per second and as "
        "a share of the requests due (a failed or unfinished request is a miss).",
        check_goodput),
    Key("cwd", "string", "(scenario folder)", "Working directory of the server.", check_string),
    Key("platform", "string", "(scenario default)", "XSched shim platform: 'cuda' or 'hip'.",
        check_choice(*PLATFORMS), PLATFORMS),
)


# --------------------------------------------------------------------------- mode tables
S = TypeVar("S")


@dataclass(frozen=True)
class ModeTable(Generic[S]):
    """A mode's table of scenario settings, top-level (``[NAME]``) or a workload's
    (``[workload.NAME]``): its keys, the typed settings its checked values make (the
    ``Scenario``'s or ``Workload``'s field of that name holds them), and what its keys
    cannot be together."""

    name: str
    #: how the key reference heads it, after the table's name
    title: str
    keys: tuple[Key, ...]
    settings: Callable[..., S]
    #: (the key, why) of settings its keys cannot make together, else None
    problem: Callable[[S], tuple[str, str] | None] = lambda s: None


def _batch_within_threshold(xs: WorkloadXsched) -> tuple[str, str] | None:
    if xs.threshold is not None and xs.batch_size is not None and xs.batch_size > xs.threshold:
        return "batch_size", f"batch_size {xs.batch_size} must not exceed threshold {xs.threshold}"
    return None


def _settled_not_faster(xs: XschedSettings) -> tuple[str, str] | None:
    if xs.settled_poll_ms is not None and xs.settled_poll_ms < xs.poll_ms:
        return "settled_poll_ms", (f"{xs.settled_poll_ms} is faster than poll_ms "
                                   f"({xs.poll_ms}): the settled pace is the slower one (set "
                                   "both equal to poll at one pace)")
    return None


#: the modes' tables of a workload (``Workload``'s fields), in the reference's order
WORKLOAD_MODE_TABLES: tuple[ModeTable[Any], ...] = (
    ModeTable("xsched", "(XSched mode only)", WORKLOAD_XSCHED_KEYS, WorkloadXsched,
              _batch_within_threshold),
    ModeTable("mps", "(MPS mode only, NVIDIA)", WORKLOAD_MPS_KEYS, WorkloadMps))
#: the modes' top-level tables (``Scenario``'s fields), in the reference's order
MODE_TOP_TABLES: tuple[ModeTable[Any], ...] = (
    ModeTable("xsched", "(optional)", XSCHED_KEYS, XschedSettings, _settled_not_faster),
    ModeTable("mps", "(optional, NVIDIA)", MPS_KEYS, MpsSettings))
#: the names of a workload's mode tables
MODE_TABLES = tuple(t.name for t in WORKLOAD_MODE_TABLES)


#: the key that names a workload's kind, and the keys of that kind
KIND_KEYS: Mapping[str, tuple[Key, ...]] = MappingProxyType({
    "model": WORKLOAD_MODEL_KEYS, "command": WORKLOAD_COMMAND_KEYS,
    "server": WORKLOAD_SERVER_KEYS})
KIND_NAMES = {"model": "built-in model", "command": "external command", "server": "server"}


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
    for t in WORKLOAD_MODE_TABLES:
        table(f"[workload.{t.name}] {t.title}", t.keys)
    table("[slo] (optional)", SLO_KEYS)
    for t in MODE_TOP_TABLES:
        table(f"[{t.name}] {t.title}", t.keys)
    return "\n".join(lines)
