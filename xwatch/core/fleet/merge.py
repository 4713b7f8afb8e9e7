"""Every box's phases as one session: the merged snapshot (``merged``: the phases in
the order they ended, renumbered and renamed as one session would name them, each
naming its box), a run lost with its node (``lost``: a failed phase that names the node
and host), the per-box findings (``box_findings``, from ``analysis.answer.boxes``, where
the report finds them too: a box whose runs of a step are all slower than every other
box's, or whose level over every step's runs is above the other boxes' beyond noise),
each box's line at the plan's end (``box_lines``: its phases' statuses, a run
stopped mid-phase), and the export (``export``: ``snapshot.json`` and its
reports, as a local plan writes them; no event file, the events stay on the boxes)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from msgspec.structs import replace

from xwatch.core import model as M
from xwatch.core.analysis.answer.boxes import box_findings as box_findings  # the plan's, here
from xwatch.core.analysis.answer.boxes import findings_or_none as findings_or_none
from xwatch.core.analysis.answer.stored import with_answer
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


#: a box with more phases than this: its phases counted by status (the odd ones named)
LISTED = 3


def box_lines(phases: Sequence[PhaseSnapshot], boxes: Sequence[M.Box],
              stopped: Mapping[str, str] | None = None) -> list[str]:
    """One line a box, in ``boxes``' order: ``box host/1a2b3c: native-1 done``; with
    more than ``LISTED`` phases, ``5 phases: 4 done, 1 failed (mps-3)``; ``stopped``
    (node id: its run, ``native r2``): the run the plan's stop ended mid-phase there,
    whose numbers never came back."""
    out = []
    for b in boxes:
        mine = [p for p in phases if p.box is not None and p.box.node_id == b.node_id]
        if len(mine) <= LISTED:
            parts = [f"{p.name} {p.status}" for p in mine]
        else:
            by: dict[str, list[str]] = defaultdict(list)
            for p in mine:
                by[p.status].append(p.name)
            parts = [f"{len(mine)} phases: " + ", ".join(
                f"{len(ns)} {st}" + ("" if st == "done" else f" ({', '.join(ns)})")
                for st, ns in sorted(by.items(), key=lambda kv: kv[0] != "done"))]
        run = (stopped or {}).get(b.node_id)
        if run is not None:
            parts.append(f"{run} stopped mid-phase (its numbers never came back)")
        out.append(f"box {b.short}: " + (", ".join(parts) or "no phase ran here"))
    return out


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
