"""Racing settings to the cheapest one that meets an SLO, with confidence (pure).

Each candidate (a mode and its settings) has runs; each run gives one value of the
SLO metric (the SLO workload's percentile, with its within-run standard error from
order statistics) and one price (the summed samples/s of the workloads below the
SLO's priority: what sharing leaves the background work). Over its runs a candidate
gets, for each of the two, an anytime-valid interval (``analysis.stats.sequential``): the
geometric mean of its runs' values (the typical run's), its between-run variance on
the log scale moderated toward the variance pooled over all the candidates, and the
error rate 5% split over the candidates and the two metrics (80% to the SLO) and spent over each
candidate's looks, so that every interval of every look holds together with 95%
probability. A run too short to bound its percentile from above (P99 needs ~300
requests) leaves its candidate's SLO interval open above: it cannot meet the SLO
with confidence. After each round:

- a candidate whose SLO interval lies above the objective is dropped (``dropped-slo``);
- a candidate whose price interval lies below the best SLO-meeting candidate's
  price interval is dropped (``dropped-dominated``);
- a candidate whose run failed is ``failed``;
- a candidate whose mode took no part in a run (``analysis.participation``: XSched
  scheduled none of its workloads, none was a client of MPS) is dropped as
  ``dropped-no-part``, never as missing the SLO: its runs measured no mechanism;
- the race ends when a candidate meets the SLO with confidence (its upper bound
  under the objective) and its price beats every other survivor's with confidence,
  or when it is the last survivor meeting the SLO.

Because the intervals hold over all looks at once, a choice, a "met" and every drop
are as sure as 95% whenever the race stops (the budget included). The next round
runs only the candidates whose runs can still decide something (``to_run``): those
whose SLO interval straddles the objective, and those meeting it whose price
interval still overlaps another survivor's, but not those whose price lies below
the likely choice's with confidence (they wait: the likely choice meeting the SLO
drops them); a thresholding bandit's rule (APT, Locatelli et al. 2016) with the
intervals in place of its index. ``still_open`` says, at the
budget, what each open candidate waits for (its SLO interval to leave the objective,
or its price interval to leave the likely choice's) and about how many more rounds
would give it, if the means and spreads stay as they are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from msgspec import UNSET

from xwatch.core import model as M
from xwatch.core.analysis.participation import participation
from xwatch.core.analysis.stats import sequential as seq
from xwatch.core.analysis.stats.blocks import block_key, blocked_runs
from xwatch.core.analysis.stats.copies import combine, copies_of, failed_beside, role, run_copies
from xwatch.core.analysis.stats.intervals import Interval, requests_to_bound
from xwatch.core.analysis.stats.noise import usable
from xwatch.core.analysis.stats.runs import rate_resolution, run_value
from xwatch.core.engine.snapshot import PhaseSnapshot, WorkloadSnapshot
from xwatch.core.model.metric import THROUGHPUT, Metric
from xwatch.core.modes import base, registry

CHOSEN, DROPPED_SLO, DROPPED_DOMINATED = "chosen", "dropped-slo", "dropped-dominated"
DROPPED_NO_PART = "dropped-no-part"
UNDECIDED, FAILED, SURVIVING = "undecided", "failed", "surviving"
MIN_RUNS = 2  # no decision on fewer runs (no interval)
NO_INTERVAL = Interval(math.nan, None, None)
ALPHA = seq.ALPHA


@dataclass(frozen=True)
class Objective:
    workload: str
    metric: Metric  # P99, itl_ms:P99
    latency_ms: float


@dataclass(frozen=True)
class Fit:
    """One metric of one candidate as the last look saw it: its runs on the log scale
    and the prior pooled over the candidates."""

    runs: seq.LogRuns | None
    prior: seq.Prior | None


NO_FIT = Fit(None, None)


@dataclass
class Candidate:
    """One setting in the race: its name, mode, settings and what its runs gave
    (``slo_ses``: each run's within-run standard error of its SLO value, NaN where the
    run could not bound it; empty for hand-made values: taken as exact)."""

    label: str
    mode: str
    settings: dict[str, M.SettingValue]  # {"low.threshold": 2} (the sweep's names)
    slo_values: list[float] = field(default_factory=list)
    prices: list[float] = field(default_factory=list)
    status: str = SURVIVING
    reason: str = ""
    slo: Interval = NO_INTERVAL
    price: Interval = NO_INTERVAL
    slo_ses: list[float] = field(default_factory=list)
    price_ses: list[float] = field(default_factory=list)
    slo_fit: Fit = NO_FIT
    price_fit: Fit = NO_FIT
    #: the GPU of each run, in order (a race over the box, ``plans.box``; empty on one
    #: device): the GPU is a block, rotated over the runs, its effect part of the
    #: run-to-run variance the intervals are built on
    gpus: list[int] = field(default_factory=list)
    #: every GPU of each run, in order (spread over several: their copies' mean)
    run_gpus: list[tuple[int, ...]] = field(default_factory=list)
    #: each run's price resolution, samples/s (``runs.rate_resolution``, summed over the
    #: LOWs): the price's within-run floor; empty for hand-made values (continuous)
    price_res: list[float] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)  #: a fleet's runs' box/GPU (one box: none)

    @property
    def runs(self) -> int:
        return len(self.slo_values)

    @property
    def alive(self) -> bool:
        return self.status == SURVIVING

    @property
    def bounded(self) -> bool:
        """Every run bounded its SLO value from above (enough requests)."""
        return not any(s != s for s in self.slo_ses)

    def meets(self, obj: Objective) -> bool:
        return self.slo.hi is not None and self.slo.hi < obj.latency_ms

    def fails(self, obj: Objective) -> bool:
        return self.slo.lo is not None and self.slo.lo > obj.latency_ms


def record_run(c: Candidate, p: PhaseSnapshot, obj: Objective, lows: Sequence[str],
               gpu: int | tuple[int, ...] | None = None) -> None:
    """Add one finished phase of ``c`` (a failed or cut-short one fails the candidate).
    ``gpu``: the phase held several candidates (``plans.box``), ``c``'s copies are
    ``NAME@gpu`` (a tuple: ``c`` spread over those GPUs, its run the mean over their
    copies, as the answer takes it); otherwise every GPU's copy counts (with --gpus the
    objective names the scenario's workload, ``high``, or one copy) and the run's value
    is their mean."""
    on = (gpu,) if isinstance(gpu, int) else gpu
    at = "" if on is None else tuple(f"@{g}" for g in on)
    ws = _mine(p, role(obj.workload), at)
    names = frozenset(w.name for w in p.workloads if on is not None
                      and w.name.endswith(tuple(f"@{g}" for g in on)))
    neighbour = on is not None and p.status == "failed" and failed_beside(p, names)
    if (p.status == "failed" and not neighbour) or not ws:
        c.status, c.reason = FAILED, str(p.error or f"phase {p.name} {p.status}")
        return
    if not neighbour and not usable(p):
        return  # stopped before its end: not a run
    part = participation([p], None, names if on is not None else None)
    if not part.took_part and not all(a.undecided for a in part.absent):
        # a workload decided out and none proven in: the run measured no mechanism (a run
        # whose evidence came too late, every verdict undecided, counts as it ran)
        c.status, c.reason = DROPPED_NO_PART, part.no_verdict().removeprefix("no verdict: ")
        return
    v = run_copies(ws, obj.metric, pool_short=True).value
    c.slo_values.append(v.est)
    c.slo_ses.append(v.se)
    if on is not None:
        c.gpus.append(on[0])
        c.run_gpus.append(on)
    c.blocks += [block_key(p.box.short, on[0] if on and len(on) == 1 else None)] if p.box else []
    # each LOW once, whichever of its names came; spread over several GPUs: the mean over
    # its copies (a per-GPU price, like a one-GPU run's)
    mine = [_mine(p, n, at) for n in dict.fromkeys(role(n) for n in lows)]
    per = [[run_value(lw, THROUGHPUT) for lw in ws] for ws in mine]
    rates = [combine(vs, THROUGHPUT.scale) for vs in per if vs] if on is not None else \
        [r for vs in per for r in vs]
    c.prices.append(sum(r.est for r in rates))
    ses = [r.se for r in rates]
    c.price_ses.append(math.sqrt(sum(s * s for s in ses)) if ses else math.nan)
    # a mean over copies is within the mean of their resolutions; a sum, the sum
    res = [[rate_resolution(lw) for lw in ws] for ws in mine]
    c.price_res.append(sum(sum(r) / len(r) for r in res if r) if on is not None
                       else sum(x for r in res for x in r))


def _mine(p: PhaseSnapshot, name: str, at: str | tuple[str, ...]
          ) -> tuple[WorkloadSnapshot, ...]:
    """The copies of ``name`` that are the candidate's: in a box phase (``at``: "@GPU"
    each) its copies on those GPUs, else every GPU's copy that counted requests."""
    if not at:
        return copies_of(p, name)
    ws = [p.workload(name + a) for a in ((at,) if isinstance(at, str) else at)]
    return tuple(w for w in ws if w is not None and w.count)


#: the error rate's split between the SLO metric and the price (a price varies ~1%
#: between runs and needs little of it)
SLO_SHARE = 0.8


def share(cands: Sequence[Candidate], price: bool = False) -> float:
    """The error rate of one metric of one candidate (before spending over its looks):
    5% over the candidates (all of them, failed ones too, so that a failure cannot
    loosen the others), 80% of it to the SLO metric, 20% to the price."""
    part = 1.0 - SLO_SHARE if price else SLO_SHARE
    return ALPHA * part / max(1, len(cands))


def price_runs(c: Candidate) -> seq.LogRuns | None:
    """``c``'s prices on the log scale, their floor the count's resolution (one
    iteration over the window, ``runs.rate_resolution``: the largest of its runs'), not
    the iterations' spread (``price_ses``, kept for the record): a closed loop's count
    varies far less than that says, and the runs' own spread, pooled over the
    candidates whose spread is comparable, decides (docs/statistics.md)."""
    res = max(c.price_res) if len(c.price_res) == len(c.prices) and c.price_res else None
    return seq.log_runs(c.prices, (), histogram=False, resolution=res)


def fit(cands: Sequence[Candidate]) -> None:
    """Every candidate's SLO and price intervals at this look (``analysis.stats.sequential``)."""
    live = [c for c in cands if c.status != FAILED]
    slo = blocked_runs({c.label: seq.log_runs(c.slo_values, c.slo_ses, bounded=c.bounded)
                        for c in live}, {c.label: (c.slo_values, c.blocks) for c in live})
    price = blocked_runs({c.label: price_runs(c) for c in live},
                         {c.label: (c.prices, c.blocks) for c in live})
    ps, pp = seq.fit_prior(list(slo.values())), seq.fit_prior(list(price.values()))
    a, b = share(cands), share(cands, price=True)
    for c in live:
        c.slo_fit, c.price_fit = Fit(slo[c.label], ps), Fit(price[c.label], pp)
        c.slo = seq.interval(slo[c.label], ps, a)
        c.price = seq.interval(price[c.label], pp, b)


def judge(cands: Sequence[Candidate], obj: Objective) -> Candidate | None:
    """Update intervals and drop what is decided; the winner once there is one."""
    live = [c for c in cands if c.alive]
    fit(cands)
    if any(c.runs < MIN_RUNS for c in live):
        return None
    for c in live:
        if c.fails(obj):
            c.status = DROPPED_SLO
            c.reason = (f"{obj.workload} {obj.metric} {c.slo.text()} ms is above "
                        f"{obj.latency_ms:g} ms with confidence")
    meeting = [c for c in cands if c.alive and c.meets(obj)]
    if meeting:
        best = max(meeting, key=lambda c: c.price.lo if c.price.lo is not None else -math.inf)
        for c in cands:
            if c.alive and c is not best and c.price.hi is not None and \
                    best.price.lo is not None and c.price.hi < best.price.lo:
                c.status = DROPPED_DOMINATED
                c.reason = (f"price {c.price.text('{:,.0f}')}/s is below {best.label}'s "
                            f"{best.price.text('{:,.0f}')}/s, which meets the SLO, with "
                            "confidence")
        others = [c for c in cands if c.alive and c is not best]
        if all(c.price.hi is not None and best.price.lo is not None and
               best.price.lo > c.price.hi for c in others):
            return best
    return None


def _overlap(a: Interval, b: Interval) -> bool:
    return not ((a.hi is not None and b.lo is not None and a.hi < b.lo) or
                (b.hi is not None and a.lo is not None and b.hi < a.lo))


def likely_choice(cands: Sequence[Candidate], obj: Objective) -> Candidate | None:
    """The survivor with the highest price among those whose SLO estimate is under the
    objective (None: no estimate is)."""
    under = [c for c in cands if c.alive and c.slo.est == c.slo.est and
             c.slo.est < obj.latency_ms]
    return max(under, key=lambda c: c.price.est) if under else None


def to_run(cands: Sequence[Candidate], obj: Objective) -> list[Candidate]:
    """The survivors whose next run can decide something (a thresholding bandit's
    rule: runs go to the intervals that still straddle a line): every survivor with
    fewer than ``MIN_RUNS`` runs; else, leaving out those whose price is below the
    likely choice's with confidence (the likely choice meeting the SLO drops them),
    each whose SLO interval straddles the objective, and each meeting it whose price
    interval overlaps another survivor's; never one whose runs are too short to bound
    the SLO percentile from above while its estimate is under the objective (no number
    of such runs can make it meet with confidence: ``still_open`` says so). Every
    survivor when that leaves none (a safeguard: the race then ends by its judge or its
    budget)."""
    live = [c for c in cands if c.alive]
    if any(c.runs < MIN_RUNS for c in live):
        return [c for c in live if c.runs < MIN_RUNS]
    lk = likely_choice(cands, obj)
    out = []
    for c in live:
        if lk is not None and c is not lk and c.price.hi is not None and \
                lk.price.lo is not None and c.price.hi < lk.price.lo:
            continue  # waits for the likely choice
        if not c.bounded and c.slo.est == c.slo.est and c.slo.est < obj.latency_ms:
            continue  # its runs cannot bound the percentile: no run can make it meet
        if not (c.meets(obj) or c.fails(obj)) or \
                any(_overlap(c.price, o.price) for o in live if o is not c):
            out.append(c)
    return out or live


def rounds_to_tell(c: Candidate, bound: float, alpha: float, most: int = 200) -> int | None:
    """About how many more runs would put ``c``'s SLO interval (as the last look
    fitted it, at ``alpha`` before spending) wholly on one side of ``bound``, if its
    mean and spread stay as they are: 0 when it is already; None when the runs cannot
    tell (fewer than two, a mean on the bound, runs that cannot bound the value from
    above while it is under, or more than ``most`` in all)."""
    r = c.slo_fit.runs
    return None if r is None else seq.runs_to_clear(r, c.slo_fit.prior, bound, alpha, most)


def rounds_to_decide(a: Candidate, b: Candidate, alpha: float,
                     most: int = 200) -> int | None:
    """About how many more rounds would separate ``a`` and ``b``'s prices (their
    intervals no longer overlapping, if the means and spreads stay as they are)."""
    ra, rb = a.price_fit.runs, b.price_fit.runs
    if ra is None or rb is None:
        return None
    return seq.runs_to_separate(ra, rb, a.price_fit.prior, alpha, most)


@dataclass(frozen=True)
class Open:
    """What the budget left open: the likely choice (the highest price among those
    whose SLO estimate is under the objective; None when no estimate is), each open
    candidate's wait in words with its rounds, and the rounds the whole race would
    need (None: the runs so far cannot tell)."""

    likely: Candidate | None
    waits: dict[str, tuple[str, int | None]]
    rounds: int | None


def still_open(cands: Sequence[Candidate], obj: Objective) -> Open:
    """Per open candidate (surviving, undecided, or chosen by estimate at the budget),
    the decision it waits for and about how many more rounds would give it (at the
    intervals' own level and spending, ``share``)."""
    conf, conf_price = share(cands), share(cands, price=True)
    live = [c for c in cands if c.status in (SURVIVING, UNDECIDED, CHOSEN)]
    goal = f"{obj.workload} {obj.metric}"
    under = [c for c in live if c.slo.est == c.slo.est and c.slo.est < obj.latency_ms]
    likely = max(under, key=lambda c: c.price.est) if under else None  # as likely_choice
    waits: dict[str, tuple[str, int | None]] = {}
    for c in live:
        side = "under" if c.slo.est < obj.latency_ms else "above"
        slo_k = 0 if c.meets(obj) or c.fails(obj) else \
            rounds_to_tell(c, obj.latency_ms, conf)
        slo_words = f"{goal} {c.slo.text()} ms, {side} {obj.latency_ms:g} ms by estimate"
        if not c.bounded and side == "under" and obj.metric.kind != "named":
            slo_words += (f", but its runs are too short to bound {obj.metric} from above (that "
                          f"needs {requests_to_bound(obj.metric.q)} requests a run): longer runs would")
        if likely is None or c is likely:
            if c is likely and c.meets(obj) and len(live) == 1:
                continue
            waits[c.label] = (slo_words, slo_k)
        elif c.price.est > likely.price.est:  # cheaper, but over the SLO by estimate
            waits[c.label] = (slo_words, slo_k)
        else:  # dearer than the likely choice: told apart by price (or by the SLO)
            # a drop for price needs the likely choice to meet the SLO with confidence too
            k_likely = 0 if likely.meets(obj) else \
                rounds_to_tell(likely, obj.latency_ms, conf)
            k_price = rounds_to_decide(c, likely, conf_price)
            if k_price == 0:
                by_price = (f"price {c.price.text('{:,.0f}')}/s, below {likely.label}'s with "
                            f"confidence; waits for {likely.label} to meet the SLO with "
                            "confidence", k_likely)
            else:
                by_price = (f"price {c.price.text('{:,.0f}')}/s against {likely.label}'s "
                            f"{likely.price.text('{:,.0f}')}/s",
                            None if k_price is None or k_likely is None
                            else max(k_price, k_likely))
            by_slo = (slo_words, slo_k) if side == "above" else (slo_words, None)
            known = [w for w in (by_price, by_slo) if w[1] is not None]
            waits[c.label] = min(known, key=lambda w: w[1] or 0) if known else by_price
    ks = [k for _, k in waits.values()]
    total = None if None in ks else max((k for k in ks if k is not None), default=0)
    return Open(likely, waits, total)


def more_rounds(k: int) -> str:
    return f"{k} more round" + ("" if k == 1 else "s")


def undecided_note(cands: Sequence[Candidate], obj: Objective,
                   run_s: float | None = None, chosen: Candidate | None = None) -> str:
    """What the budget left open, and about how many more rounds (and runs: each open
    candidate runs until its own decision; minutes at ``run_s`` a run) would settle it.
    ``chosen``: the candidate recommended at the budget (it meets the SLO with
    confidence); another whose estimate meets may still turn out cheaper."""
    op = still_open(cands, obj)
    if not op.waits:
        return ""
    goal = f"{obj.workload} {obj.metric} < {obj.latency_ms:g} ms"
    if chosen is not None:
        cheaper = op.likely if op.likely is not None and op.likely is not chosen else None
        head = (f"{chosen.label} meets {goal} with confidence and is the advice; "
                + (f"{cheaper.label} may be cheaper (its estimate meets {goal}, not yet "
                   "with confidence)" if cheaper is not None else
                   "a cheaper candidate is still open"))
    elif op.likely is None:
        head = (f"no open candidate's estimate meets {goal}; the race would end with each "
                "dropped for the SLO")
    else:
        head = f"the likely choice is {op.likely.label} (the cheapest whose estimate meets {goal})"
    runs = sum(k for _, k in op.waits.values() if k is not None)
    cost = f", {runs} runs" + (f", about {runs * run_s / 60:.0f} min" if run_s else "")
    total = ("the runs so far cannot tell when" if op.rounds is None
             else f"about {more_rounds(op.rounds)} ({cost[2:]}) would decide it")
    slow = sorted(op.waits.items(), key=lambda kv: -(kv[1][1] if kv[1][1] is not None
                                                       else math.inf))
    parts = [f"{label}: {words}, " + (f"about {more_rounds(k)}" if k is not None
                                      else "the runs so far cannot tell")
             for label, (words, k) in slow[:3] if k != 0]
    more = f" (the longest: {'; '.join(parts)})" if parts else ""
    lead = "Not decided on price at the budget" if chosen is not None else \
        "Undecided at the budget"
    return f"{lead}: {head}; {total}{more}."


def short_label(mode: str, settings: Mapping[str, Any]) -> str:
    """``mps low pri=1 sm=50%``, ``xsched low th=4 b=2``: a candidate's name in tables."""
    short = {k: v for m in registry.modes() for k, v in m.short_keys.items()}
    by_wl: dict[str, list[str]] = {}
    for k, v in settings.items():
        wl, _, key = k.partition(".")
        word = short.get(key, key.rpartition(".")[2])
        by_wl.setdefault(wl, []).append(f"{word}={v}%" if word == "sm" else f"{word}={v}")
    return " ".join([mode, *(f"{wl} {' '.join(kv)}" for wl, kv in by_wl.items())])


def as_records(cands: Sequence[Candidate], waits: Mapping[str, tuple[str, int | None]]
               | None = None) -> list[M.Candidate]:
    """The candidates as the snapshot's ``advice.candidates`` carries them (``waits``:
    ``still_open``'s, for the rounds each open candidate needs)."""
    def iv(i: Interval) -> M.Estimate:
        d = i.as_dict()
        return M.Estimate(estimate=d["est"], lo=d["lo"], hi=d["hi"])

    w = waits or {}
    return [M.Candidate(label=c.label, mode=c.mode, settings=dict(c.settings), runs=c.runs,
                        slo_metric=iv(c.slo), price=iv(c.price), status=c.status,
                        reason=c.reason, gpus=list(c.gpus),
                        more_rounds=w[c.label][1] if c.label in w else UNSET,
                        run_gpus=[list(g) for g in c.run_gpus]
                        if any(len(g) > 1 for g in c.run_gpus) else UNSET)
            for c in cands]


def closest(cands: Sequence[Candidate]) -> Candidate | None:
    """The candidate whose SLO metric came closest (lowest estimate) when none met it."""
    ok = [c for c in cands if c.status != FAILED and c.slo.est == c.slo.est]
    return min(ok, key=lambda c: c.slo.est) if ok else None


def settings_of(step_setting: Mapping[str, Mapping[str, M.SettingValue]] | None
                ) -> dict[str, M.SettingValue]:
    """``{"low": {"threshold": 2}}`` -> ``{"low.threshold": 2}`` (the sweep's names)."""
    return {f"{wl}.{k}": v for wl, kv in (step_setting or {}).items() for k, v in kv.items()}


# ------------------------------------------------------------ words
def _mode_words(mode: str, settings: Mapping[str, Any]) -> str:
    name = "native (no sharing mechanism)" if mode == "native" else base.label(mode)
    if not settings:
        return name
    words = {k: w for m in registry.modes() for k, w in m.setting_words.items()}
    parts = []
    for k, v in settings.items():
        wl, _, key = k.partition(".")
        parts.append(words.get(key, "{wl} {key} {v}").format(wl=wl, key=key, v=v))
    return f"{name}, " + ", ".join(parts)


def _num(v: float | None, fmt: str) -> str:
    return "?" if v is None or v != v else fmt.format(v)


def sentence(advice: M.Advice) -> str:
    """The answer in one sentence (from the snapshot's ``advice`` record)."""
    slo = advice.slo
    want = f"{slo.workload} {slo.metric} < {slo.latency_ms:g} ms"
    cands = {c.label: c for c in advice.candidates}
    native = next((c for c in advice.candidates if c.mode == "native"), None)
    choice = advice.choice
    if choice is None:
        near = advice.closest
        c = cands.get(near) if near else None
        tail = "" if c is None else (
            f"; the closest is {_mode_words(c.mode, c.settings)}: {slo.workload} "
            f"{slo.metric} {_num(c.slo_metric.estimate, '{:.2f}')} ms "
            f"[{_num(c.slo_metric.lo, '{:.2f}')}, {_num(c.slo_metric.hi, '{:.2f}')}]")
        live = [x for x in advice.candidates if x.status == UNDECIDED]
        if not live:
            out = [x.label for x in advice.candidates if x.status == DROPPED_NO_PART]
            part = f" ({', '.join(out)}: took no part)" if out else ""
            return f"No setting meets {want}: every one was dropped or failed{part}{tail}."
        few = min(x.runs for x in live) < MIN_RUNS
        rounds = 1 if advice.rounds is UNSET else advice.rounds  # older records: none
        why = (f" (the budget ended after {rounds} round(s); a decision "
               f"needs at least {MIN_RUNS} runs of each)" if few else " within the budget")
        lk = cands.get(advice.likely or "")
        if lk is not None and not few:
            k = advice.more_rounds or None
            when = f", about {more_rounds(k)} from a decision," if k else ""
            tail = (f"; the likely choice{when} is {_mode_words(lk.mode, lk.settings)}: "
                    f"{slo.workload} {slo.metric} "
                    f"{_num(lk.slo_metric.estimate, '{:.2f}')} ms "
                    f"[{_num(lk.slo_metric.lo, '{:.2f}')}, "
                    f"{_num(lk.slo_metric.hi, '{:.2f}')}], price "
                    f"{_num(lk.price.estimate, '{:,.0f}')}/s "
                    f"[{_num(lk.price.lo, '{:,.0f}')}, {_num(lk.price.hi, '{:,.0f}')}]")
        return f"No setting met {want} with confidence{why}{tail}."
    c = cands[choice.label]
    s, p = c.slo_metric, c.price
    rel = ""
    if native is not None and native is not c and native.price.estimate \
            and p.estimate is not None:
        rel = f", {(p.estimate / native.price.estimate - 1) * 100:+.0f}% against native"
    how, may = "", ""
    if advice.decided is False:
        how, may = _why_chosen(advice, c)
    return (f"Use {_mode_words(c.mode, c.settings)}{how}: {slo.workload} {slo.metric} "
            f"{_num(s.estimate, '{:.2f}')} ms [{_num(s.lo, '{:.2f}')}, "
            f"{_num(s.hi, '{:.2f}')}] < {slo.latency_ms:g} ms; price "
            f"{_num(p.estimate, '{:,.0f}')}/s [{_num(p.lo, '{:,.0f}')}, "
            f"{_num(p.hi, '{:,.0f}')}]{rel}{may}.")


def _why_chosen(advice: M.Advice, c: M.Candidate) -> tuple[str, str]:
    """At the budget, before the choice's price was told apart: why this one (the only
    setting meeting the SLO with confidence, or the cheapest by estimate of those that
    do), and the cheaper ones still open that may meet it for less, with their
    estimates and the rounds they need."""
    slo = advice.slo
    open_ = [x for x in advice.candidates if x is not c and x.status == UNDECIDED]
    meet = [x for x in open_ if x.slo_metric.hi is not None and x.slo_metric.hi < slo.latency_ms]
    if not meet:
        how = " (the only setting that meets the SLO with confidence)"
    else:
        how = (f" (the cheapest by estimate of the {len(meet) + 1} settings that meet the SLO "
               "with confidence: the budget ended before their prices were told apart)")
    pe = c.price.estimate
    cheaper = [x for x in open_ if pe is not None and x.price.estimate is not None
               and x.price.estimate > pe and x not in meet
               and x.slo_metric.estimate is not None and x.slo_metric.estimate < slo.latency_ms]
    if not cheaper:
        return how, ""
    cheaper.sort(key=lambda x: -(x.price.estimate or 0.0))
    each = "; ".join(f"{x.label}: {slo.metric} {estimate_text(x.slo_metric, '{:.2f}')} ms, "
                     f"{estimate_text(x.price, '{:,.0f}')}/s" for x in cheaper)
    ks = [x.more_rounds for x in cheaper]
    if ks and all(isinstance(k, int) for k in ks):
        when = f": about {more_rounds(max(k for k in ks if isinstance(k, int)))} to tell"
    elif any(k is UNSET for k in ks):
        # an older record keeps the rounds for the whole race only, not per candidate:
        # that count, or nothing (unset is not "the runs cannot tell")
        k = advice.more_rounds
        when = f": about {more_rounds(k)} to tell" if isinstance(k, int) and k else ""
    else:
        when = ": the runs so far cannot tell how many more rounds would"
    names = " and ".join(x.label for x in cheaper)
    return how, f"; {names} may meet it for less ({each}){when}"


def estimate_text(d: M.Estimate, fmt: str) -> str:
    """A recorded estimate and its interval as the answer prints them: ``7.04 [5.56,
    8.90]``, ``?`` for an open end, ``-`` for no estimate."""
    if d.estimate is None:
        return "-"
    lo = "?" if d.lo is None else fmt.format(d.lo)
    hi = "?" if d.hi is None else fmt.format(d.hi)
    return f"{fmt.format(d.estimate)} [{lo}, {hi}]"


def toml_for(advice: M.Advice) -> list[str]:
    """The scenario lines that deploy the choice (and the mode to run it in)."""
    choice = advice.choice
    if choice is None:
        return []
    mode, settings = choice.mode, choice.settings
    lines = [f"# run it with: xwatch run SCENARIO --mode {mode}"]
    by_wl: dict[str, dict[str, M.SettingValue]] = {}
    for k, v in settings.items():
        wl, _, key = k.partition(".")
        by_wl.setdefault(wl, {})[key] = v
    declared = registry.find(mode)
    for wl, kv in by_wl.items():
        lines.append(f'# in the [[workload]] table with name = "{wl}":')
        lines += declared.deploy(kv) if declared is not None else \
            [f"# {mode} (not installed here): {k} = {v}" for k, v in kv.items()]
    if not by_wl:
        lines.append("# no settings: every workload as it is")
    return lines


def reasons(advice: M.Advice) -> list[str]:
    """Why each candidate that was not chosen left the race."""
    return [f"{c.label}: {c.status}" + (f" - {c.reason}" if c.reason else "")
            for c in advice.candidates if c.status != CHOSEN]
