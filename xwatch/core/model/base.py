"""The snapshot document's shared parts: its schema id, the base of every struct
(frozen, unknown fields are errors), and the statistics, exits, stalls, launches and
annotations that phases and workloads both use."""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType

SCHEMA_ID: Final = "xwatch.snapshot/1"

#: a JSON number that is null where it is unknown (None in memory too)
Num = float | None
#: a setting's value as a sweep or advise names it ("low.threshold": 2)
SettingValue = int | float | str | bool
#: a JSON object from outside xwatch, kept as it came and validated where it is read:
#: a workload's hello, a worker's kernel trace, the recorded scenario (the model's only
#: Any: mypy forbids it anywhere else in the model, ``pyproject.toml``)
RawJSON = dict[str, Any]  # type: ignore[explicit-any]


class Doc(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, gc=False):
    """A part of the snapshot document (unknown fields are errors). Not tracked by the
    garbage collector (``gc=False``): a snapshot holds tens of thousands of these, and
    none can be part of a reference cycle (they hold only numbers, strings, other
    parts, and lists and dicts of those)."""


# ------------------------------------------------------------------ statistics
class Summary(Doc, frozen=True, kw_only=True):
    """Latency statistics in ms (null: no request)."""

    mean: Num = None
    std: Num = None
    min: Num = None
    p50: Num = None
    p90: Num = None
    p95: Num = None
    p99: Num = None
    p999: Num = None
    max: Num = None


class Interval(Doc, frozen=True, kw_only=True):
    """A percentile and its distribution-free 95% interval (null: unbounded or
    unknown); ``few``: fewer requests than the percentile needs."""

    est: Num = None
    lo: Num = None
    hi: Num = None
    few: bool | UnsetType = UNSET


class Hist(Doc, frozen=True, kw_only=True):
    """The fine log histogram behind the percentiles: ``[bucket index, count]``."""

    relative_width: float
    buckets: list[tuple[int, int]] = []
    integral: bool = False


class Throughput(Doc, frozen=True, kw_only=True):
    requests_per_s: Num = None
    samples_per_s: Num = None
    window_requests_per_s: Num = None
    window_samples_per_s: Num = None


class Exit(Doc, frozen=True, kw_only=True):
    """How a workload process ended."""

    code: int | None = None
    signal: int | None = None
    reason: str = "?"
    ran_to_end: bool = False
    message: str = ""

    def describe(self) -> str:
        """In one line: ``failed (exit code 1): why`` or ``stopped (killed by SIGINT)``."""
        if self.signal:
            import signal as _s
            try:
                name = _s.Signals(self.signal).name
            except ValueError:
                name = str(self.signal)
            how = f"killed by {name}"
        else:
            how = f"exit code {self.code}"
        return f"{self.reason} ({how})" + (f": {self.message}" if self.message else "")


class Unfinished(Doc, frozen=True, kw_only=True):
    """Requests due but not completed when the phase's measurement ended."""

    count: int = 0
    max_wait_ms: Num = None
    in_percentiles: bool = False
    note: str = ""
    #: a server's load generator drained at the planned end (``drain_s``): every
    #: request sent was awaited, the backlog measured rather than cut
    drained: bool = False
    #: a server's TTFT percentiles count them too: each by its first token, or at least
    #: its wait where it had none (its load generator's ``first`` events)
    ttft_counted: bool = False


class Goodput(Doc, frozen=True, kw_only=True):
    """vLLM's goodput (``vllm bench serve --goodput``) of a server workload: the requests
    that met every named SLO (``slos_ms``: ``ttft``, ``tpot``, ``e2el``), per second of
    the measured time and as a share of the requests due: completed, failed and
    unfinished (a failure or an unfinished request is a miss)."""

    slos_ms: dict[str, float] = {}
    good: int = 0
    requests: int = 0  # completed + failed + unfinished
    requests_per_s: Num = None
    share: Num = None


class Stall(Doc, frozen=True, kw_only=True):
    """A stall: seconds after the phase start (``until`` null: to the end), why, and
    the bound it passed (absent in older snapshots)."""

    since: float
    until: float | None = None
    why: str = ""
    bound_s: float | UnsetType = UNSET


class Metric(Doc, frozen=True, kw_only=True):
    """A named per-request metric (``ttft_ms``, ...): rows of ``series`` are
    ``[sec, count, p50, p99, max, mean]``."""

    count: int = 0
    summary: Summary = Summary()
    window: Summary = Summary()
    ci: dict[str, Interval] = {}
    series: list[tuple[int, int, Num, Num, Num, Num]] = []
    hist: Hist | None = None
    goodput: Num = None


class Launch(Doc, frozen=True, kw_only=True):
    """How the workload process was started."""

    argv: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    start_delay_s: float = 0.0
    stdout: str | None = None
    #: how it started: "exec", or "fork (fork server pid N)" (absent before the fork
    #: server)
    start: str | UnsetType = UNSET


# ------------------------------------------------------------------ annotations
class Annotation(Doc, frozen=True, kw_only=True):
    """A moment of the phase worth marking on its charts (seconds after its start):
    a failure, a capture, xwatch's own pause, a live change (XSched's priority,
    policy or queue settings; MPS's thread percentage)."""

    t: float
    text: str
    kind: str | UnsetType = UNSET
    workload: str | UnsetType = UNSET
    priority: int | UnsetType = UNSET
    policy: str | UnsetType = UNSET
    number: int | UnsetType = UNSET
    handles: list[str] | UnsetType = UNSET
    level: int | UnsetType = UNSET
    threshold: int | UnsetType = UNSET
    batch_size: int | UnsetType = UNSET
    servers: list[int] | UnsetType = UNSET

