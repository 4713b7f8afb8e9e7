"""Snapshots of earlier xwatch versions, brought to the current document's shape.

A pure function on the raw JSON, before it is validated against the structs of
``core.model``: one of the edges where a snapshot is still plain data. Every
snapshot xwatch ever wrote has the schema id ``xwatch.snapshot/1``; what changed
within it over time:

- fields were added (``after_end``, ``stalls``, ``latency_hist``, ``metrics``,
  ``stages``, ``answer``, an answer record's ``took_part``, ``no_part`` and ``scope``,
  a phase's ``retried`` and its preflight's ``leave``, ``capacity`` (``xwatch
  capacity``'s record), ...): the document's defaults say what their absence always meant
  (an answer record without ``took_part``: written before participation was checked; no
  retry; the probes left as their work ended; no capacity search), so nothing is needed
  here;
- the first snapshots (2026-11-21, before d8e97c5) carried a workload's service-time
  summary as ``service_ms``, which no version read back; it is dropped (its mean
  became ``service_mean_ms``, absent there, so unknown, as it always was on replay);
- a mode's own records changed: its own step (``Mode.upgrade``: XSched's queue
  statistics gained ``max_queues``) brings them to the current shape; the loader
  (``export.snapshot``) runs each registered mode's after this one, which may not
  import the modes;

- the answer (``answer``, ``gpu_findings``) was computed by every reader from the
  phases until ``answer_box`` was stored beside it (the session's answer, computed once
  by its host): a snapshot without ``answer_box`` gets all three computed from its phases
  when it is read, by the current analysis, as every report of it always was. That step
  needs the analysis, which this module may not import: it is the loader's
  (``export.snapshot.snapshot_from_dict``, through
  ``analysis.answer.stored.with_answer``), after this one.

A snapshot is never upgraded in place on disk.
"""

from __future__ import annotations

from typing import Any

#: workload fields that earlier versions wrote and no version reads
DROPPED_WORKLOAD_FIELDS = ("service_ms",)


def upgrade(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` in the current shape (a new object where anything changed; ``raw``
    itself is not modified)."""
    phases = raw.get("phases")
    if not isinstance(phases, list) or not any(_old_workloads(p) for p in phases):
        return raw
    out = dict(raw)
    out["phases"] = [_phase(p) for p in phases]
    return out


def _old_workloads(p: Any) -> bool:
    return isinstance(p, dict) and isinstance(p.get("workloads"), dict) and any(
        isinstance(w, dict) and k in w for w in p["workloads"].values()
        for k in DROPPED_WORKLOAD_FIELDS)


def _phase(p: Any) -> Any:
    if not _old_workloads(p):
        return p
    return {**p, "workloads": {n: ({k: v for k, v in w.items()
                                     if k not in DROPPED_WORKLOAD_FIELDS}
                                    if isinstance(w, dict) else w)
                               for n, w in p["workloads"].items()}}
