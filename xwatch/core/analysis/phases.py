"""Which phase and which workloads a comparison is about: the highest-priority
workload, the baseline phase, a phase's label, whether its daemon served processes
not of its session. Pure functions on snapshots."""

from __future__ import annotations

from xwatch.core import model as M
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot, WorkloadSnapshot


def by_priority(p: PhaseSnapshot) -> tuple[WorkloadSnapshot | None, list[WorkloadSnapshot]]:
    """(the highest-priority workload, every workload of lower priority)."""
    if not p.workloads:
        return None, []
    ws = sorted(p.workloads, key=lambda w: -w.priority)
    top = ws[0]
    lows = [w for w in ws if w.priority < top.priority]
    return top, lows


def baseline(snap: SessionSnapshot) -> PhaseSnapshot | None:
    """The phase every other is compared with: the first native phase that did not fail."""
    ok = [p for p in snap.phases if p.mode == "native" and p.status != "failed"]
    return ok[0] if ok else (snap.phases[0] if snap.phases else None)


def label(p: PhaseSnapshot) -> str:
    """A phase's name with its sweep setting, if any."""
    setting = p.setting
    return f"{p.name} [{setting}]" if setting else p.name


def shared_lines(p: PhaseSnapshot) -> list[str]:
    """What the phase's daemon also served that was not this session's (``shared``):
    ``shared its xserver from t=... on with ...: not a clean XSched measurement``."""
    return [s.describe(daemon) for s, daemon in (
        (p.xsched.shared if p.xsched is not None else None, "xserver"),
        (p.mps.shared if p.mps is not None else None, "MPS control daemon"))
        if isinstance(s, M.Shared)]
