"""xwatch's data model: the snapshot as typed structs, the one description of every
field it carries, in memory and on disk (``snapshot.json``, schema
``xwatch.snapshot/1``).

What the modes, plans and telemetry record about a phase or a session (XSched's and
MPS's evidence, the preflight, isolation, captures, annotations, telemetry, the
spool, noise floors, advice, ...) is one of these structs: the engine's snapshot
types (``engine.snapshot``) carry them as named fields, and the snapshot document
(``Snapshot``, with ``Phase`` and ``Workload``) writes them as they are. Below the
engine: it imports nothing of xwatch, and everything may import it.

``msgspec`` encodes these to JSON, decodes JSON into them (the error names the field
and why) and generates ``snapshot.schema.json`` from them (``python -m
xwatch.core.export.document.schema``). ``docs/snapshot.md`` is the prose reference.

Every field is named and typed. A field that older snapshots do not have defaults
to what its absence always meant; a field that some phases or sessions carry and
others do not is ``UNSET`` when absent (and not written). Two values stay plain JSON
objects, because they are raw input from outside xwatch, validated where they are
read: a workload's ``hello`` event, and the recorded ``scenario``, which the
scenario loader (``xwatch.scenario.parse_scenario``, strict, with its own titled
errors) validates again on load.
"""

# the model as one namespace: ``from xwatch.core import model as M``
from xwatch.core.model.base import (
    SCHEMA_ID,
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
from xwatch.core.model.modes import (
    DaemonExit,
    Isolation,
    Joined,
    Mps,
    MpsParams,
    MpsPreflight,
    MpsServerExit,
    MpsWorkload,
    Preflight,
    ProbeLeave,
    Proof,
    QueueCounts,
    QueueParams,
    QueueRow,
    QueueStats,
    Removed,
    Shared,
    Verdict,
    Xsched,
    XschedPolicy,
    XschedSample,
    XschedWorkload,
    XserverExit,
)
from xwatch.core.model.phase import (
    Capture,
    CaptureAnalysis,
    GpuGroup,
    Gpus,
    Phase,
    PhaseRetry,
    Rollup,
    ServerGauge,
    ServerLatency,
    ServerView,
    SlowRequest,
    Workload,
)
from xwatch.core.model.session import (
    EVENTS_COLUMNS,
    Advice,
    Answer,
    Basis,
    Candidate,
    Choice,
    Environment,
    Estimate,
    Extra,
    GpuFinding,
    Machine,
    Message,
    NoiseFloor,
    PollCost,
    Sample,
    Slo,
    Snapshot,
    Split,
    Spool,
    Telemetry,
    TelemetryDevice,
    TelemetryInfo,
    Way,
)

__all__ = [
    "EVENTS_COLUMNS",
    "SCHEMA_ID",
    "Advice",
    "Annotation",
    "Answer",
    "Basis",
    "Candidate",
    "Capture",
    "CaptureAnalysis",
    "Choice",
    "DaemonExit",
    "Doc",
    "Environment",
    "Estimate",
    "Exit",
    "Extra",
    "Goodput",
    "GpuFinding",
    "GpuGroup",
    "Gpus",
    "Hist",
    "Interval",
    "Isolation",
    "Joined",
    "Launch",
    "Machine",
    "Message",
    "Metric",
    "Mps",
    "MpsParams",
    "MpsPreflight",
    "MpsServerExit",
    "MpsWorkload",
    "NoiseFloor",
    "Num",
    "Phase",
    "PhaseRetry",
    "PollCost",
    "Preflight",
    "ProbeLeave",
    "Proof",
    "QueueCounts",
    "QueueParams",
    "QueueRow",
    "QueueStats",
    "RawJSON",
    "Removed",
    "Rollup",
    "Sample",
    "ServerGauge",
    "ServerLatency",
    "ServerView",
    "SettingValue",
    "Shared",
    "Slo",
    "SlowRequest",
    "Snapshot",
    "Split",
    "Spool",
    "Stall",
    "Summary",
    "Telemetry",
    "TelemetryDevice",
    "TelemetryInfo",
    "Throughput",
    "Unfinished",
    "Verdict",
    "Way",
    "Workload",
    "Xsched",
    "XschedPolicy",
    "XschedSample",
    "XschedWorkload",
    "XserverExit",
]
