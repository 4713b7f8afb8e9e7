"""Shareable reports of a snapshot: builds the ``Report`` model and writes it as
Markdown and as one self-contained HTML file.

Both renderings come from the same model, so the numbers in the two are the same
by construction. Charts in the HTML are inline SVG (``charts``): no network, no
scripts.
"""

from __future__ import annotations

import math
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from xwatch.core.analysis.attribution import attribute
from xwatch.core.analysis.calibrate import calibrate
from xwatch.core.analysis.frontier import frontier, sweep_points
from xwatch.core.analysis.gpus import gpu_groups, rollup
from xwatch.core.analysis.intervals import CI_PERCENTILES, Hist, hist_of, percentile_interval
from xwatch.core.analysis.kernels import analyze, capture_cost, clip, union
from xwatch.core.analysis.phases import baseline, by_priority, label
from xwatch.core.analysis.pooled import needed, too_few
from xwatch.core.analysis.verdict import (
    UNMEASURED,
    answer,
    answer_lines,
    latency_change,
    rate_change,
    steps,
)
from xwatch.core.engine.snapshot import SessionSnapshot, WorkloadSnapshot
from xwatch.core.export.charts import build_charts
from xwatch.core.export.html import render_html
from xwatch.core.export.markdown import render_markdown
from xwatch.core.export.model import Report, Section, Table, change, num
from xwatch.core.export.snapshot import _atomic_write, load_snapshot, load_snapshot_dict, snapshot_from_dict
from xwatch.core.export.svgchart import lane_chart

LAT_ROWS = (("mean", "mean (ms)"), ("std", "std (ms)"), ("min", "min (ms)"), ("p50", "P50 (ms)"),
            ("p90", "P90 (ms)"), ("p95", "P95 (ms)"), ("p99", "P99 (ms)"),
            ("p999", "P99.9 (ms)"), ("max", "max (ms)"))


def build_report(snap: SessionSnapshot) -> Report:
    scen = snap.scenario
    env = snap.extra.get("environment") or {}
    tel = snap.extra.get("telemetry") or {}
    secs: list[Section] = []
    adv = _advice_section(snap)
    if adv is not None:
        secs.append(adv)
    ans = _answer_section(snap)
    if ans is not None:
        secs.append(ans)

    # --- scenario
    s = Section("Scenario")
    s.paragraphs.append(f"**{scen.name}**: {scen.description or '(no description)'}  \n"
                        f"Source: `{scen.source}`; planned {scen.duration_s:g} s per phase; "
                        f"window for live percentiles {scen.window_s:g} s.")
    s.tables.append(("", Table(
        ["workload", "priority", "what", "batch", "target rate", "device", "stream"],
        [[w.name, str(w.priority), w.describe() if w.model else "`" + " ".join(w.command or ())
          + "`", str(w.batch), f"{w.rate:g}/s" if w.rate else "closed loop",
          w.device if w.model else "-", w.stream if w.model else "-"]
         for w in scen.workloads])))
    if scen.slo:
        s.paragraphs.append(f"Objective (SLO): {scen.slo.workload} P{scen.slo.percentile:g} < "
                            f"{scen.slo.latency_ms:g} ms.")
    secs.append(s)

    # --- environment
    e = Section("Environment")
    hellos = [w.hello for p in snap.phases for w in p.workloads if w.hello]
    gpus = sorted({str(h.get("device_name")) for h in hellos if h.get("device_name")})
    torch_v = sorted({str(h.get("torch")) for h in hellos if h.get("torch")})
    rows = [["host", f"{env.get('host', '?')} ({env.get('os', '?')}, {env.get('cpus', '?')} CPUs)"],
            ["python (xwatch)", str(env.get("python", "?"))],
            ["device(s) used", ", ".join(gpus) or "-"],
            ["torch", ", ".join(torch_v) or "-"],
            ["driver", str((tel.get("info") or {}).get("driver") or "-")],
            ["telemetry", f"{tel.get('backend', 'off')} ({tel.get('reason', '')})" if tel else "off"]]
    for p in snap.phases:
        xs = p.extra.get("xsched")
        if xs:
            ver = f"{xsched_version(xs)}, " if "version" in xs else ""  # older snapshots: as before
            rows.append([f"XSched ({p.name})", f"{ver}root `{xs.get('root')}`, "
                         f"policy {policy_label(xs)}, xserver "
                         f"`{' '.join(xs.get('xserver_cmd') or [])}`"])
    e.tables.append(("", Table(["what", "value"], rows)))
    for p in snap.phases:
        xs = p.extra.get("xsched")
        if not xs:
            continue
        env_rows = []
        for name, wenv in (xs.get("env") or {}).items():
            env_rows.append([name, "<br>".join(f"`{k}={v}`" for k, v in sorted(wenv.items())
                                               if k.startswith(("XSCHED_", "LD_")))])
        e.tables.append((f"XSched settings in {p.name}", Table(["workload", "variables"],
                                                               env_rows)))
    secs.append(e)

    # --- phases
    ph = Section("Phases")
    ph.tables.append(("", Table(
        ["phase", "mode", "status", "started (UTC)", "measured (s)", "kernel captures"],
        [[label(p), p.mode, p.status, p.started_at[:19].replace("T", " "), num(p.elapsed_s, 1),
          ", ".join(f"{c.get('seconds', 0):g} s at {c.get('t', 0):.1f} s"
                    for c in p.extra.get("captures") or [] if c.get("id")) or "-"]
         for p in snap.phases])))
    secs.append(ph)
    g = _gpu_section(snap)
    if g is not None:
        secs.append(g)
    secs += _capture_sections(snap)

    # --- per workload
    base = baseline(snap)
    last = snap.phases[-1] if snap.phases else None
    cmp_ok = base is not None and last is not None and last is not base
    for wspec in scen.workloads:
        sec = Section(f"Workload {wspec.name} (priority {wspec.priority})")
        header = ["metric"] + [label(p) for p in snap.phases]
        if cmp_ok:
            assert base is not None and last is not None
            header.append(f"change {last.name} vs {base.name}")
        rows = []

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

        row("state", _state_text)
        row("requests", lambda w: float(w.count), 0)
        row("achieved rate (req/s)", lambda w: w.achieved_rate)
        row("samples/s", lambda w: w.samples_per_s, 1)
        for key, row_name in LAT_ROWS:
            row(row_name, lambda w, key=key: w.phase.get(key) if w.count else math.nan)
        row("late starts", lambda w: float(w.late), 0)
        row("errors", lambda w: float(w.errors), 0)
        row("unfinished at end", lambda w: float(w.unfinished) if w.unfinished is not None
            else math.nan, 0)
        row("longest unfinished wait (ms)", lambda w: w.unfinished_max_wait_ms)
        row("stalls", lambda w: "; ".join(
            f"{x['since']:.1f}-" + (f"{x['until']:.1f}" if x.get("until") is not None else "end")
            + f" s ({x.get('why', '')})" for x in w.stalls) or "none")
        named = list(dict.fromkeys(k for p in snap.phases if (w := p.workload(wspec.name))
                                   for k in w.metrics))
        for mname in named:  # named per-request metrics: ttft_ms, tpot_ms, ...
            row(f"{mname}: values", lambda w, m=mname: float(w.metrics[m].count)
                if m in w.metrics else math.nan, 0)
            for key, q in CI_PERCENTILES:
                row(f"{mname}: {key.upper()} [95%]", lambda w, m=mname, q=q: (
                    percentile_interval(Hist(w.metrics[m].hist, w.metrics[m].phase.min,
                                             w.metrics[m].phase.max, w.metrics[m].integral),
                                        q).text() if m in w.metrics and w.metrics[m].hist
                    else "-"))
        if scen.slo and scen.slo.workload == wspec.name:
            what = f"{scen.slo.named} " if scen.slo.named else ""
            row(f"goodput ({what}<= {scen.slo.latency_ms:g} ms, %)",
                lambda w: (w.goodput * 100) if w.goodput is not None else math.nan, 1)
        sec.tables.append(("", Table(header, rows)))
        notes = sorted({w.unfinished_note for p in snap.phases for w in p.workloads
                        if w.name == wspec.name and w.unfinished and w.unfinished_note})
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
        if few:  # issue 41: a percentile from too few requests says so
            sec.paragraphs.append("Too few requests: " + "; ".join(few) + ".")
        secs.append(sec)

    # --- trade-off
    if base is not None and len(snap.phases) > 1:
        t = Section("Trade-off: high-priority tail vs low-priority throughput")
        hi, lows = by_priority(base)
        rows = []
        for p in snap.phases:
            if p is base:
                continue
            phi = p.workload(hi.name) if hi else None
            r = [label(p)]
            if hi and phi:
                r += [change(hi.phase.p50, phi.phase.p50), change(hi.phase.p99, phi.phase.p99)]
            else:
                r += ["-", "-"]
            lw_changes = []
            for lw in lows:
                plw = p.workload(lw.name)
                lw_changes.append(f"{lw.name}: " + (change(lw.samples_per_s, plw.samples_per_s, 1)
                                                    if plw else "-"))
            r.append("; ".join(lw_changes) or "-")
            rows.append(r)
        hn = hi.name if hi else "high"
        t.paragraphs.append(f"Each phase against the baseline {base.name}. Negative latency "
                            "change = better for the high-priority workload; negative "
                            "throughput change = the cost paid by the low-priority ones.")
        t.tables.append(("", Table(["phase", f"{hn} P50 (ms)", f"{hn} P99 (ms)",
                                    "low-priority samples/s"], rows)))
        secs.append(t)

    # --- SLO
    if scen.slo:
        slo = scen.slo
        sl = Section(f"Objective: {slo.workload} P{slo.percentile:g} < {slo.latency_ms:g} ms")
        rows = []
        for p in snap.phases:
            w = p.workload(slo.workload)
            if w is None or w.count == 0:
                rows.append([label(p), "-", "no data", "-"])
                continue
            iv = percentile_interval(hist_of(w), slo.percentile) if w.hist else None
            v = iv.est if iv is not None else _percentile_of(w, slo.percentile)
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
        secs.append(sl)

    # --- XSched engagement
    xs_rows = []
    for p in snap.phases:
        xs = p.extra.get("xsched")
        if not xs:
            continue
        for name, info in (xs.get("workloads") or {}).items():
            st = info.get("stats") or {}
            xs_rows.append([p.name, name, str(info.get("status")), str(info.get("scheduler")),
                            f"{st.get('max_queues', st.get('queues', 0))} "
                            f"(last {st.get('queues', 0)})",
                            f"{st.get('ready', 0)}/{st.get('polls', 0)}",
                            f"{st.get('suspended', 0)}/{st.get('polls', 0)}",
                            "; ".join(info.get("warnings") or []) or "-"])
    if xs_rows:
        x = Section("XSched engagement (evidence, not settings)")
        x.paragraphs.append("scheduler = what the shim logged; ready/suspended = polls of "
                            "xserver's /xqueues in which this workload had a queue ready / "
                            "suspended. 'not-scheduled' means requests completed while its "
                            "queues were never seen ready.")
        listen = next((p.extra["xsched"].get("listen") for p in snap.phases
                       if (p.extra.get("xsched") or {}).get("listen")), None)
        if listen:
            x.paragraphs.append(f"Note: {listen}.")
        x.tables.append(("", Table(["phase", "workload", "status", "scheduler", "queues max",
                                    "ready", "suspended", "warnings"], xs_rows)))
        secs.append(x)

    for extra_sec in (_isolation_section(snap), _mps_section(snap),
                      _preflight_section(snap), _calibrate_section(snap),
                      _attribution_section(snap), _sweep_section(snap)):
        if extra_sec:
            secs.append(extra_sec)

    # --- failures
    fails = []
    for p in snap.phases:
        if p.status == "failed" and p.extra.get("error"):
            fails.append(f"**{p.name}**: {p.extra['error']}")
        for w in p.workloads:
            if w.state == "failed" or (w.exit and not w.exit.ran_to_end):
                lines = [f"**{p.name} / {w.name}**: {w.exit.describe() if w.exit else w.state}"]
                if w.error:
                    lines.append(f"error: `{w.error}`")
                fails.append("  \n".join(lines))
                tail = "\n".join(w.stderr_tail[-12:])
                env_in_force = (w.launch or {}).get("env") or {}
                shown = {k: v for k, v in env_in_force.items()
                         if k.startswith(("XSCHED_", "LD_", "HIP_", "CUDA_"))}
                if tail:
                    fails.append("stderr (last lines):\n\n" + "\n".join("    " + ln for ln in
                                                                      tail.splitlines()))
                if shown:
                    fails.append("environment in force: " + ", ".join(
                        f"`{k}={v}`" for k, v in sorted(shown.items())))
    if fails:
        secs.append(Section("Failures", paragraphs=fails))

    # --- reproduce
    repro = Section("Reproduce")
    argv = env.get("argv") or []
    cmd = "xwatch " + " ".join(shlex.quote(a) for a in argv[1:]) if len(argv) > 1 else \
        f"xwatch run {shlex.quote(scen.source)} --headless --duration {scen.duration_s:g} " \
        "--export OUT"
    repro.code = cmd
    secs.append(repro)
    return Report(f"xwatch report: {scen.name}", secs)


def _gpu_section(snap: SessionSnapshot) -> Section | None:
    """Per GPU, per phase: HIGH P50/P99, LOW samples/s, utilization; and the roll-up."""
    tel = snap.extra.get("telemetry")
    rows, roll_rows = [], []
    for p in snap.phases:
        groups = gpu_groups(p, tel)
        for g in groups:
            rows.append([label(p), str(g.gpu), g.bus_id or "?", g.name or "?",
                         g.high.name if g.high else "-", num(g.high_p50), num(g.high_p99),
                         num(g.low_samples_per_s, 1),
                         "-" if g.util_pct is None else f"{g.util_pct:.0f}%",
                         g.matched_by or "none"])
        if groups:
            r = rollup(groups)
            roll_rows.append([label(p), ", ".join(map(str, r["gpus"])),
                              f"{num(r['worst_high_p99_ms'])} (GPU {r['worst_gpu']})",
                              num(r["best_high_p99_ms"]), num(r["low_samples_per_s"], 1),
                              str(r["high_requests"])])
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


def _capture_sections(snap: SessionSnapshot) -> list[Section]:
    """Per kernel capture: what HIGH's kernels waited behind, its 10 slowest requests
    broken down, the capture's own cost, and (HTML) the kernel lane."""
    out = []
    for p in snap.phases:
        prio = {w.name: w.priority for w in p.workloads}
        for cap in p.extra.get("captures") or []:
            a = analyze(cap, prio) if cap.get("traces") else None
            rec = (cap.get("analysis") or {}) if a is None else a.as_dict()
            if not rec:
                continue
            s = Section(f"Kernel capture {rec['capture']} in {label(p)} "
                        f"({cap.get('seconds', 0):g} s, {cap.get('t', 0):.1f} s after the "
                        "phase started)")
            low = ", ".join(rec["lows"]) or "nothing of lower priority"
            s.paragraphs.append(
                f"{rec['high']}'s kernels took {num(rec['high_kernel_ms'])} ms where the same "
                f"kernels take {num(rec['high_alone_ms'])} ms without {low} running (stretch "
                f"{num(rec['stretch'])}x); {_share(rec['overlap_share'])} of its kernel time "
                f"overlapped {low}'s kernels. Per request: {num(rec['queue_ms_mean'])} ms from "
                f"its start to its first kernel, {num(rec['gap_ms_mean'])} ms with no kernel of "
                f"it running (launches, queueing, synchronization); {low} ran nothing during "
                f"{_share(rec['low_quiet_share'])} of the time a request was open. Clock check: "
                f"{_share(rec['aligned'])} of {rec['high']}'s kernels fall inside its requests. "
                "Kernels: " + ", ".join(f"{n} {k}" for n, k in rec["kernels"].items()) + ".")
            hi = p.workload(rec["high"])
            if hi is not None:
                c = capture_cost(hi.series, cap)
                s.paragraphs.append(
                    f"The capture's own cost on {rec['high']}: per-second P50 "
                    f"{num(c['before_p50_ms'])} ms before, {num(c['during_p50_ms'])} ms during; "
                    f"the worst request {num(c['before_max_ms'])} ms before, "
                    f"{num(c['during_max_ms'])} ms during (the profiler's teardown after the "
                    "window lands on the next requests). This phase's statistics include it.")
            s.tables.append((f"{rec['high']}'s 10 slowest requests in the capture", Table(
                ["seq", "at (ms)", "span ms", "queue ms", "kernels ms", "stretch",
                 f"alongside {low} ms", "no kernel ms", "LOW quiet ms"],
                [[str(b["seq"]), num(b["start"] * 1000, 1), num(b["span_ms"]),
                  num(b["queue_ms"]), num(b["kernel_ms"]), num(b["stretch"]),
                  num(b["overlap_ms"]), num(b["gap_ms"]), num(b["low_quiet_ms"])]
                 for b in rec["slowest"]])))
            if a is not None:
                s.charts.append(_lane_svg(cap, a))
            for note in rec.get("notes") or []:
                s.paragraphs.append(f"Note: {note}.")
            out.append(s)
    return out


def _share(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.0f}%"


def _lane_svg(cap: dict[str, Any], a: Any) -> str:
    """The capture's busiest second around HIGH's slowest request, as SVG lanes."""
    slow = a.slowest[0] if a.slowest else None
    mid = a.t0 + (slow.start + slow.span_ms / 2000) if slow else (a.t0 + a.t1) / 2
    lo = max(a.t0, mid - 0.05)
    hi = min(a.t1, lo + 0.1)
    traces = cap["traces"]
    rows = [(n, clip(union([(k[2], k[3]) for k in traces[n]["kernels"]]), lo, hi))
            for n in (a.high, *a.lows)]
    cut = {b.seq for b in a.slowest[:3]}
    brackets = [(max(lo, q[1]), min(hi, q[2]), q[0] in cut)
                for q in traces[a.high].get("requests") or [] if q[2] > lo and q[1] < hi]
    return lane_chart(f"kernels around {a.high}'s slowest request (100 ms; red: the 3 "
                      "slowest requests)", rows, brackets, (lo, hi))


def xsched_version(xs: dict[str, Any]) -> str:
    """"XSched 1.2.0" as the install said (a snapshot from before versions were read:
    "XSched version not recorded")."""
    if "version" not in xs:
        return "XSched version not recorded"
    return f"XSched {xs['version']}" if xs.get("version") else \
        f"XSched version unknown ({xs.get('version_source') or 'no XSchedConfig.cmake'})"


def policy_label(xs: dict[str, Any]) -> str:
    """"HPF (1)": the policy with the install's own number for it, when recorded."""
    num = xs.get("policy_number")
    return f"{xs.get('policy')}" + (f" ({num})" if num is not None else "")


def _preflight_section(snap: SessionSnapshot) -> Section | None:
    rows = []
    for p in snap.phases:
        pf = p.extra.get("preflight") or {}
        for v in pf.get("verdicts") or []:
            rows.append([p.name, f"{v.get('device')} / {v.get('stream')}",
                         ", ".join(v.get("workloads") or []), str(v.get("status")),
                         str(v.get("detail")) + (" (cached)" if v.get("cached") else "")])
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


def _calibrate_section(snap: SessionSnapshot) -> Section | None:
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


def _attribution_section(snap: SessionSnapshot) -> Section | None:
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
    from xwatch.core.analysis.attribution import CATEGORIES

    s = Section("Tail attribution under XSched")
    s.paragraphs.append("For each high-priority request slower than the SLO (else the phase "
                        "P99): what the /xqueues polls taken while it was open showed (the "
                        "nearest poll within 0.15 s when none fell inside it).")
    s.tables.append(("", Table(["phase", "workload", "slow =", *[f"while {c}" if c != "unknown"
                                                              else c for c in CATEGORIES],
                                "summary"], rows)))
    return s


def _sweep_section(snap: SessionSnapshot) -> Section | None:
    rows, note = frontier_rows(snap)
    if not rows:
        return None
    mode = next((p.mode for p in snap.phases if p.extra.get("setting")), "xsched")
    s = Section(f"Sweep: {'MPS' if mode == 'mps' else 'XSched'} settings against native")
    s.paragraphs.append(note)
    s.tables.append(("", Table(["phase", "setting", "status", "HIGH P50 (ms)", "HIGH P99 (ms)",
                                "LOW samples/s", "P99 vs native", "LOW vs native", "frontier"],
                               rows)))
    return s


def _state_text(w: WorkloadSnapshot) -> str:
    if w.exit is None:
        return w.state
    if w.exit.reason == "stopped" and w.exit.ran_to_end:
        return "ran to end"
    if w.exit.reason == "finished":
        return "finished (exit 0)"
    stalled = " after a stall" if w.stalls else ""
    return w.exit.describe() + stalled


def _percentile_of(w: WorkloadSnapshot, q: float) -> float:
    if w.hist:  # exact nearest rank on the phase's histogram
        return percentile_interval(hist_of(w), q).est
    table = {50.0: "p50", 90.0: "p90", 95.0: "p95", 99.0: "p99", 99.9: "p999"}
    if q in table:
        return w.phase.get(table[q])
    # a snapshot without its histogram (older xwatch): the recorded CDF (1% steps)
    for v, f in w.cdf:
        if f * 100 >= q - 1e-9:
            return v
    return math.nan


def _advice_section(snap: SessionSnapshot) -> Section | None:
    """``xwatch advise``: the answer, the scenario lines, every candidate with its
    intervals and status, the frontier (braille here, SVG in the HTML charts)."""
    from xwatch.core.analysis import race
    from xwatch.core.export.braille import scatter

    adv = snap.extra.get("advice")
    if not isinstance(adv, dict):
        return None
    s = Section("Advice")
    s.paragraphs.append(f"**{race.sentence(adv)}**")
    toml = race.toml_for(adv)
    if toml:
        s.code = "\n".join(toml)

    def iv(d: dict[str, Any], fmt: str) -> str:
        if d.get("estimate") is None:
            return "-"
        lo = "?" if d.get("lo") is None else fmt.format(d["lo"])
        hi = "?" if d.get("hi") is None else fmt.format(d["hi"])
        return f"{fmt.format(d['estimate'])} [{lo}, {hi}]"

    slo = adv["slo"]
    rows = [[c.get("label", c["mode"]), str(c["runs"]), iv(c["slo_metric"], "{:.2f}"),
             iv(c["price"], "{:,.0f}"), c["status"], c.get("reason") or ""]
            for c in sorted(adv["candidates"], key=lambda c: -(c["price"]["estimate"] or 0.0))]
    s.tables.append((f"Candidates (95% intervals over runs, Bonferroni over "
                     f"{len(rows)} candidates)", Table(
                         ["candidate", "runs", f"{slo['workload']} {slo['metric']} (ms)",
                          "price (samples/s)", "status", "why"], rows)))
    pts = [(chr(ord("a") + i), c["price"]["estimate"], c["slo_metric"]["estimate"],
            c["price"]["lo"], c["price"]["hi"], c["slo_metric"]["lo"], c["slo_metric"]["hi"])
           for i, c in enumerate(sorted(adv["candidates"],
                                        key=lambda c: -(c["price"]["estimate"] or 0.0)))
           if c["price"]["estimate"] is not None and c["slo_metric"]["estimate"] is not None]
    plot = scatter(pts, hline=slo["latency_ms"], xlabel="price (samples/s)",
                   ylabel=f"{slo['workload']} {slo['metric']} ms; dots: the SLO")
    if plot:
        s.paragraphs.append("Frontier (marks a, b, ... in the table's order):\n\n```\n"
                            + "\n".join(plot) + "\n```")
    notes = [f"Runs: {adv['runs']} in {adv['seconds'] / 60:.1f} min over {adv.get('rounds', '?')} "
             f"rounds; the full grid of those rounds: {adv.get('grid_runs', '?')} runs."]
    if adv.get("undecided"):
        notes.append(adv["undecided"])
    notes += [f"Skipped {m}: {why}" for m, why in (adv.get("skipped") or {}).items()]
    s.paragraphs.append("  \n".join(notes))
    return s


def _answer_section(snap: SessionSnapshot) -> Section | None:
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
            w = p.workload(hi.name) if hi else None
            iv = percentile_interval(hist_of(w), 99.0) if w is not None and w.hist else None
            if iv is not None:
                p99s.append(iv.est)
            lows = [x for x in p.workloads if hi is None or x.priority < hi.priority]
            rows.append([key, str(p.extra.get("repeat", 1)), p.status,
                         percentile_interval(hist_of(w), 50.0).text()
                         if iv is not None and w is not None else "-",
                         iv.text() if iv else "-",
                         "; ".join(f"{x.name} {num(x.samples_per_s, 1)}" for x in lows) or "-"])
        if len(ps) > 1 and p99s:
            rows.append([key, "spread of P99", "", "", f"{min(p99s):.2f} to {max(p99s):.2f}", ""])
    hn = hi.name if hi else "high"
    s.tables.append(("Each phase (95% intervals)", Table(
        ["step", "repeat", "status", f"{hn} P50 (ms)", f"{hn} P99 (ms)", "samples/s"], rows)))
    return s


def _isolation_section(snap: SessionSnapshot) -> Section | None:
    """What was removed from each phase's environment, and what the maps showed."""
    rows = []
    removed = []
    for p in snap.phases:
        iso = p.extra.get("isolation") or {}
        for r in iso.get("removed") or []:
            removed.append([p.name, f"`{r.get('name')}`", str(r.get("why"))])
        for name, w in (iso.get("workloads") or {}).items():
            rows.append([p.name, name, str(w.get("verdict")),
                         ", ".join(w.get("libraries") or []) or "none",
                         str(w.get("origin") or "-")])
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


def _mps_section(snap: SessionSnapshot) -> Section | None:
    rows = []
    notes = []
    for p in snap.phases:
        m = p.extra.get("mps")
        if not m:
            continue
        pf = m.get("preflight") or {}
        notes.append(f"**{p.name}**: daemon `{' '.join(m.get('daemon_cmd') or [])}` (pid "
                     f"{m.get('daemon_pid')}), pipe directory `{m.get('pipe_dir')}`, servers "
                     f"{m.get('servers') or '-'}; preflight {pf.get('verdict', '-')}"
                     + (f" ({pf.get('detail')})" if pf.get("detail") else "")
                     + (f"; daemon exit {m['daemon_exit']}" if m.get("daemon_exit") else ""))
        for name, w in (m.get("workloads") or {}).items():
            env = (m.get("env") or {}).get(name) or {}
            rows.append([p.name, name, str(w.get("status")), str(w.get("server") or "-"),
                         ", ".join(f"`{k}={v}`" for k, v in sorted(env.items())
                                   if k.startswith("CUDA_MPS_") and "DIRECTORY" not in k),
                         "; ".join(w.get("warnings") or []) or "-"])
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
    nat = next((p for p in pts if p["native"]), None)
    natives = [p["phase"] for p in pts if p["native"] and p["ok"]]
    hi = by_priority(natives[0])[0] if natives else None
    lows = by_priority(natives[0])[1] if natives else []
    rows = []
    same: set[str] = set()
    for p in pts:
        runs = [q["phase"] for q in pts if q["label"] == p["label"] and q["ok"]]  # repeats
        p99c = latency_change(hi.name, 99.0, natives, runs) \
            if hi is not None and p["ok"] and not p["native"] else None
        lowc = [c for lw in lows for c in [rate_change(lw.name, natives, runs)] if c] \
            if p["ok"] and not p["native"] else []
        if p99c is not None and p99c.basis != UNMEASURED and p99c.way == 0 \
                and all(c.way == 0 for c in lowc):
            same.add(p["label"])  # indistinguishable from native: never called better
        rows.append([
            p["phase"].name, p["label"], p["status"] if p["ok"] else f"FAILED ({p['status']})",
            num(p["p50"]), num(p["p99"]), num(p["low_sps"], 1),
            p99c.text() if p99c is not None else
            (change(nat["p99"], p["p99"]) if nat and not p["native"] else "-"),
            change(nat["low_sps"], p["low_sps"], 1) if nat and not p["native"] else "-",
            "same as native (within noise)" if p["label"] in same else
            "yes" if p["label"] in front else ""])
    best = sorted(front - {"native"} - same)
    note = ("Frontier: settings for which no other point has both a lower HIGH P99 and a "
            "higher LOW throughput, leaving out settings whose P99 and LOW throughput are both "
            "within noise of native (95% intervals). On the frontier: "
            + (", ".join(best) if best else "no setting (native dominates, or none differs "
               "from it beyond noise)")
            + ". Failed settings are listed with their status and are not points."
            + (" With one run per setting and no recorded noise floor, no setting can be "
               "told from native's run-to-run noise: `xwatch noise` records it, --repeat 3 "
               "measures it." if any(r[6].endswith("unmeasured") for r in rows) else ""))
    return rows, note


def write_reports(snapshot_path: str | os.PathLike[str]) -> list[Path]:
    """Write report.md and report.html next to a snapshot."""
    p = Path(snapshot_path)
    doc = load_snapshot_dict(p)
    snap = snapshot_from_dict(doc, str(p))
    rep = build_report(snap)
    d = p.parent if p.is_file() else p
    md, hp = d / "report.md", d / "report.html"
    _atomic_write(md, render_markdown(rep).encode())
    _atomic_write(hp, render_html(rep, build_charts(snap)).encode())
    return [md, hp]


def write_report_cli(path: str, fmt: str, out: str | None) -> int:
    snap = load_snapshot(path)
    rep = build_report(snap)
    text = render_markdown(rep) if fmt == "md" else render_html(rep, build_charts(snap))
    if out is None and fmt == "html":
        base = Path(path)
        out = str((base if base.is_dir() else base.parent) / "report.html")
    if out is None or out == "-":
        sys.stdout.write(text)
        return 0
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(Path(out), text.encode())
    print(out)
    return 0
