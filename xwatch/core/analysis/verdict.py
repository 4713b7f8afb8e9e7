"""The answer a comparison gives, with its uncertainty: what changed for the
high-priority workload's P50/P99 (and its SLO percentile) and for the
low-priority throughput between the baseline and every other step of a
session, and whether each change is beyond noise.

A *step* is one planned configuration (native, XSched, MPS, a sweep setting, a
calibrate role); with ``--repeat N`` each step has N runs (phases), interleaved.
**The run is the unit** (``analysis.stats.runs``): each run gives one estimate, runs
are paired with their neighbour in the interleaved order, and the interval of a
change is Student's t over the paired differences. With one run per step there
is no run-level interval: the change is judged against the machine's recorded
noise floor (``analysis.stats.noise``) when the snapshot carries one, and otherwise
gets no verdict, only its within-run interval and the words "run-to-run noise
unmeasured". A change is beyond noise only when its interval excludes 0.
Pure functions of snapshots. The session's answer made of them, computed once and
stored in the snapshot, is ``analysis.answer.stored``'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from xwatch.core import model as M
from xwatch.core.analysis.participation import Participation, participation
from xwatch.core.analysis.phases import (
    answered,
    baseline,
    by_priority,
    metric_words,
    per_setting,
    slo_metric,
)
from xwatch.core.analysis.stats.blocks import block_key, blocked_difference, blocks_of
from xwatch.core.analysis.stats.copies import (
    GpuFinding,
    copies_of,
    copies_resolution,
    gpu_findings,
    role,
    run_copies,
    width_words,
)
from xwatch.core.analysis.stats.intervals import (
    WITHIN_NOISE,
    Hist,
    Interval,
    diff_interval,
    direction,
    hist_of,
    merge,
)
from xwatch.core.analysis.stats.noise import Floor, floors_in, one_run_interval, run_length, usable
from xwatch.core.analysis.stats.pooled import few_note, pooled_diff_interval, pooled_interval, too_few
from xwatch.core.analysis.stats.resolution import widen
from xwatch.core.analysis.stats.runs import Z95, RunValue, Split, mean_interval, paired_interval
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot, WorkloadSnapshot
from xwatch.core.model.metric import THROUGHPUT, Metric
from xwatch.core.modes import registry
from xwatch.core.modes.base import label as mode_label

#: a step whose mechanism needs no proof (the default of a ``StepAnswer``)
NATIVE: Final = Participation("native")
#: how a change's interval was made
RUNS: Final = "runs"
FLOOR: Final = "floor"
UNMEASURED: Final = "unmeasured"
#: the precision "To tell" aims at: a 95% interval of +-10% of the baseline
TARGET = 0.10


def step_key(p: PhaseSnapshot) -> str:
    """Which planned configuration a phase ran (repeats share it)."""
    k = p.step
    if k:
        return str(k)
    role = p.calibrate
    setting = p.setting
    base = f"{role}-{p.mode}" if role else p.mode
    return f"{base} [{setting}]" if setting else base


def step_where(key: str) -> str:
    """A step as a place in a sentence: ``natively``, ``under XSched``, ``under xsched
    [low.threshold=4]``."""
    return "natively" if key == "native" else f"under {step_label(key)}"


def step_label(key: str) -> str:
    return mode_label(key) if key in registry.names() else key


def steps(snap: SessionSnapshot) -> dict[str, list[PhaseSnapshot]]:
    """Phases grouped by step, in the order the steps first ran (failed phases kept:
    callers decide). A sweep phase that ran several settings side by side counts as one
    run of each setting, its own copies alone (``analysis.phases.per_setting``)."""
    out: dict[str, list[PhaseSnapshot]] = {}
    for p in per_setting(snap.phases):
        out.setdefault(step_key(p), []).append(p)
    return out


# ------------------------------------------------------------ pairing runs
#: one run of a workload: its copies (one per GPU with ``--gpus``, else the workload)
Copies = tuple[WorkloadSnapshot, ...]


def _runs(ps: Sequence[PhaseSnapshot], name: str, exact: bool = False
          ) -> list[tuple[Any, Copies]]:
    """(pairing key, the workload's copies in the run) of each usable phase: the
    repeat number where the plan recorded it, else the order. ``name``: the scenario's
    name of the workload or one copy's: every copy counts, unless ``exact`` (that
    workload alone)."""
    out = []
    for i, p in enumerate(ps):
        w = p.workload(name) if exact else None
        ws = ((w,) if w is not None and w.count else ()) if exact else copies_of(p, name)
        if ws and usable(p):
            out.append((f"#{i}" if p.repeat is None else p.repeat, ws))
    return out


def _run_blocks(ps: Sequence[PhaseSnapshot], name: str, exact: bool = False) -> list[str]:
    """The block of each run ``_runs`` gives (``blocks.block_key``: its box, and its GPU
    where the run is one GPU's copy); empty unless every such run names its box (a
    fleet's: on one machine the runs are not blocked)."""
    out = []
    for p in ps:
        w = p.workload(name) if exact else None
        ws = ((w,) if w is not None and w.count else ()) if exact else copies_of(p, name)
        if ws and usable(p):
            if p.box is None:
                return []
            out.append(block_key(p.box.short, ws[0].gpu if len(ws) == 1 else None))
    return out


def _pairs(a: list[tuple[Any, Copies]], b: list[tuple[Any, Copies]]
           ) -> list[tuple[Copies, Copies]]:
    keys_b = {k for k, _ in b}
    if all(not str(k).startswith("#") for k, _ in a + b) and keys_b & {k for k, _ in a}:
        bd = dict(b)
        return [(x, bd[k]) for k, x in a if k in bd]
    return [(x, y) for (_, x), (_, y) in zip(a, b)]


# ------------------------------------------------------------ changes
@dataclass(frozen=True)
class Change:
    """One compared number: the baseline step vs another, over runs.

    ``basis`` says where the interval of ``diff`` comes from: ``runs`` (two or more
    paired runs), ``floor`` (one run each, against the recorded noise floor) or
    ``unmeasured`` (one run each, no floor: ``diff`` holds only the within-run
    interval and no verdict is given)."""

    workload: str
    metric: Metric  # P50 | P99 | samples/s | tpot_ms:P99 ...
    base: Interval
    other: Interval
    diff: Interval
    per_repeat: tuple[float, ...]  # the difference in each pair of runs
    repeats: int  # pairs of runs
    basis: M.Basis = RUNS
    floor: str = ""  # the floor used (its date, mode and runs), basis "floor"
    #: the variance of the paired differences split between and within runs
    noise: Split | None = None
    #: the fewest requests a run had, where fewer than the percentile needs
    #: (``analysis.stats.pooled``: it is their maximum); 0: enough
    few: int = 0
    #: the runs' requests were pooled (``few`` with two or more runs each)
    pooled: bool = False
    #: the fewest GPUs whose copies made one run's value (1: not replicated);
    #: ``analysis.stats.copies``: each run's value is the mean over its copies
    gpus: int = 1
    #: why there is no verdict at all: the step's mechanism took no part
    #: (``analysis.participation``, its ``no_verdict``); "": it took part
    no_part: str = ""
    #: boxes and blocks (box x GPU) whose levels the interval removed
    #: (``analysis.stats.blocks``); (1, 1): the runs were not blocked
    blocks: tuple[int, int] = (1, 1)

    @property
    def unit(self) -> str:
        """``ms`` or ``/s``: what the change's numbers are in."""
        return self.metric.change_unit

    def behind(self) -> str:
        """``"3 runs x 2 GPUs"``: what stands behind the number (per side)."""
        return width_words(self.repeats, self.gpus)

    def few_text(self) -> str:
        """``"P99 of 42 requests is their maximum (needs 100); runs pooled"`` or ""."""
        if not self.few:
            return ""
        note = few_note(self.few, self.metric.q)
        return note + ("; runs pooled" if self.pooled else "")

    @property
    def way(self) -> int:
        """+1 / -1 beyond noise, 0 within it (or not judged)."""
        return 0 if self.basis == UNMEASURED or self.no_part else direction(self.diff)

    @property
    def relative(self) -> float:
        b = self.base.est
        return self.diff.est / b if b and b == b else math.nan

    def way_word(self) -> M.Way:
        """faster | slower | within (what the snapshot's answer records)."""
        if self.way == 0:
            return "within"
        if self.metric.direction == "higher":  # a throughput: its change as it is
            return "higher" if self.way > 0 else "lower"
        return "slower" if self.way > 0 else "faster"

    def words(self) -> str:
        if self.no_part:
            return self.no_part
        if self.basis == UNMEASURED:
            return "no verdict: one run each, run-to-run noise unmeasured"
        if self.way == 0 and (self.diff.lo is None or self.diff.hi is None):
            # an open side is not "within noise": the data cannot bound the change at
            # all (on the H100 a -54% TPOT P99, each run's value the maximum of 15
            # requests, was called "within noise")
            return "no verdict: the interval is open"
        return WITHIN_NOISE if self.way == 0 else self.way_word()

    def text(self) -> str:
        d = self.diff
        lo = "?" if d.lo is None else f"{d.lo:+.2f}"
        hi = "?" if d.hi is None else f"{d.hi:+.2f}"
        rel = f" ({self.relative * 100:+.1f}%)" if self.relative == self.relative else ""
        iv = f"within-run [{lo}, {hi}]" if self.basis == UNMEASURED else f"[{lo}, {hi}]"
        how = f" (one run each, against the {self.floor})" if self.basis == FLOOR else ""
        few = f" ({self.few_text()})" if self.few else ""
        gpus = f" ({self.behind()})" if self.gpus > 1 else ""
        return f"{d.est:+.2f} {self.unit}{rel} {iv}{gpus}, {self.words()}{how}{few}"

    def advice(self) -> str | None:
        """How many runs would narrow a wide interval to +-10% of the baseline, and
        whether longer runs would do instead."""
        base = abs(self.base.est) if self.base.est == self.base.est else math.nan
        if self.basis != RUNS or self.noise is None or not base > 0 or self.no_part:
            return None
        half = TARGET * base
        if self.diff.width / 2 <= half:
            return None
        k = self.noise.runs_needed(half, paired=False)
        k4 = self.noise.runs_needed(half, run_s=4 * self.noise.run_s, paired=False)
        runs = "more than 10000 runs" if k is None else f"about {k} runs each"
        longer = ""
        if k is not None and k4 is not None and k4 < 0.75 * k:
            longer = f" (or {k4} runs of 4x the length)"
        elif self.noise.between > self.noise.within:
            longer = " (the noise sits between runs: longer runs would not help)"
        return (f"{self.workload} {self.metric}: the interval is {self.diff.width:.2f} "
                f"{self.unit} wide; {runs}{longer} would narrow it to "
                f"±{TARGET * 100:.0f}% of the baseline")


def _one_run_within(xs: Copies, ys: Copies, metric: Metric,
                    vx: RunValue, vy: RunValue, resolution: float = 0.0) -> Interval:
    """The within-run interval of a one-run difference (a percentile's: never
    narrower than the difference's ``resolution``; of copies' means: from their
    standard errors)."""
    d = vy.est - vx.est
    if metric.percentile is not None and len(xs) == 1 and len(ys) == 1:  # its own values
        own = (lambda w: _hist(w, metric)) if metric.kind == "named" else hist_of
        iv = diff_interval(own(xs[0]), own(ys[0]), metric.q)
        if iv.lo is None or iv.hi is None:
            return Interval(d, iv.lo, iv.hi)
        return Interval(d, *widen(iv.lo, iv.hi, d, resolution))
    if vx.se != vx.se or vy.se != vy.se:
        return Interval(d, None, None)
    half = Z95 * math.sqrt(vx.se ** 2 + vy.se ** 2)
    lo, hi = widen(d - half, d + half, d, resolution)
    return Interval(d, lo, hi)


def _hist(w: WorkloadSnapshot, metric: Metric) -> Hist:
    """The run's values that ``metric``'s percentile is read from."""
    name = metric.name
    if name:
        m = w.metrics.get(name)
        return hist_of(m) if m is not None and m.count else Hist((), math.nan, math.nan)
    return hist_of(w) if w.latency_hist.buckets else Hist(((0, w.count),), math.nan, math.nan)


def change(name: str, metric: Metric, base: Sequence[PhaseSnapshot],
           other: Sequence[PhaseSnapshot],
           floors: Mapping[str, Floor] | None = None, exact: bool = False) -> Change | None:
    """``metric`` of workload ``name``: the ``other`` step against ``base``, over runs.
    ``name`` is the scenario's name (every GPU's copy counts: each run's value is the
    mean over its copies, ``analysis.stats.copies``) or one copy's; ``exact``: that
    copy alone (the Compare table's row of one copy)."""
    ra, rb = _runs(base, name, exact), _runs(other, name, exact)
    if not ra or not rb:
        return None
    copies = {id(ws): run_copies(ws, metric) for _, ws in ra + rb}
    values = {k: c.value for k, c in copies.items()}
    va = [values[id(w)] for _, w in ra]
    vb = [values[id(w)] for _, w in rb]
    pairs = _pairs(ra, rb)
    pv = [(values[id(x)], values[id(y)]) for x, y in pairs]
    per = tuple(y.est - x.est for x, y in pv)
    gpus = min(len(ws) for _, ws in ra + rb)
    # the scenario's name where the copies are several GPUs' (each run's own, or runs on
    # different GPUs: a sweep's settings side by side, rotated)
    spread = {w.gpu for _, ws in ra + rb for w in ws}
    name = role(name) if gpus > 1 or len(spread) > 1 else name
    # a percentile's per-run values sit on a grid (analysis.stats.resolution), the
    # copies' grid where a run's value is their mean; samples/s do not
    res_a = copies_resolution([copies[id(w)] for _, w in ra], metric)
    res_b = copies_resolution([copies[id(w)] for _, w in rb], metric)
    few = 0
    if metric.percentile is not None:
        q = metric.q
        hists = {id(ws): [_hist(w, metric) for w in ws] for _, ws in ra + rb}
        least = min(h.n for hs in hists.values() for h in hs)
        few = least if too_few(least, q) else 0
    histograms = metric.kind == "named" or all(w.latency_hist.buckets for _, ws in ra + rb
                                      for w in ws)  # not an old snapshot
    if few and histograms and len(pairs) >= 2:  # every request of every run, as runs
        runs = {k: merge(hs) for k, hs in hists.items()}  # a run: its copies' requests
        hp = [(runs[id(x)], runs[id(y)]) for x, y in pairs]
        return Change(name, metric, pooled_interval([runs[id(w)] for _, w in ra], q),
                      pooled_interval([runs[id(w)] for _, w in rb], q),
                      pooled_diff_interval(hp, q), per, len(pairs), RUNS, few=few,
                      pooled=True, gpus=gpus)
    if len(pairs) >= 2:
        ses = [x.se ** 2 + y.se ** 2 for x, y in pv]
        # a fleet's runs: each run's box (and GPU) a block, its level removed
        ka, kb = _run_blocks(base, name, exact), _run_blocks(other, name, exact)
        blocked = blocked_difference(list(zip(ka, (v.est for v in va))),
                                     list(zip(kb, (v.est for v in vb))), res_a, res_b) \
            if len(ka) == len(ra) and len(kb) == len(rb) else None
        diff = blocked or paired_interval([x.est for x, _ in pv], [y.est for _, y in pv],
                                          res_a, res_b)
        k = len(per)
        mean = sum(per) / k
        total = sum((d - mean) ** 2 for d in per) / (k - 1)
        wvar = sum(ses) / len(ses) if all(s == s for s in ses) else math.nan
        noise = Split(k, run_length(list(base) + list(other)), mean, total, wvar,
                      math.hypot(res_a, res_b))
        return Change(name, metric, mean_interval([v.est for v in va], res_a),
                      mean_interval([v.est for v in vb], res_b), diff, per, k, RUNS,
                      noise=noise, few=few, gpus=gpus,
                      blocks=blocks_of([*ka, *kb]) if blocked is not None else (1, 1))
    # one run each: the machine's recorded run-to-run noise, or no verdict
    (x, y), (vx, vy) = pairs[0], pv[0]
    within = _one_run_within(x, y, metric, vx, vy, res_a + res_b)
    base_iv, other_iv = Interval(vx.est, None, None), Interval(vy.est, None, None)
    floors = floors or {}
    fa = floors.get(base[0].mode) if base else None
    fb = floors.get(other[0].mode) if other else None
    sa = fa.get(name, metric) if fa is not None else None
    sb = fb.get(name, metric) if fb is not None else None
    # either side's floor will do (calibrate's recovery has the mode as its base and
    # the native floor on the other side); the side without one is taken as equal
    if sa is not None and fa is not None:
        fl, first, second, bare = fa, sa, sb, other[0].mode
    elif sb is not None and fb is not None:
        fl, first, second, bare = fb, sb, None, base[0].mode
    else:
        return Change(name, metric, base_iv, other_iv, within, per, 1, UNMEASURED,
                      few=few, gpus=gpus)
    run_s = run_length([p for p in list(base) + list(other) if usable(p)])
    diff = one_run_interval(within.est, within, first, second, run_s, res_a + res_b)
    what = fl.describe() + ("" if second is not None else
                            f"; {mode_label(bare)}'s own floor unmeasured, taken as equal")
    return Change(name, metric, base_iv, other_iv, diff, per, 1, FLOOR, what, few=few,
                  gpus=gpus)


def latency_change(name: str, q: float, base: Sequence[PhaseSnapshot],
                   other: Sequence[PhaseSnapshot],
                   floors: Mapping[str, Floor] | None = None, exact: bool = False
                   ) -> Change | None:
    return change(name, Metric.latency(q), base, other, floors, exact)


def rate_change(name: str, base: Sequence[PhaseSnapshot], other: Sequence[PhaseSnapshot],
                floors: Mapping[str, Floor] | None = None) -> Change | None:
    return change(name, THROUGHPUT, base, other, floors)


@dataclass(frozen=True)
class StepAnswer:
    """What one step changed against the baseline."""

    step: str
    base_step: str
    repeats: int
    changes: tuple[Change, ...]
    #: who took part in the step's mechanism (``analysis.participation``)
    part: Participation = NATIVE

    @property
    def took_part(self) -> bool:
        """The step's mechanism took part (native: always): its changes are judged."""
        return self.part.took_part

    @property
    def gpus(self) -> int:
        """The GPUs whose copies make each run's value (the fewest of any change)."""
        return min((c.gpus for c in self.changes), default=1)

    def sentence(self) -> str:
        tokens = any(c.metric.kind == "named" for c in self.changes)
        parts = [f"{c.workload} {metric_words(c.metric, tokens)} {c.text()}"
                 for c in self.changes]
        g = self.gpus
        if g > 1:
            rep = f" ({width_words(self.repeats, g)} each" + \
                (", paired)" if self.repeats > 1 else ")")
        else:
            rep = f" ({self.repeats} runs each, paired)" if self.repeats > 1 else " (one run each)"
        head = f"{step_label(self.step)} vs {step_label(self.base_step)}{rep}: "
        if not self.took_part:  # no effect verdict, only who did not take part and why
            return head + self.part.no_verdict()
        scope = self.part.line()
        return head + (f"{scope}. " if scope else "") + \
            ("; ".join(parts) if parts else "nothing to compare")


def findings(snap: SessionSnapshot) -> list[GpuFinding]:
    """Every GPU whose copies differ from the other GPUs' beyond noise, over every
    usable run of the session, for every number the answer compares (Bonferroni over
    them all, ``analysis.stats.copies.gpu_findings``)."""
    base_p = baseline(snap)
    if base_p is None or not any(w.gpu is not None for w in base_p.workloads):
        return []
    hi, lows = by_priority(base_p)
    slo_wl, slo_m = slo_metric(snap)
    # a sweep box phase: one run per setting, one GPU each (GPUs there are settings)
    runs = [p for p in per_setting(snap.phases) if usable(p)]
    return [f for f in gpu_findings(runs, answered(hi, lows, slo_wl, slo_m), step_key)
            if f.way]


def answer(snap: SessionSnapshot, floors: Mapping[str, Floor] | None = None
           ) -> list[StepAnswer]:
    """For every step other than the baseline's: HIGH's P50 and P99 (and the SLO's
    percentile), each LOW's samples/s, against the baseline step, over runs. The
    floors default to the ones the snapshot carries. None for a capacity run: its phases
    are loads of a search, not settings to compare (its answer is ``snap.capacity``)."""
    base_p = baseline(snap)
    if base_p is None or snap.capacity is not None:
        return []
    floors = floors_in(snap.noise_floors) if floors is None else floors
    groups = steps(snap)
    hi, lows = by_priority(base_p)
    slo_wl, slo_m = slo_metric(snap)
    out = []
    for key, bkey in _pairs_of_steps(groups, step_key(base_p)):
        ps, base = groups[key], groups[bkey]
        # a floor speaks for the whole scenario, not for HIGH alone (calibrate)
        fl = {} if ps and ps[0].calibrate == "alone" else floors
        part = participation(ps, snap.scenario)
        why = part.no_verdict()
        ch: list[Change] = []
        for name, m in answered(hi, lows, slo_wl, slo_m):
            c = change(name, m, base, ps, fl)
            if c is not None:
                ch.append(replace(c, no_part=why) if why else c)
        if ch:  # nothing comparable (failed phases, or a snapshot without histograms)
            out.append(StepAnswer(key, bkey, min(c.repeats for c in ch), tuple(ch), part))
    return out


def _pairs_of_steps(groups: Mapping[str, Sequence[PhaseSnapshot]], bkey: str
                    ) -> list[tuple[str, str]]:
    """(step, its baseline step): every step against the first native one; in a
    calibration, each role's mode step against the same role's native step (HIGH alone
    under the mode against HIGH alone natively: the mode's own cost; together under the
    mode against together natively: what the mode changes under contention)."""
    roles = {str(ps[0].calibrate) for ps in groups.values()
             if ps and ps[0].calibrate}
    if not roles:
        return [(k, bkey) for k in groups if k != bkey]
    out = []
    for key, ps in groups.items():
        role = ps[0].calibrate if ps else None
        if role and ps[0].mode != "native":
            base = next((k for k, q in groups.items() if q and q[0].mode == "native"
                         and q[0].calibrate == role), None)
            if base is not None:
                out.append((key, base))
    return out


GATES = ("slower", "lower-throughput")


METHOD = ("Intervals: 95%, the run is the unit: Student's t over each run's estimate, runs "
          "paired in the interleaved order; one run per step is judged against the "
          "machine's recorded noise floor, else gets no verdict. 'within noise': the "
          "interval includes 0.")


def blocks_note(blocks: Sequence[tuple[int, int]]) -> str:
    """What the Intervals line adds where a fleet's runs were blocked (``Change.blocks``:
    boxes, blocks); "" where none was (the line as before)."""
    boxes, n = max(blocks, default=(1, 1))
    if n < 2:
        return ""
    gpus = f" (box x GPU: {n} blocks)" if n > boxes else ""
    return (f" Box is a block: {boxes} boxes{gpus}; each run's block's level is removed "
            "before comparing (an additive model, step + block, t on its residual degrees "
            "of freedom).")


METHOD_GPUS = ("Several GPUs: each run's value is the mean over its GPUs' copies (the "
               "geometric mean of their percentiles, the mean of their samples/s); 'N runs "
               "x M GPUs' is what stands behind a number; the interval is still over runs. "
               "A GPU unlike the others is named in a Finding, 95% over every GPU and "
               "number compared.")

METHOD_BOX = ("Sweep on several GPUs: the settings ran side by side, one a GPU, the "
              "assignment rotated every repeat; a setting's run is its own copy on its GPU "
              "(each run's GPU is in the table of phases), native's the mean over every GPU.")
