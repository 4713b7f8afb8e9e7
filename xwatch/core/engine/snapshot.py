"""The snapshot types: what a session looks like, frozen, to every reader.

``Session.snapshot()`` (``engine.live``) builds these; the dashboard's timer, the
headless progress line, the exporter, replay and the tests all read the same
objects. A workload's snapshot is the snapshot document's ``model.Workload`` with the
live-only fields beside it (its per-second rows are ``stats.SecondRow``), so the
exporter writes its statistics as they are. Also the workload
states and the start/stop stages they name. Owns no behaviour beyond small read-only
helpers.
"""

from __future__ import annotations

from datetime import datetime, timezone

import msgspec

from xwatch.core import model as M
from xwatch.core.engine.stats import RELATIVE_WIDTH, SecondRow
from xwatch.scenario import Scenario

# Workload states, in the order they normally happen. STALLED: alive, but no
# request completed (or no heartbeat) for longer than its stall bound.
PENDING, STARTING, WARMING, RUNNING = "pending", "starting", "warming", "running"
WAITING = "waiting"  # warm, held by the start gate until the others are warm
STALLED = "stalled"
FINISHED, STOPPED, FAILED = "finished", "stopped", "failed"
TERMINAL = frozenset({FINISHED, STOPPED, FAILED})
ALIVE = frozenset({RUNNING, STALLED})

#: The stages of a workload's start and stop, in the order they happen (``stages``):
#: the mode's daemon answers (phase-wide: MPS's control daemon, XSched's xserver with
#: its preflight), the mode settled (phase-wide: MPS's preflight, which runs beside the
#: workloads' start, passed; it can come after any of the next), the process asked for
#: and there (xwatch), the worker's own stages
#: (``worker.loop.Stages``: interpreter up, torch and the model's library imported,
#: device context, model built, first warm-up iteration, warm-up over), its ``warm``
#: event read by xwatch, the start gate's SIGUSR2 sent and taken, its first measured
#: request due (``ready``: the ready event's ``t0``), then the stop asked, the worker's
#: ``bye`` (its loop left), the process gone (its exit seen) and the mode's backend torn
#: down (phase-wide).
STAGES = ("daemon", "mode", "spawn", "spawned", "python", "torch", "imports", "context", "model",
          "first", "warm", "warm_seen", "gate", "released", "ready", "stop", "bye", "exit",
          "mode_left")


def utc_now() -> str:
    """The wall-clock time stamps of snapshots (``started_at``, ...): UTC, ISO 8601, ms."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class LogLine(msgspec.Struct, frozen=True):
    seq: int
    t: float  # wall clock (time.time())
    source: str  # workload name or "xwatch"
    stream: str  # "stdout" | "stderr" | "info" | "warning" | "error"
    text: str


class MetricSnapshot(msgspec.Struct, frozen=True):
    """A named per-request metric of one workload in one phase (``ttft_ms``, ...): the
    same statistics as its latency, without the unfinished requests' waits."""

    name: str
    count: int
    phase: M.Summary  # every value of the phase (as written: 6 decimals, None: no value)
    window: M.Summary  # the values of the last ``window_s`` seconds
    series: tuple[SecondRow, ...]
    hist: M.Hist  # the fine histogram behind ``phase`` (as ``WorkloadSnapshot``'s)
    goodput: float | None = None  # the share at or under the SLO, when it is the SLO's
    #: the values behind ``window`` (a read snapshot does not have it: ``count``)
    window_count: int = 0




class WorkloadSnapshot(M.Workload, frozen=True, kw_only=True):
    """Everything about one workload in one phase, frozen at snapshot time: the
    document's ``Workload`` (every statistic the file has is a field there, named and
    described once) and, beside it, what only a snapshot in memory has. Fields
    redeclared here are the document's, narrowed to what a snapshot in memory always
    holds (a file may lack them: ``export.snapshot`` fills them on reading)."""

    name: str
    #: how long the request in flight has run (an alive workload's; 0 otherwise)
    inflight_s: float = 0.0
    #: how many values ``phase`` and ``window`` summarize: ``count`` plus the censored
    #: unfinished waits, and the requests in the window (a read snapshot does not have
    #: them: both are its ``count``)
    phase_count: int = 0
    window_count: int = 0
    # ---- the document's fields, narrowed
    priority_label: str
    #: the summaries (6 decimals, as written; None: no request; a read snapshot's
    #: are empty where the workload counted no request)
    phase: M.Summary
    window: M.Summary
    throughput: M.Throughput  # rounded to 6 decimals, as written (None: unknown)
    series: tuple[SecondRow, ...] = ()
    #: (latency ms, fraction) and (end, seconds after phase start; latency ms) of the
    #: slowest requests, unrounded (the exporter rounds them; NaN: unknown)
    cdf: tuple[tuple[float, float], ...] = ()
    slowest: tuple[tuple[float, float], ...] = ()
    latency_sum_ms: float = 0.0
    #: the fine histogram behind ``phase`` (``stats.LogHistogram`` buckets of
    #: ``stats.RELATIVE_WIDTH``): intervals and pooled repeats are computed from it;
    #: empty where unknown (older snapshots). ``integral``: every latency the workload
    #: reported was a whole number, so its percentiles are exact (counted per value)
    latency_hist: M.Hist = M.Hist(relative_width=RELATIVE_WIDTH)
    #: named per-request metrics the workload reported ("ttft_ms", "tpot_ms", ...): in
    #: the document a ``Metric`` each (its rows shorter, its intervals derived)
    metrics: dict[str, MetricSnapshot] = msgspec.field(  # type: ignore[assignment]
        default_factory=dict)


#: a worker's reduced kernel trace (``worker.trace.load_trace``): raw JSON from a
#: workload, read by ``analysis.gpu.kernels`` (an edge: it never goes into the snapshot
#: document, only into its own gzip file)
Trace = M.RawJSON


class CaptureSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """A kernel capture of a phase: when, how long, of which workloads, and the traces
    that arrived (the document's ``Capture`` keeps their file names instead)."""

    id: int
    t: float  # seconds after the phase start
    seconds: float
    workloads: tuple[str, ...] = ()
    errors: dict[str, str] = {}
    traces: dict[str, Trace] = {}
    #: the analysis as a snapshot file recorded it (used where its traces are missing)
    analysis: M.CaptureAnalysis | None = None


class PhaseSnapshot(msgspec.Struct, frozen=True):
    index: int
    name: str
    mode: str
    status: str  # running | done | failed | stopped
    started_at: str
    ended_at: str | None
    elapsed_s: float
    measuring: bool
    workloads: tuple[WorkloadSnapshot, ...]
    t_start: float = 0.0  # monotonic, for aligning telemetry and annotations
    t_measure: float | None = None
    # what the phase's mode, its plan and xwatch recorded about it (None: nothing)
    xsched: M.Xsched | None = None  # the XSched mode: install, xserver, queues
    mps: M.Mps | None = None  # the MPS mode: daemon, clients, proof
    preflight: M.Preflight | None = None  # XSched's preflight verdicts
    isolation: M.Isolation | None = None  # the environment removed, the maps proof
    captures: tuple[CaptureSnapshot, ...] = ()
    #: moments marked on the phase's charts (failures, captures, pauses, live changes)
    annotations: tuple[M.Annotation, ...] = ()
    error: str | None = None  # why it failed
    setting: str | None = None  # a sweep's setting (its label)
    setting_values: dict[str, dict[str, M.SettingValue]] | None = None
    calibrate: str | None = None  # a calibrate phase's role: "alone" | "together"
    repeat: int | None = None  # the round of a repeated step
    step: str | None = None  # the step's key (advise, noise, runs)
    candidate: str | None = None  # advise's candidate (its label)
    cut_short: str | None = None  # why the plan ended it before its time
    retried: M.PhaseRetry | None = None  # run again: xserver died before its first second
    #: a split phase: each copy's mode by copy name (None: every copy in ``mode``)
    copy_modes: dict[str, str] | None = None
    #: each workload's participation verdict, by a mode from outside the tree
    proof: dict[str, str] | None = None
    #: the box it ran on (a plan over a Ray cluster, ``core/fleet``); None: this machine
    box: M.Box | None = None

    def workload(self, name: str) -> WorkloadSnapshot | None:
        return next((w for w in self.workloads if w.name == name), None)

    @property
    def failed_workloads(self) -> tuple[WorkloadSnapshot, ...]:
        return tuple(w for w in self.workloads if w.state == FAILED)


class SessionSnapshot(msgspec.Struct, frozen=True):
    scenario: Scenario
    phases: tuple[PhaseSnapshot, ...]
    messages: tuple[LogLine, ...]
    taken_at: float
    window_s: float
    created_at: str | None = None  # when the session started (``utc_now``)
    environment: M.Environment | None = None  # the host (None: this one, at export)
    telemetry: M.Telemetry | None = None  # GPU and host sampling (None: off)
    spool: M.Spool | None = None  # the raw-event spool's rows and size
    #: the machine's recorded noise floors, by mode (``analysis.stats.noise``)
    noise_floors: dict[str, M.NoiseFloor] | None = None
    noise_floor: M.NoiseFloor | None = None  # the floor ``xwatch noise`` recorded
    advice: M.Advice | None = None  # ``xwatch advise``'s race and its answer
    capacity: M.Capacity | None = None  # ``xwatch capacity``'s searches and shares
    #: the comparison's answer, computed once per session by its host (and for a
    #: snapshot written before it, on load); None: not computed (a session's start, or a
    #: ``metric`` view: its answer is another question)
    answer: M.SessionAnswer | None = None
    #: the named per-request metric the snapshot is seen through (the dashboard's
    #: ``M``; ``analysis.metric_view``), None: latency
    metric: str | None = None

    @property
    def current(self) -> PhaseSnapshot | None:
        return self.phases[-1] if self.phases else None
