"""Snapshots on disk: ``SessionSnapshot`` <-> ``snapshot.json`` (+ ``events.csv.gz``).

The document is the struct tree of ``core.model`` (schema id ``xwatch.snapshot/1``;
its JSON Schema, generated from the structs, in ``snapshot.schema.json`` beside this
file; prose in ``docs/snapshot.md``): msgspec encodes it and decodes it, naming the
field and why when a file does not fit. What a phase or a session recorded (XSched,
MPS, telemetry, advice, ...) is the same structs in memory and in the document, written
and read as they are; a workload's snapshot is the document's ``Workload`` itself (with
what only a live snapshot has beside it), so its fields are copied by name, none listed
here. What is computed here is derived at export: the percentile intervals from the
histograms, the captures' analyses, the per-GPU groups, the combined log
tail, a metric's short rows, and the rounding of what the dashboard reads every 2 s
unrounded (the CDF, the slowest requests, goodput, the exact latency sum; rounding them
per snapshot would cost every tick); on reading, what a file may lack and a snapshot in
memory always has (``_workload_from``). A phase's optional facts are None in memory and
absent (``UNSET``) in the document. Snapshots of earlier xwatch versions are brought to
the current shape first (``document.upgrade``, on the raw JSON); one written before the
answer was stored gets it computed once, as it is read
(``analysis.answer.stored.with_answer``). The answer itself is the session's, settled
by its host as phases end: written as it is. Writing is atomic: a temporary file in
the target folder, fsync, then ``os.replace``, so a crash mid-write never leaves a half
snapshot. ``load_snapshot`` rebuilds a ``SessionSnapshot`` so that replay and
reports read exactly what the live dashboard read.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import os
import platform
import socket
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET

import xwatch
from xwatch.core import model as D
from xwatch.core.analysis.answer.stored import with_answer
from xwatch.core.analysis.gpu.gpus import gpu_groups, rollup
from xwatch.core.analysis.gpu.kernels import analyze
from xwatch.core.analysis.stats.intervals import CI_PERCENTILES, Hist, hist_of, percentile_interval
from xwatch.core.analysis.stats.pooled import too_few
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import (
    CaptureSnapshot,
    LogLine,
    MetricSnapshot,
    PhaseSnapshot,
    SessionSnapshot,
    Trace,
    WorkloadSnapshot,
)
from xwatch.core.engine.stats import (
    EMPTY,
    RELATIVE_WIDTH,
    SecondRow,
)
from xwatch.core.engine.worker.trace import load_trace
from xwatch.core.export.document.upgrade import upgrade
from xwatch.errors import SnapshotError
from xwatch.scenario import (
    KIND_KEYS,
    MODE_TABLES,
    WORKLOAD_COMMON_KEYS,
    Scenario,
    parse_scenario,
)

SCHEMA_ID = D.SCHEMA_ID
SUPPORTED_SCHEMAS = (SCHEMA_ID,)
ENV_PREFIXES = ("XSCHED_", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                "LD_LIBRARY_PATH", "LD_PRELOAD", "XWATCH_")
T = TypeVar("T")


def _num(v: float | None) -> float | None:
    if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))):
        return None
    return round(float(v), 6)


def host_environment() -> D.Environment:
    """What can be said about the host without importing torch."""
    return D.Environment(
        host=socket.gethostname(), os=f"{platform.system()} {platform.release()}",
        machine=platform.machine(), cpus=os.cpu_count(), python=sys.version.split()[0],
        xwatch=xwatch.__version__, argv=sys.argv[:],
        env={k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)})


def _interval(h: Hist, q: float, few: bool = False) -> D.Interval:
    iv = percentile_interval(h, q)
    return D.Interval(est=_num(iv.est), lo=_num(iv.lo), hi=_num(iv.hi),
                      few=True if few else UNSET)


def _metric_doc(m: MetricSnapshot) -> D.Metric:
    return D.Metric(
        count=m.count, summary=m.phase, window=m.window,
        ci={k: _interval(hist_of(m), q) for k, q in CI_PERCENTILES} if m.hist.buckets else {},
        series=[(r.sec, r.count, r.p50, r.p99, r.max, r.mean) for r in m.series],
        hist=m.hist,
        goodput=_num(m.goodput) if m.goodput is not None else None)


#: the document's fields of a workload: a live snapshot's are copied as they are
_WORKLOAD_FIELDS = D.Workload.__struct_fields__


def _workload_doc(w: WorkloadSnapshot) -> D.Workload:
    """The document's ``Workload``: the snapshot's own fields, but for what is derived
    at export (below): the rounding of what the dashboard reads every 2 s unrounded,
    the combined log tail, the intervals, a named metric's short rows."""
    h = hist_of(w)
    return D.Workload(**{
        **{f: getattr(w, f) for f in _WORKLOAD_FIELDS},
        "achieved_rate": w.throughput.requests_per_s,
        "goodput": _num(w.goodput) if w.goodput is not None else None,
        "log_tail": list(w.stderr_tail)[-20:] + list(w.stdout_tail)[-10:],
        "cdf": [(_num(v), round(f, 4)) for v, f in w.cdf],
        "slowest": [(_num(t), _num(v)) for t, v in w.slowest],
        "latency_sum_ms": _num(w.latency_sum_ms),
        "metrics": {k: _metric_doc(m) for k, m in w.metrics.items()},
        "latency_ci_ms": {k: _interval(h, q, too_few(h.n, q)) for k, q in CI_PERCENTILES},
    })


def trace_file(phase: PhaseSnapshot, cap_id: int, name: str) -> str:
    """Where a capture's trace of one workload lives, relative to the snapshot."""
    return f"traces/phase{phase.index}-capture{cap_id}-{name}.json.gz"


def _captures(p: PhaseSnapshot) -> list[D.Capture] | msgspec.UnsetType:
    """Kernel captures: the analysis inline, each worker's trace in its own gzip file."""
    if not p.captures:
        return UNSET
    prio = {w.name: w.priority for w in p.workloads}
    out = []
    for c in p.captures:
        a = analyze(c, prio) if c.traces else None
        out.append(D.Capture(id=c.id, t=c.t, seconds=c.seconds, workloads=list(c.workloads),
                             errors=c.errors,
                             trace_files={n: trace_file(p, c.id, n) for n in c.traces},
                             analysis=a.as_model() if a else None))
    return out


def _opt(v: T | None) -> T | msgspec.UnsetType:
    """A fact some phases or sessions have: absent (``UNSET``) where it is None."""
    return UNSET if v is None else v


def _per_gpu(p: PhaseSnapshot, telemetry: D.Telemetry | None) -> D.Gpus | msgspec.UnsetType:
    """The per-GPU groups and their roll-up for a multi-GPU phase, else nothing."""
    groups = gpu_groups(p, telemetry)
    if not groups:
        return UNSET
    return D.Gpus(groups=[g.as_model() for g in groups], rollup=rollup(groups))


def _phase_doc(p: PhaseSnapshot, telemetry: D.Telemetry | None) -> D.Phase:
    return D.Phase(
        index=p.index, name=p.name, mode=p.mode, status=p.status,
        started_at=p.started_at, ended_at=p.ended_at,
        duration_s=_num(p.elapsed_s), measuring=p.measuring,
        t_start=p.t_start, t_measure=p.t_measure,
        workloads={w.name: _workload_doc(w) for w in p.workloads},
        xsched=_opt(p.xsched), mps=_opt(p.mps), setting=_opt(p.setting),
        setting_values=_opt(p.setting_values), error=_opt(p.error),
        preflight=_opt(p.preflight), calibrate=_opt(p.calibrate), isolation=_opt(p.isolation),
        repeat=_opt(p.repeat), step=_opt(p.step), cut_short=_opt(p.cut_short),
        retried=_opt(p.retried),
        candidate=_opt(p.candidate), copy_modes=_opt(p.copy_modes), proof=_opt(p.proof),
        captures=_captures(p), annotations=list(p.annotations),
        gpus=_per_gpu(p, telemetry), box=_opt(p.box))


EVENTS_FILE = "events.csv.gz"


def snapshot_document(snap: SessionSnapshot, events_file: str | None = EVENTS_FILE
                      ) -> D.Snapshot:
    """The session frozen as the snapshot document."""
    env = snap.environment or host_environment()
    telemetry = snap.telemetry
    spool = snap.spool
    ans = with_answer(snap).answer  # the host's; computed here only where none was settled
    assert ans is not None
    return D.Snapshot(
        schema=D.SCHEMA_ID,
        created_at=snap.created_at,
        window_s=snap.window_s,
        scenario=snap.scenario.to_dict(),
        environment=env,
        phases=[_phase_doc(p, telemetry) for p in snap.phases],
        messages=[D.Message(t=m.t, level=m.stream, text=m.text) for m in snap.messages[-200:]],
        telemetry=telemetry,
        events_file=events_file,
        events_kept=spool.rows_kept if spool else None,
        events_dropped=spool.rows_dropped if spool else None,
        extra=D.Extra(spool=_opt(spool), noise_floor=_opt(snap.noise_floor),
                      noise_floors=_opt(snap.noise_floors)),
        answer=ans.records,
        gpu_findings=ans.gpu_findings,
        answer_box=ans.box,
        advice=snap.advice,
        capacity=snap.capacity,
    )


def encode_document(doc: D.Snapshot) -> bytes:
    """``snapshot.json``'s bytes: the document, one space of indent per level."""
    return msgspec.json.format(msgspec.json.encode(doc), indent=1)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, data: bytes) -> None:
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

    doc: D.Snapshot
    events_path: Path
    events_bytes: int
    #: (relative path, trace): a worker's reduced kernel trace, as it wrote it
    traces: tuple[tuple[str, Trace], ...] = ()


def prepare_export(session: Session, snap: SessionSnapshot | None = None) -> PreparedExport:
    """On the event loop's thread: freeze the session (cheap)."""
    session.spool.flush()
    snap = snap or session.snapshot(telemetry_last=None)
    size = session.spool.path.stat().st_size
    traces = tuple((trace_file(p, c.id, n), t) for p in snap.phases
                   for c in p.captures for n, t in c.traces.items())
    return PreparedExport(snapshot_document(snap), session.spool.path, size, traces)


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
        atomic_write(d / rel, gzip.compress(msgspec.json.encode(trace), compresslevel=6,
                                             mtime=0))
    path = d / "snapshot.json"
    atomic_write(path, encode_document(prep.doc))
    return path


def write_snapshot(session: Session, directory: str | os.PathLike[str],
                   snap: SessionSnapshot | None = None) -> Path:
    """Write ``snapshot.json`` and ``events.csv.gz`` into ``directory`` atomically."""
    return write_export(prepare_export(session, snap), directory)


# ---------------------------------------------------------------- reading back
def _read(path: str | os.PathLike[str]) -> tuple[Path, dict[str, Any]]:
    """A snapshot file's raw JSON, checked to be an xwatch snapshot of a schema this
    xwatch reads, brought to the current shape (``upgrade``); not yet validated."""
    p = Path(path)
    if p.is_dir():  # its snapshot.json, or snapshot.json.gz where only that is there
        gz = p / "snapshot.json.gz"
        p = gz if gz.is_file() and not (p / "snapshot.json").exists() else p / "snapshot.json"
    try:
        data = p.read_bytes()
    except OSError as e:
        raise SnapshotError(f"{p}: cannot read: {e.strerror or e}", title="Snapshot not found")
    if data[:2] == b"\x1f\x8b":  # gzipped (as results are kept): read through
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise SnapshotError(f"{p}: a gzip file that does not decompress ({e}); the file "
                                "is corrupt or truncated") from None
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as e:
        raise SnapshotError(f"{p}: not valid JSON ({e}); the file is corrupt or truncated")
    if not isinstance(raw, dict) or "schema" not in raw:
        raise SnapshotError(f"{p}: not an xwatch snapshot (no 'schema' field)")
    if raw["schema"] not in SUPPORTED_SCHEMAS:
        raise SnapshotError(
            f"{p}: unknown snapshot schema {raw['schema']!r}; this xwatch "
            f"({xwatch.__version__}) reads {', '.join(SUPPORTED_SCHEMAS)}",
            title="Unknown snapshot schema")
    for key in ("scenario", "phases"):
        if key not in raw:
            raise SnapshotError(f"{p}: snapshot is missing {key!r}")
    return p, upgrade(raw)


def validate(raw: dict[str, Any], source: str = "<snapshot>") -> D.Snapshot:
    """The document, typed; a ``SnapshotError`` naming the source, the field and why."""
    try:
        return msgspec.convert(raw, D.Snapshot)
    except msgspec.ValidationError as e:
        raise SnapshotError(f"{source}: snapshot is malformed: {e}",
                            title="Snapshot not valid") from e


def load_snapshot_dict(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A snapshot file's JSON in the current shape, validated (for scripts)."""
    p, raw = _read(path)
    validate(raw, str(p))
    return raw


def _f(v: float | None) -> float:
    return math.nan if v is None else float(v)


def _summary_from(d: D.Summary | None, count: int) -> D.Summary:
    """A recorded summary; none where the workload counted no request (the censored
    waits of its unfinished requests are then not read back)."""
    return EMPTY if d is None or count == 0 else d


def _hist_from(h: D.Hist | None) -> D.Hist:
    """The fine histogram, if the snapshot has one of this xwatch's bucket width
    (older snapshots have none: their intervals are then unknown, not invented)."""
    if h is None:
        return D.Hist(relative_width=RELATIVE_WIDTH)
    if h.relative_width != RELATIVE_WIDTH:
        return D.Hist(relative_width=RELATIVE_WIDTH, integral=h.integral)
    return h


def _metric_from(name: str, m: D.Metric) -> MetricSnapshot:
    n = m.count
    return MetricSnapshot(
        name, n, _summary_from(m.summary, n), _summary_from(m.window, n),
        tuple(SecondRow(r[0], r[1], 0, 0, 0, *r[2:]) for r in m.series),
        _hist_from(m.hist), m.goodput, n)


def _workload_from(name: str, w: D.Workload) -> WorkloadSnapshot:
    """One workload as the file has it (its hello raw JSON from the workload), with
    what a snapshot in memory always has where a file may lack it: a summary and rates
    (none where it counted no request, none per second in the oldest snapshots), a
    histogram of this xwatch's width, rows and CDF points as tuples (NaN: unknown)."""
    n = w.count
    return WorkloadSnapshot(**{
        **msgspec.structs.asdict(w),
        "name": name,
        "priority_label": str(w.priority if w.priority_label is UNSET else w.priority_label),
        "phase": _summary_from(w.phase, n),
        "window": _summary_from(w.window, n),
        "throughput": w.throughput or D.Throughput(requests_per_s=0.0, samples_per_s=0.0),
        "series": tuple(SecondRow(*r) for r in w.series),
        "cdf": tuple((_f(v), fr) for v, fr in w.cdf),
        "slowest": tuple((_f(t), _f(v)) for t, v in w.slowest),
        "latency_sum_ms": _f(w.latency_sum_ms or 0.0),
        "latency_hist": _hist_from(w.latency_hist),
        "metrics": {k: _metric_from(k, m) for k, m in w.metrics.items()},
        "unfinished_note": w.unfinished_note if w.unfinished is None else w.unfinished.note,
        "phase_count": n, "window_count": n,
    })


def _unset(v: T | msgspec.UnsetType) -> T | None:
    return None if v is UNSET else v


def _phase_from(i: int, p: D.Phase, source: str) -> PhaseSnapshot:
    return PhaseSnapshot(
        index=i if p.index is UNSET else p.index, name=p.name, mode=p.mode,
        status=p.status, started_at=p.started_at, ended_at=p.ended_at,
        elapsed_s=_f(p.duration_s), measuring=p.measuring,
        workloads=tuple(_workload_from(n, w) for n, w in p.workloads.items()),
        t_start=p.t_start, t_measure=p.t_measure,
        xsched=_unset(p.xsched), mps=_unset(p.mps), preflight=_unset(p.preflight),
        isolation=_unset(p.isolation),
        captures=tuple(_capture_from(c, source) for c in p.captures or ()),
        annotations=tuple(p.annotations), error=_unset(p.error), setting=_unset(p.setting),
        setting_values=_unset(p.setting_values), calibrate=_unset(p.calibrate),
        repeat=_unset(p.repeat), step=_unset(p.step), candidate=_unset(p.candidate),
        cut_short=_unset(p.cut_short), copy_modes=_unset(p.copy_modes),
        retried=_unset(p.retried), proof=_unset(p.proof), box=_unset(p.box))


def snapshot_from_dict(raw: dict[str, Any], source: str = "<snapshot>") -> SessionSnapshot:
    """Rebuild a ``SessionSnapshot`` from a snapshot's JSON in the current shape (for
    replay and reports): the validated document's structs are the snapshot's own
    (XSched, MPS, telemetry, advice, ...); only the statistics are rebuilt."""
    doc = validate(raw, source)
    phases = tuple(_phase_from(i, p, source) for i, p in enumerate(doc.phases))
    msgs = tuple(LogLine(i, m.t, "xwatch", m.level, m.text)
                 for i, m in enumerate(doc.messages))
    x = doc.extra
    box = _unset(doc.answer_box)
    snap = SessionSnapshot(scenario=scenario_from_dict(doc.scenario, source), phases=phases,
                           messages=msgs, taken_at=0.0, window_s=doc.window_s,
                           created_at=doc.created_at,
                           environment=doc.environment if "environment" in raw else None,
                           spool=_unset(x.spool), telemetry=doc.telemetry,
                           noise_floors=_unset(x.noise_floors),
                           noise_floor=_unset(x.noise_floor),
                           advice=doc.advice, capacity=doc.capacity,
                           answer=None if box is None else D.SessionAnswer(
                               records=doc.answer, gpu_findings=doc.gpu_findings, box=box))
    # written before the answer was stored: computed once, here (``document.upgrade``)
    return with_answer(snap)


def _capture_from(c: D.Capture, source: str) -> CaptureSnapshot:
    """A recorded capture with its traces read back (those whose files are there)."""
    base = Path(source)
    base = base if base.is_dir() else base.parent
    traces = {}
    for name, rel in c.trace_files.items():
        with contextlib.suppress(OSError, ValueError):
            traces[name] = load_trace(str(base / rel))
    return CaptureSnapshot(id=c.id, t=c.t, seconds=c.seconds, workloads=tuple(c.workloads),
                           errors=c.errors, traces=traces, analysis=c.analysis)


def scenario_from_dict(d: dict[str, Any], source: str) -> Scenario:
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
        kind = next((k for k in KIND_KEYS if k in w), "command")
        keep = {k.name for k in WORKLOAD_COMMON_KEYS + KIND_KEYS[kind]} | set(MODE_TABLES)
        w = {k: v for k, v in w.items() if k in keep}  # the other kinds' defaults
        if kind == "model":
            w["input"] = list(w.get("input", [3, 224, 224]))
        if kind == "model" and "rate" not in w:
            w.pop("arrival", None)
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
    """A snapshot file (or its folder) as the ``SessionSnapshot`` it was written from."""
    p, raw = _read(path)
    return snapshot_from_dict(raw, str(p))
