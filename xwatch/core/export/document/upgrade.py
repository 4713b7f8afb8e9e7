"""Snapshots of earlier xwatch versions, brought to the current document's shape.

A pure function on the raw JSON, before it is validated against the structs of
``core.model``: one of the edges where a snapshot is still plain data. Every
snapshot xwatch ever wrote has the schema id ``xwatch.snapshot/1``; what changed
within it over time:

- fields were added (``after_end``, ``stalls``, ``latency_hist``, ``metrics``,
  ``stages``, ``answer``, ...): the document's defaults say what their absence
  always meant, so nothing is needed here;
- the first snapshots (2026-11-21, before d8e97c5) carried a workload's service-time
  summary as ``service_ms``, which no version read back; it is dropped (its mean
  became ``service_mean_ms``, absent there, so unknown, as it always was on replay).

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
    if not isinstance(phases, list) or not any(
            isinstance(p, dict) and isinstance(p.get("workloads"), dict)
            and any(isinstance(w, dict) and k in w for w in p["workloads"].values()
                    for k in DROPPED_WORKLOAD_FIELDS)
            for p in phases):
        return raw
    out = dict(raw)
    out["phases"] = [_phase(p) for p in phases]
    return out


def _phase(p: Any) -> Any:
    if not isinstance(p, dict) or not isinstance(p.get("workloads"), dict):
        return p
    return {**p, "workloads": {n: ({k: v for k, v in w.items()
                                     if k not in DROPPED_WORKLOAD_FIELDS}
                                    if isinstance(w, dict) else w)
                               for n, w in p["workloads"].items()}}
