"""The report's answers: ``xwatch advise``'s advice, the answer box (what changed,
with intervals, pooled over repeats), and the sweep's settings against native with
their frontier (calibrate's breakdown of the latency is XSched's own section)."""

from __future__ import annotations

import dataclasses
from typing import Any

from msgspec import UNSET

from xwatch.core.analysis.answer.stored import stored
from xwatch.core.analysis.frontier import frontier, sweep_points
from xwatch.core.analysis.participation import participation
from xwatch.core.analysis.phases import by_priority, side_by_side
from xwatch.core.analysis.stats.copies import copies_of, role
from xwatch.core.analysis.stats.intervals import hist_of, percentile_interval
from xwatch.core.analysis.verdict import UNMEASURED, latency_change, rate_change, steps
from xwatch.core.engine.snapshot import SessionSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import nan_if_none
from xwatch.core.export.render.model import Section, Table, change, num
from xwatch.core.modes import registry


def advice_section(snap: SessionSnapshot) -> Section | None:
    """``xwatch advise``: the answer, the scenario lines, every candidate with its
    intervals and status, the frontier (braille here, SVG in the HTML charts)."""
    from xwatch.core.analysis.stats import race
    from xwatch.core.export.render.braille import scatter

    adv = snap.advice
    if adv is None:
        return None
    s = Section("Advice")
    s.paragraphs.append(f"**{race.sentence(adv)}**")
    toml = race.toml_for(adv)
    if toml:
        s.code = "\n".join(toml)

    slo = adv.slo
    by_price = sorted(adv.candidates, key=lambda c: -(c.price.estimate or 0.0))
    iv = race.estimate_text
    rows = [[c.label, str(c.runs), iv(c.slo_metric, "{:.2f}"), iv(c.price, "{:,.0f}"),
             c.status, c.reason] for c in by_price]
    # the record says what its intervals promise; older ones: per-look Bonferroni t
    promise = adv.intervals if adv.intervals is not UNSET else \
        f"95% intervals over runs, Bonferroni over {len(rows)} candidates"
    s.tables.append((f"Candidates ({promise})", Table(
                         ["candidate", "runs", f"{slo.workload} {slo.metric} (ms)",
                          "price (samples/s)", "status", "why"], rows)))
    pts = [(chr(ord("a") + i), c.price.estimate, c.slo_metric.estimate,
            c.price.lo, c.price.hi, c.slo_metric.lo, c.slo_metric.hi)
           for i, c in enumerate(by_price)
           if c.price.estimate is not None and c.slo_metric.estimate is not None]
    plot = scatter(pts, hline=slo.latency_ms, xlabel="price (samples/s)",
                   ylabel=f"{slo.workload} {slo.metric} ms; dots: the SLO")
    if plot:
        s.paragraphs.append("Frontier (marks a, b, ... in the table's order):\n\n```\n"
                            + "\n".join(plot) + "\n```")
    rounds = "?" if adv.rounds is UNSET else adv.rounds  # older records: not recorded
    grid = "?" if adv.grid_runs is UNSET else adv.grid_runs
    notes = [f"Runs: {adv.runs} in {adv.seconds / 60:.1f} min over {rounds} "
             f"rounds; the full grid of those rounds: {grid} runs."]
    if adv.undecided:
        notes.append(adv.undecided)
    notes += [f"Skipped {m}: {why}" for m, why in adv.skipped.items()]
    s.paragraphs.append("  \n".join(notes))
    return s


def answer_section(snap: SessionSnapshot) -> Section | None:
    """The verdict box as the snapshot stores it (``analysis.answer.stored``):
    what changed, with intervals, pooled over repeats; then each repeat, so a reader
    sees the spread."""
    box = stored(snap).box
    if not box.steps:
        return None
    s = Section("Answer")
    s.paragraphs.append("  \n".join(f"**{ln}**" if i < len(box.steps) else ln
                                     for i, ln in enumerate(box.lines())))
    groups = steps(snap)
    rows = []
    hi = by_priority(snap.phases[0])[0] if snap.phases else None
    for key, ps in groups.items():
        p99s = []
        for p in ps:
            # every GPU's copy of HIGH (``--gpus``), each on a row of its own, LOWs with it
            ws: list[WorkloadSnapshot | None] = list(copies_of(p, hi.name)) if hi else []
            for w in ws or [None]:
                iv = percentile_interval(hist_of(w), 99.0) \
                    if w is not None and w.latency_hist.buckets else None
                if iv is not None:
                    p99s.append(iv.est)
                lows = [x for x in p.workloads if (hi is None or x.priority < hi.priority)
                        and (w is None or x.gpu == w.gpu)]
                rep = str(1 if p.repeat is None else p.repeat)
                rows.append([key, rep if w is None or w.gpu is None else f"{rep} (GPU {w.gpu})",
                             p.status,
                             percentile_interval(hist_of(w), 50.0).text()
                             if iv is not None and w is not None else "-",
                             iv.text() if iv else "-",
                             "; ".join(f"{x.name} {num(nan_if_none(x.throughput.samples_per_s), 1)}"
                                       for x in lows) or "-"])
        if len(ps) > 1 and p99s:
            rows.append([key, "spread of P99", "", "", f"{min(p99s):.2f} to {max(p99s):.2f}", ""])
    hn = (role(hi.name) if hi.gpu is not None else hi.name) if hi else "high"
    s.tables.append(("Each phase (95% intervals)", Table(
        ["step", "repeat", "status", f"{hn} P50 (ms)", f"{hn} P99 (ms)", "samples/s"], rows)))
    return s


def sweep_section(snap: SessionSnapshot) -> Section | None:
    rows, note = frontier_rows(snap)
    if not rows:
        return None
    # the mode of the first phase of a setting; none (a box phase's settings), or one
    # without settings of its own (native): the first mode that has settings
    first = next((p.mode for p in snap.phases if p.setting), None)
    mode = registry.find(first) if first is not None else None
    if mode is None or not mode.sweep_keys:
        mode = next(m for m in registry.modes() if m.sweep_keys)
    s = Section(f"Sweep: {mode.label} settings against native")
    s.paragraphs.append(note)
    s.tables.append(("", Table(["phase", "setting", "status", "HIGH P50 (ms)", "HIGH P99 (ms)",
                                "LOW samples/s", "P99 vs native", "LOW vs native", "frontier"],
                               rows)))
    return s


def frontier_rows(snap: Any) -> tuple[list[list[str]], str]:
    _native, pts = sweep_points(snap)
    if not pts:
        return [], ""
    front = frontier(pts)
    nat = next((p for p in pts if p.native), None)
    # every native run (``--repeat``), paired with each setting's runs by repeat
    natives = [p for p in snap.phases if p.mode == "native" and p.status != "failed"]
    hi = by_priority(natives[0])[0] if natives else None
    lows = by_priority(natives[0])[1] if natives else []
    rows = []
    same: set[str] = set()
    absent: dict[str, str] = {}  # settings whose mode took no part: never on the frontier
    for p in pts:
        runs = [q.phase for q in pts if q.label == p.label and q.ok]  # repeats
        part = participation(runs, snap.scenario) if runs and not p.native else None
        if part is not None and not part.took_part:
            absent[p.label] = part.no_verdict()
        p99c = latency_change(hi.name, 99.0, natives, runs) \
            if hi is not None and p.ok and not p.native else None
        if p99c is not None and p.label in absent:
            p99c = dataclasses.replace(p99c, no_part=absent[p.label])
        lowc = [c for lw in lows for c in [rate_change(lw.name, natives, runs)] if c] \
            if p.ok and not p.native else []
        if p99c is not None and p99c.basis != UNMEASURED and p99c.way == 0 \
                and all(c.way == 0 for c in lowc):
            same.add(p.label)  # indistinguishable from native: never called better
        rows.append([
            p.phase.name, p.label, p.status if p.ok else f"FAILED ({p.status})",
            num(p.p50), num(p.p99), num(p.low_sps, 1),
            p99c.text() if p99c is not None else
            (change(nat.p99, p.p99) if nat and not p.native else "-"),
            change(nat.low_sps, p.low_sps, 1) if nat and not p.native else "-",
            "no (its mode took no part)" if p.label in absent else
            "same as native (within noise)" if p.label in same else
            "yes" if p.label in front else ""])
    best = sorted(front - {"native"} - same - set(absent))
    note = ("Frontier: settings for which no other point has both a lower HIGH P99 and a "
            "higher LOW throughput, leaving out settings whose P99 and LOW throughput are both "
            "within noise of native (95% intervals). On the frontier: "
            + (", ".join(best) if best else "no setting (native dominates, or none differs "
               "from it beyond noise)")
            + ". Failed settings are listed with their status and are not points."
            + (" With one run per setting and no recorded noise floor, no setting can be "
               "told from native's run-to-run noise: `xwatch noise` records it, --repeat 3 "
               "measures it." if any(r[6].endswith("unmeasured") for r in rows) else "")
            + (" Several GPUs: the settings ran side by side, one a GPU, rotated every "
               "repeat; a setting's row is its own copy on the GPU its phase names; "
               "native's the mean over every GPU; LOW samples/s are per GPU."
               if any(side_by_side(p) for p in snap.phases) else "")
            + "".join(f" {label}: {why}." for label, why in absent.items()))
    return rows, note
