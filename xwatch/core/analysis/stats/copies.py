"""Every GPU in the answer: a workload's copies on several GPUs (``--gpus``, copies
named ``high@0``, ``high@1``, ...) folded into one value per run, and a GPU whose copies
differ from the others beyond noise named as a finding.

**The run stays the unit, the GPU is a block.** In one run (phase) every GPU runs its
own copy of each workload. A run's value of a metric is the mean over its copies of
the log of each copy's own value (its P50 or P99 of its own requests): the geometric
mean of the copies' values, in ms; samples/s, which add up, take the arithmetic mean
(the box's total divided by its GPUs). The existing run-to-run intervals
(``analysis.stats.runs``: Student's t over runs, paired by run) then run over those
values, with ``k - 1`` degrees of freedom however many GPUs there are.

Why this and not a model with run, GPU and copy effects (``docs/gpus-answer.md``,
``tests/unit/test_gpu_copies.py``, ``benchmarks/stats/gpu_width_sim.py``): with the same
GPUs in every run the GPU effects are the same in every run's mean, so they cancel in
a paired difference and never inflate it; the copies' noise enters each run's mean
divided by the GPUs; the effects every GPU of a run shares (clocks, the host) stay in
the run's value, which is what the t over runs needs to see. With balanced runs the
mixed model's interval is this one whenever it estimates a run-to-run variance above
zero; where that estimate is truncated to zero it pools the copy-level residuals into
more degrees of freedom, and then it covers 89-93% instead of 95% when the runs share
an effect (HIGH P50 on a 4- or 8-GPU box, 2-3 runs); it gains width only where the runs
share none (HIGH P99), and little beyond 2 runs. The run mean covers 95% in every
structure simulated, with whole-unit and bucketed values (its resolution is the
copies', ``resolution_ms`` over every copy's value).

**A slow GPU is a finding, not noise** (``gpu_findings``, ``name_gpus``): for each GPU,
per run, the log of its copy's value minus the mean log of the other GPUs' copies in
that run (run effects cancel), averaged over the runs of each step (mode or setting) on
its own, since a GPU may differ under one mechanism and not under another (one that
engages on some GPUs only): a t interval with the noise pooled over the steps (the runs'
spread around their own step's mean), Bonferroni-corrected over every GPU, step and
metric compared (with 2 GPUs the two contrasts are one test), so a uniform box names
none at the promised rate; step-down, so that one slow GPU does not make the others
look fast. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from xwatch.core.analysis.stats.intervals import (
    CONFIDENCE,
    LOG_MAX,
    Hist,
    Interval,
    hist_of,
    merge,
    percentile_interval,
)
from xwatch.core.analysis.stats.resolution import resolution_ms, resolved_sd, widen
from xwatch.core.analysis.stats.runs import Z95, RunValue, run_value, t_ppf
from xwatch.core.engine.snapshot import PhaseSnapshot, WorkloadSnapshot
from xwatch.core.model.metric import Metric, Scale


def role(name: str) -> str:
    """The scenario's name of a workload (``high`` for the copy ``high@1``)."""
    return name.partition("@")[0]


def copies_of(p: PhaseSnapshot, name: str) -> tuple[WorkloadSnapshot, ...]:
    """The copies of workload ``name`` (a copy's or the scenario's name) that counted
    requests in ``p``, by GPU; a workload that was not replicated is its one copy."""
    r = role(name)
    ws = [w for w in p.workloads if w.count and role(w.name) == r]
    return tuple(sorted(ws, key=lambda w: (w.gpu if w.gpu is not None else -1, w.name)))


def failed_beside(p: PhaseSnapshot, at: str | frozenset[str]) -> bool:
    """A box phase (``plans.box``) failed only through the copies of other candidates or
    settings (a workload on another GPU failed or stalled): the copies ``NAME@GPU`` ending
    in ``at`` (or named in it: a split phase's copies of one mode) ran to the end and
    count. A failure of the phase itself (its daemon, the isolation proof) or of one of
    these copies fails everything it holds."""
    parts = [x.strip() for x in (p.error or "").split(";") if x.strip()]
    stalled = [x.partition(" ")[0] for x in parts if " stalled since " in x]
    if len(stalled) < len(parts):
        return False  # a failure of the whole phase
    bad = [w.name for w in p.workloads if w.state == "failed"] + stalled

    def ours(n: str) -> bool:
        return n.endswith(at) if isinstance(at, str) else n in at

    return bool(bad) and not any(ours(n) for n in bad) and \
        any(w.count for w in p.workloads if ours(w.name))


def combine(values: Sequence[RunValue], scale: Scale) -> RunValue:
    """One run's value from its copies' values on their metric's ``scale``: the
    geometric mean of percentiles (``log``: the mean of the logs), the arithmetic mean
    of samples/s (``linear``); the standard error by the delta method from the copies'
    own (copies are independent given the run)."""
    vs = [v for v in values if v.est == v.est]
    if not vs:
        return RunValue(math.nan, math.nan)
    if len(vs) == 1:
        return vs[0]
    m = len(vs)
    if scale == "linear" or any(v.est <= 0 for v in vs):
        est = sum(v.est for v in vs) / m
        se = math.sqrt(sum(v.se ** 2 for v in vs)) / m
        return RunValue(est, se)
    est = math.exp(sum(math.log(v.est) for v in vs) / m)
    se = est * math.sqrt(sum((v.se / v.est) ** 2 for v in vs)) / m
    return RunValue(est, se)


@dataclass(frozen=True)
class RunCopies:
    """One run of one workload over its copies."""

    value: RunValue
    #: each copy's own estimate, by GPU (None: the workload was not replicated)
    per_gpu: Mapping[int | None, float]

    @property
    def copies(self) -> int:
        return len(self.per_gpu)


def run_copies(ws: Sequence[WorkloadSnapshot], metric: Metric, pool_short: bool = False
               ) -> RunCopies:
    """``metric`` of one run from its copies ``ws`` (``copies_of``). ``pool_short``: where
    a copy's own values cannot bound the percentile from above (too few: its standard
    error unknown) but the copies' values together can, the run's value is the
    percentile of their pooled values (``pooled_value``), as advise says it does."""
    vals = [run_value(w, metric) for w in ws]
    per_gpu = {w.gpu: v.est for w, v in zip(ws, vals)}
    if pool_short and len(ws) > 1 and metric.percentile is not None and \
            any(v.se != v.se for v in vals):
        pooled = pooled_value(ws, metric)
        if pooled.se == pooled.se:
            return RunCopies(pooled, per_gpu)
    return RunCopies(combine(vals, metric.scale), per_gpu)


def pooled_value(ws: Sequence[WorkloadSnapshot], metric: Metric) -> RunValue:
    """The percentile ``metric`` of the copies' values pooled into one histogram, with
    its standard error from the pooled order statistics (NaN where even they cannot
    bound it)."""
    name = metric.name
    hists: list[Hist] = []
    for w in ws:
        m = w.metrics.get(name) if name else None
        if name and (m is None or not m.count):
            continue
        hists.append(hist_of(m) if m is not None else hist_of(w))
    if not hists:
        return RunValue(math.nan, math.nan)
    iv = percentile_interval(merge(hists), metric.q)
    se = (iv.hi - iv.lo) / (2 * Z95) if iv.lo is not None and iv.hi is not None else math.nan
    return RunValue(iv.est, se)


def copies_resolution(runs: Sequence[RunCopies], metric: Metric) -> float:
    """The resolution of runs' values made from copies: the copies' own (a mean of
    values each within half its grid of what it measured is within half the grid
    too); no percentile (samples/s): 0 (continuous)."""
    if metric.percentile is None:
        return 0.0
    return resolution_ms([v for r in runs for v in r.per_gpu.values()])


def width_words(runs: int, gpus: int) -> str:
    """``"3 runs x 2 GPUs"``, ``"3 runs"`` (one copy each), ``"1 run x 4 GPUs"``."""
    r = f"{runs} run{'s' if runs != 1 else ''}"
    return f"{r} x {gpus} GPUs" if gpus > 1 else r


# ------------------------------------------------------------ a GPU unlike the others
@dataclass(frozen=True)
class GpuFinding:
    """One GPU's copies against the other GPUs' in the same runs of one step (a mode, or
    a setting): the ratio of its value to theirs (geometric), as a relative change with
    its simultaneous interval. ``steps``: every step compared (a GPU named under one
    mode is within noise under the others unless named there too)."""

    workload: str  # the scenario's name
    metric: Metric
    gpu: int
    others: tuple[int, ...]
    rel: Interval  # relative: +0.35 = 35% higher than the others
    runs: int  # the step's runs
    tests: int  # how many contrasts share the 5% (Bonferroni)
    step: str = ""
    steps: tuple[str, ...] = ()

    @property
    def way(self) -> int:
        lo, hi = self.rel.lo, self.rel.hi
        if lo is not None and lo > 0:
            return 1
        if hi is not None and hi < 0:
            return -1
        return 0

    def change(self) -> str:
        """``"+35% [+20%, +52%]"``."""
        iv = self.rel
        lo = "?" if iv.lo is None else f"{iv.lo * 100:+.0f}%"
        hi = "?" if iv.hi is None else f"{iv.hi * 100:+.0f}%"
        return f"{iv.est * 100:+.0f}% [{lo}, {hi}]"

    def versus(self) -> str:
        return "the other GPUs" if len(self.others) > 1 else f"GPU {self.others[0]}"

    def text(self, where: Callable[[str], str] = lambda s: s) -> str:
        """``"GPU 2's high P99 is +35% [+20%, +52%] vs the other GPUs (6 runs; 95% over 4
        comparisons)"``; with several steps, ``"under XSched, GPU 2's ..."`` (``where``
        words a step)."""
        head = f"{where(self.step)}, " if len(self.steps) > 1 else ""
        return (f"{head}GPU {self.gpu}'s {self.workload} {self.metric} is {self.change()} "
                f"vs {self.versus()} ({self.runs} runs; 95% over {self.tests} "
                f"comparison{'s' if self.tests != 1 else ''})")


def grouped_text(fs: Sequence[GpuFinding], where: Callable[[str], str] = lambda s: s
                 ) -> list[str]:
    """One sentence per GPU and number: where it differs, step by step, and the steps
    where it does not (``"under XSched, GPU 3's high P50 is +100% [+90%, +110%] vs the
    other GPUs (2 runs); natively within noise (95% over 8 comparisons)"``)."""
    groups: dict[tuple[str, Metric, int], list[GpuFinding]] = {}
    for f in fs:
        groups.setdefault((f.workload, f.metric, f.gpu), []).append(f)
    out = []
    for (wl, metric, gpu), g in groups.items():
        f0 = g[0]
        tail = f"95% over {f0.tests} comparison{'s' if f0.tests != 1 else ''}"
        if len(f0.steps) <= 1:
            out.append(f0.text(where))
            continue
        named = {f.step for f in g}
        quiet = [s for s in f0.steps if s not in named]
        if not quiet:
            parts = ", ".join(f"{f.change()} {where(f.step)}" for f in g)
            ks = {f.runs for f in g}
            runs = f"{f0.runs} runs each" if len(ks) == 1 else \
                ", ".join(f"{f.runs} runs {where(f.step)}" for f in g)
            out.append(f"GPU {gpu}'s {wl} {metric} is {parts} vs {f0.versus()} "
                       f"({runs}; {tail})")
            continue
        parts = "; ".join(f"{where(f.step)}, GPU {gpu}'s {wl} {metric} is {f.change()} "
                          f"vs {f.versus()} ({f.runs} runs)" for f in g)
        out.append(f"{parts}; {' and '.join(where(s) for s in quiet)} within noise ({tail})")
    return out


def _cut(table: Sequence[Mapping[int, float]], gpus: Sequence[int], g: int, keys: Sequence[str]
         ) -> tuple[list[float], list[float], list[str]]:
    """Per run holding every GPU of ``gpus``: ``g``'s log value minus the mean log of the
    others, the run's smallest value, and its step."""
    ds, scale, blocks = [], [], []
    for row, key in zip(table, keys):
        if not all(h in row for h in gpus):
            continue
        vals = [row[h] for h in gpus]
        if any(not v > 0 or math.isinf(v) for v in vals):
            continue
        others = [row[h] for h in gpus if h != g]
        ds.append(math.log(row[g]) - sum(math.log(v) for v in others) / len(others))
        scale.append(min(vals))
        blocks.append(key)
    return ds, scale, blocks


def contrasts(table: Sequence[Mapping[int, float]], gpus: Sequence[int], metric: Metric,
              tests: int, resolution: float = 0.0, steps: Sequence[str] | None = None
              ) -> dict[tuple[int, str], tuple[Interval, int]]:
    """Per GPU of ``gpus`` and per step: its log value minus the mean log of the other
    GPUs (of any ``metric``: samples/s as a ratio too), per run of ``table`` (a run: GPU
    -> that copy's value; runs missing a GPU skipped), averaged over the step's runs,
    with its interval at ``1 - 0.05 / tests`` (never narrower than ``resolution``, taken
    relative to the values), as a relative change; and the step's runs. With 2 GPUs
    only the first GPU is returned (the second is its mirror).

    ``steps`` (one per row): the step each run belongs to. A GPU's difference may
    depend on the step (a mechanism that doubles one GPU's latency and leaves its
    native runs alone, or one that engages on some GPUs and not on others), so each
    step gets its own estimate: pooling them would name neither (+42% for a GPU at
    +100% under XSched and 0 natively). The noise is the spread of the runs around their
    own step's mean, pooled over the steps (run effects cancel in a contrast; what is
    left is the copies' own noise), with ``runs - steps`` degrees of freedom (none, and
    no interval, with one run per step)."""
    out: dict[tuple[int, str], tuple[Interval, int]] = {}
    del metric  # every metric on the log scale (samples/s too: a ratio)
    keys = list(steps) if steps is not None else [""] * len(table)
    q = 1.0 - (1.0 - CONFIDENCE) / 2.0 / max(1, tests)
    for g in gpus[:1] if len(gpus) == 2 else gpus:
        ds, scale, blocks = _cut(table, gpus, g, keys)
        k = len(ds)
        df = k - len(set(blocks))
        if df < 1:
            continue
        block_mean = {b: sum(d for d, c in zip(ds, blocks) if c == b) / blocks.count(b)
                      for b in set(blocks)}
        sd = math.sqrt(sum((d - block_mean[b]) ** 2 for d, b in zip(ds, blocks)) / df)
        # the grid, relative to the smallest value: one term for the GPU, one for the rest
        r = resolution / min(scale) if resolution > 0 and min(scale) > 0 else 0.0
        t = t_ppf(q, df) * resolved_sd(sd, r, r)
        for b in dict.fromkeys(blocks):
            kb = blocks.count(b)
            mean = block_mean[b]
            half = t / math.sqrt(kb)
            lo, hi = widen(mean - half, mean + half, mean, 2 * r)
            out[(g, b)] = (Interval(math.expm1(mean), _relative(lo), _relative(hi)), kb)
    return out


def _relative(x: float) -> float | None:
    """A log difference as a relative change; None (open) where it is beyond any float
    (runs 14x apart on 2 runs put a t of thousands on a spread of 1.3)."""
    return math.expm1(x) if x <= LOG_MAX else None


def _beyond(iv: Interval) -> bool:
    return (iv.lo is not None and iv.lo > 0) or (iv.hi is not None and iv.hi < 0)


def name_gpus(table: Sequence[Mapping[int, float]], gpus: Sequence[int], metric: Metric,
              tests: int, resolution: float = 0.0, steps: Sequence[str] | None = None
              ) -> list[tuple[int, Interval, int, tuple[int, ...], str]]:
    """The GPUs unlike the others, step by step (a mode or setting: ``contrasts``) and
    step-down within each: the contrast furthest from 0 among those beyond noise is
    named, that GPU leaves the reference, and the rest are tested again among themselves
    (so one slow GPU does not make the others look fast), each at the first test's
    level (``tests``: every GPU of every step of every number compared shares the 5%).
    With 2 GPUs left the one named is the higher latency (the lower samples/s). (gpu,
    relative interval, runs, the GPUs it was compared with, step)."""
    keys = list(steps) if steps is not None else [""] * len(table)
    out: list[tuple[int, Interval, int, tuple[int, ...], str]] = []
    for step in dict.fromkeys(keys):
        left = list(gpus)
        while len(left) >= 2:
            got = {g: v for (g, s), v in contrasts(table, left, metric, tests, resolution,
                                                   keys).items()
                   if s == step and _beyond(v[0])}
            if not got:
                break
            g = max(got, key=lambda h: abs(math.log1p(got[h][0].est)))
            iv, k = got[g]
            # name the worse one: the higher of a time, the lower of a throughput
            if len(left) == 2 and (iv.est < 0) == (metric.direction == "lower"):
                g = left[1] if g == left[0] else left[0]
                iv = Interval(1 / (1 + iv.est) - 1,
                              None if iv.hi is None else 1 / (1 + iv.hi) - 1,
                              None if iv.lo is None else 1 / (1 + iv.lo) - 1)
            out.append((g, iv, k, tuple(h for h in left if h != g), step))
            left.remove(g)
    return out


def gpu_findings(phases: Sequence[PhaseSnapshot], wanted: Sequence[tuple[str, Metric]],
                 step_of: Callable[[PhaseSnapshot], str] = lambda p: p.mode
                 ) -> list[GpuFinding]:
    """The GPUs named unlike the others (``name_gpus``) for each of ``wanted``
    ((workload, metric) pairs, by the scenario's names), step by step, over the runs
    ``phases`` (the usable ones, any step: each run's own effects cancel; ``step_of``: a
    run's step), among the GPUs present in every run. Bonferroni over every GPU
    contrast of every step of every pair (with 2 GPUs, one contrast per step and pair)."""
    plans: list[tuple[str, Metric, list[int], list[dict[int, float]], float, list[str]]] = []
    for name, metric in wanted:
        table: list[dict[int, float]] = []
        runs: list[RunCopies] = []
        steps: list[str] = []
        for p in phases:
            ws = [w for w in copies_of(p, name) if w.gpu is not None]
            if len(ws) < 2:
                continue
            rc = run_copies(ws, metric)
            runs.append(rc)
            table.append({g: v for g, v in rc.per_gpu.items() if g is not None})
            steps.append(step_of(p))
        if not table:
            continue
        common = sorted(set.intersection(*(set(t) for t in table)))
        if len(common) < 2:
            continue
        plans.append((name, metric, common, table, copies_resolution(runs, metric), steps))
    tests = sum((1 if len(c) == 2 else len(c)) * _tested_steps(st)
                for _, _, c, _, _, st in plans)
    out = []
    for name, metric, common, table, res, steps in plans:
        every = tuple(dict.fromkeys(steps))
        for g, iv, k, others, step in name_gpus(table, common, metric, tests, res, steps):
            out.append(GpuFinding(role(name), metric, g, others, iv, k, tests, step, every))
    return out


def _tested_steps(steps: Sequence[str]) -> int:
    """How many steps get a contrast (every step, once the runs give the pooled noise a
    degree of freedom: ``contrasts``)."""
    return len(set(steps)) if len(steps) > len(set(steps)) else 0
