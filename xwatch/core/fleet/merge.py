"""Every box's phases as one session: the merged snapshot (``merged``: the phases in
the order they ended, renumbered and renamed as one session would name them, each
naming its box), a run lost with its node (``lost``: a failed phase that names the node
and host), the per-box findings (``box_findings``: a box whose runs of a step are all
slower than every other box's, or whose level over every step's runs is above the other
boxes' beyond noise, ``analysis.stats.blocks``), and the export (``export``:
``snapshot.json`` and its reports, as a local plan writes them; no event file, the
events stay on the boxes)."""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from msgspec.structs import replace

from xwatch.core import model as M
from xwatch.core.analysis.answer.stored import with_answer
from xwatch.core.analysis.stats.blocks import slower_blocks
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot, utc_now
from xwatch.core.plans.driver import Step
from xwatch.scenario import Scenario


def lost(step: Step, rnd: int, box: M.Box, why: str) -> PhaseSnapshot:
    """The failed phase of a run whose box was lost (its node died, its agent with it)."""
    return failed(step, rnd, box, f"box {box.short} lost mid-phase (Ray node "
                                  f"{box.node_id}, host {box.host}): {why}")


def failed(step: Step, rnd: int, box: M.Box | None, error: str) -> PhaseSnapshot:
    """The failed phase of a run that never ran to its end, and why (``error``)."""
    now = utc_now()
    return PhaseSnapshot(
        index=0, name=f"{step.mode}-failed", mode=step.mode, status="failed",
        started_at=now, ended_at=now, elapsed_s=0.0, measuring=False, workloads=(),
        error=error, step=step.key, repeat=rnd,
        candidate=step.label if step.candidate else None, box=box)


def merged(scen: Scenario, phases: Sequence[PhaseSnapshot], created_at: str,
           advice: M.Advice | None = None, capacity: M.Capacity | None = None,
           noise_floor: M.NoiseFloor | None = None) -> SessionSnapshot:
    """One session of every box's phases (``phases`` in the order they ended), its
    answer computed once (``with_answer``)."""
    counts: dict[str, int] = defaultdict(int)
    out = []
    for i, p in enumerate(phases):
        base = p.name.rsplit("-", 1)[0] if "-" in p.name else p.name
        counts[base] += 1
        out.append(replace(p, index=i, name=f"{base}-{counts[base]}"))
    snap = SessionSnapshot(scenario=scen, phases=tuple(out), messages=(),
                           taken_at=time.time(), window_s=scen.window_s,
                           created_at=created_at, advice=advice, capacity=capacity,
                           noise_floor=noise_floor)
    return with_answer(snap)


def _high(p: PhaseSnapshot) -> tuple[str, float] | None:
    """The phase's highest-priority workload's P99 (ms), the number compared per box."""
    ws = [w for w in p.workloads if w.count]
    if not ws:
        return None
    top = max(ws, key=lambda w: (w.priority, w.name))
    v = top.phase.p99
    return (top.name.partition("@")[0], float(v)) if v is not None and math.isfinite(v) \
        else None


def box_findings(phases: Sequence[PhaseSnapshot]) -> list[str]:
    """Boxes that differ: boxes of different GPU models, named with their models; for
    each step, a box whose every run's HIGH P99 is above every other box's runs (two
    runs or more on each side: a claim the runs' own spread cannot explain); and a box
    whose HIGH P99 over every step's runs, each step's level removed, is above the other
    boxes' with 95% confidence over the boxes (``blocks.slower_blocks``: the additive
    model on the log scale, its residual degrees of freedom)."""
    by: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    names: dict[str, str] = {}
    for p in phases:
        if p.box is None or p.status == "failed":
            continue
        h = _high(p)
        if h is None:
            continue
        names[p.step or p.mode] = h[0]
        by[p.step or p.mode][p.box.short].append(h[1])
    out = _models(phases)
    told = set()
    for step, boxes in by.items():
        for b, vals in boxes.items():
            rest = [v for o, vs in boxes.items() if o != b for v in vs]
            if len(vals) >= 2 and len(rest) >= 2 and min(vals) > max(rest):
                told.add(b)
                out.append(f"box {b} is slower for {step}: every run's {names[step]} P99 "
                           f"({', '.join(f'{v:.2f}' for v in sorted(vals))} ms) is above "
                           f"every other box's (at most {max(rest):.2f} ms)")
    rows = [(step, b, v) for step, boxes in by.items() for b, vs in boxes.items() for v in vs]
    what = "/".join(sorted(set(names.values())))
    for b, iv in slower_blocks(rows):
        if b not in told:
            out.append(f"box {b} is slower: its {what} P99 is {(iv.est - 1) * 100:.0f}% above "
                       f"the other boxes' [{(iv.lo or 1) * 100 - 100:.0f}%, "
                       f"{(iv.hi or 1) * 100 - 100:.0f}%] (each step's level removed, over "
                       "every step's runs; 95% over the boxes)")
    return out


def _models(phases: Sequence[PhaseSnapshot]) -> list[str]:
    """Boxes of different GPU models (the device each workload's hello names), named."""
    models: dict[str, set[str]] = defaultdict(set)
    for p in phases:
        if p.box is None:
            continue
        for w in p.workloads:
            name = w.hello.get("device_name") if isinstance(w.hello, dict) else None
            if isinstance(name, str) and name:
                models[p.box.short].add(name)
    if len({frozenset(m) for m in models.values()}) < 2:
        return []
    return ["the boxes' GPU models differ (the answer pools their runs): " + "; ".join(
        f"{b}: {', '.join(sorted(m))}" for b, m in sorted(models.items()))]


def export(snap: SessionSnapshot, directory: str, say: Callable[[str], None],
           warn: Callable[[str], None]) -> bool:
    """``snapshot.json`` and its reports in ``directory``; True when all were written."""
    from xwatch.core.export.report import write_reports
    from xwatch.core.export.snapshot import atomic_write, encode_document, snapshot_document

    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
        path = d / "snapshot.json"
        atomic_write(path, encode_document(snapshot_document(snap, events_file=None)))
    except OSError as e:
        warn(f"xwatch: snapshot not written to {directory}: {e}")
        return False
    say(f"snapshot: {path}")
    try:
        for p in write_reports(path):
            say(f"report: {p}")
    except Exception as e:  # a report problem never loses the snapshot
        warn(f"xwatch: report not written: {e}")
        return False
    return True
