"""A compared number's metric as a type (``Metric``): what it reads (the request
latency, a named per-request metric, or the throughput), at which percentile, in which
unit, which way is better and on which scale its values average. The analyses,
plans and reports branch on these attributes, never on the metric's spelling.

Not ``M.Metric`` (``model.base``): that is what a workload recorded of one named
per-request metric (``ttft_ms``), which a ``Metric`` of kind ``named`` reads.

On disk a metric stays the string xwatch has always written: an answer's and a GPU
finding's ``metric``, a noise floor's ``workload/metric`` key, advise's and capacity's
``slo.metric`` ("P50", "P99", "P99.9", "samples/s", "ttft_ms:P99"). ``str(metric)``
writes exactly that string and ``Metric.parse`` reads it back (and the user's spelling
of it, ``p99`` or ``latency_ms:P99``), so snapshots and reports do not change: strings
are converted at those edges only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from xwatch.errors import XwatchError

#: what a metric reads: a percentile of the request latency, a percentile of a named
#: per-request metric (``ttft_ms``, ``tpot_ms``, ``itl_ms``, a command's own), or the
#: samples (requests x batch) per measured second
Kind = Literal["latency", "named", "throughput"]
#: which way is better: a time is better lower, a throughput higher
Direction = Literal["lower", "higher"]
#: the scale values average on: copies' percentiles by the mean of their logs (the
#: geometric mean; ``analysis.stats.copies``), samples/s by the arithmetic mean
Scale = Literal["log", "linear"]

#: the request latency's name where a named metric may stand (``[slo] metric``,
#: ``--slo high.latency_ms:P99=10``)
LATENCY_MS: Final = "latency_ms"
_THROUGHPUT_TEXT: Final = "samples/s"
ALLOWED: Final = ("PNN (a percentile of the request latency, e.g. P50, P99, P99.9), "
                  "NAME:PNN (of a named per-request metric, e.g. ttft_ms:P99) or samples/s")


class MetricError(XwatchError, ValueError):
    """A metric's text is none of the forms xwatch reads (``ALLOWED``). A ValueError
    too: a reader that skips malformed records (a noise floor's file) skips it."""

    title = "Unknown metric"


@dataclass(frozen=True, slots=True)
class Metric:
    """One compared number's metric. ``percentile``: 0-100 exclusive for the latency and
    a named metric, None for the throughput; ``name``: the named metric's (``ttft_ms``),
    empty otherwise."""

    kind: Kind
    percentile: float | None = None
    name: str = ""

    def __post_init__(self) -> None:
        q = self.percentile
        if self.kind == "throughput":
            ok = q is None and not self.name
        else:
            ok = q is not None and 0.0 < q < 100.0 and (
                self.name.isidentifier() and self.name != LATENCY_MS
                if self.kind == "named" else not self.name)
        if not ok:
            raise ValueError(f"not a metric: {self.kind} {q!r} {self.name!r}")

    @classmethod
    def latency(cls, q: float) -> Metric:
        """The request latency's ``q`` percentile (``P99``)."""
        return cls("latency", float(q))

    @classmethod
    def of(cls, name: str | None, q: float) -> Metric:
        """Named metric ``name``'s ``q`` percentile (``ttft_ms:P99``); ``latency_ms`` or
        None: the request latency's (as the scenario's ``[slo]`` names them)."""
        if not name or name == LATENCY_MS:
            return cls.latency(q)
        return cls("named", float(q), name)

    @classmethod
    def parse(cls, text: str) -> Metric:
        """The metric ``text`` names: ``str(metric)``'s forms, with a lower-case ``p``
        and ``latency_ms:`` before the request latency's percentile accepted. Raises
        ``MetricError`` naming the forms allowed."""
        if text == _THROUGHPUT_TEXT:
            return THROUGHPUT
        name, colon, pq = text.rpartition(":")
        try:
            q = float(pq.upper().removeprefix("P"))
        except ValueError:
            q = float("nan")
        if not pq.upper().startswith("P") or not 0.0 < q < 100.0 or \
                (colon and not name.isidentifier()):
            raise MetricError(f"{text!r} is not a metric: expected {ALLOWED}")
        return cls.of(name, q)

    @property
    def q(self) -> float:
        """The percentile (99.0); the throughput has none (ValueError)."""
        if self.percentile is None:
            raise ValueError(f"{self} has no percentile")
        return self.percentile

    @property
    def pq(self) -> str:
        """The percentile as written (``P99``, ``P99.9``); the throughput's own text."""
        return _THROUGHPUT_TEXT if self.percentile is None else f"P{self.percentile:g}"

    @property
    def unit(self) -> str:
        """``ms`` (a percentile of a time) or ``samples/s``."""
        return _THROUGHPUT_TEXT if self.kind == "throughput" else "ms"

    @property
    def change_unit(self) -> str:
        """The unit a change of it is written in, after its name (an answer's ``unit``,
        ``+12.50 /s``): ``ms``, or ``/s`` for the samples/s."""
        return "/s" if self.kind == "throughput" else "ms"

    @property
    def direction(self) -> Direction:
        """Which way is better."""
        return "higher" if self.kind == "throughput" else "lower"

    @property
    def scale(self) -> Scale:
        """The scale its values average on (``Scale``)."""
        return "linear" if self.kind == "throughput" else "log"

    def __str__(self) -> str:
        return f"{self.name}:{self.pq}" if self.name else self.pq


#: the samples per measured second: the lower-priority workloads' price
THROUGHPUT: Final = Metric("throughput")
P50: Final = Metric.latency(50)
P99: Final = Metric.latency(99)
