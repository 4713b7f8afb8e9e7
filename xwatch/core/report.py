"""Shareable reports of a snapshot: Markdown and one self-contained HTML file.

Both are rendered from the same ``Report`` model (sections of paragraphs and
tables), so the numbers in the two are the same by construction. Charts in the
HTML are inline SVG (``svgchart``): no network, no scripts.
"""

from __future__ import annotations

import html
import math
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xwatch.core.session import PhaseSnapshot, SessionSnapshot, WorkloadSnapshot
from xwatch.core.snapshot import load_snapshot, load_snapshot_dict, snapshot_from_dict
from xwatch.core.svgchart import line_chart
from xwatch.core.timeline import phase_offsets, to_session_time, workload_series

LAT_ROWS = (("mean", "mean (ms)"), ("std", "std (ms)"), ("min", "min (ms)"), ("p50", "P50 (ms)"),
            ("p90", "P90 (ms)"), ("p95", "P95 (ms)"), ("p99", "P99 (ms)"),
            ("p999", "P99.9 (ms)"), ("max", "max (ms)"))


def num(v: float | None, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:,.{digits}f}"


def change(a: float | None, b: float | None, digits: int = 2) -> str:
    """'b - a (relative %)' with signs, '-' where undefined."""
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return "-"
    d = b - a
    rel = f" ({d / a * 100:+.1f}%)" if a != 0 else ""
    return f"{d:+,.{digits}f}{rel}"


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[tuple[str, Table]] = field(default_factory=list)
    code: str | None = None
    charts: list[str] = field(default_factory=list)  # SVG, HTML only


@dataclass
class Report:
    title: str
    sections: list[Section]


def _by_priority(p: PhaseSnapshot) -> tuple[WorkloadSnapshot | None, list[WorkloadSnapshot]]:
    if not p.workloads:
        return None, []
    ws = sorted(p.workloads, key=lambda w: -w.priority)
    top = ws[0]
    lows = [w for w in ws if w.priority < top.priority]
    return top, lows


def _baseline(snap: SessionSnapshot) -> PhaseSnapshot | None:
    ok = [p for p in snap.phases if p.mode == "native" and p.status != "failed"]
    return ok[0] if ok else (snap.phases[0] if snap.phases else None)


def _label(p: PhaseSnapshot) -> str:
    setting = p.extra.get("setting")
    return f"{p.name} [{setting}]" if setting else p.name


def build_report(snap: SessionSnapshot) -> Report:
    scen = snap.scenario
    env = snap.extra.get("environment") or {}
    tel = snap.extra.get("telemetry") or {}
    secs: list[Section] = []

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
            rows.append([f"XSched ({p.name})", f"root `{xs.get('root')}`, policy "
                         f"{xs.get('policy')}, xserver `{' '.join(xs.get('xserver_cmd') or [])}`"])
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
        ["phase", "mode", "status", "started (UTC)", "measured (s)"],
        [[_label(p), p.mode, p.status, p.started_at[:19].replace("T", " "), num(p.elapsed_s, 1)]
         for p in snap.phases])))
    secs.append(ph)

    # --- per workload
    base = _baseline(snap)
    last = snap.phases[-1] if snap.phases else None
    cmp_ok = base is not None and last is not None and last is not base
    for wspec in scen.workloads:
        sec = Section(f"Workload {wspec.name} (priority {wspec.priority})")
        header = ["metric"] + [_label(p) for p in snap.phases]
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
        for key, label in LAT_ROWS:
            row(label, lambda w, key=key: w.phase.get(key) if w.count else math.nan)
        row("late starts", lambda w: float(w.late), 0)
        row("errors", lambda w: float(w.errors), 0)
        if scen.slo and scen.slo.workload == wspec.name:
            row(f"goodput (<= {scen.slo.latency_ms:g} ms, %)",
                lambda w: (w.goodput * 100) if w.goodput is not None else math.nan, 1)
        sec.tables.append(("", Table(header, rows)))
        secs.append(sec)

    # --- trade-off
    if base is not None and len(snap.phases) > 1:
        t = Section("Trade-off: high-priority tail vs low-priority throughput")
        hi, lows = _by_priority(base)
        rows = []
        for p in snap.phases:
            if p is base:
                continue
            phi = p.workload(hi.name) if hi else None
            r = [_label(p)]
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
                rows.append([_label(p), "-", "no data", "-"])
                continue
            v = _percentile_of(w, slo.percentile)
            rows.append([_label(p), num(v), "pass" if v < slo.latency_ms else "FAIL",
                         num(w.goodput * 100 if w.goodput is not None else math.nan, 1)])
        sl.tables.append(("", Table(["phase", f"P{slo.percentile:g} (ms)", "verdict",
                                     "goodput (%)"], rows)))
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
                            str(st.get("queues", 0)),
                            f"{st.get('ready', 0)}/{st.get('polls', 0)}",
                            f"{st.get('suspended', 0)}/{st.get('polls', 0)}",
                            "; ".join(info.get("warnings") or []) or "-"])
    if xs_rows:
        x = Section("XSched engagement (evidence, not settings)")
        x.paragraphs.append("scheduler = what the shim logged; ready/suspended = polls of "
                            "xserver's /xqueues in which this workload had a queue ready / "
                            "suspended. 'not-scheduled' means requests completed while its "
                            "queues were never seen ready.")
        x.tables.append(("", Table(["phase", "workload", "status", "scheduler", "queues",
                                    "ready", "suspended", "warnings"], xs_rows)))
        secs.append(x)

    sweep = _sweep_section(snap)
    if sweep:
        secs.append(sweep)

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


def _sweep_section(snap: SessionSnapshot) -> Section | None:
    from xwatch.core.sweep import frontier_rows

    rows, note = frontier_rows(snap)
    if not rows:
        return None
    s = Section("Sweep: XSched settings against native")
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
    return w.exit.describe()[:60]


def _percentile_of(w: WorkloadSnapshot, q: float) -> float:
    table = {50.0: "p50", 90.0: "p90", 95.0: "p95", 99.0: "p99", 99.9: "p999"}
    if q in table:
        return w.phase.get(table[q])
    # other percentiles: from the recorded CDF (1% steps)
    for v, f in w.cdf:
        if f * 100 >= q - 1e-9:
            return v
    return math.nan


# ------------------------------------------------------------------ renderers
def render_markdown(rep: Report) -> str:
    out = [f"# {rep.title}", ""]
    for s in rep.sections:
        out += [f"## {s.title}", ""]
        for p in s.paragraphs:
            out += [p, ""]
        for caption, t in s.tables:
            if caption:
                out += [f"*{caption}*", ""]
            out.append("| " + " | ".join(t.header) + " |")
            out.append("|" + "|".join("---" for _ in t.header) + "|")
            for row in t.rows:
                out.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
            out.append("")
        if s.code:
            out += ["```", s.code, "```", ""]
    return "\n".join(out)


def _md_inline(text: str) -> str:
    """The tiny bit of Markdown our paragraphs use -> HTML (escaped first)."""
    import re

    t = html.escape(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = t.replace("&lt;br&gt;", "<br>").replace("  \n", "<br>\n")
    return t


def render_html(rep: Report, charts: list[str]) -> str:
    css = ("body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222}"
           "table{border-collapse:collapse;margin:8px 0 18px}td,th{border:1px solid #ccc;"
           "padding:3px 8px;text-align:right;font-variant-numeric:tabular-nums}"
           "td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}"
           "pre{background:#f6f6f6;padding:8px;overflow-x:auto}code{background:#f6f6f6}"
           "figure{margin:10px 0}h2{border-bottom:1px solid #ddd;padding-bottom:3px}")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(rep.title)}</title><style>{css}</style></head><body>",
           f"<h1>{html.escape(rep.title)}</h1>"]
    if charts:
        out.append("<h2>Charts</h2>")
        out += [f"<figure>{c}</figure>" for c in charts]
    for s in rep.sections:
        out.append(f"<h2>{html.escape(s.title)}</h2>")
        for p in s.paragraphs:
            if "\n    " in p:
                head, _, body = p.partition("\n\n")
                out.append(f"<p>{_md_inline(head)}</p><pre>"
                           f"{html.escape(chr(10).join(ln[4:] for ln in body.splitlines()))}</pre>")
            else:
                out.append(f"<p>{_md_inline(p)}</p>")
        for caption, t in s.tables:
            if caption:
                out.append(f"<p><i>{html.escape(caption)}</i></p>")
            out.append("<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>"
                                                      for h in t.header) + "</tr></thead><tbody>")
            for row in t.rows:
                out.append("<tr>" + "".join(f"<td>{_md_inline(c)}</td>" for c in row) + "</tr>")
            out.append("</tbody></table>")
        if s.code:
            out.append(f"<pre>{html.escape(s.code)}</pre>")
    out.append("</body></html>")
    return "\n".join(out)


def build_charts(snap: SessionSnapshot) -> list[str]:
    """Latency over time, CDF of the high-priority workload, low-priority
    throughput over time, GPU utilization over time."""
    charts: list[str] = []
    if not snap.phases:
        return charts
    scen = snap.scenario
    offsets = phase_offsets(snap.phases)
    vlines = [(o, p.name) for o, p in zip(offsets, snap.phases)]
    lat_series = [(f"{w.name} {key.upper()}", workload_series(snap.phases, offsets, w.name, key))
                  for w in scen.workloads for key in ("p50", "p99")]
    hl = (scen.slo.latency_ms, f"SLO {scen.slo.workload} P{scen.slo.percentile:g}") \
        if scen.slo else None
    charts.append(line_chart("Latency per second (phases concatenated)", lat_series,
                             "session time (s)", "latency (ms)", vlines, hl))
    base = snap.phases[0]
    hi, lows = _by_priority(base)
    if hi is not None:
        cdf_series = []
        for p in snap.phases:
            w = p.workload(hi.name)
            if w and w.cdf:
                cdf_series.append((_label(p), [(v, f * 100) for v, f in w.cdf]))
        if cdf_series:
            slo_mark = [(scen.slo.latency_ms, f"SLO {scen.slo.latency_ms:g} ms")] \
                if scen.slo and scen.slo.workload == hi.name else []
            charts.append(line_chart(f"{hi.name}: latency distribution per phase (CDF)",
                                     cdf_series, "latency (ms)", "% of requests <=", slo_mark,
                                     None, y_max=100.0))
    if lows:
        tp = [(f"{lw.name} samples/s", workload_series(snap.phases, offsets, lw.name, "samples"))
              for lw in lows]
        charts.append(line_chart("Low-priority throughput per second", tp, "session time (s)",
                                 "samples/s", vlines))
    from xwatch.core.sweep import frontier, sweep_points

    _, pts = sweep_points(snap)
    good = [p for p in pts if p["ok"]]
    if good:
        front = frontier(pts)
        series = [(("native" if p["native"] else p["label"]) + (" *" if p["label"] in front else ""),
                   [(p["low_sps"], p["p99"])]) for p in good]
        hi_name = (_by_priority(snap.phases[0])[0] or snap.phases[0].workloads[0]).name
        charts.append(line_chart(f"Sweep: {hi_name} P99 vs low-priority throughput "
                                 "(* = on the frontier)", series, "low-priority samples/s",
                                 f"{hi_name} P99 (ms)", points_only=True))
    tel = snap.extra.get("telemetry") or {}
    samples = tel.get("samples") or []
    if samples and snap.phases:
        by_dev: dict[str, list[tuple[float, float]]] = {}
        metric = "util_pct" if tel.get("backend") in ("nvml", "amdsmi") else "cpu_pct"
        for smp in samples:
            if not smp.get("ours", True):
                continue
            v = (smp.get("metrics") or {}).get(metric)
            x = to_session_time(smp["t"], snap.phases, offsets)
            if x is not None:
                by_dev.setdefault(f"{smp['device']} {metric}", []).append(
                    (x, math.nan if v is None else float(v)))
        if by_dev:
            title = ("GPU utilization (NVML: % of time a kernel ran)" if metric == "util_pct"
                     and tel.get("backend") == "nvml" else
                     "GPU activity (amdsmi gfx_activity)" if metric == "util_pct"
                     else "Host CPU (no GPU telemetry)")
            charts.append(line_chart(title, sorted(by_dev.items()), "session time (s)", "%",
                                     vlines, y_max=100.0))
    return charts


def write_reports(snapshot_path: str | os.PathLike[str]) -> list[Path]:
    """Write report.md and report.html next to a snapshot."""
    p = Path(snapshot_path)
    doc = load_snapshot_dict(p)
    snap = snapshot_from_dict(doc, str(p))
    rep = build_report(snap)
    d = p.parent if p.is_file() else p
    from xwatch.core.snapshot import _atomic_write

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
    from xwatch.core.snapshot import _atomic_write

    Path(out).parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(Path(out), text.encode())
    print(out)
    return 0
