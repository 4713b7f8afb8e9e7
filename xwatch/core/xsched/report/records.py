"""XSched's records as other readers take them: its Prometheus series
(``Mode.metrics``: the engagement verdict, the queues and the polls of each workload of
an XSched phase) and the upgrade of its records in older snapshots (``Mode.upgrade``:
the per-workload queue statistics gained ``max_queues``, the most queues seen in one
poll; before it, every reader showed the last poll's ``queues`` in its place, which is
what an older snapshot gets)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xwatch.core.engine.snapshot import PhaseSnapshot, WorkloadSnapshot

Gauge = Callable[..., Any]


def metrics(gauge: Gauge) -> Callable[[PhaseSnapshot, WorkloadSnapshot, list[str]], None]:
    """Its families, declared through the exporter's ``gauge(name, doc, extra_labels)``;
    what adds a workload's samples."""
    engaged = gauge("xwatch_xsched_engagement",
                    "1 for the XSched engagement verdict of the workload (XSched phases)",
                    ("status",))
    queues = gauge("xwatch_xsched_queues", "most XQueues seen for the workload in the phase")
    ready = gauge("xwatch_xsched_ready_polls", "/xqueues polls that saw a ready XQueue")
    susp = gauge("xwatch_xsched_suspended_polls", "/xqueues polls that saw a suspended XQueue")

    def add(p: PhaseSnapshot, w: WorkloadSnapshot, lab: list[str]) -> None:
        if p.mode != "xsched" or p.xsched is None:
            return
        ev = p.xsched.workloads.get(w.name)
        if ev:
            engaged.add_metric([*lab, str(ev.status)], 1)
            st = ev.stats
            queues.add_metric(lab, float(st.max_queues))
            ready.add_metric(lab, float(st.ready))
            susp.add_metric(lab, float(st.suspended))

    return add


def _stats(p: Any) -> list[tuple[str, dict[str, Any]]]:
    """(workload, its ``stats``) of a phase's XSched record."""
    xs = p.get("xsched") if isinstance(p, dict) else None
    wls = xs.get("workloads") if isinstance(xs, dict) else None
    if not isinstance(wls, dict):
        return []
    return [(n, w["stats"]) for n, w in wls.items()
            if isinstance(w, dict) and isinstance(w.get("stats"), dict)]


def _old(p: Any) -> bool:
    return any("max_queues" not in st for _, st in _stats(p))


def _phase(p: Any) -> Any:
    if not _old(p):
        return p
    xs = p["xsched"]
    return {**p, "xsched": {**xs, "workloads": {**xs["workloads"], **{
        n: {**xs["workloads"][n], "stats": {**st, "max_queues": st.get("queues", 0)}}
        for n, st in _stats(p) if "max_queues" not in st}}}}


def upgrade(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with every phase's queue statistics in the current shape (a new object
    where anything changed; ``raw`` itself is not modified)."""
    phases = raw.get("phases")
    if not isinstance(phases, list) or not any(_old(p) for p in phases):
        return raw
    return {**raw, "phases": [_phase(p) for p in phases]}
