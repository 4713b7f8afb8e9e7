"""Per-box findings of a run over a Ray cluster's GPU boxes (``--ray``; the plan says
them after the answer, ``fleet.merge``; the report and the dashboard show them): boxes
of different GPU models, named with their models; for a step, a box whose every run's
highest-priority P99 is above every other box's runs, or whose level over every step's
runs, each step's level removed, is above the other boxes' beyond noise
(``stats.blocks``). Pure."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from xwatch.core.analysis.stats.blocks import slower_blocks
from xwatch.core.engine.snapshot import PhaseSnapshot

#: what the per-box findings say where none differs (the report, the plan's end)
NO_BOX_DIFFERS = ("no box differs (the same GPU models, and no box's every run slower than "
                  "every other box's)")


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
                       + (f"{iv.hi * 100 - 100:.0f}%]" if iv.hi is not None else "open]")
                       + " (each step's level removed, over "
                       "every step's runs; 95% over the boxes)")
    return out


def findings_or_none(phases: Sequence[PhaseSnapshot]) -> list[str]:
    """``box_findings``; where none, that no box differs (``NO_BOX_DIFFERS``) if more
    than one box ran a phase that did not fail, else nothing (one box has none to differ
    from)."""
    found = box_findings(phases)
    ran = {p.box.node_id for p in phases if p.box is not None and p.status != "failed"}
    return found or ([NO_BOX_DIFFERS] if len(ran) > 1 else [])


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
