"""Snapshots on disk: ``SessionSnapshot`` <-> ``snapshot.json`` (+ ``events.csv.gz``).

Schema id ``xwatch.snapshot/1`` (JSON Schema in ``snapshot.schema.json`` beside
this file, prose in ``docs/snapshot.md``). Writing is atomic: a temporary file
in the target folder, fsync, then ``os.replace``, so a crash mid-write never
leaves a half snapshot. ``load_snapshot`` checks the schema id and rebuilds a
``SessionSnapshot`` so that replay and reports read exactly what the live
dashboard read.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import platform
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xwatch
from xwatch.core.analysis.gpu.gpus import gpu_groups, rollup
from xwatch.core.analysis.gpu.kernels import analyze
from xwatch.core.analysis.stats.intervals import CI_PERCENTILES, Hist, hist_of, percentile_interval
from xwatch.core.analysis.stats.pooled import too_few
from xwatch.core.analysis.verdict import answer_records
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import (
    ExitInfo,
    LogLine,
    MetricSnapshot,
    PhaseSnapshot,
    SessionSnapshot,
    WorkloadSnapshot,
)
from xwatch.core.engine.stats import (
    EMPTY,
    LATENCY_BUCKETS_MS,
    RELATIVE_WIDTH,
    LatencySummary,
    SecondRow,
)
from xwatch.core.engine.worker.trace import load_trace
from xwatch.errors import SnapshotError
from xwatch.scenario import parse_scenario

SCHEMA_ID = "xwatch.snapshot/1"
SUPPORTED_SCHEMAS = (SCHEMA_ID,)
SCHEMA_PATH = Path(__file__).with_name("snapshot.schema.json")
#: per-phase facts kept in snapshots besides the workloads
PHASE_EXTRAS = ("xsched", "mps", "setting", "setting_values", "error", "preflight", "calibrate",
                "captures", "isolation", "repeat", "step", "cut_short", "candidate")
ENV_PREFIXES = ("XSCHED_", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                "LD_LIBRARY_PATH", "LD_PRELOAD", "XWATCH_")


def _num(v: float | None) -> float | None:
    if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))):
        return None
    return round(float(v), 6)


def host_environment() -> dict[str, Any]:
    """What can be said about the host without importing torch."""
    return {
        "host": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "xwatch": xwatch.__version__,
        "argv": sys.argv[:],
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)},
    }


def _summary(s: LatencySummary) -> dict[str, Any]:
    return s.as_dict()


def _metric_dict(m: MetricSnapshot) -> dict[str, Any]:
    return {"count": m.count, "summary": _summary(m.phase), "window": _summary(m.window),
            "ci": {k: percentile_interval(Hist(m.hist, m.phase.min, m.phase.max, m.integral),
                                          q).as_dict() for k, q in CI_PERCENTILES}
            if m.hist else {},
            "series": [[r.sec, r.count, _num(r.p50), _num(r.p99), _num(r.max), _num(r.mean)]
                       for r in m.series],
            "hist": {"relative_width": RELATIVE_WIDTH, "buckets": [list(b) for b in m.hist],
                     "integral": m.integral},
            "goodput": _num(m.goodput) if m.goodput is not None else None}


def _metric_from(name: str, d: dict[str, Any]) -> MetricSnapshot:
    n = int(d.get("count") or 0)
    return MetricSnapshot(
        name, n, _summary_from(d.get("summary"), n), _summary_from(d.get("window"), n),
        tuple(SecondRow(int(r[0]), int(r[1]), 0, 0, 0, _f(r[2]), _f(r[3]), _f(r[4]), _f(r[5]))
              for r in d.get("series") or ()),
        _hist_from(d.get("hist")), bool((d.get("hist") or {}).get("integral")),
        d.get("goodput"))


def _workload_dict(w: WorkloadSnapshot) -> dict[str, Any]:
    return {
        "priority": w.priority, "priority_label": w.priority_label,
        "description": w.description, "state": w.state, "pid": w.pid,
        "count": w.count, "errors": w.errors, "late": w.late, "samples": w.samples,
        "malformed": w.malformed,
        "latency_ms": _summary(w.phase),
        "window_latency_ms": _summary(w.window),
        "service_mean_ms": _num(w.service_mean_ms),
        "throughput": {"requests_per_s": _num(w.achieved_rate),
                       "samples_per_s": _num(w.samples_per_s),
                       "window_requests_per_s": _num(w.window_rate),
                       "window_samples_per_s": _num(w.window_samples_per_s)},
        "target_rate": w.target_rate, "achieved_rate": _num(w.achieved_rate),
        "measured_s": _num(w.measured_s),
        "goodput": _num(w.goodput) if w.goodput is not None else None,
        "exit": None if w.exit is None else {
            "code": w.exit.code, "signal": w.exit.signal, "reason": w.exit.reason,
            "ran_to_end": w.exit.ran_to_end, "message": w.exit.message},
        "error": w.error,
        "log_tail": list(w.stderr_tail)[-20:] + list(w.log_tail)[-10:],
        "stderr_tail": list(w.stderr_tail),
        "stdout_tail": list(w.log_tail),
        "hello": w.hello,
        "launch": w.launch,
        "series": [[r.sec, r.count, r.errors, r.late, r.samples, _num(r.p50), _num(r.p99),
                    _num(r.max), _num(r.mean)] for r in w.series],
        "cdf": [[_num(v), round(f, 4)] for v, f in w.cdf],
        "annotations": list(w.annotations),
        "unfinished": None if w.unfinished is None else {
            "count": w.unfinished, "max_wait_ms": _num(w.unfinished_max_wait_ms),
            "in_percentiles": w.unfinished_in_percentiles, "note": w.unfinished_note},
        "unfinished_note": w.unfinished_note,
        "after_end": w.after_end,
        "stalled_since": w.stalled_since,
        "stalls": list(w.stalls),
        "slowest": [[_num(t), _num(v)] for t, v in w.slowest],
        "gpu": w.gpu,
        "latency_buckets_ms": [[le, n] for le, n in zip(LATENCY_BUCKETS_MS, w.buckets)],
        "latency_sum_ms": _num(w.latency_sum_ms),
        "pipe_closed_at": w.pipe_closed_at,
        "latency_hist": {"relative_width": RELATIVE_WIDTH, "buckets": [list(b) for b in w.hist],
                         "integral": w.integral},
        "metrics": {k: _metric_dict(m) for k, m in w.metrics.items()},
        "stages": dict(w.stages),
        "latency_ci_ms": {k: {**percentile_interval(hist_of(w), q).as_dict(),
                              **({"few": True} if too_few(hist_of(w).n, q) else {})}
                          for k, q in CI_PERCENTILES},
    }


def trace_file(phase: PhaseSnapshot | dict[str, Any], cap_id: int, name: str) -> str:
    """Where a capture's trace of one workload lives, relative to the snapshot."""
    idx = phase.index if isinstance(phase, PhaseSnapshot) else phase.get("index", 0)
    return f"traces/phase{idx}-capture{cap_id}-{name}.json.gz"


def _captures(p: PhaseSnapshot) -> dict[str, Any]:
    """Kernel captures: the analysis inline, each worker's trace in its own gzip file."""
    caps = p.extra.get("captures")
    if not caps:
        return {}
    prio = {w.name: w.priority for w in p.workloads}
    out = []
    for c in caps:
        a = analyze(c, prio) if c.get("traces") else None
        out.append({**{k: v for k, v in c.items() if k != "traces"},
                    "trace_files": {n: trace_file(p, int(c.get("id", 0)), n)
                                    for n in c.get("traces") or {}},
                    "analysis": a.as_dict() if a else None})
    return {"captures": out}


def _per_gpu(p: PhaseSnapshot, telemetry: dict[str, Any] | None) -> dict[str, Any]:
    """``{"gpus": {groups, rollup}}`` for a multi-GPU phase, else nothing."""
    groups = gpu_groups(p, telemetry)
    if not groups:
        return {}
    return {"gpus": {"groups": [g.as_dict() for g in groups], "rollup": rollup(groups)}}


EVENTS_FILE = "events.csv.gz"


def snapshot_to_dict(snap: SessionSnapshot, events_file: str | None = EVENTS_FILE
                     ) -> dict[str, Any]:
    extra = dict(snap.extra)
    env = {**host_environment(), **extra.pop("environment", {})}
    telemetry = extra.pop("telemetry", None)
    advice = extra.pop("advice", None)
    return {
        "schema": SCHEMA_ID,
        "created_at": extra.pop("created_at", None),
        "window_s": snap.window_s,
        "scenario": snap.scenario.to_dict(),
        "environment": env,
        "phases": [{
            "index": p.index, "name": p.name, "mode": p.mode, "status": p.status,
            "started_at": p.started_at, "ended_at": p.ended_at,
            "duration_s": _num(p.elapsed_s), "measuring": p.measuring,
            "t_start": p.t_start, "t_measure": p.t_measure,
            "workloads": {w.name: _workload_dict(w) for w in p.workloads},
            **{k: p.extra[k] for k in PHASE_EXTRAS if k in p.extra and k != "captures"},
            **_captures(p),
            "annotations": list(p.extra.get("annotations", [])),
            **_per_gpu(p, telemetry),
        } for p in snap.phases],
        "messages": [{"t": m.t, "level": m.stream, "text": m.text} for m in snap.messages[-200:]],
        "telemetry": telemetry,
        "events_file": events_file,
        "events_kept": (extra.get("spool") or {}).get("rows_kept"),
        "events_dropped": (extra.get("spool") or {}).get("rows_dropped"),
        "events_columns": ["phase", "workload", "seq", "t", "latency_ms", "service_ms",
                           "sched_delay_ms", "late", "batch", "ok"],
        "extra": {k: v for k, v in extra.items() if not k.startswith("_")},
        "answer": answer_records(snap),
        "advice": advice,
    }


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # what open() would give, not mkstemp's 0600
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@dataclass(frozen=True)
class PreparedExport:
    """A snapshot document plus how much of the event spool belongs to it."""

    doc: dict[str, Any]
    events_path: Path
    events_bytes: int
    traces: tuple[tuple[str, dict[str, Any]], ...] = ()  # (relative path, trace)


def prepare_export(session: Session, snap: SessionSnapshot | None = None) -> PreparedExport:
    """On the event loop's thread: freeze the session (cheap)."""
    session.spool.flush()
    snap = snap or session.snapshot(telemetry_last=None)
    size = session.spool.path.stat().st_size
    traces = tuple((trace_file(p, int(c.get("id", 0)), n), t) for p in snap.phases
                   for c in p.extra.get("captures") or [] for n, t in (c.get("traces") or {}).items())
    return PreparedExport(snapshot_to_dict(snap), session.spool.path, size, traces)


def write_export(prep: PreparedExport, directory: str | os.PathLike[str]) -> Path:
    """On any thread: write events.csv.gz then snapshot.json, each atomically."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".events.csv.gz.", dir=d)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as out, open(prep.events_path, "rb") as src:
            left = prep.events_bytes  # the spool may grow meanwhile: copy what was flushed
            while left > 0:
                chunk = src.read(min(left, 1 << 20))
                if not chunk:
                    break
                out.write(chunk)
                left -= len(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, d / EVENTS_FILE)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    for rel, trace in prep.traces:  # kernel captures, compressed, before the snapshot
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(d / rel, gzip.compress(json.dumps(trace, separators=(",", ":")).encode(),
                                             compresslevel=6, mtime=0))
    path = d / "snapshot.json"
    _atomic_write(path, json.dumps(prep.doc, indent=1, default=str, allow_nan=False).encode())
    return path


def write_snapshot(session: Session, directory: str | os.PathLike[str],
                   snap: SessionSnapshot | None = None) -> Path:
    """Write ``snapshot.json`` and ``events.csv.gz`` into ``directory`` atomically."""
    return write_export(prepare_export(session, snap), directory)


# ---------------------------------------------------------------- reading back
def load_snapshot_dict(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path)
    if p.is_dir():
        p = p / "snapshot.json"
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise SnapshotError(f"{p}: cannot read: {e.strerror or e}", title="Snapshot not found")
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise SnapshotError(f"{p}: not valid JSON ({e}); the file is corrupt or truncated")
    if not isinstance(doc, dict) or "schema" not in doc:
        raise SnapshotError(f"{p}: not an xwatch snapshot (no 'schema' field)")
    if doc["schema"] not in SUPPORTED_SCHEMAS:
        raise SnapshotError(
            f"{p}: unknown snapshot schema {doc['schema']!r}; this xwatch "
            f"({xwatch.__version__}) reads {', '.join(SUPPORTED_SCHEMAS)}",
            title="Unknown snapshot schema")
    for key in ("scenario", "phases"):
        if key not in doc:
            raise SnapshotError(f"{p}: snapshot is missing {key!r}")
    return doc


def _f(v: Any) -> float:
    return math.nan if v is None else float(v)


def _summary_from(d: dict[str, Any] | None, count: int) -> LatencySummary:
    if not d or count == 0:
        return EMPTY
    return LatencySummary(count, *(_f(d.get(k)) for k in
                                   ("mean", "std", "min", "p50", "p90", "p95", "p99", "p999",
                                    "max")))


def _unfinished_from(w: dict[str, Any]) -> dict[str, Any]:
    u = w.get("unfinished")
    if not isinstance(u, dict):
        return {"unfinished": None, "unfinished_note": str(w.get("unfinished_note") or "")}
    return {"unfinished": int(u.get("count") or 0),
            "unfinished_max_wait_ms": _f(u.get("max_wait_ms")),
            "unfinished_in_percentiles": bool(u.get("in_percentiles")),
            "unfinished_note": str(u.get("note") or "")}


def _stages_from(d: Any) -> dict[str, float]:
    """A workload's start and stop stages (none in snapshots before issue 41)."""
    if not isinstance(d, dict):
        return {}
    return {str(k): float(v) for k, v in d.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _hist_from(h: Any) -> tuple[tuple[int, int], ...]:
    """The fine histogram, if the snapshot has one of this xwatch's bucket width
    (older snapshots have none: their intervals are then unknown, not invented)."""
    if not isinstance(h, dict) or h.get("relative_width") != RELATIVE_WIDTH:
        return ()
    return tuple((int(i), int(k)) for i, k in h.get("buckets") or ())


def snapshot_from_dict(doc: dict[str, Any], source: str = "<snapshot>") -> SessionSnapshot:
    """Rebuild a ``SessionSnapshot`` from a snapshot document (for replay/report)."""
    try:
        scen = scenario_from_dict(doc["scenario"], source)
        phases: list[PhaseSnapshot] = []
        for p in doc["phases"]:
            wls = []
            for name, w in p["workloads"].items():
                ex = w.get("exit")
                tp = w.get("throughput") or {}
                wls.append(WorkloadSnapshot(
                    name=name, priority=w.get("priority", 0),
                    priority_label=str(w.get("priority_label", w.get("priority", ""))),
                    description=w.get("description", ""), state=w.get("state", "?"),
                    pid=w.get("pid"),
                    phase=_summary_from(w.get("latency_ms"), w.get("count", 0)),
                    window=_summary_from(w.get("window_latency_ms"), w.get("count", 0)),
                    service_mean_ms=_f(w.get("service_mean_ms")),
                    count=w.get("count", 0), errors=w.get("errors", 0), late=w.get("late", 0),
                    samples=w.get("samples", 0), malformed=w.get("malformed", 0),
                    target_rate=w.get("target_rate"),
                    achieved_rate=_f(tp.get("requests_per_s")) if tp else 0.0,
                    samples_per_s=_f(tp.get("samples_per_s")) if tp else 0.0,
                    window_rate=_f(tp.get("window_requests_per_s")),
                    window_samples_per_s=_f(tp.get("window_samples_per_s")),
                    measured_s=_f(w.get("measured_s")),
                    goodput=w.get("goodput"),
                    series=tuple(SecondRow(int(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]),
                                           _f(r[5]), _f(r[6]), _f(r[7]), _f(r[8]))
                                 for r in w.get("series", [])),
                    cdf=tuple((_f(v), float(fr)) for v, fr in w.get("cdf", [])),
                    exit=None if not ex else ExitInfo(ex.get("code"), ex.get("signal"),
                                                      ex.get("reason", "?"),
                                                      bool(ex.get("ran_to_end")),
                                                      ex.get("message", "")),
                    error=w.get("error"), stderr_tail=tuple(w.get("stderr_tail", [])),
                    log_tail=tuple(w.get("stdout_tail", [])), hello=w.get("hello") or {},
                    launch=w.get("launch") or {}, inflight_s=0.0,
                    annotations=tuple(w.get("annotations", [])),
                    **_unfinished_from(w),
                    after_end=int(w.get("after_end") or 0),
                    stalled_since=w.get("stalled_since"),
                    stalls=tuple(w.get("stalls") or ()),
                    slowest=tuple((_f(t), _f(v)) for t, v in w.get("slowest") or ()),
                    gpu=w.get("gpu"),
                    buckets=tuple(int(n) for _, n in w.get("latency_buckets_ms") or ()),
                    latency_sum_ms=_f(w.get("latency_sum_ms") or 0.0),
                    hist=_hist_from(w.get("latency_hist")),
                    integral=bool((w.get("latency_hist") or {}).get("integral")),
                    metrics={k: _metric_from(k, m) for k, m in (w.get("metrics") or {}).items()},
                    pipe_closed_at=w.get("pipe_closed_at"),
                    stages=_stages_from(w.get("stages"))))
            extra = {k: p[k] for k in PHASE_EXTRAS if k in p}
            if p.get("captures"):
                extra["captures"] = [_capture_from(c, source) for c in p["captures"]]
            extra["annotations"] = p.get("annotations", [])
            phases.append(PhaseSnapshot(
                index=p.get("index", len(phases)), name=p["name"], mode=p["mode"],
                status=p.get("status", "?"), started_at=p.get("started_at", ""),
                ended_at=p.get("ended_at"), elapsed_s=_f(p.get("duration_s")),
                measuring=bool(p.get("measuring", True)), workloads=tuple(wls), extra=extra,
                t_start=float(p.get("t_start") or 0.0), t_measure=p.get("t_measure")))
        msgs = tuple(LogLine(i, m.get("t", 0.0), "xwatch", m.get("level", "info"), m["text"])
                     for i, m in enumerate(doc.get("messages", [])))
        extra = {"environment": doc.get("environment", {}), "telemetry": doc.get("telemetry"),
                 "created_at": doc.get("created_at"), **(doc.get("extra") or {})}
        if doc.get("advice"):
            extra["advice"] = doc["advice"]
        return SessionSnapshot(scenario=scen, phases=tuple(phases), messages=msgs,
                               taken_at=0.0, window_s=float(doc.get("window_s", 10.0)),
                               extra=extra)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise SnapshotError(f"{source}: snapshot is malformed ({type(e).__name__}: {e})")


def _capture_from(c: dict[str, Any], source: str) -> dict[str, Any]:
    """A recorded capture with its traces read back (those whose files are there)."""
    base = Path(source)
    base = base if base.is_dir() else base.parent
    traces = {}
    for name, rel in (c.get("trace_files") or {}).items():
        with contextlib.suppress(OSError, ValueError):
            traces[name] = load_trace(str(base / rel))
    return {**c, "traces": traces}


def scenario_from_dict(d: dict[str, Any], source: str) -> Any:
    """Re-validate the recorded scenario (drop defaults that are None)."""
    def clean(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if v is not None}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    data = clean(d)
    src = data.pop("source", source)
    wls = []
    for w in data.get("workloads", []):
        w = dict(w)
        for table in ("xsched", "mps"):
            t = w.pop(table, {}) or {}
            if not t.get("env"):
                t.pop("env", None)
            if t:
                w[table] = t
        if not w.get("env"):
            w.pop("env", None)
        if "model" in w:
            w["input"] = list(w.get("input", [3, 224, 224]))
            for k in ("command", "cwd", "regex", "platform"):
                w.pop(k, None)
            if "rate" not in w:
                w.pop("arrival", None)
        else:
            for k in ("input", "seq_len", "task", "dtype", "device", "arrival", "requests",
                      "warmup", "python", "threads", "stream", "seed", "model",
                      "stream_priority", "train", "amp", "prompt_len", "new_tokens",
                      "decode"):
                w.pop(k, None)
        wls.append(w)
    data["workload"] = wls
    data.pop("workloads", None)
    xs = data.get("xsched") or {}
    if not xs:
        data.pop("xsched", None)
    if data.get("slo") is None:
        data.pop("slo", None)
    return parse_scenario(data, src, default_name=data.get("name", "?"))


def load_snapshot(path: str | os.PathLike[str]) -> SessionSnapshot:
    return snapshot_from_dict(load_snapshot_dict(path), str(path))
