"""The report's sections beyond the phases table: per GPU, kernel captures, isolation,
MPS, preflight, calibrate, attribution, sweep (and its frontier rows), the advice and
the answer; each a function of the snapshot that gives a ``Section`` or None when the
snapshot has nothing for it."""

from __future__ import annotations

import math
from typing import Any

import msgspec
from msgspec import UNSET

from xwatch.core import model as M
from xwatch.core.analysis.calibrate import calibrate
from xwatch.core.analysis.frontier import frontier, sweep_points
from xwatch.core.analysis.gpu.attribution import attribute
from xwatch.core.analysis.gpu.gpus import gpu_groups, rollup
from xwatch.core.analysis.gpu.kernels import analyze, capture_cost, clip, union
from xwatch.core.analysis.phases import by_priority, is_box, label, side_by_side
from xwatch.core.analysis.stats.copies import copies_of, role
from xwatch.core.analysis.stats.intervals import hist_of, percentile_interval
from xwatch.core.analysis.verdict import (
    UNMEASURED,
    answer,
    answer_lines,
    latency_change,
    rate_change,
    steps,
)
from xwatch.core.engine.snapshot import CaptureSnapshot, SessionSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import nan_if_none, stat
from xwatch.core.export.render.model import Section, Table, change, num
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


def xsched_version(xs: M.Xsched) -> str:
    """"XSched 1.2.0" as the install said (a snapshot from before versions were read:
    "XSched version not recorded")."""
    if xs.version is UNSET:
        return "XSched version not recorded"
    return f"XSched {xs.version}" if xs.version else \
        f"XSched version unknown ({xs.version_source or 'no XSchedConfig.cmake'})"


def policy_label(xs: M.Xsched) -> str:
    """"HPF (1)": the policy with the install's own number for it, when recorded."""
    num = xs.policy_number
    return f"{xs.policy}" + (f" ({num})" if num is not None and num is not UNSET else "")


def preflight_section(snap: SessionSnapshot) -> Section | None:
    rows = []
    for p in snap.phases:
        for v in p.preflight.verdicts if p.preflight is not None else []:
            rows.append([p.name, f"{v.device} / {v.stream}", ", ".join(v.workloads),
                         str(v.status), str(v.detail) + (" (cached)" if v.cached else "")])
    if not rows:
        return None
    s = Section("XSched preflight")
    s.paragraphs.append("Before each XSched phase, a few seconds of tiny GPU work ran under the "
                        "shim with each workload's XSched environment, on a created and on the "
                        "default stream (stream 'graph': the same work captured once as a CUDA "
                        "graph and replayed, for workloads that capture graphs). A crash, hang "
                        "or 'not-scheduled' on the stream kind a workload uses fails the phase "
                        "before its model loads; 'crashed-at-exit' (the probe ran engaged to its "
                        "end, then died while exiting) lets it go on, warned.")
    s.tables.append(("", Table(["phase", "device / stream", "for", "verdict", "detail"], rows)))
    return s


def calibrate_section(snap: SessionSnapshot) -> Section | None:
    cal = calibrate(snap)
    if cal is None:
        return None
    s = Section(f"Calibration: where {cal.workload}'s latency goes")
    s.paragraphs.append(f"**{cal.verdict}**")
    s.paragraphs.append("shim overhead = alone under XSched - alone native; contention = "
                        "together native - alone native; XSched recovers = together native - "
                        "together under XSched (positive = XSched helps). All in ms.")
    s.tables.append(("", Table(
        ["percentile", "alone native", "alone XSched", "together native", "together XSched",
         "shim overhead", "contention", "XSched recovers"],
        [[r.pct, num(r.alone_native), num(r.alone_xsched), num(r.together_native),
          num(r.together_xsched), num(r.shim_overhead), num(r.contention), num(r.recovered)]
         for r in cal.rows])))
    s.paragraphs.append(f"Low-priority throughput together: {num(cal.low_native_sps, 1)} "
                        f"samples/s native, {num(cal.low_xsched_sps, 1)} under XSched "
                        f"({num(cal.low_price_pct, 1)}%).")
    return s


def attribution_section(snap: SessionSnapshot) -> Section | None:
    slo = snap.scenario.slo
    rows = []
    for p in snap.phases:
        a = attribute(p, slo.latency_ms if slo else None, slo.workload if slo else None)
        if a is None:
            continue
        rows.append([p.name, a.workload, f"> {a.threshold_ms:.2f} ms ({a.threshold_kind})"]
                    + [str(a.counts[c]) for c in a.counts] + [a.sentence()])
    if not rows:
        return None
    from xwatch.core.analysis.gpu.attribution import CATEGORIES

    s = Section("Tail attribution under XSched")
    s.paragraphs.append("For each high-priority request slower than the SLO (else the phase "
                        "P99): what the /xqueues polls taken while it was open showed (the "
                        "nearest poll within 0.15 s when none fell inside it).")
    s.tables.append(("", Table(["phase", "workload", "slow =", *[f"while {c}" if c != "unknown"
                                                              else c for c in CATEGORIES],
                                "summary"], rows)))
    return s


def sweep_section(snap: SessionSnapshot) -> Section | None:
    rows, note = frontier_rows(snap)
    if not rows:
        return None
    mode = next((p.mode for p in snap.phases if p.setting), "xsched")
    s = Section(f"Sweep: {'MPS' if mode == 'mps' else 'XSched'} settings against native")
    s.paragraphs.append(note)
    s.tables.append(("", Table(["phase", "setting", "status", "HIGH P50 (ms)", "HIGH P99 (ms)",
                                "LOW samples/s", "P99 vs native", "LOW vs native", "frontier"],
                               rows)))
    return s


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
    """The verdict box: what changed, with intervals, pooled over repeats; then each
    repeat, so a reader sees the spread."""
    ans = answer(snap)
    if not ans:
        return None
    s = Section("Answer")
    lines = answer_lines(snap)
    s.paragraphs.append("  \n".join(f"**{ln}**" if i < len(ans) else ln
                                     for i, ln in enumerate(lines)))
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


def isolation_section(snap: SessionSnapshot) -> Section | None:
    """What was removed from each phase's environment, and what the maps showed."""
    rows = []
    removed = []
    for p in snap.phases:
        iso = p.isolation
        if iso is None:
            continue
        for r in iso.removed:
            removed.append([p.name, f"`{r.name}`", str(r.why)])
        for name, w in iso.workloads.items():
            rows.append([p.name, name, str(w.verdict), ", ".join(w.libraries) or "none",
                         str(w.origin or "-")])
    if not rows and not removed:
        return None
    s = Section("Isolation: each mode's environment, proven")
    s.paragraphs.append("Each phase starts from the user's environment minus the other modes' "
                        "traces; once each workload ran, its /proc/PID/maps (and its "
                        "children's) was read for XSched libraries. 'clean' = read and none "
                        "found; 'unverified' = could not be read.")
    if removed:
        s.tables.append(("Removed", Table(["phase", "variable", "why"], removed)))
    if rows:
        s.tables.append(("Proof", Table(["phase", "workload", "verdict", "XSched libraries "
                                         "mapped", "came from"], rows)))
    return s


def mps_section(snap: SessionSnapshot) -> Section | None:
    rows = []
    notes = []
    for p in snap.phases:
        m = p.mps
        if m is None:
            continue
        pf = m.preflight
        # the daemon's exit as the snapshot's JSON has it
        dx = msgspec.to_builtins(m.daemon_exit) if m.daemon_exit else None
        notes.append(f"**{p.name}**: daemon `{' '.join(m.daemon_cmd)}` (pid "
                     f"{m.daemon_pid}), pipe directory `{m.pipe_dir}`, servers "
                     f"{m.servers or '-'}; preflight {pf.verdict if pf else '-'}"
                     + (f" ({pf.detail})" if pf and pf.detail else "")
                     + (f"; daemon exit {dx}" if dx else ""))
        for name, w in m.workloads.items():
            env = m.env.get(name) or {}
            rows.append([p.name, name, str(w.status), str(w.server or "-"),
                         ", ".join(f"`{k}={v}`" for k, v in sorted(env.items())
                                   if k.startswith("CUDA_MPS_") and "DIRECTORY" not in k),
                         "; ".join(w.warnings) or "-"])
    if not notes:
        return None
    s = Section("MPS engagement (evidence, not settings)")
    s.paragraphs += notes
    s.tables.append(("", Table(["phase", "workload", "status", "server", "client settings",
                                "warnings"], rows)))
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
    for p in pts:
        runs = [q.phase for q in pts if q.label == p.label and q.ok]  # repeats
        p99c = latency_change(hi.name, 99.0, natives, runs) \
            if hi is not None and p.ok and not p.native else None
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
            "same as native (within noise)" if p.label in same else
            "yes" if p.label in front else ""])
    best = sorted(front - {"native"} - same)
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
               if any(side_by_side(p) for p in snap.phases) else ""))
    return rows, note


