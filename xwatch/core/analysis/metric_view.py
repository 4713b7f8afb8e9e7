"""The dashboard's metric switch (``M``): a session snapshot seen through one named
per-request metric (``ttft_ms``, ``tpot_ms``, ...) instead of the request latency.

Every workload's latency fields (phase and window percentiles, per-second rows, the
fine histogram, the CDF) are replaced by the metric's, so the table, the charts and
the Compare tab show it with no change of their own; a workload that does not report
the metric shows no values (never its latency under the metric's name). Pure.

A scenario whose SLO is on a named metric (``[slo] metric = "ttft_ms"``) is seen
through that metric first (``default_metric``): its table and chart show what the SLO
judges, labelled (``label``: "TTFT"), and ``M`` goes on to the rest.
"""

from __future__ import annotations

import msgspec

from xwatch.core.engine.snapshot import SessionSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import EMPTY, LogHistogram, nan_if_none
from xwatch.scenario import Scenario

LATENCY = "latency_ms"
#: the per-token metrics as vLLM names them (time to first token, time per output
#: token, inter-token latency)
LABELS = {LATENCY: "latency", "ttft_ms": "TTFT", "tpot_ms": "TPOT", "itl_ms": "ITL",
          "e2el_ms": "E2EL"}


def label(name: str) -> str:
    """A metric's short name on screen: ``ttft_ms`` -> "TTFT", ``queue_ms`` -> "queue"."""
    return LABELS.get(name) or name.removesuffix("_ms")


def default_metric(scenario: Scenario | None) -> str:
    """The metric a scenario is seen through first: its SLO's, when that is a named
    metric (a server's TTFT, TPOT or ITL); else the request latency."""
    slo = scenario.slo if scenario is not None else None
    return slo.named if slo is not None and slo.named else LATENCY


def judges(scenario: Scenario, metric: str | None) -> bool:
    """Whether the scenario's SLO is about ``metric`` (None: the request latency), so
    that its line and its share within belong on that metric's chart."""
    slo = scenario.slo
    return slo is not None and slo.metric == (metric or LATENCY)


def metric_names(snap: SessionSnapshot) -> list[str]:
    """``latency_ms``, then every named metric any workload reported, by name."""
    return [LATENCY, *sorted({k for p in snap.phases for w in p.workloads for k in w.metrics})]


def _cdf(w: WorkloadSnapshot, points: int = 100) -> tuple[tuple[float, float], ...]:
    h = LogHistogram.from_items(w.latency_hist.buckets)
    n = h.n
    if not n:
        return ()
    vals = h.at_ranks([-(-k * n // points) for k in range(1, points + 1)],
                      nan_if_none(w.phase.min), nan_if_none(w.phase.max))
    return tuple((v, k / points) for k, v in enumerate(vals, 1))


def _as(w: WorkloadSnapshot, name: str) -> WorkloadSnapshot:
    m = w.metrics.get(name)
    if m is None:
        return msgspec.structs.replace(
            w, phase=EMPTY, window=EMPTY, series=(), cdf=(), slowest=(), goodput=None, count=0,
            phase_count=0, window_count=0,
            latency_hist=msgspec.structs.replace(w.latency_hist, buckets=[]))
    v = msgspec.structs.replace(w, phase=m.phase, window=m.window, series=m.series,
                            latency_hist=m.hist, slowest=(), goodput=m.goodput,
                            count=m.count, phase_count=m.count,
                            window_count=m.window_count, unfinished=None if w.unfinished is None else
                            msgspec.structs.replace(w.unfinished, in_percentiles=(
                                name == "ttft_ms" and w.unfinished.ttft_counted)))
    return msgspec.structs.replace(v, cdf=_cdf(v))


def metric_view(snap: SessionSnapshot, name: str) -> SessionSnapshot:
    """``snap`` as seen through the named metric ``name`` (``latency_ms``: unchanged)."""
    if name == LATENCY:
        return snap
    phases = tuple(msgspec.structs.replace(p, workloads=tuple(_as(w, name) for w in p.workloads))
                   for p in snap.phases)
    # the stored answer judges the latency: the view's is another question (None)
    return msgspec.structs.replace(snap, phases=phases, metric=name, answer=None)
