"""The capacity search's statistics (pure): for each candidate (a mode and its
settings, with the lower-priority work beside it, or the SLO workload on a GPU of its
own), the highest offered rate of the SLO workload that meets the SLO with confidence
(``met``) and the lowest that misses it with confidence (``failed``); and what share of
a dedicated GPU's work each candidate keeps. ``plans.capacity`` runs the probes.

**A load** (one offered rate of one candidate) is judged as the advise race judges a
candidate (``analysis.stats.sequential``, the race's machinery): each run gives one
value of the SLO metric (with its within-run error; a run too short to bound the
percentile leaves the interval open above), the interval is over runs on the log
scale, the between-run variance pooled over the loads of every candidate whose
estimates lie within ``NEAR`` of the objective (``sequential.moderated``: a load
noisier than the pool keeps its own), its error rate spent over the load's looks (one
look a run, from ``Design.first`` to ``Design.max_runs`` runs, each at the level of one
boundary calibrated to the looks' correlation: ``look_alpha``, ``interval``), so the
interval holds at every look at once. A load is ``met`` once its interval's upper end
lies under the objective, ``failed`` once its lower end lies above, judged afresh at
every look (``Design.keep`` says why) and, in a search whose runs of a load have lain
``RUNAWAY`` apart, only on ``Design.wary`` runs or more. A verdict can err through one end only
(a load truly under the objective is wrongly failed by its lower end alone), so each end
is taken at the load's whole error rate (the two-sided interval at twice it); the
intervals printed, and the monotonicity check, which can err through either end, are
two-sided at the load's rate.

**The search** of one candidate (``loads.Design``; ``NOW`` since 2026-11-29, ``BEFORE``
the search until then): the first load is the lowest rate asked; while no load is
estimated over the objective, the next is the knee extrapolated from the loads so far
(``knee.crossing``; at least twice the highest probed where they show no rise), at most
``GROWTH`` times the highest probed (never past the highest asked), and a load
estimated under the objective is not run again (its verdict is not needed: the
bracket's lower end will lie nearer the knee). A load estimated over it is run until it
fails (the bracket's upper end); then each next load is placed around the knee
estimated from every load's runs (``knee.place``: a pair either side of it within
``TARGET``, 10%, or further where the curve is too flat for the runs' spread), and a
load is run again while its interval straddles the objective, until ``failed / met`` is
within ``TARGET``. A load that its mean and variance say cannot be told from the
objective within ``Design.give_up`` more runs, or that has had ``Design.max_runs``, is
left open (``exhausted``): the knee is there within the runs' noise, and the next load
goes half a ``TARGET`` (or further) from it; where no load can go, the search stops at
the knee, having run its highest load under the objective until it met where none had.
The knee estimate places loads only: no verdict rests on it. The search decides how
many runs each load gets; there is no fixed repeat.

**The promise**: every verdict of every load of every candidate holds together with
probability 1 - ``ALPHA`` (95%). The error rate is split ``BRACKET_SHARE`` (80%) to
the SLO intervals, evenly over the candidates and over the most loads a search may
probe (``max_loads``: a search never probes more), and the rest to the throughput of
the work beside (LOW), evenly over the same loads and LOW alone. When the SLO metric
rises with the load, every ``met`` load is below the true knee and every ``failed`` one
above it, so each bracket holds the knee, at every look, with 95% probability
(simulated against planted knees with run-to-run effects: ``benchmarks/stats/capacity_sim.py``
and ``tests/unit/test_capacity_search.py``). A load whose interval lies wholly above a
higher load's breaks that premise: the search says the metric is not monotone in the
load and stops (``NON_MONOTONE``).

**The shares**: a candidate's capacity is its bracket (estimate: the geometric
middle); its share of dedicated is its bracket over the dedicated bracket,
``[met / failed_dedicated, failed / met_dedicated]``; LOW's share is LOW's throughput
at the candidate's ``met`` load over LOW alone, each an interval from its runs; their
sum is the GPUs of work the shared GPU carries. Each interval holds whenever the
brackets and throughput intervals it is built from hold, so together with them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from xwatch.core import model as M
from xwatch.core.analysis.capacity import knee
from xwatch.core.analysis.capacity.loads import (
    MIN_RUNS,
    NO_INTERVAL,
    NOW,
    POOLED,
    Design,
    interval,
    look_alpha,
    nice,
    runs_to_clear,
    spread,
)
from xwatch.core.analysis.capacity.shares import Shares, add, ratio
from xwatch.core.analysis.stats import sequential as seq
from xwatch.core.analysis.stats.intervals import Interval

ALPHA = 0.05
#: the error rate's share for the SLO intervals (the brackets); the rest: LOW's throughput
BRACKET_SHARE = 0.8
#: how far the bracket grows per load before a load misses
GROWTH = 4.0
#: the bracket is narrow enough once ``failed / met`` is at most this (10%)
TARGET = 1.10
EXTRA_LOADS = 3  # loads a search may probe beyond the bracket and the bisection
LOW_RUNS = 3  # runs of LOW alone at least
#: LOW alone runs on past ``LOW_RUNS`` (up to ``Design.max_runs``, the looks its
#: interval's error is spent over) while its interval reaches further than this factor
#: either side of its estimate: its share of every candidate's consolidation rests on it
#: (on two H200s, three runs 4% apart, one GPU against the other, left serve-train's
#: trainer alone at 1,966 [188, 20,595] samples/s: two degrees of freedom)
LOW_WIDTH = 1.05
#: a fall of the SLO estimate by more than this factor as the load rises is noted
DIP = 1.1
#: the loads whose runs the variance is pooled over: estimates within this factor of
#: the objective (far below it, a load's few requests make its percentile noisier)
NEAR = 2.0

MET, FAILED, OPEN = "met", "failed", "open"
SEARCHING, DECIDED, ABOVE, BELOW = "searching", "decided", "above-range", "below-range"
AT_KNEE, NON_MONOTONE, UNDECIDED, BROKEN = "at-knee", "non-monotone", "undecided", "failed"
#: the statuses that answer the question at the rates asked
SETTLED = (DECIDED, ABOVE, BELOW)


#: a load left open at the knee: the next goes where ``AWAY`` runs could tell it
AWAY = 4
#: a load is left open by ``Design.give_up`` only from this many runs (fewer say
#: little of its mean)
GIVE_UP_FROM = 3


#: a load's runs this far apart: a queue ran away in some (``Search.runaways``)
RUNAWAY = 4.0


def max_loads(lo: float, hi: float, design: Design = NOW) -> int:
    """The most loads one search probes over ``[lo, hi]``: the bracket's growth, and
    ``design.narrow`` (else the bisection from ``GROWTH`` to ``TARGET`` and
    ``EXTRA_LOADS``: loads at the knee)."""
    grow = math.ceil(math.log(max(hi / lo, 1.0)) / math.log(GROWTH)) + 1
    if design.narrow is not None:
        return grow + design.narrow
    halve = math.ceil(math.log2(math.log(GROWTH) / math.log(TARGET)))
    return grow + halve + EXTRA_LOADS


@dataclass
class Load:
    """One offered rate of one search: each run's SLO value (and within-run error),
    LOW's summed throughput beside it, the GPUs the runs were on."""

    rate: float
    slo: list[float] = field(default_factory=list)
    ses: list[float] = field(default_factory=list)
    low: list[float] = field(default_factory=list)
    low_ses: list[float] = field(default_factory=list)
    gpus: list[int] = field(default_factory=list)
    bounded: bool = True  # every run bounded its percentile from above
    iv: Interval = NO_INTERVAL
    low_iv: Interval = NO_INTERVAL
    verdict: str = OPEN
    #: open, and no more runs can tell it (set at each look: ``Hunt.judge``): the most
    #: runs a load gets, runs that cannot bound the percentile, or (``Design.give_up``)
    #: more runs than that needed as its mean and variance stand
    exhausted: bool = False

    @property
    def runs(self) -> int:
        return len(self.slo)


@dataclass
class Search:
    """One candidate's search: its loads, status and the next rate to probe."""

    label: str
    mode: str
    settings: dict[str, M.SettingValue] = field(default_factory=dict)
    dedicated: bool = False  # the SLO workload alone on the GPU
    loads: dict[float, Load] = field(default_factory=dict)
    status: str = SEARCHING
    reason: str = ""
    next: float | None = None
    #: the SLO estimates fall with the load somewhere, within noise (a note)
    dips: list[tuple[float, float]] = field(default_factory=list)
    #: loads whose runs lie more than ``RUNAWAY`` apart (rate, largest / smallest; on
    #: H200s 7-46x near the knee, log-normal runs never are): the promise assumes not
    runaways: list[tuple[float, float]] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return sum(ld.runs for ld in self.loads.values())

    @property
    def alive(self) -> bool:
        return self.status == SEARCHING

    def met(self) -> float | None:
        """The highest load met with confidence."""
        return max((r for r, ld in self.loads.items() if ld.verdict == MET), default=None)

    def failed(self) -> float | None:
        """The lowest load failed with confidence."""
        return min((r for r, ld in self.loads.items() if ld.verdict == FAILED), default=None)

    def width(self) -> float | None:
        """``failed / met - 1`` (None: a side is missing)."""
        m, f = self.met(), self.failed()
        return f / m - 1.0 if m and f else None

    def capacity(self) -> Interval:
        """The capacity's interval: ``[met, failed]`` (0 below the rates asked, open above
        them), its estimate the geometric middle."""
        m, f = self.met(), self.failed()
        if self.status == BELOW:
            return Interval(math.nan, 0.0, f)
        if self.status == NON_MONOTONE or (m is None and f is None):
            return NO_INTERVAL
        est = math.sqrt(m * f) if m and f else math.nan
        return Interval(est, m, f)

    def add(self, rate: float, slo: float, se: float, low: float | None = None,
            low_se: float = math.nan, gpu: int | None = None) -> None:
        """One run at ``rate``: its SLO value (NaN ``se``: the run could not bound it)."""
        ld = self.loads.setdefault(rate, Load(rate))
        ld.slo.append(slo)
        ld.ses.append(se)
        ld.bounded = ld.bounded and se == se
        if low is not None:
            ld.low.append(low)
            ld.low_ses.append(low_se)
        if gpu is not None:
            ld.gpus.append(gpu)

    def fail(self, reason: str) -> None:
        self.status, self.reason, self.next = BROKEN, reason, None


@dataclass
class Hunt:
    """Every search of one capacity run, LOW alone's throughput, and the error rates
    (see the module). ``judge`` after every round; ``probes`` the next round's loads."""

    slo_ms: float
    lo: float
    hi: float
    searches: list[Search]
    lows: bool = True  # there is work beside the SLO workload
    design: Design = NOW
    low_alone: list[float] = field(default_factory=list)
    low_alone_ses: list[float] = field(default_factory=list)
    low_alone_iv: Interval = NO_INTERVAL
    #: the pooled variance at the last look (``judge``)
    _prior: seq.Prior | None = field(default=None, init=False, repr=False)

    @property
    def max_loads(self) -> int:
        return max_loads(self.lo, self.hi, self.design)

    @property
    def prior(self) -> seq.Prior | None:
        """The SLO values' pooled variance at the last look."""
        return self._prior

    def load_alpha(self) -> float:
        """The error rate of one load's SLO interval, before spending over its looks."""
        return ALPHA * BRACKET_SHARE / (max(1, len(self.searches)) * self.max_loads)

    def low_alpha(self) -> float:
        """The error rate of one LOW throughput interval (a load's, or LOW alone's)."""
        return ALPHA * (1.0 - BRACKET_SHARE) / (max(1, len(self.searches)) * self.max_loads + 1)

    def prepare(self) -> None:
        """The looks' boundary worked out now (about half a second, once a plan, as the
        search's error rates are fixed), before any phase, not at the first look while
        other GPUs' phases are measuring."""
        for a in (self.load_alpha(), self.low_alpha()):
            look_alpha(a, self.design.first, self.design)

    def add_low_alone(self, value: float, se: float = math.nan) -> None:
        self.low_alone.append(value)
        self.low_alone_ses.append(se)

    def needs_low_alone(self) -> bool:
        """Whether LOW alone needs another run: fewer than ``LOW_RUNS``, or its interval
        at the last look wider than ``LOW_WIDTH`` while it has fewer than
        ``Design.max_runs``."""
        n = len(self.low_alone)
        if not self.lows or n >= self.design.max_runs:
            return False
        iv = self.low_alone_iv
        return n < LOW_RUNS or not (iv.lo and iv.hi and iv.est == iv.est and
                                    iv.hi <= iv.est * LOW_WIDTH and
                                    iv.lo >= iv.est / LOW_WIDTH)

    # ------------------------------------------------------------ a look
    def judge(self) -> None:
        """Every load's intervals and verdict at this look (judged afresh, or kept once
        given with ``Design.keep``), each search's status and next rate."""
        for s in self.searches:
            s.runaways = [(r, x) for r in sorted(s.loads)
                          if (x := spread(s.loads[r].slo)) > RUNAWAY]
        wild = {id(ld) for s in self.searches if s.runaways for ld in s.loads.values()}
        loads = [ld for s in self.searches for ld in s.loads.values()]
        slo = [seq.log_runs(ld.slo, ld.ses, bounded=ld.bounded) for ld in loads]
        prior = seq.fit_prior([r for r in slo if r is not None and
                               abs(r.mean - math.log(self.slo_ms)) <= math.log(NEAR)])
        self._prior = prior
        a, d = self.load_alpha(), self.design
        changed: set[int] = set()
        for ld, r in zip(loads, slo):
            # a search whose runs have run away: none of its loads on its own runs
            # alone, whose few quiet ones may be a mixture's (Design.own)
            own = id(ld) not in wild
            ld.iv = interval(r, prior, a, d, own)
            # a verdict errs through one end only: each end at the load's whole rate
            one = interval(r, prior, 2.0 * a, d, own)
            was = ld.verdict
            if (ld.verdict == OPEN or not d.keep) and ld.runs >= d.first:
                if one.hi is not None and one.hi < self.slo_ms and \
                        (id(ld) not in wild or ld.runs >= d.wary):
                    ld.verdict = MET
                elif one.lo is not None and one.lo > self.slo_ms:
                    ld.verdict = FAILED
                else:
                    ld.verdict = OPEN
            if ld.verdict != was:
                changed.add(id(ld))
            ld.exhausted = ld.verdict == OPEN and ld.runs >= d.first and (
                ld.runs >= d.max_runs or not ld.bounded or (
                    d.give_up is not None and r is not None and ld.runs >= GIVE_UP_FROM and
                    (k := runs_to_clear(r, prior, self.slo_ms, 2.0 * a, d, own)) is not None and
                    k > d.give_up))
        if self.lows:
            low = [seq.log_runs(ld.low, ld.low_ses, histogram=False) for ld in loads]
            alone = seq.log_runs(self.low_alone, self.low_alone_ses, histogram=False)
            lp = seq.fit_prior([*low, alone])
            b = self.low_alpha()
            for ld, r in zip(loads, low):
                ld.low_iv = interval(r, lp, b, POOLED)
            self.low_alone_iv = interval(alone, lp, b, POOLED)
        for s in self.searches:
            if not s.alive and s.status not in (NON_MONOTONE, BROKEN, UNDECIDED) and \
                    any(id(ld) in changed for ld in s.loads.values()):
                s.status, s.reason = SEARCHING, ""
            if s.alive:
                self._check_monotone(s)
            if s.alive:
                s.next = self._next(s)

    def _check_monotone(self, s: Search) -> None:
        """A load whose SLO interval lies wholly above a higher load's: not monotone
        with confidence (the search stops and says so; only between loads of two runs or
        more, and not once runs of a load lay ``RUNAWAY`` apart: where queues run away
        now and then, a load whose runs all did lies above a higher one whose runs did
        not); estimates that fall by more than ``DIP`` as the load rises, within noise,
        are noted (``dips``)."""
        rates = sorted(s.loads)
        s.dips = []
        for i, r1 in enumerate(rates):
            for r2 in rates[i + 1:]:
                a, b = s.loads[r1].iv, s.loads[r2].iv
                if a.lo is not None and b.hi is not None and a.lo > b.hi and \
                        min(s.loads[r1].runs, s.loads[r2].runs) >= MIN_RUNS and \
                        not s.runaways:
                    s.status, s.next = NON_MONOTONE, None
                    s.reason = (f"the SLO metric falls with the load: {a.text()} ms at "
                                f"{r1:g} req/s, {b.text()} ms at {r2:g} req/s, with confidence")
                    return
                if a.est == a.est and b.est == b.est and a.est > b.est * DIP and \
                        s.loads[r1].runs >= MIN_RUNS and s.loads[r2].runs >= MIN_RUNS:
                    s.dips.append((r1, r2))

    def _next(self, s: Search) -> float | None:
        """The next rate ``s`` probes, or None with its status settled."""
        if self.design.place == "knee":
            return self._next_knee(s)
        m, f = s.met(), s.failed()
        for r in sorted(s.loads):  # an open load inside the bracket runs again
            ld = s.loads[r]
            if ld.verdict == OPEN and not ld.exhausted and (m is None or r > m) and \
                    (f is None or r < f):
                return r
        probed = sorted(s.loads)
        if f is None:  # the bracket: grow from the lowest rate asked
            if not probed:
                return self._new(s, self.lo)
            top = probed[-1]
            if top >= self.hi:
                if m is not None and m >= self.hi:
                    return self._stop(s, ABOVE, f"meets the SLO at {self.hi:g} req/s, the "
                                      "highest asked (--rates)")
                return self._stop(s, AT_KNEE, f"at {top:g} req/s, the highest asked, the "
                                  "runs cannot tell the SLO metric from the objective")
            return self._new(s, min(self.hi, top * GROWTH))
        if m is None and f <= self.lo * (1 + 1e-9):
            return self._stop(s, BELOW, f"even {self.lo:g} req/s misses")
        if m is not None and f / m <= TARGET * (1 + 1e-9):
            return self._stop(s, DECIDED, f"within {100 * (f / m - 1):.0f}%")
        edge = m if m is not None else probed[0]
        inside = [r for r in probed if edge <= r <= f]
        if m is None and edge > self.lo:
            inside = [self.lo, *inside]  # below the lowest probed: down to the lowest asked
        gaps = [(b / a, a, b) for a, b in itertools.pairwise(inside)]
        ratio, a, b = max(gaps)
        if ratio <= TARGET * (1 + 1e-9):
            near = ", ".join(f"{r:g}" for r in inside if s.loads.get(r) is not None and
                             s.loads[r].verdict == OPEN)
            return self._stop(s, AT_KNEE, f"the runs at {near} req/s cannot tell the SLO "
                              "metric from the objective")
        return self._new(s, math.sqrt(a * b))

    def _next_knee(self, s: Search) -> float | None:
        """``_next`` as ``Design.place == "knee"`` has it: grow while every load is
        estimated under the objective, then probe where ``knee.place`` says inside the
        bracket, running a load again only where its verdict is the bracket's end to be."""
        m, f = s.met(), s.failed()
        probed = sorted(s.loads)
        if not probed:
            return self._new(s, self.lo)
        goal = math.log(self.slo_ms)
        logs = {r: math.log(ld.iv.est) for r, ld in s.loads.items() if ld.iv.est > 0}
        k = knee.crossing(list(logs), list(logs.values()),
                          [s.loads[r].runs for r in logs], self.slo_ms)
        step = TARGET ** knee.HALF
        live = [r for r in probed if s.loads[r].verdict == OPEN and not s.loads[r].exhausted]
        if f is None:  # the bracket: grow until a load is estimated over the objective
            over = [r for r in live if logs.get(r, -math.inf) >= goal or
                    (not self.design.skip and (m is None or r > m))]
            if over:
                return over[0]  # its verdict ends the bracket above
            top = probed[-1]
            if top >= self.hi:
                if m is not None and m >= self.hi:
                    return self._stop(s, ABOVE, f"meets the SLO at {self.hi:g} req/s, the "
                                      "highest asked (--rates)")
                if top in live:
                    return top
                return self._knee_stop(s, live, logs, f"at {top:g} req/s, the highest "
                                       "asked, the runs cannot tell the SLO metric from "
                                       "the objective")
            if s.loads[top].verdict == OPEN and top not in live:  # left open at the knee
                nxt = top * math.sqrt(GROWTH)
            else:  # along the loads' rise; where they show none, at least doubled
                args = (list(logs), list(logs.values()), [s.loads[r].runs for r in logs],
                        self.slo_ms, knee.FLAT if self.design.flat else knee.SLOPE)
                rise = knee.rise(*args)
                steep = rise > knee.SLOPE
                least = step if steep else math.sqrt(GROWTH)
                k = k if steep else knee.crossing(*args)
                nxt = top * GROWTH if k is None else min(max(k * step, top * least),
                                                         top * GROWTH)
            return self._knee_new(s, live, logs, min(self.hi, nxt))
        if m is None and f <= self.lo * (1 + 1e-9):
            return self._stop(s, BELOW, f"even {self.lo:g} req/s misses")
        if m is not None and f / m <= TARGET * (1 + 1e-9):
            return self._stop(s, DECIDED, f"within {100 * (f / m - 1):.0f}%")
        lower = m if m is not None else self.lo
        window: tuple[float, float] | None = None
        if f / lower <= TARGET * (1 + 1e-9):  # nothing met yet, the lowest asked next
            t = self.lo
        else:
            off = self._away(s, logs, step)
            most = self._away(s, logs, step, self.design.max_runs)
            if most > math.log(step) * (1 + 1e-9) and math.log(f / lower) <= 2.0 * most:
                return self._knee_stop(
                    s, live, logs, f"the SLO metric rises too slowly for the runs' spread: "
                    f"{self.design.max_runs} runs a load tell it from the objective only "
                    f"{100 * (math.exp(most) - 1):.0f}% from the knee")
            t = knee.place(lower, f, None if k is None else min(max(k, lower), f), TARGET,
                           off)
            if f / lower <= TARGET ** 2:  # it ends the search: its rate stays where it does
                window = (f / TARGET, lower * TARGET)
        inside = [r for r in probed if r < f and (m is None or r > m) and
                  s.loads[r].verdict == OPEN]
        tol = math.log(step) / 2.0

        def near(x: float) -> list[float]:
            return sorted((r for r in inside if abs(math.log(r / x)) <= tol),
                          key=lambda r: abs(math.log(r / x)))

        for r in near(t):
            if r in live:
                return r
            # left open where the knee is: the next load away from the knee, half a
            # TARGET (the other end of a bracket within TARGET is the other side), or as
            # far as a verdict within ``AWAY`` runs needs where the curve is flatter
            t2 = r * math.exp(self._away(s, logs, step) *
                              (-1.0 if logs.get(r, goal) < goal else 1.0))
            if lower < t2 < f and not any(q not in live for q in near(t2)):
                return next(iter(near(t2)), None) or self._knee_new(s, live, logs, t2)
            at = ", ".join(f"{q:g}" for q in inside)
            return self._knee_stop(s, live, logs, f"the runs at {at} req/s cannot tell the "
                                   "SLO metric from the objective")
        return self._knee_new(s, live, logs, t, window)

    def _knee_stop(self, s: Search, live: list[float], logs: dict[float, float],
                   reason: str) -> float | None:
        """Stop at the knee, but first give the bracket its lower end where no load has
        met yet: the highest load estimated under the objective runs again (growth loads
        are left with one run)."""
        return self._lower_end(s, live, logs) or self._stop(s, AT_KNEE, reason)

    def _knee_new(self, s: Search, live: list[float], logs: dict[float, float],
                  rate: float, within: tuple[float, float] | None = None) -> float | None:
        """``_new``; where no more loads may be probed, first the bracket's lower end,
        then the load still to be run inside the bracket nearest ``rate``."""
        if len(s.loads) >= self.max_loads:
            m, f = s.met(), s.failed()
            inside = [r for r in live if (m is None or r > m) and (f is None or r < f)]
            return self._lower_end(s, live, logs) or min(
                inside, key=lambda r: abs(math.log(r / rate)), default=None) or \
                self._new(s, rate, within)
        return self._new(s, rate, within)

    def _lower_end(self, s: Search, live: list[float], logs: dict[float, float]
                   ) -> float | None:
        """The highest load still to be run that is estimated under the objective, where
        no load has met (None: one has, or there is none)."""
        if s.met() is not None:
            return None
        goal = math.log(self.slo_ms)
        return max((r for r in live if logs.get(r, goal) < goal), default=None)

    def _away(self, s: Search, logs: dict[float, float], step: float,
              runs: int = AWAY) -> float:
        """How far (log rate) from the knee estimate a load goes (and from a load left
        open at the knee): ``TARGET ** knee.HALF``, or, where the curve is flatter, as far
        as its rise (``knee.rise``) takes the SLO metric from the objective by what
        ``runs`` runs at the pooled variance can tell."""
        prior = self._prior
        if prior is None or not prior.var > 0:
            return math.log(step)
        k = knee.rise(list(logs), list(logs.values()), [s.loads[r].runs for r in logs],
                      self.slo_ms)
        a = look_alpha(2.0 * self.load_alpha(), runs, self.design)
        z = seq.t_quantile(1.0 - a / 2.0, prior.df + runs - 1) if a > 0 else math.inf
        return max(math.log(step), z * math.sqrt(prior.var / runs) / max(k, 1e-6))

    def _new(self, s: Search, rate: float,
             within: tuple[float, float] | None = None) -> float | None:
        if len(s.loads) >= self.max_loads:
            return self._stop(s, UNDECIDED, f"{self.max_loads} loads probed, the most a "
                              "search may (its error rate is split over them)")
        return nice(rate, list(s.loads), within)

    @staticmethod
    def _stop(s: Search, status: str, reason: str) -> None:
        s.status, s.reason, s.next = status, reason, None
        return None

    def probes(self) -> list[tuple[Search, float]]:
        """The next round's loads: one per live search."""
        return [(s, s.next) for s in self.searches if s.alive and s.next is not None]

    def close(self, why: str = "the budget ended",
              more: Callable[[Search], str] | None = None) -> None:
        """The end without a decision for every search still going (``more``: what a
        search still needed, said after its bracket, ``first.capacity.still``)."""
        for s in self.searches:
            if s.alive:
                w = s.width()
                extra = more(s) if more is not None else ""
                s.status, s.next = UNDECIDED, None
                s.reason = why + (f"; the bracket is {100 * w:.0f}% wide" if w is not None
                                  else "") + (f"; {extra}" if extra else "")

    # ------------------------------------------------------------ the shares
    def dedicated(self) -> Search | None:
        return next((s for s in self.searches if s.dedicated), None)

    def shares(self, s: Search) -> Shares:
        """``s``'s shares of dedicated (see the module)."""
        d = self.dedicated()
        high = ratio(s.capacity(), d.capacity()) if d is not None and d is not s else \
            NO_INTERVAL
        m = s.met()
        low = ratio(s.loads[m].low_iv, self.low_alone_iv) \
            if self.lows and m is not None and not s.dedicated else NO_INTERVAL
        return Shares(high, low, add(high, low) if self.lows else high)

    def best(self) -> Search | None:
        """The candidate whose total share's interval lies above every other's (None:
        none does)."""
        cands = [s for s in self.searches if not s.dedicated]
        tot = {s.label: self.shares(s).total for s in cands}
        for s in cands:
            lo = tot[s.label].lo
            if lo is None or len(cands) < 2:
                continue
            if all(tot[o.label].hi is not None and lo > (tot[o.label].hi or 0.0)
                   for o in cands if o is not s):
                return s
        return None


def estimate(i: Interval, digits: int = 6) -> M.Estimate:
    """An interval as the snapshot's ``Estimate``."""
    def r(v: float | None) -> float | None:
        return None if v is None or v != v or math.isinf(v) else round(v, digits)
    return M.Estimate(estimate=r(i.est), lo=r(i.lo), hi=r(i.hi))


def settings_text(settings: Mapping[str, M.SettingValue]) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items())
