"""Plain-text output for headless runs: the progress line and the final table (pure
functions of snapshots, so tests can check them without running anything), and
``Console``, the driver's observer that prints them, and once each, as it becomes
known, a workload taking no part in its phase's mode (``modes.participation``).
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

from xwatch.core import model as M
from xwatch.core.analysis.gpu.gpus import GpuGroup, gpu_groups, rollup, rollup_text
from xwatch.core.analysis.gpu.kernels import analyze
from xwatch.core.analysis.phases import is_box, shared_lines
from xwatch.core.analysis.saturation import saturation
from xwatch.core.analysis.server_view import server_line
from xwatch.core.analysis.stats.intervals import CI_PERCENTILES, hist_of, percentile_interval
from xwatch.core.engine.causes import clip, collapse, collapse_named
from xwatch.core.engine.snapshot import FAILED, STALLED, PhaseSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import nan_if_none, stat
from xwatch.core.modes import participation
from xwatch.errors import XwatchError

if TYPE_CHECKING:
    from xwatch.core.plans.runner import Ending


def ms(v: float | None) -> str:
    if v is None or math.isnan(v):
        return "-"
    return f"{v:.2f}" if v < 100 else f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def rate(v: float | None) -> str:
    if v is None or math.isnan(v):
        return "-"
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def _per_gpu_parts(p: PhaseSnapshot) -> list[str] | None:
    """Three or more GPUs: the roll-up instead of every copy (sixteen copies made a
    line of 900 characters): HIGH's worst and best window P99 and which GPU, every
    GPU's P99 in GPU order, the HIGH and LOW totals, and any copy not running."""
    groups = gpu_groups(p)
    if len(groups) < 3:
        return None
    r = rollup(groups, window=True)
    head = f"{len(groups)} GPUs: {rollup_text(r, ms)}"
    if r.worst_high_p99_ms is not None:
        head += "; by GPU " + " ".join(ms(g.high_window_p99) for g in groups)
    high_rate = sum(nan_if_none(g.high.throughput.window_requests_per_s) for g in groups
                    if g.high is not None)
    parts = [head, f"HIGH {rate(high_rate)}/s, LOW {rate(r.low_samples_per_s)} smp/s in all"]
    odd = [f"{w.name} {w.state}" for g in groups for w in g.workloads if w.state != "running"]
    if odd:
        parts.append(", ".join(odd))
    return parts


def _workload_part(w: WorkloadSnapshot) -> str:
    if w.count:
        s = (f"{w.name} {w.state} n={w.count} p50={ms(w.window.p50)} p99={ms(w.window.p99)}ms "
             f"{rate(w.throughput.window_requests_per_s)}/s")
        if w.samples != w.count:
            s += f" {rate(w.throughput.window_samples_per_s)} smp/s"
        if w.late:
            s += f" late={w.late}"
        if w.errors:
            s += f" err={w.errors}"
    else:
        s = f"{w.name} {w.state}"
    if w.state == STALLED and w.stalled_since is not None:
        s += f" since {w.stalled_since:.1f}s"
    return s


def _many_parts(p: PhaseSnapshot) -> list[str] | None:
    """More than four workloads on one GPU: loading, how many are in each state;
    measuring, the top priority's worst and best window P99 and which workload, the
    others' samples/s in all, and any workload not running."""
    if len(p.workloads) <= 4:
        return None
    if not p.measuring:
        states: dict[str, int] = {}
        for w in p.workloads:
            states[w.state] = states.get(w.state, 0) + 1
        return [f"{len(p.workloads)} workloads: "
                + ", ".join(f"{n} {st}" for st, n in states.items())]
    top = max(w.priority for w in p.workloads)
    highs = [w for w in p.workloads if w.priority == top]
    lows = [w for w in p.workloads if w.priority < top]
    p99 = [(v, w.name) for w in highs if w.count and (v := w.window.p99) is not None]
    head = f"{len(highs)} HIGH: P99 "
    if p99:
        (worst, wn), (best, bn) = max(p99), min(p99)
        head += f"worst {ms(worst)}ms ({wn}), best {ms(best)}ms ({bn})"
    else:
        head += "-"
    hr = sum(nan_if_none(w.throughput.window_requests_per_s) for w in highs)
    parts = [head + f", {rate(hr)}/s in all"]
    if lows:
        ls = sum(nan_if_none(w.throughput.window_samples_per_s) for w in lows)
        parts.append(f"{len(lows)} LOW: {rate(ls)} "
                     "smp/s in all")
    odd = [f"{w.name} {w.state}" for w in p.workloads if w.state != "running"]
    if odd:
        parts.append(", ".join(odd))
    return parts


def progress_line(p: PhaseSnapshot) -> str:
    parts = (_per_gpu_parts(p) if p.measuring else None) or _many_parts(p) or \
        [_workload_part(w) for w in p.workloads]
    clock = f"{p.elapsed_s:6.1f}s" if p.measuring else "  load "
    line = f"[{clock} {p.name}] " + " | ".join(parts)
    # failure reasons get lines of their own, whole words only
    for w in p.workloads:
        if w.state == FAILED and w.exit:
            line += f"\n    ! {w.name}: {clip(w.exit.describe(), 200)}"
    if p.error:
        line += f"\n    ! phase: {clip(str(p.error), 300)}"
    return line


HEADER = ("workload", "state", "count", "err", "late", "req/s", "target", "smp/s",
          "mean", "p50", "p95", "p99", "p99.9", "max")


def final_table(p: PhaseSnapshot, telemetry: M.Telemetry | None = None) -> str:
    """Every workload's whole-phase numbers; on several GPUs grouped under a line per
    GPU (HIGH's P99 with its interval, LOW's samples/s, utilization) and rolled up."""
    rows = [HEADER]
    groups = gpu_groups(p, telemetry)
    order = [w for g in groups for w in g.workloads] if len(groups) > 1 else list(p.workloads)
    order += [w for w in p.workloads if w not in order]
    for w in order:
        L = w.phase
        rows.append((w.name, w.state, str(w.count), str(w.errors), str(w.late),
                     rate(w.throughput.requests_per_s), rate(w.target_rate),
                     rate(w.throughput.samples_per_s),
                     ms(L.mean), ms(L.p50), ms(L.p95), ms(L.p99), ms(L.p999), ms(L.max)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    heads = {g.workloads[0].name: _gpu_head(g) for g in groups if g.workloads} \
        if len(groups) > 1 else {}
    extra = []
    for w in p.workloads:
        if (u := w.unfinished) is not None and u.count:
            extra.append(f"  {w.name}: {u.count} request(s) unfinished at the end, longest "
                         f"wait {ms(u.max_wait_ms)} ms ("
                         + ("included in the percentiles" if u.in_percentiles
                            else "not in the percentiles") + f"; {w.unfinished_note})")
        if w.after_end:
            extra.append(f"  {w.name}: {w.after_end} request(s) completed after the measured "
                         "end (not counted)")
        if w.error_causes:
            extra.append(f"  {w.name}: {w.errors} request(s) failed: " + "; ".join(
                f"{k} ({n})" for k, n in sorted(w.error_causes.items(), key=lambda kv: -kv[1])))
        if (g := w.slo_goodput) is not None and g.requests_per_s is not None:
            extra.append(f"  {w.name}: goodput {g.requests_per_s:.2f} req/s ("
                         + ", ".join(f"{k} <= {v:g}" for k, v in g.slos_ms.items())
                         + f" ms): {g.good} of {g.requests} requests due"
                         + (f" ({g.share * 100:.1f}%)" if g.share is not None else "")
                         + "; a failed or unfinished request is a miss")
        if (sat := saturation(w)) is not None:
            extra.append(f"  ! {w.name}: {sat}")
        if (own := server_line(w.server, ttft.phase if (ttft := w.metrics.get("ttft_ms"))
                               else None)) is not None:
            extra.append(f"  {w.name}: {own}")
        for st in w.stalls:
            until = f"{st.until:.1f} s" if st.until is not None else "the end"
            extra.append(f"  {w.name}: stalled from {st.since:.1f} s to {until}: {st.why}")
    lines = [f"phase {p.name} ({p.mode}, {p.status}, {p.elapsed_s:.1f} s measured; "
             "latency in ms over the whole phase, warm-up excluded)"]
    for r in rows:
        if r[0] in heads:
            lines.append(heads[r[0]])
        lines.append("  ".join(c.ljust(widths[i]) if i < 2 else c.rjust(widths[i])
                               for i, c in enumerate(r)))
    if len(groups) > 1 and not is_box(p):
        lines.append(_gpus_tail(groups))  # not in a box phase: its GPUs ran different
        # candidates or settings (``plans.box``): a worst GPU would be a worst candidate
    lines += extra
    if p.error:
        lines.append(f"  ! phase {p.status}: {p.error}")
    lines += [f"  ! phase {p.name} {line}" for line in shared_lines(p)]
    early = []
    failed: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # copies that failed alike
    for w in p.workloads:
        if w.state == FAILED or (w.exit and w.exit.reason == FAILED):
            said = w.exit.describe() if w.exit else w.state
            tail = tuple(collapse(ln for ln in w.stderr_tail[-12:]  # not the cause again
                                  if ln.strip() and ln.strip() not in said)[-5:])
            failed.setdefault((said, tail), []).append(w.name)
        elif w.exit and not w.exit.ran_to_end:
            early.append(w.name)  # stopped (by the user, or with a failing phase)
    for (said, tail), names in failed.items():
        lines.append(f"  ! {collapse_named([(n, said) for n in names])[0]}")
        lines += [f"      {ln}" for ln in tail]
    if early:  # their stderr is what a stop makes them print (a KeyboardInterrupt)
        lines.append("  ! stopped before the planned end: " + ", ".join(early))
    return "\n".join(lines)


def _gpu_head(g: GpuGroup) -> str:
    """``-- GPU 3 · HIGH P99 7.12 [6.90, 7.40] ms · LOW 135 smp/s · util 73% · name bus``"""
    h = g.high
    p99 = "-"
    if h is not None and h.count:
        p99 = (percentile_interval(hist_of(h), 99.0).text(_fmt(stat(h.phase, "p99")))
               if h.latency_hist.buckets
               else ms(h.phase.p99)) + " ms"
    util = "n/a" if g.util_pct is None else f"{g.util_pct:.0f}%"
    where = " ".join(x for x in (g.name, g.bus_id) if x)
    return (f"-- GPU {g.gpu} · HIGH P99 {p99} · LOW {rate(g.low_samples_per_s)} smp/s · "
            f"util {util}" + (f" · {where}" if where else ""))


def _gpus_tail(groups: list[GpuGroup]) -> str:
    """The roll-up over every GPU (percentiles compared, never averaged)."""
    r = rollup(groups)
    return (f"-- all {len(groups)} GPUs: {rollup_text(r, ms)} · "
            f"LOW {rate(r.low_samples_per_s)} smp/s in all")


def interval_lines(p: PhaseSnapshot) -> list[str]:
    """Each workload's P50/P95/P99 with its 95% interval (order statistics), e.g.
    ``high: P50 4.32 [4.28, 4.37]  P95 ...  P99 13.9 [11.4, 15.0] ms``."""
    rows = [w for w in p.workloads if w.count and w.latency_hist.buckets]
    if not rows:
        return []
    out = ["  95% intervals (order statistics; 'open': too few requests for that bound):"]
    for w in rows:
        h, whole = hist_of(w), w.latency_hist.integral
        parts = [f"{k.upper()} {percentile_interval(h, q).text(_fmt(stat(w.phase, k), whole))}"
                 for k, q in CI_PERCENTILES]
        out.append(f"    {w.name}: " + "  ".join(parts) + " ms")
        for name, m in w.metrics.items():  # named per-request metrics (ttft_ms, ...)
            if not m.count or not m.hist.buckets:
                continue
            hm = hist_of(m)
            parts = [f"{k.upper()} "
                     f"{percentile_interval(hm, q).text(_fmt(stat(m.phase, k), m.hist.integral))}"
                     for k, q in CI_PERCENTILES]
            gp = f"  goodput {m.goodput * 100:.1f}%" if m.goodput is not None else ""
            out.append(f"    {w.name} {name} (n={m.count}): " + "  ".join(parts) + f" ms{gp}")
    return out


def _fmt(v: float, whole: bool = False) -> str:
    """How a latency prints: whole numbers as such (a workload that reports them)."""
    if whole:
        return "{:.0f}"
    return "{:.2f}" if v != v or v < 100 else "{:.1f}" if v < 1000 else "{:.0f}"


def failure_reasons(p: PhaseSnapshot) -> list[str]:
    """One line per workload that did not run to the end of the phase; a reason shared
    by several workloads (the copies of one over the GPUs) once, with their names."""
    out: list[tuple[str, str]] = []
    others_measured = any(x.count for x in p.workloads)
    for w in p.workloads:
        if w.exit is None:
            if w.state not in ("running",):
                out.append((w.name, f"never ran ({w.state})"))
            continue
        if not w.exit.ran_to_end:
            out.append((w.name, w.exit.describe()))
        elif w.count == 0 and w.errors == 0 and others_measured and w.state != "finished":
            if w.error:  # what it said itself (a server: "not ready after N s (...)")
                out.append((w.name, w.error))
                continue
            why = f"closed its event pipe {w.pipe_closed_at:.1f} s into the phase" \
                if w.pipe_closed_at is not None else "no event arrived"
            out.append((w.name, f"measured nothing while the others ran ({why})"))
    return collapse_named(out)


def capture_lines(p: PhaseSnapshot) -> list[str]:
    """What each kernel capture of the phase showed, in a few lines."""
    prio = {w.name: w.priority for w in p.workloads}
    out = []
    for cap in p.captures:
        a = analyze(cap, prio)
        errs = "; ".join(f"{n}: {e}" for n, e in cap.errors.items())
        if a is None:
            out.append(f"kernel capture {cap.id}: no trace arrived" + (f" ({errs})" if errs else ""))
            continue
        low = ", ".join(a.lows) or "no lower-priority workload"
        out.append(
            f"kernel capture {a.capture} ({cap.seconds:g} s at {cap.t:.1f} s, "
            f"kernels: " + ", ".join(f"{n} {k}" for n, k in a.kernels.items()) + "): "
            f"{a.high}'s kernels ran {_x(a.stretch)} as long as alone "
            f"({a.high_kernel_ms:.1f} vs {a.high_alone_ms:.1f} ms), {_pct(a.overlap_share)} of "
            f"its kernel time overlapped {low}; per request: queue {ms(a.queue_ms_mean)} ms, "
            f"no {a.high} kernel running {ms(a.gap_ms_mean)} ms, {low} idle "
            f"{_pct(a.low_quiet_share)} of the open time; clock check: {_pct(a.aligned)} of "
            f"{a.high}'s kernels inside its requests")
        if a.slowest:
            b = a.slowest[0]
            out.append(f"  slowest {a.high} request in it: {b.span_ms:.2f} ms: its kernels "
                       f"{b.kernel_ms:.2f} ms (stretch {_x(b.stretch)}, {b.overlap_ms:.2f} ms "
                       f"alongside {low}), no kernel of it running {b.gap_ms:.2f} ms "
                       f"({ms(b.queue_ms)} of them before its first kernel)")
        for note in a.notes:
            out.append(f"  note: {note}")
        if errs:
            out.append(f"  failed: {errs}")
    return out


def _x(v: float) -> str:
    return "-" if v != v else f"{v:.2f}x"


def _pct(v: float) -> str:
    return "-" if v != v else f"{v * 100:.0f}%"


class Console:
    """The headless front end: the driver's observer that prints (``plans.driver``).
    The plan's story and the tables on stdout, problems on stderr."""

    ticks = True  # a progress line a second

    def __init__(self) -> None:
        #: the lines on workloads taking no part already printed: (phase, mode, workload,
        #: verdict, provisional), each once
        self._absent: set[tuple[int, str, str, str, bool]] = set()

    def say(self, text: str) -> None:
        print(text, flush=True)

    def warn(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def tick(self, phase: PhaseSnapshot) -> None:
        self.say(progress_line(phase))
        self.absent(phase)

    def absent(self, phase: PhaseSnapshot) -> None:
        """A workload taking no part in the phase's mode (or not seen taking part so
        far), and what to do: once, when it first becomes known (``participation``)."""
        for a in participation.absent(phase):
            key = (phase.index, a.mode, a.workload, a.status, a.provisional)
            if key not in self._absent:
                self._absent.add(key)
                self.warn(f"! phase {phase.name}: {a.line()}")

    def refused(self, err: XwatchError) -> None:
        self.warn(f"xwatch: {err.title}: {err}")

    def phase_ended(self, phase: PhaseSnapshot, telemetry: M.Telemetry | None,
                    ending: Ending) -> None:
        """The final table of a phase that measured something (or did not fail)."""
        self.absent(phase)  # a verdict reached at the phase's end
        if phase.t_measure is None and phase.status == "failed":
            return
        self.say(final_table(phase, telemetry))
        for line in interval_lines(phase):
            self.say(line)
        for line in capture_lines(phase):
            self.say(line)
