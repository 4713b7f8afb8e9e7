"""``xwatch capacity``: how much of the SLO workload's load (its offered rate) each
way of sharing still carries under the SLO beside the lower-priority work, and what
share of a dedicated GPU's work each keeps (a plan over the one runner; the
statistics are ``analysis.capacity.search``).

Candidates are advise's (``plans.advise.plan_candidates``: native, MPS and XSched
settings, ``--set`` replacing a mode's grid); beside them, in the same run, the SLO
workload alone (``dedicated``: its capacity on a GPU of its own, searched as a
candidate) and the lower-priority work alone (its throughput, ``LOW_RUNS`` runs and on
while its interval is wider than ``LOW_WIDTH``, also after the searches end). A
scenario with nothing below the SLO workload measures its capacity alone (the
dedicated search only).

Each round runs, in a shuffled order, one run of each live search's next load (a
phase whose SLO workload runs at that rate: ``Step.workloads``) and LOW alone while it
needs runs; the searches look after every round. On ``--gpus`` a round's probes run
side by side, one a GPU, grouped by mode as the race groups them and rotated every
round (``plans.box.layout``). The run stops when every search is settled, or when not
even one more probe fits in ``--budget`` (then each open bracket says how wide it is);
where a whole round does not fit, the part of it that does runs (``plans.driver.fitting``),
the loads closest to being decided first (``analysis.first.capacity``).

A probe's load: a built-in model's or a server's ``rate``; a command's ``rate``, which
it reads from ``XWATCH_RATE``, only where the scenario says it honours it
(``honours_rate = true``).
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xwatch.core import model as M
from xwatch.core.analysis.capacity import search as cap
from xwatch.core.analysis.capacity.lines import capacity_lines, standings
from xwatch.core.analysis.capacity.loads import nice
from xwatch.core.analysis.first import capacity as first
from xwatch.core.analysis.stats import race
from xwatch.core.analysis.stats.copies import copies_of
from xwatch.core.analysis.stats.intervals import requests_to_bound
from xwatch.core.analysis.stats.race import Objective
from xwatch.core.analysis.stats.runs import run_value
from xwatch.core.engine.live.session import Session
from xwatch.core.model.metric import THROUGHPUT
from xwatch.core.modes.base import NATIVE
from xwatch.core.plans import box
from xwatch.core.plans.advise import lows_of, objective, plan_candidates, values_a_request
from xwatch.core.plans.driver import (
    EXIT_FAILED,
    EXIT_GATE,
    EXIT_OK,
    Driver,
    Plan,
    Step,
    fitting,
    partial_line,
)
from xwatch.core.plans.options import Backends, Options
from xwatch.errors import UsageError
from xwatch.scenario import Scenario, Workload

LOW_ALONE = "low alone"
DEDICATED = "dedicated"
INTERVALS = ("brackets that hold the knee together at 95% over every candidate, load and "
             "look; shares from their ends")


@dataclass(frozen=True)
class Probe:
    """One entry of a round: a search's load, or LOW alone (``search`` None)."""

    search: cap.Search | None
    rate: float = 0.0

    @property
    def key(self) -> str:
        return LOW_ALONE if self.search is None else f"{self.search.label} @ {self.rate:g}/s"


# ------------------------------------------------------------ what is asked
def slo_workload(scen: Scenario, obj: Objective) -> Workload:
    """The SLO workload as written, refused where its load cannot be varied: a closed
    loop (no ``rate``), or a command that does not say it honours ``XWATCH_RATE``."""
    w = scen.unreplicated().workload(obj.workload.partition("@")[0])
    if w.command is not None and not w.honours_rate:
        raise UsageError(
            f"capacity varies {w.name}'s offered rate, but {w.name} is a command, which "
            f"gets its rate in XWATCH_RATE only if it reads it: make the command send "
            f"requests at XWATCH_RATE per second and set honours_rate = true in its "
            f"[[workload]] (name = \"{w.name}\")", title="Command without a rate")
    if w.rate is None:
        raise UsageError(
            f"capacity varies {w.name}'s offered rate, but {w.name} runs closed loop (no "
            f"rate): set rate = N (requests per second, open loop) in its [[workload]] "
            f"(name = \"{w.name}\"); the search starts from --rates or around that rate",
            title="Closed loop has no capacity")
    return w


def parse_rates(text: str | None, w: Workload, floor: float = 0.0) -> tuple[float, float]:
    """``--rates LO:HI`` (requests/s); else a quarter to 16 times the scenario's rate,
    from ``floor`` at least (the lowest rate whose runs bound the SLO percentile: what
    ``check_bounded`` asks), up to 64 times the start."""
    if not text:
        assert w.rate is not None
        lo = max(w.rate / 4.0, floor)
        return lo, nice(max(w.rate * 16.0, lo * 64.0 if floor > w.rate / 4.0 else 0.0))
    lo_s, sep, hi_s = text.partition(":")
    try:
        lo, hi = float(lo_s), float(hi_s)
    except ValueError:
        lo = hi = math.nan
    if not sep or not 0 < lo < hi or math.isinf(hi):
        raise UsageError(f"--rates {text!r}: expected LO:HI in requests per second, "
                         "0 < LO < HI (e.g. --rates 10:400)")
    return lo, hi


def sending_s(scen: Scenario, w: Workload) -> float:
    """The most seconds of a run's measured window in which ``w`` sends: the window less
    its ``start_delay_s`` (the window starts with the first workload's measurement, and
    a delayed workload starts that much later: on the how-to's own programs, 20.5 of 25
    s at 15 req/s)."""
    return max(0.0, scen.duration_s - w.start_delay_s)


def lowest_bounded(scen: Scenario, obj: Objective, w: Workload) -> float:
    """The lowest rate whose run gives enough values to bound the SLO percentile from
    above (0: no such limit, a metric xwatch cannot count ahead), to 3 figures up."""
    per = values_a_request(w, obj.metric)
    span = sending_s(scen, w)
    if not per or not span:
        return 0.0
    r = requests_to_bound(obj.metric.q) / (span * per)
    return nice(r * 1.005)


def check_bounded(scen: Scenario, obj: Objective, w: Workload, lo: float,
                  copies: int = 1) -> None:
    """A run at the lowest rate asked must give enough values to bound the SLO
    percentile from above; else no load there could meet it with confidence: refused,
    naming the duration (and the rate) that would."""
    per = values_a_request(w, obj.metric)
    if per is None or not per:
        return
    need = requests_to_bound(obj.metric.q)
    span, delay = sending_s(scen, w), w.start_delay_s
    got = lo * span * per * copies
    if got >= need:
        return
    what = "requests" if per == 1 else f"{obj.metric.name} values"
    dur = math.ceil(need / (lo * per * copies) + delay) + 1
    late = f" (it starts {delay:g} s in: its start_delay_s)" if delay > 0 else ""
    rate = (f", or --rates from {math.ceil(need / (span * per * copies) * 100) / 100:g}"
            if span > 0 else "")
    raise UsageError(
        f"at {lo:g} requests/s (the lowest rate asked), a {scen.duration_s:g} s run of "
        f"{w.name}{late} gives about {got:.0f} {what}; its {obj.metric} has an upper bound "
        f"only from {need}, so no load that low could meet {obj.metric} < "
        f"{obj.latency_ms:g} ms with confidence. Give --duration {dur} or more{rate}",
        title="Runs too short to decide")


def check_budget(duration_s: float, budget_min: float) -> None:
    """A budget must hold at least one run's measured time: else not one probe could
    run (refused before anything starts)."""
    if budget_min * 60.0 >= duration_s:
        return
    raise UsageError(
        f"--budget {budget_min:g} min is shorter than one run's {duration_s:g} s of "
        f"measurement, so not one probe could run. Give --budget "
        f"{math.ceil(duration_s / 60.0):g} or more (a search takes many runs), or a shorter "
        f"--duration", title="Budget shorter than one run")


def with_rate(wls: Sequence[Workload], name: str, rate: float) -> tuple[Workload, ...]:
    """The workloads with ``name`` (the scenario's name: every copy of it) at ``rate``."""
    return tuple(dataclasses.replace(w, rate=rate) if w.base_name == name else w
                 for w in wls)


# ------------------------------------------------------------ the run
class CapacityRun:
    """One capacity run: the searches, their steps, the rounds, the budget; driven by the
    headless plan and the dashboard alike (``Driver.race``: ``round``, ``record``,
    ``after_round``, ``publish``)."""

    def __init__(self, scen: Scenario, obj: Objective, modes: list[str], sets: list[str],
                 backends: Backends, budget_min: float,
                 rates: str | None = None, seed: int = 0,
                 skipped: dict[str, str] | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.scen = scen
        self.base = scen.unreplicated()
        self.obj = obj
        self.high = slo_workload(scen, obj)
        self.lo, self.hi = parse_rates(rates, self.high,
                                       lowest_bounded(self.base, obj, self.high))
        self.backends = backends
        self.lows = lows_of(self.base, obj)
        self.gpus = scen.gpus
        check_bounded(self.base, obj, self.high, self.lo)
        check_budget(self.base.duration_s, budget_min)
        self.steps: dict[str, Step] = {}
        searches: list[cap.Search] = []
        if self.lows:
            for c, st in plan_candidates(self.base, obj, modes, sets, backends, skipped):
                searches.append(cap.Search(c.label, c.mode, dict(c.settings)))
                self.steps[c.label] = st
        alone = tuple(w.name for w in self.base.workloads if w.base_name == self.high.name)
        searches.append(cap.Search(DEDICATED, NATIVE, dedicated=True))
        self.steps[DEDICATED] = Step(NATIVE, label=DEDICATED, only=alone, candidate=True)
        self.steps[LOW_ALONE] = Step(NATIVE, label=LOW_ALONE, only=tuple(
            w.name for w in self.base.workloads if w.name in self.lows), candidate=True)
        self.hunt = cap.Hunt(obj.latency_ms, self.lo, self.hi, searches, lows=bool(self.lows))
        self.hunt.prepare()
        self.hunt.judge()
        self.budget_s = budget_min * 60.0
        self.seed = seed
        self.skipped = dict(skipped or {})
        self.rng = random.Random(seed)
        self.say = say or (lambda text: print(text, flush=True))
        self.rounds = self.phases = self.runs = 0
        self.clock: Callable[[], float] = time.monotonic  # tests give their own
        self.t0 = self.clock()
        #: the next round's probes where only part of it fits the budget (their keys)
        self.part: list[str] | None = None
        self.over = False  # the budget ended the run
        self._said: set[str] = set()  # the searches whose end was said
        self._wild: set[tuple[str, float]] = set()  # loads whose runs far apart were said

    # ------------------------------------------------------------ a round
    def _probes(self) -> list[Probe]:
        out = [Probe(s, r) for s, r in self.hunt.probes()]
        if self.hunt.needs_low_alone():  # also once every search is settled
            out.append(Probe(None))
        return out

    def round(self) -> list[tuple[list[tuple[Probe, int | None]], Step]]:
        """This round's phases (shuffled); empty: the run is over."""
        probes = self._probes()
        if not probes or self.over:
            return []
        if self.part is not None:  # a partial round (``after_round``): the part that fits
            probes = [p for p in probes if p.key in self.part]
            self.part = None
        elif not self.phases:  # the first round: a phase costs at least its measured time
            probes = self._first_fit(probes)
        self.rounds += 1
        if self.gpus:
            phases = [self._box_step(bp, {p.key: p for p in probes})
                      for bp in self._layout(probes, self.rounds)]
        else:
            phases = [([(p, None)], self._step(p)) for p in probes]
        self.rng.shuffle(phases)
        where = f" on GPUs {','.join(map(str, self.gpus))}" if self.gpus else ""
        self.say(f"=== capacity round {self.rounds}: {len(probes)} loads in {len(phases)} "
                 f"phases{where} ({'; '.join(p.key for p in probes)})")
        return phases

    def _step(self, p: Probe) -> Step:
        """One probe alone in a phase: its candidate's step with the SLO workload at the
        probe's rate."""
        if p.search is None:
            return self.steps[LOW_ALONE]
        st = self.steps[p.search.label]
        return dataclasses.replace(st, label=p.key, workloads=with_rate(
            self.scen.workloads, self.high.name, p.rate))

    def _layout(self, probes: list[Probe], rnd: int) -> list[box.BoxPhase]:
        entries = [box.Entry(p.key, self._mode(p), box.phase_wide(self._step(p).backend))
                   for p in probes]
        return box.layout(entries, self.gpus, rnd)

    def _mode(self, p: Probe) -> str:
        return NATIVE if p.search is None else p.search.mode

    def _box_step(self, bp: box.BoxPhase, by: dict[str, Probe]
                  ) -> tuple[list[tuple[Probe, int | None]], Step]:
        """One box phase: each probe's copies on its GPU, with its setting and rate."""
        wls: list[Workload] = []
        only: list[str] = []
        settings: dict[str, dict[str, M.SettingValue]] = {}
        for key, g in bp.placed:
            p = by[key]
            st = self.steps[LOW_ALONE if p.search is None else p.search.label]
            sc = box.apply_setting(self.base, st.setting) if st.setting else self.base
            mine = with_rate(sc.workloads, self.high.name, p.rate) if p.search else sc.workloads
            if st.only is not None:
                mine = tuple(w for w in mine if w.name in st.only)
            copies = dataclasses.replace(self.base, workloads=mine).on_gpus((g,)).workloads
            wls.extend(copies)
            only.extend(w.name for w in copies)
            for wl, kv in (st.setting or {}).items():
                settings[box.copy_name(wl, g)] = dict(kv)
        sc = dataclasses.replace(self.base, workloads=tuple(wls), gpus=bp.gpus,
                                 single=self.base.workloads)
        backend = self.backends.for_scenario(bp.mode, sc)
        step = Step(bp.mode, backend, bp.where(), settings or None, only=tuple(only),
                    candidate=True, workloads=tuple(wls))
        return [(by[k], g) for k, g in bp.placed], step

    def record(self, placed: list[tuple[Probe, int | None]], phase: object) -> None:
        """A finished phase (a PhaseSnapshot; None: it never started): a run of each
        probe it placed."""
        from xwatch.core.engine.snapshot import PhaseSnapshot

        self.phases += 1
        for p, g in placed:
            if phase is None or not isinstance(phase, PhaseSnapshot):
                if p.search is not None:
                    p.search.fail("its phase could not start")
                continue
            if p.search is None:
                self._record_low(phase, g)
                continue
            c = race.Candidate(p.key, p.search.mode, {})
            race.record_run(c, phase, self.obj, self.lows, g)
            if c.status == race.FAILED:
                p.search.fail(c.reason)
            elif c.runs:
                self.runs += 1
                p.search.add(p.rate, c.slo_values[0], c.slo_ses[0],
                             c.prices[0] if self.lows and not p.search.dedicated else None,
                             c.price_ses[0], g)

    def _record_low(self, phase: object, g: int | None) -> None:
        from xwatch.core.engine.snapshot import PhaseSnapshot

        assert isinstance(phase, PhaseSnapshot)
        at = "" if g is None else f"@{g}"
        vals = [run_value(w, THROUGHPUT) for n in self.lows for w in copies_of(phase, n)
                if not at or w.name.endswith(at)]
        vals = [v for v in vals if v.est == v.est]
        if vals and phase.status != "failed":
            self.runs += 1
            self.hunt.add_low_alone(sum(v.est for v in vals),
                                    math.sqrt(sum(v.se ** 2 for v in vals)))

    def after_round(self) -> bool:
        """Judge; True while another round should run."""
        self.hunt.judge()
        used = self.clock() - self.t0
        for s in self.hunt.searches:
            if s.alive:  # searching again (a verdict judged afresh changed): its end anew
                self._said.discard(s.label)
            elif s.label not in self._said:
                self._said.add(s.label)
                self.say(f"    {s.label}: {s.status} ({s.reason})")
            for rate, apart in s.runaways:  # said as seen, once a load
                if (s.label, rate) not in self._wild:
                    self._wild.add((s.label, rate))
                    runs = ", ".join(f"{v:,.0f}" if v >= 100 else f"{v:.3g}"
                                     for v in s.loads[rate].slo)
                    self.say(f"    {s.label}: runs at {rate:g} req/s lie {apart:.0f}x apart "
                             f"({runs} ms): a queue that ran away in some; {s.label}'s loads "
                             f"are met only on {self.hunt.design.wary} runs or more, and a "
                             "verdict near this load may be wrong")
        self.say(f"--- after round {self.rounds} ({used / 60:.1f} min):")
        for line in standings(self.record_of(final=False)):
            self.say(line)
        nxt = self._probes()
        if not nxt:
            return False
        # the next round, or the part of it that fits, the most informative first
        order = [nxt[i] for i in first.ranked(self.hunt, [(p.search, p.rate) for p in nxt])]
        k = fitting(len(order), lambda n: self._phases_of(order[:n]), used, self.phases,
                    self.budget_s)
        if not k:
            self.over = True
            self.hunt.close("the budget ended", lambda s: first.still(self.hunt, s))
            return False
        if k < len(order):
            self.part = [p.key for p in order[:k]]
            self.say(partial_line("capacity", k, len(order), used, self.phases, self.budget_s)
                     + f" ({'; '.join(self.part)})")
        return True

    def _first_fit(self, probes: list[Probe]) -> list[Probe]:
        """The first round, or the part of it whose phases' measured time alone fits the
        budget (no phase has run yet to say what one costs), the most informative
        first; ``check_budget`` saw that one run fits."""
        d = self.base.duration_s
        order = [probes[i] for i in first.ranked(self.hunt, [(p.search, p.rate) for p in probes])]
        k = max(1, fitting(len(order), lambda n: self._phases_of(order[:n]), 0.0, 0,
                           self.budget_s, cost=d))
        if k == len(order):
            return probes
        self.say(f"xwatch: capacity: a partial first round: {k} of {len(order)} runs fit in "
                 f"the budget ({self.budget_s / 60:g} min at {d:g} s of measurement a phase, "
                 f"at least), the most informative first "
                 f"({'; '.join(p.key for p in order[:k])})")
        return order[:k]

    def _phases_of(self, probes: list[Probe]) -> int:
        return len(self._layout(probes, self.rounds + 1)) if self.gpus else len(probes)

    def publish(self, session: Session) -> None:
        """The live record on the session (the dashboard shows it)."""
        session.capacity = self.record_of(final=False)

    # ------------------------------------------------------------ the record
    def record_of(self, final: bool = True) -> M.Capacity:
        """The snapshot's ``capacity`` record (``final``: the run is over)."""
        hunt, obj = self.hunt, self.obj
        if final:
            hunt.close("the budget ended" if self.over else "the run stopped",
                       lambda s: first.still(hunt, s))
        best = hunt.best()
        recs = []
        for s in hunt.searches:
            sh = hunt.shares(s)
            recs.append(M.CapacityRecord(
                candidate=s.label, mode=s.mode, settings=dict(s.settings),
                dedicated=s.dedicated, workload=obj.workload, metric=str(obj.metric),
                slo_ms=obj.latency_ms, met=s.met(), failed=s.failed(), status=s.status,
                reason=s.reason, high_share=cap.estimate(sh.high),
                low_share=cap.estimate(sh.low), total=cap.estimate(sh.total), runs=s.runs,
                loads=[M.CapacityLoad(rate=r, runs=ld.runs, slo_metric=cap.estimate(ld.iv),
                                      low=cap.estimate(ld.low_iv), verdict=ld.verdict,
                                      gpus=list(ld.gpus))
                       for r, ld in sorted(s.loads.items())],
                dips=[[a, b] for a, b in s.dips],
                runaways=[[r, round(x, 1)] for r, x in s.runaways]))
        return M.Capacity(
            slo=M.Slo(workload=obj.workload, metric=str(obj.metric),
                      percentile=obj.metric.q, latency_ms=obj.latency_ms),
            rates=[self.lo, self.hi], records=recs,
            low_alone=cap.estimate(hunt.low_alone_iv), low_workloads=list(self.lows),
            best=best.label if best is not None else None,
            decided=all(s.status in cap.SETTLED for s in hunt.searches), final=final,
            rounds=self.rounds, runs=self.runs,
            seconds=round(self.clock() - self.t0, 1), budget_s=self.budget_s,
            intervals=INTERVALS, skipped=dict(self.skipped), run_s=self.base.duration_s)

    def status(self) -> int:
        """0: every search settled; 1: every candidate failed; 3: not decided."""
        cands = [s for s in self.hunt.searches if not s.dedicated] or self.hunt.searches
        if all(s.status == cap.BROKEN for s in cands):
            return EXIT_FAILED
        return EXIT_OK if all(s.status in cap.SETTLED for s in self.hunt.searches) \
            else EXIT_GATE


def make_run(scen: Scenario, opts: Options, modes: list[str], skipped: dict[str, str],
             backends: Backends, say: Callable[[str], None] | None = None) -> CapacityRun:
    """The run ``opts`` asks for (every refusal is raised here, before anything starts)."""
    obj = objective(scen, opts.slo, "capacity")
    return CapacityRun(scen, obj, modes, list(opts.sets), backends, opts.budget_min,
                       opts.rates, opts.seed, skipped, say)


async def run_capacity(scen: Scenario, opts: Options, modes: list[str],
                       skipped: dict[str, str], backends: Backends) -> int:
    """Search every candidate's capacity headless; print and record it; the exit
    status (0 decided, 3 not within the budget, 1 every candidate failed)."""
    driver = Driver(scen, opts, backends)
    say = driver.observer.say
    cr = make_run(scen, opts, modes, skipped, backends, say)
    n = len(cr.hunt.searches)
    say(f"xwatch: capacity: {n} searches ({', '.join(s.label for s in cr.hunt.searches)}), "
        f"{cr.obj.workload} from {cr.lo:g} to {cr.hi:g} req/s, at most "
        f"{cr.hunt.max_loads} loads each" + (f", {', '.join(cr.lows)} alone" if cr.lows
                                             else ", nothing beside it"))

    def finish(session: Session) -> int | None:
        rec = cr.record_of()
        session.capacity = rec
        for line in capacity_lines(rec):
            say(line)
        return cr.status()

    return await driver.run(Plan(list(cr.steps.values()), race=cr, finish=finish,
                                 tolerant=True, floors=False))
