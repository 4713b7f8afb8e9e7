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

from msgspec import UNSET, UnsetType

from xwatch.core import model as M
from xwatch.core.analysis.phases import baseline, by_priority, label, shared_lines
from xwatch.core.analysis.saturation import saturation
from xwatch.core.analysis.server_view import server_line
from xwatch.core.analysis.stats.copies import combine, copies_of, role
from xwatch.core.analysis.stats.intervals import CI_PERCENTILES, hist_of, percentile_interval
from xwatch.core.analysis.stats.pooled import needed, too_few
from xwatch.core.analysis.stats.runs import RunValue
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot
from xwatch.core.engine.stats import nan_if_none, stat
from xwatch.core.export.render.charts import build_charts
from xwatch.core.export.render.html import render_html
from xwatch.core.export.render.markdown import render_markdown
from xwatch.core.export.render.model import Report, Section, Table, change, num
from xwatch.core.export.sections import (
    advice_section,
    answer_section,
    attribution_section,
    calibrate_section,
    capture_sections,
    gpu_section,
    isolation_section,
    mps_section,
    percentile_of,
    policy_label,
    preflight_section,
    state_text,
    sweep_section,
    xsched_version,
)
from xwatch.core.export.snapshot import _atomic_write, load_snapshot

LAT_ROWS = (("mean", "mean (ms)"), ("std", "std (ms)"), ("min", "min (ms)"), ("p50", "P50 (ms)"),
            ("p90", "P90 (ms)"), ("p95", "P95 (ms)"), ("p99", "P99 (ms)"),
            ("p999", "P99.9 (ms)"), ("max", "max (ms)"))


def joined_note(j: M.Joined | UnsetType) -> str:
    """How a joined daemon (another session's) reads in the environment table."""
    if not isinstance(j, M.Joined):
        return ""
    change = f"; this session set its policy {j.policy_change}" if j.policy_change else ""
    return (f" (another session's, joined: pid {j.pid}, user {j.user}; not started or "
            f"stopped by this session{change})")


def _copies_pct(p: PhaseSnapshot, name: str, key: str) -> float:
    """``key`` ("p50") of workload ``name`` in ``p``: every GPU's copy, their geometric
    mean (``analysis.stats.copies``); one copy: its own."""
    return combine([RunValue(nan_if_none(getattr(w.phase, key)), math.nan)
                    for w in copies_of(p, name)], key).est


def build_report(snap: SessionSnapshot) -> Report:
    scen = snap.scenario
    env = snap.environment
    tel = snap.telemetry
    secs: list[Section] = []
    adv = advice_section(snap)
    if adv is not None:
        secs.append(adv)
    ans = answer_section(snap)
    if ans is not None:
        secs.append(ans)

    # --- scenario
    s = Section("Scenario")
    s.paragraphs.append(f"**{scen.name}**: {scen.description or '(no description)'}  \n"
                        f"Source: `{scen.source}`; planned {scen.duration_s:g} s per phase; "
                        f"window for live percentiles {scen.window_s:g} s.")
    s.tables.append(("", Table(
        ["workload", "priority", "what", "batch", "target rate", "device", "stream"],
        [[w.name, str(w.priority), w.describe() if w.model else "`" + " ".join(
            w.command or w.server or ()) + "`", str(w.batch),
          f"{w.rate:g}/s" if w.rate else "closed loop", w.device if w.model else "-",
          w.stream if w.model else "-"]
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
    rows = [["host", f"{env.host} ({env.os}, {env.cpus} CPUs)" if env else "? (?, ? CPUs)"],
            ["python (xwatch)", env.python if env else "?"],
            ["device(s) used", ", ".join(gpus) or "-"],
            ["torch", ", ".join(torch_v) or "-"],
            ["driver", str(tel.info.driver or "-") if tel is not None else "-"],
            ["telemetry", f"{tel.backend} ({tel.reason})" if tel is not None else "off"]]
    for p in snap.phases:
        xs = p.xsched
        if xs:
            # older snapshots: as before
            ver = f"{xsched_version(xs)}, " if xs.version is not UNSET else ""
            rows.append([f"XSched ({p.name})", f"{ver}root `{xs.root}`, "
                         f"policy {policy_label(xs)}, xserver "
                         f"`{' '.join(xs.xserver_cmd or [])}`" + joined_note(xs.joined)])
        if p.mps and p.mps.joined:
            rows.append([f"MPS ({p.name})", "control daemon" + joined_note(p.mps.joined)])
    e.tables.append(("", Table(["what", "value"], rows)))
    for p in snap.phases:
        xs = p.xsched
        if not xs:
            continue
        env_rows = []
        for name, wenv in xs.env.items():
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
          ", ".join(f"{c.seconds:g} s at {c.t:.1f} s" for c in p.captures if c.id) or "-"]
         for p in snap.phases])))
    ph.paragraphs += [f"**{p.name}** {line}." for p in snap.phases for line in shared_lines(p)]
    secs.append(ph)
    g = gpu_section(snap)
    if g is not None:
        secs.append(g)
    secs += capture_sections(snap)

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
        secs.append(sl)

    # --- XSched engagement
    xs_rows = []
    for p in snap.phases:
        xs = p.xsched
        if not xs:
            continue
        for name, info in xs.workloads.items():
            st = info.stats
            xs_rows.append([p.name, name, str(info.status), str(info.scheduler),
                            f"{st.max_queues} (last {st.queues})",
                            f"{st.ready}/{st.polls}",
                            f"{st.suspended}/{st.polls}",
                            "; ".join(info.warnings) or "-"])
    if xs_rows:
        x = Section("XSched engagement (evidence, not settings)")
        x.paragraphs.append("scheduler = what the shim logged; ready/suspended = polls of "
                            "xserver's /xqueues in which this workload had a queue ready / "
                            "suspended. 'not-scheduled' means requests completed while its "
                            "queues were never seen ready.")
        listen = next((p.xsched.listen for p in snap.phases
                       if p.xsched is not None and p.xsched.listen), None)
        if listen:
            x.paragraphs.append(f"Note: {listen}.")
        x.tables.append(("", Table(["phase", "workload", "status", "scheduler", "queues max",
                                    "ready", "suspended", "warnings"], xs_rows)))
        secs.append(x)

    for extra_sec in (isolation_section(snap), mps_section(snap),
                      preflight_section(snap), calibrate_section(snap),
                      attribution_section(snap), sweep_section(snap)):
        if extra_sec:
            secs.append(extra_sec)

    # --- failures
    fails = []
    for p in snap.phases:
        if p.status == "failed" and p.error:
            fails.append(f"**{p.name}**: {p.error}")
        for w in p.workloads:
            if w.state == "failed" or (w.exit and not w.exit.ran_to_end):
                lines = [f"**{p.name} / {w.name}**: {w.exit.describe() if w.exit else w.state}"]
                if w.error:
                    lines.append(f"error: `{w.error}`")
                fails.append("  \n".join(lines))
                tail = "\n".join(w.stderr_tail[-12:])
                env_in_force = w.launch.env
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
    argv = env.argv if env else []
    cmd = "xwatch " + " ".join(shlex.quote(a) for a in argv[1:]) if len(argv) > 1 else \
        f"xwatch run {shlex.quote(scen.source)} --headless --duration {scen.duration_s:g} " \
        "--export OUT"
    repro.code = cmd
    secs.append(repro)
    return Report(f"xwatch report: {scen.name}", secs)


def write_reports(snapshot_path: str | os.PathLike[str]) -> list[Path]:
    """Write report.md and report.html next to a snapshot."""
    p = Path(snapshot_path)
    snap = load_snapshot(p)
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
