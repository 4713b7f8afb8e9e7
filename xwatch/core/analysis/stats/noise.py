"""A machine's noise floor: how much runs of one unchanged setting differ, per
workload and metric, split into the part within a run and the part between runs.

``xwatch noise`` runs one configuration N times and turns the phases into a
``Floor`` (``floor_of``); the floor is stored per host, GPU, driver, scenario
content and mode (``export.floors``) and carried in the snapshots that use it
(``SessionSnapshot.noise_floors``), so an answer from one run per step can say
whether its difference lies beyond this machine's run-to-run noise
(``one_run_interval``), naming the record's date and run count. Pure.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypedDict

import msgspec

from xwatch.core import model as M
from xwatch.core.analysis.stats.blocks import additive, block_key
from xwatch.core.analysis.stats.copies import (
    RunCopies,
    copies_of,
    copies_resolution,
    role,
    run_copies,
)
from xwatch.core.analysis.stats.intervals import Interval
from xwatch.core.analysis.stats.resolution import bucket_width, widen
from xwatch.core.analysis.stats.runs import RunValue, Split, split, t95
from xwatch.core.engine.snapshot import PhaseSnapshot
from xwatch.core.model.metric import THROUGHPUT, Metric

#: the metrics a floor records for every workload
FLOOR_METRICS = (Metric.latency(50), Metric.latency(95), Metric.latency(99), THROUGHPUT)


def usable(p: PhaseSnapshot) -> bool:
    """A phase that measured something and neither failed nor was cut short."""
    return p.status in ("done", "running") and any(w.count for w in p.workloads)


def scenario_digest(scenario_dict: Mapping[str, Any]) -> str:
    """What the workloads are, without the run length and the words around them: a
    floor measured with 15 s phases still speaks for 30 s ones (scaled)."""
    d = {k: v for k, v in scenario_dict.items()
         if k not in ("duration_s", "description", "source", "name")}
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


class MachineKey(TypedDict):
    """The machine a floor belongs to, as its key and its file record it (``M.Machine``
    once in a snapshot)."""

    host: str
    gpus: list[str]
    driver: str | None


def machine_of(host: str, telemetry_info: M.TelemetryInfo | None) -> MachineKey:
    """The machine a floor belongs to: host, the devices' names, the driver."""
    info = telemetry_info or M.TelemetryInfo()
    names = sorted(d.name for d in info.devices)
    return {"host": host, "gpus": names or ["(no telemetry)"],
            "driver": None if info.driver is msgspec.UNSET else info.driver}


def floor_key(machine: Mapping[str, Any], digest: str, mode: str) -> str:
    raw = json.dumps({"m": machine, "s": digest, "mode": mode}, sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Floor:
    """The recorded run-to-run noise of one setting on one machine."""

    mode: str
    created_at: str
    runs: int
    run_s: float
    scenario: str  # its name, for people
    digest: str
    machine: Mapping[str, Any]
    splits: Mapping[str, Split]  # "workload/metric" (the metric as written) -> Split
    #: the boxes whose levels the between-run part leaves out (``floor_of``; 1: none,
    #: runs of one machine); not recorded (a floor over boxes is not saved)
    boxes: int = 1

    def get(self, workload: str, metric: Metric) -> Split | None:
        return self.splits.get(f"{workload}/{metric}")

    def describe(self) -> str:
        return f"noise floor of {self.created_at[:10]} ({self.mode}, {self.runs} runs of " \
               f"{self.run_s:.0f} s)"

    def as_dict(self) -> dict[str, Any]:
        def r(v: float) -> float | None:
            return None if v != v else round(v, 9)

        return {"mode": self.mode, "created_at": self.created_at, "runs": self.runs,
                "run_s": round(self.run_s, 3), "scenario": self.scenario, "digest": self.digest,
                "machine": dict(self.machine),
                "splits": {k: {"runs": s.runs, "run_s": round(s.run_s, 3), "mean": r(s.mean),
                               "total_var": r(s.total), "within_var": r(s.within),
                               "resolution": r(s.resolution)}
                           for k, s in self.splits.items()}}

    def as_model(self) -> M.NoiseFloor:
        """The floor as a snapshot records it (``SessionSnapshot.noise_floors``)."""
        return msgspec.convert(self.as_dict(), M.NoiseFloor)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Floor:
        def f(v: Any) -> float:
            return math.nan if v is None else float(v)

        def res(key: str, s: Mapping[str, Any]) -> float:
            if s.get("resolution") is not None:
                return float(s["resolution"])
            # a floor recorded before resolutions were: its percentiles' bucket width
            mean = f(s.get("mean"))
            metric = Metric.parse(key.partition("/")[2])
            return 0.0 if metric.percentile is None or mean != mean else bucket_width(mean)

        splits = {str(k): Split(int(s["runs"]), float(s["run_s"]), f(s.get("mean")),
                                f(s.get("total_var")), f(s.get("within_var")),
                                res(str(k), s))
                  for k, s in (d.get("splits") or {}).items()}
        return cls(str(d["mode"]), str(d["created_at"]), int(d["runs"]), float(d["run_s"]),
                   str(d.get("scenario", "?")), str(d.get("digest", "")),
                   dict(d.get("machine") or {}), splits)


def run_length(ps: Sequence[PhaseSnapshot]) -> float:
    """The mean measured seconds of the runs (their longest workload each)."""
    lens = [max((w.measured_s for w in p.workloads if w.measured_s is not None),
                default=math.nan) for p in ps]
    lens = [x for x in lens if x == x]
    return sum(lens) / len(lens) if lens else math.nan


def floor_of(phases: Sequence[PhaseSnapshot], mode: str, created_at: str, scenario: str,
             digest: str, machine: Mapping[str, Any]) -> Floor:
    """The floor of the usable runs among ``phases`` (all of one setting). With copies
    on several GPUs (``--gpus``) a run's value is the mean over its copies, as the
    answer takes it (``analysis.stats.copies``), recorded under the scenario's name."""
    ps = [p for p in phases if usable(p)]
    run_s = run_length(ps)
    names = list(dict.fromkeys(role(w.name) if w.gpu is not None else w.name
                               for p in ps for w in p.workloads))
    splits: dict[str, Split] = {}
    keys = _box_keys(ps)  # a fleet's runs: each box's level left out
    for name in names:
        for metric in FLOOR_METRICS:
            vals: list[RunValue] = []
            runs: list[RunCopies] = []
            for p in ps:
                ws = copies_of(p, name)
                if ws:
                    runs.append(run_copies(ws, metric))
                    vals.append(runs[-1].value)
            res = copies_resolution(runs, metric)
            s = split(vals, run_s, res)
            if s is not None:
                splits[f"{name}/{metric}"] = _within_boxes(s, vals, keys) if keys else s
    return Floor(mode, created_at, len(ps), run_s, scenario, digest, machine, splits,
                 len(set(keys)) if keys else 1)


def _box_keys(ps: Sequence[PhaseSnapshot]) -> list[str]:
    """Each run's box where the runs are a fleet's over two boxes or more and leave a
    degree of freedom once each box's level is fitted (more runs than boxes); else []."""
    if any(p.box is None for p in ps):
        return []
    keys = [block_key(p.box.short if p.box else None, None) for p in ps]
    return keys if 1 < len(set(keys)) < len(keys) else []


def _within_boxes(s: Split, vals: Sequence[RunValue], keys: Sequence[str]) -> Split:
    """``s`` with its between-run variance taken within the boxes: the residual
    variance of the runs' values once each box's level is removed (``blocks.additive``,
    one setting: ``N - B`` degrees of freedom). Unchanged where a run lacks a value."""
    if len(vals) != len(keys) or any(v.est != v.est for v in vals):
        return s
    fit = additive([("runs", k, v.est) for k, v in zip(keys, vals)])
    if fit is None or fit.resid_df < 1:
        return s
    return replace(s, total=fit.resid_ss / fit.resid_df)


def one_run_interval(d_est: float, within: Interval, base: Split, other: Split | None,
                     run_s: float, resolution: float = 0.0) -> Interval:
    """The interval of a difference between one run of each of two settings, from
    the recorded run-to-run noise of each (``other`` None: assumed equal to the
    baseline's), scaled to this run's length, with the floor's degrees of freedom
    (each side's variance with what its resolution may hide, ``Split.var_at``);
    never narrower than the runs' own (within-run) interval, nor than the
    difference's ``resolution`` (``analysis.stats.resolution.widen``)."""
    var = base.var_at(run_s) + (other or base).var_at(run_s)
    df = min(base.runs, (other or base).runs) - 1
    if df < 1 or var != var:
        return Interval(d_est, within.lo, within.hi)
    half = t95(df) * math.sqrt(var)
    lo, hi = widen(d_est - half, d_est + half, d_est, resolution)
    if within.lo is not None:
        lo = min(lo, within.lo)
    if within.hi is not None:
        hi = max(hi, within.hi)
    return Interval(d_est, lo, hi)


def floors_in(floors: Mapping[str, M.NoiseFloor] | None) -> dict[str, Floor]:
    """The floors a snapshot carries (``SessionSnapshot.noise_floors``), by mode."""
    out: dict[str, Floor] = {}
    for mode, nf in (floors or {}).items():
        try:
            out[str(mode)] = Floor.from_dict(msgspec.to_builtins(nf))
        except (KeyError, TypeError, ValueError):
            continue
    return out
