"""The snapshot document as a whole (``Snapshot``): the session-wide parts besides
the phases: environment, xwatch's messages, telemetry, the spool, noise floors, the
comparison's answer, advise's advice and capacity's searches."""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from xwatch.core.model.base import Doc, Num, RawJSON, SettingValue
from xwatch.core.model.phase import Phase


# ------------------------------------------------------------------ session-wide
class Environment(Doc, frozen=True, kw_only=True):
    """The host, as far as it can be told without torch, and xwatch's own variables."""

    host: str = ""
    os: str = ""
    machine: str = ""
    cpus: int | None = None
    python: str = ""
    xwatch: str = ""
    argv: list[str] = []
    env: dict[str, str] = {}


class Message(Doc, frozen=True, kw_only=True):
    t: float = 0.0
    level: str = "info"
    text: str


class PollCost(Doc, frozen=True, kw_only=True):
    polls: int = 0
    median: Num = None
    p99: Num = None
    max: Num = None


class TelemetryDevice(Doc, frozen=True, kw_only=True):
    device: str
    name: str = ""
    bus_id: str | UnsetType | None = UNSET


class TelemetryInfo(Doc, frozen=True, kw_only=True):
    driver: str | UnsetType | None = UNSET
    devices: list[TelemetryDevice] = []


class Sample(Doc, frozen=True, kw_only=True):
    """One telemetry sample of one device: ``metrics`` by name (util_pct, mem_used_mib,
    power_w, ... as the backend has them; null: not supported), ``procs`` per process
    id (mem_mib, sm_pct; gfx_busy, cu_occupancy; cpu_pct, rss_mib)."""

    t: float
    device: str
    name: str = ""
    bus_id: str | None = None
    ours: bool = False
    metrics: dict[str, Num] = {}
    procs: dict[str, dict[str, Num]] = {}
    procs_t: float | UnsetType | None = UNSET


class Telemetry(Doc, frozen=True, kw_only=True):
    """GPU and host sampling: the backend chosen and why, its cost, the samples."""

    backend: str
    reason: str = ""
    rejected: dict[str, str] = {}
    interval_s: float = 0.0
    proc_interval_s: float | UnsetType = UNSET
    utilization_meaning: str | UnsetType = UNSET
    info: TelemetryInfo = TelemetryInfo()
    poll_cost_ms: PollCost = PollCost()
    proc_poll_cost_ms: PollCost | UnsetType = UNSET
    errors: int | UnsetType = UNSET
    last_error: str | UnsetType | None = UNSET
    samples: list[Sample] = []
    t_origin: float | UnsetType = UNSET


class Spool(Doc, frozen=True, kw_only=True):
    """The raw-event spool: rows kept and dropped, its size and bound."""

    rows_kept: int = 0
    rows_dropped: int = 0
    failed: str | None = None
    compressed_bytes: int = 0
    max_bytes: int | None = None


class Split(Doc, frozen=True, kw_only=True):
    runs: int
    run_s: float
    mean: Num = None
    total_var: Num = None
    within_var: Num = None
    resolution: Num = None


class Machine(Doc, frozen=True, kw_only=True):
    """The machine a noise floor belongs to: host, its GPUs' names, the driver."""

    host: str
    gpus: list[str] = []
    driver: str | None = None


class NoiseFloor(Doc, frozen=True, kw_only=True):
    """A machine's recorded run-to-run noise for one mode (``analysis.stats.noise``)."""

    mode: str
    created_at: str = ""
    runs: int = 0
    run_s: float = 0.0
    scenario: str = ""
    digest: str = ""
    machine: Machine
    splits: dict[str, Split] = {}


class Extra(Doc, frozen=True, kw_only=True):
    """Session-wide facts besides the phases."""

    spool: Spool | UnsetType = UNSET
    noise_floor: NoiseFloor | UnsetType = UNSET
    noise_floors: dict[str, NoiseFloor] | UnsetType = UNSET


#: which way a change of the answer went
Way = Literal["faster", "slower", "higher", "lower", "within"]
#: where a change's interval comes from: runs (2+ each), a recorded noise floor, or
#: nowhere (one run each, no floor: the within-run interval only)
Basis = Literal["runs", "floor", "unmeasured"]


class NoPart(Doc, frozen=True, kw_only=True):
    """A workload that did not take part in a step's mechanism, or whose part is
    undecided (``analysis.participation``): its recorded verdict and what it means."""

    workload: str
    verdict: str  # "shim-not-loaded", "no-xqueue", "not-scheduled", "not-in-mps", "pending"...
    reason: str  # "had no XQueue (the shim never saw its GPU work)"
    runs: int = 1  # in how many of the step's runs
    of: int = 1  # of its runs


class Answer(Doc, frozen=True, kw_only=True):
    """One change of the comparison's answer (``analysis.answer.stored.session_answer``)."""

    step: str
    baseline: str
    workload: str
    metric: str
    unit: str = ""
    estimate: Num = None
    lo: Num = None
    hi: Num = None
    way: Way
    runs: int
    basis: Basis
    base: Num = None
    value: Num = None
    floor: str | UnsetType = UNSET
    few_requests: int | UnsetType = UNSET
    pooled: bool | UnsetType = UNSET
    #: the GPUs whose copies make each run's value (``--gpus``: the mean over the
    #: copies, ``analysis.stats.copies``); absent: one copy ("N runs x M GPUs")
    gpus: int | UnsetType = UNSET
    #: the step's mechanism took part (native: always): false, no verdict is given
    #: (``way`` is within) and ``no_part`` says who did not and why; absent: a record
    #: from before participation was checked
    took_part: bool | UnsetType = UNSET
    #: the step's workloads that did not take part (or are undecided), and why
    no_part: list[NoPart] = []
    #: what the change measures when only some workloads took part ("only train was
    #: scheduled by XSched: ...")
    scope: str | UnsetType = UNSET
    #: the change as the answer says it ("+1.20 ms (+3.1%) [+0.40, +2.00], slower"), as
    #: a ``--fail-if`` gate prints it; empty in records written before it was stored
    text: str = ""


class StepVerdict(Doc, frozen=True, kw_only=True):
    """One step of the answer box: its sentence (every change against its baseline step,
    or why there is no verdict) and whether it could be judged."""

    step: str
    baseline: str
    sentence: str
    #: the step's mechanism took part (native: always); false: ``no_verdict`` says why
    took_part: bool = True
    #: why no change of the step is judged ("no verdict: XSched took no part: ..."),
    #: where its mechanism took no part
    no_verdict: str = ""
    #: some change has one run each and no recorded noise floor: not judged
    unmeasured: bool = False


class AnswerBox(Doc, frozen=True, kw_only=True):
    """The comparison's answer as every front end says it, computed once per session
    (``analysis.answer.stored.session_answer``): a sentence per step, then the notes
    (the GPUs unlike the others, "To tell", how to measure the noise, the method). The
    console, the report's Answer section, the dashboard's Compare tab and the
    ``--fail-if`` gate read it; a snapshot written before it gets it computed when it
    is loaded."""

    steps: list[StepVerdict] = []
    notes: list[str] = []

    def lines(self) -> list[str]:
        """The box as plain lines: the sentences, then the notes (none without steps)."""
        return [s.sentence for s in self.steps] + self.notes if self.steps else []


class GpuFinding(Doc, frozen=True, kw_only=True):
    """A GPU whose copies differ from the other GPUs' beyond noise
    (``analysis.answer.stored.session_answer``): its value relative to theirs, over runs,
    with its interval (95% over every GPU and number compared)."""

    workload: str
    metric: str
    gpu: int
    others: list[int] = []
    relative: Num = None  # +0.35: 35% above the other GPUs (samples/s: the same, relative)
    lo: Num = None
    hi: Num = None
    runs: int
    tests: int = 1
    text: str = ""
    #: the step (mode or setting) whose runs differ, where the session compared several:
    #: each step is judged on its own runs (a GPU may differ under one mechanism only)
    step: str | None = None


class SessionAnswer(Doc, frozen=True, kw_only=True):
    """The session's answer as one value in memory (``SessionSnapshot.answer``): what
    the document writes as its ``answer`` (the records), ``gpu_findings`` and
    ``answer_box`` fields."""

    records: list[Answer] = []
    gpu_findings: list[GpuFinding] = []
    box: AnswerBox = AnswerBox()


class Slo(Doc, frozen=True, kw_only=True):
    workload: str
    metric: str | None = None
    percentile: float
    latency_ms: float


class Choice(Doc, frozen=True, kw_only=True):
    label: str = ""
    mode: str
    settings: dict[str, SettingValue] = {}


class Estimate(Doc, frozen=True, kw_only=True):
    estimate: Num = None
    lo: Num = None
    hi: Num = None


class Candidate(Doc, frozen=True, kw_only=True):
    label: str
    mode: str
    settings: dict[str, SettingValue] = {}
    runs: int = 0
    slo_metric: Estimate = Estimate()
    price: Estimate = Estimate()
    status: str = ""
    reason: str = ""
    #: the GPU each run was on, in order (a race over several GPUs; empty on one device;
    #: a run spread over several GPUs: the first of them, ``run_gpus`` has them all)
    gpus: list[int] = []
    #: an open candidate at the budget: about how many more rounds would decide it (None:
    #: the runs so far cannot tell; unset: decided, or an older record)
    more_rounds: int | UnsetType | None = UNSET
    #: every GPU of each run, in order, where a run was spread over several (its value
    #: the mean over their copies)
    run_gpus: list[list[int]] | UnsetType = UNSET


class Advice(Doc, frozen=True, kw_only=True):
    """``xwatch advise``: the race and its answer (``plans.advise``)."""

    slo: Slo
    choice: Choice | None = None
    met: bool = False
    decided: bool | UnsetType = UNSET
    final: bool | UnsetType = UNSET
    closest: str | None = None
    candidates: list[Candidate] = []
    runs: int = 0
    rounds: int | UnsetType = UNSET
    grid_runs: int | UnsetType = UNSET
    seconds: float = 0.0
    budget_s: float | UnsetType | None = UNSET
    seed: int | UnsetType | None = UNSET
    skipped: dict[str, str] = {}
    undecided: str | UnsetType = UNSET
    more_rounds: int | UnsetType | None = UNSET
    likely: str | UnsetType | None = UNSET
    #: what the candidates' intervals promise (races since issue 41: 95% over every
    #: candidate and every look); unset in older records (per-look Bonferroni t)
    intervals: str | UnsetType = UNSET


class CapacityLoad(Doc, frozen=True, kw_only=True):
    """One offered rate a capacity search probed: its runs, the SLO metric's interval
    over them, LOW's summed throughput beside it, and the verdict (met, failed, open)."""

    rate: float
    runs: int
    slo_metric: Estimate = Estimate()
    low: Estimate = Estimate()
    verdict: str
    gpus: list[int] = []


class CapacityRecord(Doc, frozen=True, kw_only=True):
    """One candidate of ``xwatch capacity`` (``plans.capacity``): the highest load of
    the SLO workload that met the SLO with confidence (``met``, req/s), the lowest that
    missed it (``failed``), the shares of a dedicated GPU's work it keeps (HIGH's
    capacity, LOW's throughput at ``met``, their sum), with intervals."""

    candidate: str
    mode: str
    settings: dict[str, SettingValue] = {}
    dedicated: bool = False  # the SLO workload alone on the GPU
    workload: str
    metric: str
    slo_ms: float
    met: Num = None
    failed: Num = None
    status: str
    reason: str = ""
    high_share: Estimate = Estimate()
    low_share: Estimate = Estimate()
    total: Estimate = Estimate()
    runs: int = 0
    loads: list[CapacityLoad] = []
    #: loads whose SLO estimates fall as the load rises (within noise): [lower, higher]
    dips: list[list[float]] = []
    #: loads whose runs' SLO values lie more than ``search.RUNAWAY`` apart (a queue that
    #: ran away in some): [rate, largest / smallest]; the promise assumes runs that vary
    #: around one value
    runaways: list[list[float]] = []


class Capacity(Doc, frozen=True, kw_only=True):
    """``xwatch capacity``: every candidate's search, LOW alone's throughput, the best
    candidate where the intervals separate."""

    slo: Slo
    rates: list[float]
    records: list[CapacityRecord] = []
    low_alone: Estimate = Estimate()
    low_workloads: list[str] = []
    best: str | None = None
    decided: bool = False
    final: bool = True
    rounds: int = 0
    runs: int = 0
    seconds: float = 0.0
    budget_s: float | None = None
    intervals: str = ""
    skipped: dict[str, str] = {}
    #: each run's measured seconds, the window its percentile covers (warm-up out);
    #: unset in snapshots from before it was recorded
    run_s: float | UnsetType = UNSET


EVENTS_COLUMNS = ["phase", "workload", "seq", "t", "latency_ms", "service_ms",
                  "sched_delay_ms", "late", "batch", "ok"]


class Snapshot(Doc, frozen=True, kw_only=True):
    """An xwatch session, frozen: ``snapshot.json``."""

    schema: Literal["xwatch.snapshot/1"]
    created_at: str | None = None
    window_s: float = 10.0
    #: the resolved scenario; validated again by the scenario loader on load (an edge)
    scenario: RawJSON
    environment: Environment = Environment()
    phases: list[Phase]
    messages: list[Message] = []
    telemetry: Telemetry | None = None
    events_file: str | None = None
    events_kept: int | None = None
    events_dropped: int | None = None
    events_columns: list[str] = msgspec.field(default_factory=lambda: list(EVENTS_COLUMNS))
    extra: Extra = Extra()
    answer: list[Answer] = []
    #: GPUs whose copies differ from the others' beyond noise (several GPUs only)
    gpu_findings: list[GpuFinding] = []
    #: the answer as it is said (absent in snapshots written before it: computed on load)
    answer_box: AnswerBox | UnsetType = UNSET
    advice: Advice | None = None
    capacity: Capacity | None = None  # ``xwatch capacity`` (absent in older snapshots)
