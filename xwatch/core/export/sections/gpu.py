"""The report's GPU-side sections: per GPU (each copy's numbers and the roll-up), each
kernel capture (what the high-priority kernels waited behind, with the kernel lane).
The attribution of slow requests to what xserver's polls showed is XSched's own
section."""

from __future__ import annotations

from typing import Any

from xwatch.core.analysis.gpu.gpus import gpu_groups, rollup
from xwatch.core.analysis.gpu.kernels import analyze, capture_cost, clip, union
from xwatch.core.analysis.phases import is_box, label
from xwatch.core.engine.snapshot import CaptureSnapshot, SessionSnapshot
from xwatch.core.export.render.model import Section, Table, num
from xwatch.core.export.render.svgchart import lane_chart


def gpu_section(snap: SessionSnapshot) -> Section | None:
    """Per GPU, per phase: HIGH P50/P99, LOW samples/s, utilization; and the roll-up."""
    tel = snap.telemetry
    rows, roll_rows = [], []
    for p in snap.phases:
        groups = gpu_groups(p, tel)
        for g in groups:
            rows.append([label(p), str(g.gpu), g.bus_id or "?", g.name or "?",
                         g.high.name if g.high else "-", num(g.high_p50), num(g.high_p99),
                         num(g.low_samples_per_s, 1),
                         "-" if g.util_pct is None else f"{g.util_pct:.0f}%",
                         g.matched_by or "none"])
        if groups and not is_box(p):  # a box phase's GPUs ran different settings
            r = rollup(groups)
            roll_rows.append([label(p), ", ".join(map(str, r.gpus)),
                              f"{num(r.worst_high_p99_ms)} (GPU {r.worst_gpu})",
                              num(r.best_high_p99_ms), num(r.low_samples_per_s, 1),
                              str(r.high_requests)])
    if not rows:
        return None
    s = Section("Per GPU")
    s.paragraphs.append(
        f"Every workload ran as one copy per GPU ({', '.join(map(str, snap.scenario.gpus))}), "
        "named NAME@GPU, pinned with CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES. Telemetry "
        "is matched by the PCI address each worker reported (`pci`), else by index.")
    s.tables.append(("", Table(
        ["phase", "GPU", "PCI bus", "device", "HIGH", "HIGH P50 ms", "HIGH P99 ms",
         "LOW samples/s", "util (mean)", "telemetry match"], rows)))
    s.tables.append(("Roll-up (percentiles are not averaged across GPUs)", Table(
        ["phase", "GPUs", "worst HIGH P99 ms", "best HIGH P99 ms", "LOW samples/s (sum)",
         "HIGH requests"], roll_rows)))
    return s


def capture_sections(snap: SessionSnapshot) -> list[Section]:
    """Per kernel capture: what HIGH's kernels waited behind, its 10 slowest requests
    broken down, the capture's own cost, and (HTML) the kernel lane."""
    out = []
    for p in snap.phases:
        prio = {w.name: w.priority for w in p.workloads}
        for cap in p.captures:
            a = analyze(cap, prio) if cap.traces else None
            rec = cap.analysis if a is None else a.as_model()
            if rec is None:
                continue
            s = Section(f"Kernel capture {rec.capture} in {label(p)} "
                        f"({cap.seconds:g} s, {cap.t:.1f} s after the "
                        "phase started)")
            low = ", ".join(rec.lows) or "nothing of lower priority"
            s.paragraphs.append(
                f"{rec.high}'s kernels took {num(rec.high_kernel_ms)} ms where the same "
                f"kernels take {num(rec.high_alone_ms)} ms without {low} running (stretch "
                f"{num(rec.stretch)}x); {_share(rec.overlap_share)} of its kernel time "
                f"overlapped {low}'s kernels. Per request: {num(rec.queue_ms_mean)} ms from "
                f"its start to its first kernel, {num(rec.gap_ms_mean)} ms with no kernel of "
                f"it running (launches, queueing, synchronization); {low} ran nothing during "
                f"{_share(rec.low_quiet_share)} of the time a request was open. Clock check: "
                f"{_share(rec.aligned)} of {rec.high}'s kernels fall inside its requests. "
                "Kernels: " + ", ".join(f"{n} {k}" for n, k in rec.kernels.items()) + ".")
            hi = p.workload(rec.high)
            if hi is not None:
                c = capture_cost(hi.series, cap)
                s.paragraphs.append(
                    f"The capture's own cost on {rec.high}: per-second P50 "
                    f"{num(c['before_p50_ms'])} ms before, {num(c['during_p50_ms'])} ms during; "
                    f"the worst request {num(c['before_max_ms'])} ms before, "
                    f"{num(c['during_max_ms'])} ms during (the profiler's teardown after the "
                    "window lands on the next requests). This phase's statistics include it.")
            s.tables.append((f"{rec.high}'s 10 slowest requests in the capture", Table(
                ["seq", "at (ms)", "span ms", "queue ms", "kernels ms", "stretch",
                 f"alongside {low} ms", "no kernel ms", "LOW quiet ms"],
                [[str(b.seq), num(b.start * 1000, 1), num(b.span_ms),
                  num(b.queue_ms), num(b.kernel_ms), num(b.stretch),
                  num(b.overlap_ms), num(b.gap_ms), num(b.low_quiet_ms)]
                 for b in rec.slowest])))
            if a is not None:
                s.charts.append(_lane_svg(cap, a))
            for note in rec.notes:
                s.paragraphs.append(f"Note: {note}.")
            out.append(s)
    return out


def _share(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.0f}%"


def _lane_svg(cap: CaptureSnapshot, a: Any) -> str:
    """The capture's busiest second around HIGH's slowest request, as SVG lanes."""
    slow = a.slowest[0] if a.slowest else None
    mid = a.t0 + (slow.start + slow.span_ms / 2000) if slow else (a.t0 + a.t1) / 2
    lo = max(a.t0, mid - 0.05)
    hi = min(a.t1, lo + 0.1)
    traces = cap.traces
    rows = [(n, clip(union([(k[2], k[3]) for k in traces[n]["kernels"]]), lo, hi))
            for n in (a.high, *a.lows)]
    cut = {b.seq for b in a.slowest[:3]}
    brackets = [(max(lo, q[1]), min(hi, q[2]), q[0] in cut)
                for q in traces[a.high].get("requests") or [] if q[2] > lo and q[1] < hi]
    return lane_chart(f"kernels around {a.high}'s slowest request (100 ms; red: the 3 "
                      "slowest requests)", rows, brackets, (lo, hi))
