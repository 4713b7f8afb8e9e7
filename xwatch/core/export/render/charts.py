"""The report's charts as inline SVG: latency over time with phase marks and the
SLO, HIGH's CDF per phase, LOW throughput, the sweep trade-off, advise's and
capacity's frontiers, GPU utilization."""

from __future__ import annotations

import math

from xwatch.core.analysis.frontier import frontier, sweep_points
from xwatch.core.analysis.gpu.gpus import gpu_roles, rollup_series
from xwatch.core.analysis.participation import participation
from xwatch.core.analysis.phases import by_priority, label
from xwatch.core.analysis.timeline import SessionClock, phase_offsets, workload_series
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.export.render.braille import cut, readable
from xwatch.core.export.render.svgchart import line_chart

#: HIGH and LOW this many times apart get a log latency axis (as on the dashboard)
LOG_RATIO = 20.0


def spread_apart(snap: SessionSnapshot) -> bool:
    """Whether the workloads' median latencies differ by more than ``LOG_RATIO``."""
    meds = [v for p in snap.phases for w in p.workloads
            if w.count and (v := w.phase.p50) is not None and v > 0]
    return bool(meds) and max(meds) / min(meds) > LOG_RATIO


def build_charts(snap: SessionSnapshot) -> list[str]:
    """Latency over time, CDF of the high-priority workload, low-priority
    throughput over time, GPU utilization over time."""
    charts: list[str] = []
    if not snap.phases:
        return charts
    scen = snap.scenario
    offsets = phase_offsets(snap.phases)
    vlines = [(o, p.name) for o, p in zip(offsets, snap.phases)]
    roles = gpu_roles(scen.workloads)
    rolled = len(roles.gpus) > 2  # as on the dashboard: 16 copies would be 32 lines
    if rolled:
        highs = list(roles.high.values())
        lat_series = [(f"HIGH {label}", rollup_series(snap.phases, offsets, highs, key, how))
                      for label, key, how in (("P99, worst GPU", "p99", "max"),
                                              ("P99, best GPU", "p99", "min"),
                                              ("P50, worst GPU", "p50", "max"))]
    else:
        lat_series = [(f"{w.name} {key.upper()}",
                       workload_series(snap.phases, offsets, w.name, key))
                      for w in scen.workloads for key in ("p50", "p99")]
    hl = (scen.slo.latency_ms, f"SLO {scen.slo.workload} P{scen.slo.percentile:g}") \
        if scen.slo else None
    charts.append(line_chart("Latency per second (phases concatenated)"
                             + (f", {len(roles.gpus)} GPUs rolled up" if rolled else ""),
                             lat_series,
                             "session time (s)", "latency (ms)", vlines, hl,
                             log_y=spread_apart(snap)))
    base = snap.phases[0]
    hi, lows = by_priority(base)
    worst = ""
    if rolled:  # the HIGH copy with the worst P99 in the last phase
        last = snap.phases[-1]
        p99 = {w.name: w.phase.p99 or 0.0 for w in last.workloads
               if w.name in roles.high.values() and w.count and w.phase.p99 is not None}
        if p99:
            hi = last.workload(max(p99, key=lambda n: p99[n])) or hi
            worst = " (the GPU with the worst HIGH P99)"
    if hi is not None:
        cdf_series = []
        for p in snap.phases:
            w = p.workload(hi.name)
            if w and w.cdf:
                cdf_series.append((label(p), [(v, f * 100) for v, f in w.cdf]))
        if cdf_series:
            slo_mark = [(scen.slo.latency_ms, f"SLO {scen.slo.latency_ms:g} ms")] \
                if scen.slo and scen.slo.workload == hi.name else []
            charts.append(line_chart(f"{hi.name}{worst}: latency distribution per phase (CDF)",
                                     cdf_series, "latency (ms)", "% of requests <=", slo_mark,
                                     None, y_max=100.0))
    if lows and rolled:
        names = [n for g in roles.gpus for n in roles.lows.get(g, ())]
        tp = [("LOW samples/s, all GPUs",
               rollup_series(snap.phases, offsets, names, "samples", "sum"))]
        charts.append(line_chart(f"Low-priority throughput per second, {len(roles.gpus)} GPUs "
                                 "summed", tp, "session time (s)", "samples/s", vlines))
    elif lows:
        tp = [(f"{lw.name} samples/s", workload_series(snap.phases, offsets, lw.name, "samples"))
              for lw in lows]
        charts.append(line_chart("Low-priority throughput per second", tp, "session time (s)",
                                 "samples/s", vlines))
    _, pts = sweep_points(snap)
    good = [p for p in pts if p.ok]
    if good:
        front = frontier(pts)
        # a setting whose mode took no part (analysis.participation) is on no frontier
        front -= {p.label for p in good if not p.native and not participation(
            [q.phase for q in good if q.label == p.label], snap.scenario).took_part}
        series = [(("native" if p.native else p.label) + (" *" if p.label in front else ""),
                   [(p.low_sps, p.p99)]) for p in good]
        hi_name = (by_priority(snap.phases[0])[0] or snap.phases[0].workloads[0]).name
        charts.append(line_chart(f"Sweep: {hi_name} P99 vs low-priority throughput "
                                 "(* = on the frontier)", series, "low-priority samples/s",
                                 f"{hi_name} P99 (ms)", points_only=True))
    adv = snap.advice
    if adv is not None:
        slo = adv.slo
        cross: list[tuple[str, list[tuple[float, float]]]] = []
        shown = [c for c in adv.candidates
                 if c.slo_metric.estimate is not None and c.price.estimate is not None]
        xr = readable([c.price.estimate for c in shown if c.price.estimate is not None])
        yr = readable([c.slo_metric.estimate for c in shown
                       if c.slo_metric.estimate is not None], [slo.latency_ms])
        for c in shown:
            s, pr = c.slo_metric, c.price
            if s.estimate is None or pr.estimate is None:
                continue
            bars = [(cut(pr.lo, *xr) or pr.estimate, s.estimate),  # ends cut at the edge
                    (cut(pr.hi, *xr) or pr.estimate, s.estimate),
                    (pr.estimate, math.nan),
                    (pr.estimate, cut(s.lo, *yr) or s.estimate),
                    (pr.estimate, cut(s.hi, *yr) or s.estimate)]
            cross.append((f"{c.label} ({c.status})", bars))
        if cross:
            charts.append(line_chart(
                f"Advise frontier: {slo.workload} {slo.metric} vs price, 95% intervals",
                cross, "price: low-priority samples/s", f"{slo.workload} {slo.metric} (ms)",
                hline=(slo.latency_ms, "SLO")))
    chart = capacity_chart(snap)
    if chart:
        charts.append(chart)
    tel = snap.telemetry
    if tel is not None and tel.samples and snap.phases:
        by_dev: dict[str, list[tuple[float, float]]] = {}
        metric = "util_pct" if tel.backend in ("nvml", "amdsmi") else "cpu_pct"
        clock = SessionClock(snap.phases, offsets)
        for smp in tel.samples:
            if not smp.ours:
                continue
            v = smp.metrics.get(metric)
            x = clock(smp.t)
            if x is not None:
                by_dev.setdefault(f"{smp.device} {metric}", []).append(
                    (x, math.nan if v is None else float(v)))
        if by_dev:
            title = ("GPU utilization (NVML: % of time a kernel ran)" if metric == "util_pct"
                     and tel.backend == "nvml" else
                     "GPU activity (amdsmi gfx_activity)" if metric == "util_pct"
                     else "Host CPU (no GPU telemetry)")
            charts.append(line_chart(title, sorted(by_dev.items()), "session time (s)", "%",
                                     vlines, y_max=100.0))
    return charts


def capacity_chart(snap: SessionSnapshot) -> str | None:
    """``xwatch capacity``'s frontier: each candidate's share of a dedicated GPU's HIGH
    capacity (x) against its share of LOW's dedicated throughput (y), a cross of their
    95% intervals (an open end drawn to the edge); dedicated as the corner (1, 1): a
    point there would carry both GPUs' work on one."""
    rec = snap.capacity
    if rec is None:
        return None
    series: list[tuple[str, list[tuple[float, float]]]] = [
        ("dedicated (one GPU each)", [(0.0, 1.0), (1.0, 1.0), (1.0, 0.0)])]
    top = 1.2
    for r in rec.records:
        h, lw = r.high_share, r.low_share
        if r.dedicated or h.estimate is None or (rec.low_workloads and lw.estimate is None):
            continue
        y = lw.estimate if lw.estimate is not None else 0.0
        x = h.estimate
        series.append((f"{r.candidate} ({r.status})", [
            (min(top, h.lo if h.lo is not None else 0.0), y),
            (min(top, h.hi if h.hi is not None else top), y), (x, math.nan),
            (x, min(top, lw.lo if lw.lo is not None else 0.0)),
            (x, min(top, lw.hi if lw.hi is not None else top))]))
    if len(series) < 2:
        return None
    slo = rec.slo
    return line_chart(f"Capacity frontier: {slo.workload}'s capacity under {slo.metric} < "
                      f"{slo.latency_ms:g} ms vs LOW's throughput, shares of dedicated, 95% "
                      "intervals", series, f"{slo.workload} capacity / dedicated",
                      "LOW throughput / dedicated", x_max=top, y_max=top)
