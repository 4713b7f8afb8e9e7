"""One phase of the snapshot document: its workloads (statistics, exit, tails,
per-second rows, named metrics), kernel captures and per-GPU groups, and what its
mode recorded."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import UNSET, UnsetType, field

from xwatch.core.model.base import (
    Annotation,
    Doc,
    Exit,
    Goodput,
    Hist,
    Interval,
    Launch,
    Metric,
    Num,
    RawJSON,
    SettingValue,
    Stall,
    Summary,
    Throughput,
    Unfinished,
)
from xwatch.core.model.modes import Isolation, Mps, Preflight, Xsched, XserverExit


# ------------------------------------------------------------------ a server's own view
class ServerLatency(Doc, frozen=True, kw_only=True):
    """A server's latency histogram over the phase (its buckets' increase from the
    phase's first scrape to its last): requests counted, mean, and P50/P99 interpolated
    within a bucket as Prometheus' ``histogram_quantile`` does (ms)."""

    metric: str
    count: int = 0
    mean_ms: Num = None
    p50_ms: Num = None
    p99_ms: Num = None


class ServerGauge(Doc, frozen=True, kw_only=True):
    """A server's gauge sampled at each scrape of the phase (the first one apart)."""

    metric: str
    samples: int = 0
    mean: Num = None
    max: Num = None


class ServerView(Doc, frozen=True, kw_only=True):
    """What an inference server exported about itself during the phase (Prometheus
    text at ``path``, scraped by the load generator; ``engine.servers.scrape``).
    ``exported`` false: the server has no such metrics, and ``note`` says its answer.
    ``ttft`` and ``queue_time`` are the server's own histograms (vLLM, SGLang; llama.cpp
    exports none); ``waiting`` is the engine's queue, ``running`` its batch."""

    engine: str | None = None  # vllm, sglang, llama.cpp
    path: str = "/metrics"
    exported: bool = False
    note: str = ""
    scrapes: int = 0
    failed_scrapes: int = 0
    span_s: Num = None  # seconds from the measurement's start to the last scrape
    ttft: ServerLatency | None = None
    queue_time: ServerLatency | None = None
    waiting: ServerGauge | None = None
    running: ServerGauge | None = None
    prompt_tokens_per_s: Num = None
    generation_tokens_per_s: Num = None


# A workload's statistics in memory too: ``engine.snapshot.WorkloadSnapshot`` is this
# struct with what only a live snapshot has beside it, so a statistic is a field here,
# once (the docstring below is the schema's description: it stays as the file's).
# Where the file's name is not the attribute's, ``name=`` gives the file's (``phase``
# is ``latency_ms``, ``window`` is ``window_latency_ms``). ``Sequence`` where the live
# snapshot holds tuples (a file reads as lists; an absent one is ``()``); the schema is
# a list's. The exporter (``export.snapshot``) derives ``achieved_rate``, ``log_tail``
# and ``latency_ci_ms`` (empty in a live snapshot) and rounds ``cdf``, ``slowest``,
# ``goodput`` and ``latency_sum_ms``, which a live snapshot holds unrounded.
class Workload(Doc, frozen=True, kw_only=True):
    """One workload in one phase. ``series`` rows: ``[sec, count, errors, late,
    samples, p50, p99, max, mean]``; ``cdf``: ``[latency ms, fraction]``;
    ``slowest``: ``[seconds after the phase start, latency ms]``."""

    priority: int = 0
    priority_label: str | UnsetType = UNSET
    description: str = ""
    state: str = "?"
    pid: int | None = None
    count: int = 0
    errors: int = 0
    late: int = 0
    samples: int = 0
    malformed: int = 0
    #: latency (ms) over the phase's measured requests, censored unfinished waits
    #: included, and over the requests that ended in the last ``window_s`` seconds
    phase: Summary | None = field(default=None, name="latency_ms")
    window: Summary | None = field(default=None, name="window_latency_ms")
    service_mean_ms: Num = None  # the worker's own service time, mean
    #: requests and samples per second over the measured time and over the window
    throughput: Throughput | None = None
    target_rate: float | None = None
    achieved_rate: Num = None  # derived: ``throughput.requests_per_s``
    measured_s: Num = None  # seconds measured
    goodput: Num = None
    #: vLLM's goodput: the requests meeting every SLO of the server's ``goodput`` key
    slo_goodput: Goodput | None = None
    exit: Exit | None = None  # how its process ended (null: still running)
    error: str | None = None
    #: the failed requests (``errors``) by cause, as the workload named it (a server's
    #: load generator: ``HTTP 503``, ``stream cut short``, ``empty stream``, ...)
    error_causes: dict[str, int] = {}
    #: an inference server's own metrics over the phase (null: not a server workload,
    #: or its load generator sent none)
    server: ServerView | None = None
    log_tail: Sequence[str] = ()  # derived: the last stderr lines, then stdout's
    stderr_tail: Sequence[str] = ()
    #: its first stderr lines that are no longer in ``stderr_tail`` (a server's start-up:
    #: what it serves, on which port), at most 10; empty while the tail holds them all
    #: (a list: a file written before it existed reads as one too)
    stderr_head: list[str] = []
    stderr_skipped: int = 0  # stderr lines between the head and the tail, kept in neither
    stdout_tail: Sequence[str] = ()
    #: the workload's hello event: raw JSON from the workload (an edge)
    hello: RawJSON = {}
    launch: Launch = Launch()
    series: Sequence[tuple[int, int, int, int, int, Num, Num, Num, Num]] = ()
    cdf: Sequence[tuple[Num, float]] = ()
    annotations: Sequence[Annotation] = ()
    #: requests due (scheduled send time passed) but not completed when the phase's
    #: measurement ended: how many, the longest wait, whether ``phase``'s percentiles
    #: include their waits (censored), how they were counted; null while it runs or
    #: where it cannot be known (``unfinished_note`` then says why)
    unfinished: Unfinished | None = None
    unfinished_note: str = ""
    after_end: int = 0  # requests that completed after the measured end (not counted)
    stalled_since: float | None = None  # seconds after phase start; null: not stalled
    stalls: Sequence[Stall] = ()  # since, until (null: to the end), why, bound
    slowest: Sequence[tuple[Num, Num]] = ()  # the phase's slowest requests
    gpu: int | None = None  # the GPU this copy is pinned to (multi-GPU runs)
    #: measured requests with latency <= each bound (ms; cumulative)
    latency_buckets_ms: Sequence[tuple[float, int]] = ()
    latency_sum_ms: Num = None  # exact sum over the measured requests (``count``)
    #: seconds into the phase at which it closed its event pipe while still running
    pipe_closed_at: float | None = None
    #: the fine histogram behind ``phase`` (censored unfinished waits included)
    latency_hist: Hist | None = None
    metrics: dict[str, Metric] = {}
    #: when each stage of its start and stop was reached, seconds after the phase start,
    #: in time order (``engine.snapshot.STAGES``)
    stages: dict[str, float] = {}
    latency_ci_ms: dict[str, Interval] = {}  # derived: the percentiles' intervals


# ------------------------------------------------------------------ captures
class SlowRequest(Doc, frozen=True, kw_only=True):
    seq: int
    start: float
    span_ms: Num = None
    kernel_ms: Num = None
    overlap_ms: Num = None
    queue_ms: Num = None
    gap_ms: Num = None
    low_quiet_ms: Num = None
    stretch: Num = None


class CaptureAnalysis(Doc, frozen=True, kw_only=True):
    """A kernel capture explained (``analysis.gpu.kernels``)."""

    capture: int
    high: str
    lows: list[str] = []
    t0: float = 0.0
    t1: float = 0.0
    kernels: dict[str, int] = {}
    high_kernel_ms: Num = None
    high_alone_ms: Num = None
    stretch: Num = None
    overlap_share: Num = None
    gap_ms_mean: Num = None
    queue_ms_mean: Num = None
    low_quiet_share: Num = None
    aligned: Num = None
    requests: int = 0
    notes: list[str] = []
    slowest: list[SlowRequest] = []


class Capture(Doc, frozen=True, kw_only=True):
    """A kernel capture: when, how long, of which workloads; each trace in its own
    gzip file beside the snapshot (``trace_files``)."""

    id: int
    t: float
    seconds: float
    workloads: list[str] = []
    errors: dict[str, str] = {}
    trace_files: dict[str, str] = {}
    analysis: CaptureAnalysis | None = None


# ------------------------------------------------------------------ per GPU
class GpuGroup(Doc, frozen=True, kw_only=True):
    gpu: int
    bus_id: str | None = None
    name: str | None = None
    workloads: list[str] = []
    high: str | None = None
    high_p50_ms: Num = None
    high_p99_ms: Num = None
    high_window_p99_ms: Num = None
    low_samples_per_s: Num = None
    util_pct: Num = None
    mem_used_mib: Num = None
    telemetry_device: str | None = None
    matched_by: str | None = None


class Rollup(Doc, frozen=True, kw_only=True):
    gpus: list[int] = []
    worst_high_p99_ms: Num = None
    worst_gpu: int | None = None
    best_high_p99_ms: Num = None
    best_gpu: int | UnsetType | None = UNSET
    low_samples_per_s: Num = None
    high_requests: int = 0


class Gpus(Doc, frozen=True, kw_only=True):
    """A multi-GPU phase: the copies grouped per GPU and the roll-up over GPUs."""

    groups: list[GpuGroup] = []
    rollup: Rollup = Rollup()


# ------------------------------------------------------------------ phase
class PhaseRetry(Doc, frozen=True, kw_only=True):
    """A phase run a second time because xserver died before its first measured second
    (issue 64 goal 4): what ended the first attempt. The phase that carries it is the
    second attempt; the first is not a phase of the snapshot (it measured nothing)."""

    #: the first attempt's error (why it failed)
    error: str = ""
    #: how xserver ended in the first attempt
    xserver_exit: XserverExit | None = None
    #: seconds into the first attempt when it ended
    t: float | None = None


class Box(Doc, frozen=True, kw_only=True):
    """The box a phase ran on where a plan ran over a Ray cluster (``--ray``,
    ``docs/fleet.md``): the Ray node's id and its host name."""

    node_id: str
    host: str

    @property
    def short(self) -> str:
        """``host/1a2b3c``: the host and the node id's first 6 characters."""
        return f"{self.host}/{self.node_id[:6]}"


class Phase(Doc, frozen=True, kw_only=True):
    """One start of the workload set in one mode."""

    index: int | UnsetType = UNSET
    name: str
    mode: str
    status: str = "?"
    started_at: str = ""
    ended_at: str | None = None
    duration_s: Num = None
    measuring: bool = True
    t_start: float = 0.0
    t_measure: float | None = None
    workloads: dict[str, Workload]
    xsched: Xsched | UnsetType = UNSET
    mps: Mps | UnsetType = UNSET
    setting: str | UnsetType = UNSET
    setting_values: dict[str, dict[str, SettingValue]] | UnsetType = UNSET
    error: str | UnsetType = UNSET
    preflight: Preflight | UnsetType = UNSET
    calibrate: str | UnsetType = UNSET
    isolation: Isolation | UnsetType = UNSET
    repeat: int | UnsetType = UNSET
    step: str | UnsetType = UNSET
    cut_short: str | UnsetType = UNSET
    candidate: str | UnsetType = UNSET
    #: a split phase (``compare --layout split``): each copy's mode, by copy name
    #: (``{"high@0": "native", "high@1": "xsched"}``); unset: every copy in ``mode``
    copy_modes: dict[str, str] | UnsetType = UNSET
    #: each workload's participation verdict, recorded by a mode from outside the tree
    #: (``engaged``: it took part; XSched and MPS keep theirs in their own records)
    proof: dict[str, str] | UnsetType = UNSET
    #: run again once: xserver died before the first attempt's first measured second
    retried: PhaseRetry | UnsetType = UNSET
    captures: list[Capture] | UnsetType = UNSET
    annotations: list[Annotation] = []
    gpus: Gpus | UnsetType = UNSET
    #: the box it ran on (a plan over a Ray cluster, ``--ray``); unset: this machine
    box: Box | UnsetType = UNSET

