"""What ``xwatch capacity`` says, from its snapshot record alone (``model.Capacity``):
the standings after each round, the capacity table, the consolidation lines (each
candidate in its mode's words, ``Mode.words``: "MPS at 50%: 0.81 [0.74, 0.87] of a
dedicated GPU's chat capacity and 0.62 [0.58, 0.66] of the trainer's: 1.43 GPUs of work
on one"), the best candidate where the intervals separate, and the TOML to paste (the
rate, and the setting as its mode deploys it, ``Mode.deploy``). The console, the
dashboard and the report print the same lines."""

from __future__ import annotations

from xwatch.core import model as M
from xwatch.core.analysis.capacity import search as cap
from xwatch.core.analysis.capacity.loads import NOW
from xwatch.core.modes import registry


def _num(v: float | None, fmt: str = "{:.3g}") -> str:
    return "?" if v is None else fmt.format(v)


def share_text(e: M.Estimate) -> str:
    """``0.81 [0.74, 0.87]``; ``?`` for an open end; ``-`` without an estimate."""
    if e.estimate is None and e.lo is None and e.hi is None:
        return "-"
    est = "?" if e.estimate is None else f"{e.estimate:.2f}"
    return f"{est} [{_num(e.lo, '{:.2f}')}, {_num(e.hi, '{:.2f}')}]"


def bracket_text(r: M.CapacityRecord) -> str:
    """``42.5-46.1 req/s (8%)``, ``>= 400``, ``< 10`` ..."""
    if r.met is not None and r.failed is not None:
        return f"{r.met:g}-{r.failed:g} ({100 * (r.failed / r.met - 1):.0f}%)"
    if r.met is not None:
        return f">= {r.met:g}"
    if r.failed is not None:
        return f"< {r.failed:g}"
    return "?"


def standings(rec: M.Capacity) -> list[str]:
    """The table of every search (after each round, and at the end)."""
    out = [f"   {'candidate':<30} {'runs':>4}  {'bracket (req/s)':<20} "
           f"{'HIGH share':<18} {'LOW share':<18} {'GPUs of work':<18} status"]
    for r in rec.records:
        out.append(f"   {r.candidate[:30]:<30} {r.runs:>4}  {bracket_text(r):<20} "
                   f"{share_text(r.high_share) if not r.dedicated else '1 (itself)':<18} "
                   f"{share_text(r.low_share) if not r.dedicated else '-':<18} "
                   f"{share_text(r.total) if not r.dedicated else '-':<18} {r.status}")
    return out


def _mode_words(r: M.CapacityRecord) -> str:
    """The candidate as its mode says it in a sentence (``Mode.words``), else its name."""
    mode = registry.find(r.mode)
    return (mode.words(r.settings) if mode is not None else None) or r.candidate


def consolidation(rec: M.Capacity) -> list[str]:
    """A line per settled candidate: its shares of a dedicated GPU's work."""
    low = " and ".join(rec.low_workloads) or "LOW"
    high = rec.slo.workload
    out = []
    for r in rec.records:
        if r.dedicated or (r.high_share.estimate is None and r.high_share.lo is None):
            continue
        line = (f"{_mode_words(r)}: {share_text(r.high_share)} of a dedicated GPU's {high} "
                "capacity")
        if rec.low_workloads and r.low_share.estimate is not None:
            line += (f" and {share_text(r.low_share)} of the {low}'s: "
                     f"{_num(r.total.estimate, '{:.2f}')} GPUs of work on one "
                     f"[{_num(r.total.lo, '{:.2f}')}, {_num(r.total.hi, '{:.2f}')}]")
        out.append(line)
    return out


def toml_lines(rec: M.Capacity) -> list[str]:
    """The scenario lines that deploy the best candidate (else the one carrying the most
    by estimate) at its ``met`` rate."""
    pick = next((r for r in rec.records if r.candidate == rec.best), None)
    if pick is None:
        pool = [r for r in rec.records if not r.dedicated and r.met is not None]
        if not pool and not any(not r.dedicated for r in rec.records):
            pool = [r for r in rec.records if r.met is not None]
        pick = max(pool, key=lambda r: r.total.estimate or 0.0, default=None)
    if pick is None or pick.met is None:
        return []
    lines = [f"# {pick.candidate}: the highest rate that met the SLO with confidence; run "
             f"it with: xwatch run SCENARIO --mode {pick.mode}",
             f'# in the [[workload]] table with name = "{rec.slo.workload}":',
             f"rate = {pick.met:g}"]
    by_wl: dict[str, dict[str, M.SettingValue]] = {}
    for k, v in pick.settings.items():
        wl, _, key = k.partition(".")
        by_wl.setdefault(wl, {})[key] = v
    for wl, kv in by_wl.items():
        lines.append(f'# in the [[workload]] table with name = "{wl}":')
        mode = registry.find(pick.mode)  # its table, as advice is deployed
        lines += mode.deploy(kv) if mode is not None else [f"{k} = {v}" for k, v in kv.items()]
    return lines


def _window(rec: M.Capacity) -> str:
    """Which window each run's percentile covers ("" in snapshots from before it)."""
    if not isinstance(rec.run_s, (int, float)):
        return ""
    return (f" (each run's {rec.slo.metric} over its {rec.run_s:g} s measured window, "
            f"warm-up out)")


def capacity_lines(rec: M.Capacity) -> list[str]:
    """Everything capacity prints at the end: the table, then the consolidation."""
    slo = rec.slo
    state = "decided" if rec.decided else ("running" if not rec.final else "not decided")
    lines = ["=== capacity " + "=" * 58,
             f"{slo.workload} {slo.metric} < {slo.latency_ms:g} ms" + _window(rec) + "; load from "
             f"{rec.rates[0]:g} to {rec.rates[1]:g} req/s; {state}: {rec.runs} runs in "
             f"{rec.seconds / 60:.1f} min" + (f" (budget {rec.budget_s / 60:g} min)"
                                             if rec.budget_s else ""),
             f"Intervals: {rec.intervals}.", "", *standings(rec)]
    for r in rec.records:
        if r.status not in cap.SETTLED or r.status == cap.BELOW:
            lines.append(f"- {r.candidate}: {r.status}: {r.reason}" + _below(r))
        if r.dips:
            pairs = ", ".join(f"{a:g}->{b:g}" for a, b in r.dips)
            lines.append(f"- {r.candidate}: the SLO estimate falls as the load rises at "
                         f"{pairs} req/s (within noise; a non-monotone curve would make a "
                         "bracket meaningless)")
        if r.runaways:
            at = ", ".join(f"{a:g}" for a, _ in r.runaways)
            most = max(x for _, x in r.runaways)
            lines.append(f"- {r.candidate}: runs of one load lie up to {most:.0f}x apart at "
                         f"{at} req/s (a queue that ran away in some): its loads are met only "
                         f"on {NOW.wary} runs or more, and the bracket's promise assumes runs "
                         "that vary around one value, so a verdict near these loads may be "
                         "wrong (docs/capacity.md, \"Runs that run away\")")
    if rec.low_workloads and rec.low_alone.estimate is not None:
        lines.append(f"{' and '.join(rec.low_workloads)} alone: "
                     f"{share_text(rec.low_alone).replace('.00', '')} samples/s")
    cons = consolidation(rec)
    if cons:
        lines += ["", "Consolidation (shares of a dedicated GPU's work):", *cons]
    if rec.best is not None:
        lines.append(f"Best: {rec.best} (its GPUs of work lie above every other "
                     "candidate's with confidence)")
    elif sum(1 for r in rec.records if not r.dedicated) > 1:
        lines.append("Best: none named: the candidates' intervals overlap")
    toml = toml_lines(rec)
    if toml:
        lines += ["", "Paste into the scenario:", *toml]
    for mode, reason in rec.skipped.items():
        lines.append(f"Skipped {mode}: {reason}")
    return lines


def _below(r: M.CapacityRecord) -> str:
    """What the lowest load showed, where even it missed."""
    if r.status != cap.BELOW or not r.loads:
        return ""
    ld = r.loads[0]
    e = ld.slo_metric
    return (f": {r.metric} {share_text(e)} ms at {ld.rate:g} req/s against {r.slo_ms:g} ms; "
            "give a lower --rates, or a looser SLO")
