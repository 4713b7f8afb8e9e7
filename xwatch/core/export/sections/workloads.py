"""The report's numbers per workload: each workload's table across the phases (state,
requests, rates, latency percentiles, errors, unfinished requests, stalls, named
metrics, goodput, a server's own metrics), the trade-off between the high-priority tail and the low-priority
throughput, and the objective's verdict per phase."""

from __future__ import annotations

import math
from typing import Any

from xwatch.core.analysis.phases import baseline, by_priority, label
from xwatch.core.analysis.saturation import saturation
from xwatch.core.analysis.server_view import server_line
from xwatch.core.analysis.stats.copies import combine, copies_of, role
from xwatch.core.analysis.stats.intervals import CI_PERCENTILES, hist_of, percentile_interval
from xwatch.core.analysis.stats.pooled import needed, too_few
from xwatch.core.analysis.stats.runs import RunValue
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import nan_if_none, stat
from xwatch.core.export.render.model import Section, Table, change, num

LAT_ROWS = (("mean", "mean (ms)"), ("std", "std (ms)"), ("min", "min (ms)"), ("p50", "P50 (ms)"),
            ("p90", "P90 (ms)"), ("p95", "P95 (ms)"), ("p99", "P99 (ms)"),
            ("p999", "P99.9 (ms)"), ("max", "max (ms)"))


def state_text(w: WorkloadSnapshot) -> str:
    if w.exit is None:
        return w.state
    if w.exit.reason == "stopped" and w.exit.ran_to_end:
        return "ran to end"
    if w.exit.reason == "finished":
        return "finished (exit 0)"
    stalled = " after a stall" if w.stalls else ""
    return w.exit.describe() + stalled


def percentile_of(w: WorkloadSnapshot, q: float) -> float:
    if w.latency_hist.buckets:  # exact nearest rank on the phase's histogram
        return percentile_interval(hist_of(w), q).est
    table = {50.0: "p50", 90.0: "p90", 95.0: "p95", 99.0: "p99", 99.9: "p999"}
    if q in table:
        return stat(w.phase, table[q])
    # a snapshot without its histogram (older xwatch): the recorded CDF (1% steps)
    for v, f in w.cdf:
        if f * 100 >= q - 1e-9:
            return v
    return math.nan


def _copies_pct(p: PhaseSnapshot, name: str, key: str) -> float:
    """``key`` ("p50") of workload ``name`` in ``p``: every GPU's copy, their geometric
    mean (``analysis.stats.copies``); one copy: its own."""
    return combine([RunValue(nan_if_none(getattr(w.phase, key)), math.nan)
                    for w in copies_of(p, name)], "log").est


def workload_sections(snap: SessionSnapshot) -> list[Section]:
    """One section per workload of the scenario: its rows across the phases, the last
    phase's change against the baseline, and notes on unfinished, saturated and
    too-few requests, and the server's own metrics (``Server-side``)."""
    scen = snap.scenario
    out: list[Section] = []
    base = baseline(snap)
    last = snap.phases[-1] if snap.phases else None
    cmp_ok = base is not None and last is not None and last is not base
    for wspec in scen.workloads:
        sec = Section(f"Workload {wspec.name} (priority {wspec.priority})")
        header = ["metric"] + [label(p) for p in snap.phases]
        if cmp_ok:
            assert base is not None and last is not None
            header.append(f"change {last.name} vs {base.name}")
        rows: list[list[str]] = []

        def row(label: str, get: Any, digits: int = 2, name: str = wspec.name,
                rows: list[list[str]] = rows) -> None:
            vals = [get(p.workload(name)) if p.workload(name) else None
                    for p in snap.phases]
            r = [label] + [num(v, digits) if not isinstance(v, str) else v for v in vals]
            if cmp_ok:
                assert base is not None and last is not None
                bw, lw = base.workload(name), last.workload(name)
                a = get(bw) if bw else None
                b = get(lw) if lw else None
                r.append(change(a, b, digits) if not isinstance(a, str) else "")
            rows.append(r)

        row("state", state_text)
        row("requests", lambda w: float(w.count), 0)
        row("achieved rate (req/s)", lambda w: nan_if_none(w.throughput.requests_per_s))
        row("samples/s", lambda w: nan_if_none(w.throughput.samples_per_s), 1)
        for key, row_name in LAT_ROWS:
            row(row_name, lambda w, key=key: stat(w.phase, key) if w.count else math.nan)
        row("late starts", lambda w: float(w.late), 0)
        row("errors", lambda w: float(w.errors), 0)
        if any(w.error_causes for p in snap.phases if (w := p.workload(wspec.name))):
            row("errors by cause", lambda w: "; ".join(
                f"{k} ({n})" for k, n in sorted(w.error_causes.items(),
                                                key=lambda kv: -kv[1])) or "none")
        row("unfinished at end", lambda w: float(w.unfinished.count)
            if w.unfinished is not None else math.nan, 0)
        row("longest unfinished wait (ms)", lambda w: math.nan if w.unfinished is None
            or w.unfinished.max_wait_ms is None else w.unfinished.max_wait_ms)
        row("stalls", lambda w: "; ".join(
            f"{x.since:.1f}-" + (f"{x.until:.1f}" if x.until is not None else "end")
            + f" s ({x.why})" for x in w.stalls) or "none")
        named = list(dict.fromkeys(k for p in snap.phases if (w := p.workload(wspec.name))
                                   for k in w.metrics))
        for mname in named:  # named per-request metrics: ttft_ms, tpot_ms, ...
            row(f"{mname}: values", lambda w, m=mname: float(w.metrics[m].count)
                if m in w.metrics else math.nan, 0)
            for key, q in CI_PERCENTILES:
                row(f"{mname}: {key.upper()} [95%]", lambda w, m=mname, q=q: (
                    percentile_interval(hist_of(w.metrics[m]), q).text()
                    if m in w.metrics and w.metrics[m].hist.buckets
                    else "-"))
        if scen.slo and scen.slo.workload == wspec.name:
            what = f"{scen.slo.named} " if scen.slo.named else ""
            row(f"goodput ({what}<= {scen.slo.latency_ms:g} ms, %)",
                lambda w: (w.goodput * 100) if w.goodput is not None else math.nan, 1)
        if wspec.goodput:  # vLLM's: every SLO met, failures and unfinished missed
            slos = ", ".join(wspec.goodput)
            row(f"goodput ({slos} ms; req/s)", lambda w: nan_if_none(
                w.slo_goodput.requests_per_s) if w.slo_goodput else math.nan)
            row(f"goodput ({slos} ms; % of due)", lambda w: (w.slo_goodput.share or 0) * 100
                if w.slo_goodput and w.slo_goodput.share is not None else math.nan, 1)
        sec.tables.append(("", Table(header, rows)))
        notes = sorted({w.unfinished_note for p in snap.phases for w in p.workloads
                        if w.name == wspec.name and w.unfinished is not None
                        and w.unfinished.count and w.unfinished_note})
        if notes:
            sec.paragraphs.append("Latency rows include requests still unfinished at the end "
                                  "of the phase, each counted at its waiting time so far (a "
                                  "lower bound); goodput counts them as misses. Unfinished: "
                                  + "; ".join(notes) + ".")
        few = [f"{label(p)}: " + ", ".join(f"P{q:g}" for q in qs) + f" of {w.count} "
               f"requests {'is' if len(qs) == 1 else 'are'} their maximum (P{qs[0]:g} needs "
               f"{needed(qs[0])})" for p in snap.phases
               if (w := p.workload(wspec.name)) is not None
               for qs in [[q for q in (50.0, 90.0, 95.0, 99.0, 99.9) if too_few(w.count, q)]]
               if qs]
        sat = [f"{label(p)}: {msg}" for p in snap.phases
               if (w := p.workload(wspec.name)) is not None and (msg := saturation(w))]
        if sat:
            sec.paragraphs.append("Saturated: " + "; ".join(sat) + ".")
        own = [f"{label(p)}: {line}" for p in snap.phases
               if (w := p.workload(wspec.name)) is not None and (line := server_line(
                   w.server, m.phase if (m := w.metrics.get("ttft_ms")) else None))]
        if own:  # the server's own metrics beside the client's (analysis.server_view)
            sec.paragraphs.append("Server-side: " + "; ".join(own) + ".")
        if few:  # issue 41: a percentile from too few requests says so
            sec.paragraphs.append("Too few requests: " + "; ".join(few) + ".")
        out.append(sec)

    return out


def tradeoff_section(snap: SessionSnapshot) -> Section | None:
    """Each phase against the baseline: the high-priority P50/P99 change and the
    low-priority throughput change (None with one phase or no baseline)."""
    base = baseline(snap)
    if base is not None and len(snap.phases) > 1:
        t = Section("Trade-off: high-priority tail vs low-priority throughput")
        hi, lows = by_priority(base)
        rows = []
        for p in snap.phases:
            if p is base:
                continue
            phi = p.workload(hi.name) if hi else None
            r = [label(p)]
            if hi and phi:  # every GPU's copy of HIGH: their geometric mean (--gpus)
                r += [change(_copies_pct(base, hi.name, "p50"), _copies_pct(p, hi.name, "p50")),
                      change(_copies_pct(base, hi.name, "p99"), _copies_pct(p, hi.name, "p99"))]
            else:
                r += ["-", "-"]
            lw_changes = []
            for lw in lows:
                plw = p.workload(lw.name)
                lw_changes.append(f"{lw.name}: " + (change(nan_if_none(lw.throughput.samples_per_s),
                                                           nan_if_none(plw.throughput.samples_per_s), 1)
                                                    if plw else "-"))
            r.append("; ".join(lw_changes) or "-")
            rows.append(r)
        hn = (role(hi.name) if hi.gpu is not None else hi.name) if hi else "high"
        t.paragraphs.append(f"Each phase against the baseline {base.name}. Negative latency "
                            "change = better for the high-priority workload; negative "
                            "throughput change = the cost paid by the low-priority ones.")
        t.tables.append(("", Table(["phase", f"{hn} P50 (ms)", f"{hn} P99 (ms)",
                                    "low-priority samples/s"], rows)))
        return t
    return None


def slo_section(snap: SessionSnapshot) -> Section | None:
    """The objective's verdict per phase, by the 95% interval of its percentile
    (None without an objective)."""
    scen = snap.scenario
    if scen.slo:
        slo = scen.slo
        sl = Section(f"Objective: {slo.workload} P{slo.percentile:g} < {slo.latency_ms:g} ms")
        rows = []
        for p in snap.phases:
            w = p.workload(slo.workload)
            if w is None or w.count == 0:
                rows.append([label(p), "-", "no data", "-"])
                continue
            iv = percentile_interval(hist_of(w), slo.percentile) if w.latency_hist.buckets else None
            v = iv.est if iv is not None else percentile_of(w, slo.percentile)
            if iv is None:
                verdict = "pass" if v < slo.latency_ms else "FAIL"
            elif iv.hi is not None and iv.hi < slo.latency_ms:
                verdict = "pass"
            elif iv.lo is not None and iv.lo >= slo.latency_ms:
                verdict = "FAIL"
            else:
                verdict = "within noise of the objective"
            rows.append([label(p), iv.text() if iv is not None else num(v), verdict,
                         num(w.goodput * 100 if w.goodput is not None else math.nan, 1)])
        sl.paragraphs.append("pass: the whole 95% interval is under the objective; FAIL: "
                             "all of it at or over; otherwise the data cannot tell.")
        sl.tables.append(("", Table(["phase", f"P{slo.percentile:g} (ms) [95% interval]",
                                     "verdict", "goodput (%)"], rows)))
        return sl
    return None
