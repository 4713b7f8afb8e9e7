"""Kept sessions: every dashboard session lands on disk, whatever way it ends.

A dashboard session spools its raw events straight into its own folder under
``$XDG_STATE_HOME/xwatch/sessions/`` (else ``~/.local/state/xwatch/sessions/``),
named ``YYYYmmdd-HHMMSS-SCENARIO.live`` while it runs, with ``meta.json`` saying
who runs it (pid), the scenario and the phases so far. On q, Ctrl+C, SIGTERM or
SIGHUP the snapshot and reports are written beside the events and the folder
loses its ``.live``. A session killed with SIGKILL leaves a ``.live`` folder whose
pid is gone: it is listed as interrupted, and ``recover`` rebuilds its statistics
from the spooled events (up to their last flush, 2 s at most before the kill).
The newest ``keep`` sessions (default 20) are kept, within ``max_bytes`` (2 GiB).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import STOPPED
from xwatch.core.engine.spool import EventSpool, read_rows
from xwatch.core.engine.stats import Recorder
from xwatch.core.procs import pid_alive
from xwatch.errors import UsageError

LIVE = ".live"
META = "meta.json"
KEEP_DEFAULT = 20
MAX_BYTES_DEFAULT = 2 << 30


def root() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"),
                                                            ".local", "state")
    return Path(base) / "xwatch" / "sessions"


def _write_meta(d: Path, meta: dict[str, Any]) -> None:
    tmp = d / f".{META}.tmp"
    tmp.write_text(json.dumps(meta, indent=1))
    os.replace(tmp, d / META)


def read_meta(d: Path) -> dict[str, Any]:
    try:
        data = json.loads((d / META).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def begin(scenario: Any, argv: list[str], base: Path | None = None) -> Path:
    """Make the folder a new dashboard session spools into; its path."""
    base = base or root()
    base.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    d = base / f"{stamp}-{scenario.name}{LIVE}"
    n = 1
    while d.exists():
        n += 1
        d = base / f"{stamp}-{scenario.name}-{n}{LIVE}"
    d.mkdir()
    _write_meta(d, {"pid": os.getpid(), "started": datetime.now().isoformat(timespec="seconds"),
                    "scenario": scenario.to_dict(), "argv": argv, "phases": []})
    return d


def phase_recorder(d: Path) -> Callable[[Phase], None]:
    """A ``Session.on_phase`` hook that notes each phase in the folder's meta.json."""
    def note(p: Phase) -> None:
        meta = read_meta(d)
        meta.setdefault("phases", []).append(
            {"index": p.index, "name": p.name, "mode": p.mode, "t_start": p.t_start,
             "started_at": p.started_at})
        _write_meta(d, meta)
    return note


def keep(session: Session, d: Path, keep_n: int = KEEP_DEFAULT,
         max_bytes: int = MAX_BYTES_DEFAULT) -> Path:
    """Write the snapshot and reports beside the spooled events, drop ``.live``, prune
    old sessions; the kept folder. Runs once the workloads are stopped."""
    from xwatch.core.export.report import write_reports
    from xwatch.core.export.snapshot import write_snapshot

    write_snapshot(session, d)
    write_reports(d / "snapshot.json")
    session.close()
    final = d.with_name(d.name[: -len(LIVE)]) if d.name.endswith(LIVE) else d
    os.replace(d, final)
    prune(final.parent, keep_n, max_bytes)
    return final


def _size(d: Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file())


def prune(base: Path, keep_n: int = KEEP_DEFAULT, max_bytes: int = MAX_BYTES_DEFAULT) -> list[Path]:
    """Delete the oldest kept sessions beyond ``keep_n`` or ``max_bytes`` (live and
    interrupted ones are never deleted here); what was deleted."""
    kept = sorted((x for x in base.iterdir() if x.is_dir() and not x.name.endswith(LIVE)),
                  key=lambda x: x.name, reverse=True)
    gone, total = [], 0
    for i, d in enumerate(kept):
        total += _size(d)
        if i >= keep_n or (total > max_bytes and i > 0):
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d)
    return gone


@dataclass(frozen=True)
class SessionSummary:
    """What a kept session's snapshot says of its phases (``error``: it could not be
    read)."""

    phases: list[str] = field(default_factory=list)  # "NAME STATUS" each
    modes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    failed: int = 0
    error: str | None = None


@dataclass(frozen=True)
class Entry:
    path: Path
    state: str  # kept | running | interrupted
    meta: dict[str, Any]  # its meta.json, as read
    summary: SessionSummary


def listing(base: Path | None = None) -> list[Entry]:
    """Every session folder, newest first."""
    base = base or root()
    if not base.is_dir():
        return []
    out = []
    for d in sorted((x for x in base.iterdir() if x.is_dir()), key=lambda x: x.name,
                    reverse=True):
        meta = read_meta(d)
        if d.name.endswith(LIVE):
            state = "running" if pid_alive(int(meta.get("pid") or 0)) else "interrupted"
            out.append(Entry(d, state, meta, SessionSummary()))
            continue
        try:
            doc = json.loads((d / "snapshot.json").read_text())
            phases = doc.get("phases") or []
            summary = SessionSummary(
                phases=[f"{p.get('name')} {p.get('status')}" for p in phases],
                modes=sorted({str(p.get("mode")) for p in phases}),
                seconds=sum(float(p.get("duration_s") or 0) for p in phases),
                failed=sum(1 for p in phases if p.get("status") == "failed"))
        except (OSError, ValueError):
            summary = SessionSummary(error="snapshot.json missing or unreadable")
        out.append(Entry(d, "kept", meta, summary))
    return out


def describe(i: int, e: Entry) -> str:
    scen = (e.meta.get("scenario") or {}).get("name", "?")
    start = e.meta.get("started", e.path.name[:15])
    if e.state != "kept":
        phases = ", ".join(f"{p.get('name')}" for p in e.meta.get("phases") or []) or "-"
        what = f"still running (pid {e.meta.get('pid')})" if e.state == "running" else \
            f"INTERRUPTED (xwatch was killed): `xwatch sessions --recover {i}`"
        return f"{i:>3}  {start}  {scen:<12} phases {phases}  {what}  {e.path}"
    s = e.summary
    if s.error is not None:
        return f"{i:>3}  {start}  {scen:<12} {s.error}  {e.path}"
    verdict = "ok" if not s.failed else f"{s.failed} phase(s) failed"
    return (f"{i:>3}  {start}  {scen:<12} {len(s.phases)} phase(s) "
            f"({'/'.join(s.modes)}), {s.seconds:.0f} s measured, {verdict}  {e.path}")


def resolve(ref: str, base: Path | None = None) -> Path:
    """``last``, an index from ``xwatch sessions`` (0 = newest), or a path."""
    p = Path(ref)
    if ref not in ("last",) and not ref.isdigit():
        return p
    kept = [e for e in listing(base) if e.state == "kept"]
    idx = 0 if ref == "last" else int(ref)
    every = listing(base)
    if ref.isdigit():
        if idx >= len(every):
            raise UsageError(f"no session {idx}: `xwatch sessions` lists {len(every)}")
        e = every[idx]
        if e.state != "kept":
            raise UsageError(f"session {idx} is {e.state}; recover it first: "
                             f"`xwatch sessions --recover {idx}`")
        return e.path
    if not kept:
        raise UsageError(f"no kept session in {base or root()} yet (the dashboard keeps one "
                         "when it exits, unless --no-keep)")
    return kept[0].path


def recover(d: Path) -> Path:
    """Rebuild an interrupted session's statistics from its spooled events and keep it
    (snapshot and reports; phases marked 'interrupted')."""
    from xwatch.core.export.report import write_reports
    from xwatch.core.export.snapshot import (
        PreparedExport,
        scenario_from_dict,
        snapshot_document,
        write_export,
    )

    meta = read_meta(d)
    if not meta.get("scenario"):
        raise UsageError(f"{d}: no {META}; not an xwatch session folder")
    scen = scenario_from_dict(meta["scenario"], str(d / META))
    session = Session(scen, spool_max_mb=None)
    phases: dict[int, Phase] = {}
    for pm in meta.get("phases") or []:
        p = session.new_phase(str(pm.get("mode", "native")))
        p.name = str(pm.get("name", p.name))
        p.t_start = float(pm.get("t_start") or 0.0)
        p.started_at = str(pm.get("started_at") or "")
        for r in p.runs.values():
            r.rec = Recorder(p.t_start, session.window_s, r.rec.slo_ms)
        phases[int(pm.get("index", len(phases)))] = p
    events = d / EventSpool.FILE_NAME
    first: dict[tuple[int, str], float] = {}
    last: dict[int, float] = {}
    for row in read_rows(events) if events.exists() else ():
        try:
            idx, name, t, lat = int(row[0]), row[1], float(row[3]), float(row[4])
            svc = float(row[5]) if row[5] else None
            late, batch, ok = row[7] == "1", int(row[8] or 1), row[9] != "0"
        except (ValueError, IndexError):
            continue
        ph = phases.get(idx)
        run = ph.runs.get(name) if ph is not None else None
        if run is None:
            continue
        run.rec.add(lat, t, batch, late, ok, svc)
        begin_t = t - lat / 1000.0
        first[(idx, name)] = min(first.get((idx, name), math.inf), begin_t)
        last[idx] = max(last.get(idx, -math.inf), t)
    for idx, p in phases.items():
        end = last.get(idx, p.t_start)
        for name, run in p.runs.items():
            if (idx, name) in first:
                run.ready_t0 = first[(idx, name)]
                run.state = STOPPED
                p.on_ready(first[(idx, name)])
        p.t_stop = p.t_end = end
        p.status = "interrupted"
        p.error = ("xwatch was killed during this phase; recovered from the raw "
                   "events spooled before the kill (the last 2 s may be missing)")
    snap = session.snapshot(now=max(last.values(), default=time.monotonic()))
    doc = snapshot_document(snap)
    if not events.exists():
        events.write_bytes(b"")
    size = events.stat().st_size
    final = d.with_name(d.name[: -len(LIVE)] + "-recovered") if d.name.endswith(LIVE) else d
    os.replace(d, final)
    write_export(PreparedExport(doc, final / EventSpool.FILE_NAME, size), final)
    write_reports(final / "snapshot.json")
    session.close()
    return final
