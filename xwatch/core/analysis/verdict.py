"""The answer a comparison gives, with its uncertainty: what changed for the
high-priority workload's P50/P99 and for the low-priority throughput between the
baseline and every other step of a session, pooled over repeats, and whether
each change is beyond noise.

A *step* is one planned configuration (native, XSched, MPS, a sweep setting, a
calibrate role); with ``--repeat N`` each step has N phases, run interleaved.
Pooled percentiles merge the repeats' histograms; a change is called beyond
noise only when the pooled 95% interval excludes 0 **and** every repeat moved
the same way. Pure functions of snapshots.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xwatch.core.analysis.intervals import (
    WITHIN_NOISE,
    Hist,
    Interval,
    diff_interval,
    direction,
    hist_of,
    merge,
    percentile_interval,
    repeats_needed,
)
from xwatch.core.analysis.phases import baseline, by_priority
from xwatch.core.engine.session import PhaseSnapshot, SessionSnapshot, WorkloadSnapshot
from xwatch.core.modes.base import label as mode_label

Z95 = 1.959963984540054


def step_key(p: PhaseSnapshot) -> str:
    """Which planned configuration a phase ran (repeats share it)."""
    k = p.extra.get("step")
    if k:
        return str(k)
    role = p.extra.get("calibrate")
    setting = p.extra.get("setting")
    base = f"{role}-{p.mode}" if role else p.mode
    return f"{base} [{setting}]" if setting else base


def step_label(key: str) -> str:
    for m in ("native", "xsched", "mps"):
        if key == m:
            return mode_label(m)
    return key


def steps(snap: SessionSnapshot) -> dict[str, list[PhaseSnapshot]]:
    """Phases grouped by step, in the order the steps first ran (failed phases kept:
    callers decide)."""
    out: dict[str, list[PhaseSnapshot]] = {}
    for p in snap.phases:
        out.setdefault(step_key(p), []).append(p)
    return out


# ------------------------------------------------------------ throughput
def rate_interval(ws: Sequence[WorkloadSnapshot]) -> Interval:
    """Samples/s over the measured seconds of ``ws`` (pooled), with a normal 95%
    interval from the spread of whole seconds (the first and last second, partial,
    are left out of the spread; the estimate is the exact samples/measured time)."""
    secs: list[float] = []
    total, span = 0.0, 0.0
    for w in ws:
        rows = list(w.series)[1:-1]
        secs += [float(r.samples) for r in rows]
        total += w.samples
        span += w.measured_s if w.measured_s == w.measured_s else 0.0
    est = total / span if span > 0 else math.nan
    if len(secs) < 3:
        return Interval(est, None, None)
    mean = sum(secs) / len(secs)
    var = sum((x - mean) ** 2 for x in secs) / (len(secs) - 1)
    half = Z95 * math.sqrt(var / len(secs))
    return Interval(est, est - half, est + half)


def rate_diff(a: Interval, b: Interval) -> Interval:
    if a.lo is None or a.hi is None or b.lo is None or b.hi is None:
        return Interval(b.est - a.est, None, None)
    ha, hb = (a.hi - a.lo) / 2, (b.hi - b.lo) / 2
    half = math.sqrt(ha * ha + hb * hb)
    d = b.est - a.est
    return Interval(d, d - half, d + half)


# ------------------------------------------------------------ changes
@dataclass(frozen=True)
class Change:
    """One compared number: baseline vs step, pooled, with the repeats."""

    workload: str
    metric: str  # "P50" | "P99" | "samples/s"
    unit: str
    base: Interval
    other: Interval
    diff: Interval
    per_repeat: tuple[float, ...]  # the difference in each repeat pair
    repeats: int

    @property
    def consistent(self) -> bool:
        """Every repeat moved the same way as the pooled estimate."""
        if len(self.per_repeat) < 2:
            return True
        sign = 1 if self.diff.est > 0 else -1
        return all(d * sign > 0 for d in self.per_repeat if d == d)

    @property
    def way(self) -> int:
        """+1 / -1 beyond noise, 0 within it (or repeats disagree)."""
        w = direction(self.diff)
        return w if self.consistent else 0

    @property
    def relative(self) -> float:
        b = self.base.est
        return self.diff.est / b if b and b == b else math.nan

    def words(self) -> str:
        if self.way == 0:
            if direction(self.diff) != 0 and not self.consistent:
                return f"{WITHIN_NOISE} (repeats disagree)"
            return WITHIN_NOISE
        if self.metric == "samples/s":
            return "higher" if self.way > 0 else "lower"
        return "slower" if self.way > 0 else "faster"

    def text(self) -> str:
        d = self.diff
        lo = "?" if d.lo is None else f"{d.lo:+.2f}"
        hi = "?" if d.hi is None else f"{d.hi:+.2f}"
        rel = f" ({self.relative * 100:+.1f}%)" if self.relative == self.relative else ""
        return f"{d.est:+.2f} {self.unit}{rel} [{lo}, {hi}], {self.words()}"

    def advice(self) -> str | None:
        """How many repeats would make a wide interval useful (10% of the baseline)."""
        target = 0.2 * abs(self.base.est) if self.base.est == self.base.est else math.nan
        n = repeats_needed(self.diff.width, target, max(1, self.repeats))
        if n is None:
            return None
        return (f"{self.workload} {self.metric}: the interval is {self.diff.width:.2f} "
                f"{self.unit} wide; about {n} repeats (or {n / max(1, self.repeats):.0f}x the "
                f"seconds per phase) would narrow it to ±10% of the baseline")


def _ok(ps: Sequence[PhaseSnapshot], name: str) -> list[WorkloadSnapshot]:
    out = []
    for p in ps:
        w = p.workload(name)
        if w is not None and w.count and p.status != "failed":
            out.append(w)
    return out


def latency_change(name: str, q: float, base: Sequence[PhaseSnapshot],
                   other: Sequence[PhaseSnapshot]) -> Change | None:
    a, b = _ok(base, name), _ok(other, name)
    if not a or not b:
        return None
    ha: Hist = merge(hist_of(w) for w in a)
    hb: Hist = merge(hist_of(w) for w in b)
    if ha.n == 0 or hb.n == 0:
        return None
    pairs = list(zip(a, b))
    per = tuple(percentile_interval(hist_of(y), q).est - percentile_interval(hist_of(x), q).est
                for x, y in pairs)
    return Change(name, f"P{q:g}", "ms", percentile_interval(ha, q), percentile_interval(hb, q),
                  diff_interval(ha, hb, q), per, min(len(a), len(b)))


def rate_change(name: str, base: Sequence[PhaseSnapshot],
                other: Sequence[PhaseSnapshot]) -> Change | None:
    a, b = _ok(base, name), _ok(other, name)
    if not a or not b:
        return None
    ia, ib = rate_interval(a), rate_interval(b)
    per = tuple(y.samples_per_s - x.samples_per_s for x, y in zip(a, b))
    return Change(name, "samples/s", "/s", ia, ib, rate_diff(ia, ib), per,
                  min(len(a), len(b)))


@dataclass(frozen=True)
class StepAnswer:
    """What one step changed against the baseline."""

    step: str
    base_step: str
    repeats: int
    changes: tuple[Change, ...]

    def sentence(self) -> str:
        parts = [f"{c.workload} {c.metric} {c.text()}" for c in self.changes]
        rep = f" ({self.repeats} repeats pooled)" if self.repeats > 1 else ""
        return f"{step_label(self.step)} vs {step_label(self.base_step)}{rep}: " + \
            ("; ".join(parts) if parts else "nothing to compare")


def answer(snap: SessionSnapshot) -> list[StepAnswer]:
    """For every step other than the baseline's: HIGH's P50 and P99 and each LOW's
    samples/s against the baseline step, pooled over repeats."""
    base_p = baseline(snap)
    if base_p is None:
        return []
    groups = steps(snap)
    bkey = step_key(base_p)
    base = groups.get(bkey, [base_p])
    hi, lows = by_priority(base_p)
    out = []
    for key, ps in groups.items():
        if key == bkey:
            continue
        ch: list[Change] = []
        if hi is not None:
            for q in (50.0, 99.0):
                c = latency_change(hi.name, q, base, ps)
                if c is not None:
                    ch.append(c)
        for lw in lows:
            c = rate_change(lw.name, base, ps)
            if c is not None:
                ch.append(c)
        if ch:  # nothing comparable (failed phases, or a snapshot without histograms)
            out.append(StepAnswer(key, bkey, min(len(base), len(ps)), tuple(ch)))
    return out


def answer_lines(snap: SessionSnapshot) -> list[str]:
    """The verdict box as plain lines (headless end, Markdown report)."""
    ans = answer(snap)
    if not ans:
        return []
    lines = []
    for a in ans:
        lines.append(a.sentence())
    advice = [x for a in ans for c in a.changes if c.way == 0
              for x in [c.advice()] if x]
    if advice:
        lines.append("To tell: " + "; ".join(advice[:3]) + ".")
    lines.append("Intervals: 95%, percentiles by order statistics and a bootstrap of the "
                 "difference, throughput from the spread of whole seconds; 'within noise': "
                 "the interval includes 0 or the repeats disagree.")
    return lines
