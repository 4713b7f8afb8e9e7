"""``xwatch advise``: race native, MPS and XSched settings to the cheapest one that
meets the SLO with confidence, on this box (a plan over the one runner; the
statistics are ``analysis.stats.race``).

Candidates: native; MPS with the lower-priority workloads at client priority 1 and
100/75/50/25% of the SMs; XSched with their threshold/batch at 1/1, 2/1, 4/2, 8/4,
16/8 (``--set`` replaces a mechanism's grid, in the sweep's syntax). Mechanisms this
box cannot run are skipped and named (asked for with ``--modes``, they are an
error). Each round runs once, in a shuffled order, every surviving candidate whose
run can still decide something (``race.to_run``: all of them in the first two
rounds); the race looks after every round (its intervals hold over every look) and
stops when one candidate wins, when none survives, or when not even one more run
fits in ``--budget``: where a whole round does not fit, the part of it that does runs
(``plans.driver.fitting``), the likely choice and the candidates closest to being decided
first (``analysis.first.race``).
"""

from __future__ import annotations

import collections
import math
import random
import time
from collections.abc import Callable
from typing import Any

import msgspec

from xwatch.core import model as M
from xwatch.core.analysis.first import race as first
from xwatch.core.analysis.stats import race
from xwatch.core.analysis.stats.blocks import race_note
from xwatch.core.analysis.stats.intervals import requests_to_bound
from xwatch.core.analysis.stats.race import Candidate, Objective
from xwatch.core.engine.live.session import Session
from xwatch.core.export.render.braille import scatter
from xwatch.core.model.metric import Metric
from xwatch.core.modes import registry
from xwatch.core.modes.base import NATIVE
from xwatch.core.plans import box
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
from xwatch.core.plans.options import DEFAULT_BUDGET_MIN as DEFAULT_BUDGET_MIN
from xwatch.core.plans.options import Backends, Options
from xwatch.core.plans.sweep import apply_setting, parse_settings
from xwatch.errors import UsageError
from xwatch.scenario import Scenario, Workload

INTERVALS = ("geometric means over runs, intervals that hold together at 95% over every "
             "candidate and every look")


def objective(scen: Scenario, text: str | None, command: str = "advise") -> Objective:
    """The scenario's ``[slo]``, or ``--slo [WORKLOAD.][METRIC:]PNN=MS``: e.g. high.P99=10
    (the request latency), or chat.itl_ms:P99=6 (a named metric the workload reports
    with each request); ``command`` names the command that needs it in the error."""
    scen = scen.unreplicated()  # its workloads' names as written (not high@0)
    slo = scen.slo
    if text:
        form = "expected [WORKLOAD.][METRIC:]PNN=MS, e.g. high.P99=10 or chat.itl_ms:P99=6"
        lhs, sep, rhs = text.partition("=")
        named, colon, pq = lhs.rpartition(":")
        if colon:  # WORKLOAD.METRIC:PNN or METRIC:PNN
            wl, _, name = named.rpartition(".")
        else:  # WORKLOAD.PNN or PNN
            wl, _, pq = lhs.rpartition(".")
            name = ""
        names = list(dict.fromkeys(n for w in scen.workloads for n in (w.base_name, w.name)))
        if not wl:
            wl = slo.workload if slo else _top(scen)
        try:
            ms = float(rhs)
            metric = Metric.parse(name + colon + pq)  # latency_ms:PNN is the latency's
        except ValueError:  # a MetricError too
            raise UsageError(f"--slo {text!r}: {form}") from None
        if not sep or ms <= 0 or metric.percentile is None:
            raise UsageError(f"--slo {text!r}: {form}")
        if wl not in names and "@" in wl and wl.partition("@")[0] in names:
            raise UsageError(f"--slo {text!r}: {wl!r} is one GPU's copy; on several GPUs the "
                             f"race runs candidates side by side and every copy counts: name "
                             f"the scenario's workload ({wl.partition('@')[0]!r})")
        if wl not in names:
            raise UsageError(f"--slo {text!r}: no workload {wl!r}; workloads: {', '.join(names)}")
        return Objective(wl, metric, ms)
    if slo is None:
        raise UsageError(f"{command} needs an objective: the scenario {scen.name} has no "
                         f"[slo] table; give one with --slo {_top(scen)}.P99=10 "
                         "(workload.percentile=ms), or add [slo] to the scenario",
                         title="No SLO")
    return Objective(slo.workload, Metric.of(slo.named, slo.percentile), slo.latency_ms)


def _top(scen: Scenario) -> str:
    return max(scen.workloads, key=lambda w: w.priority_value).name


def lows_of(scen: Scenario, obj: Objective) -> list[str]:
    """The workloads below the SLO workload's priority: their samples/s is the price."""
    scen = scen.unreplicated()
    top = scen.workload(obj.workload.partition("@")[0]).priority_value
    return [w.name for w in scen.workloads if w.priority_value < top]


def _for_lows(scen: Scenario, obj: Objective, kv: dict[str, int]) -> dict[str, dict[str, int]]:
    bases = list(dict.fromkeys(w.base_name for w in scen.workloads if w.name in
                               lows_of(scen, obj)))
    return {b: dict(kv) for b in bases}


def split_sets(sets: list[str], modes: list[str], scen: Scenario,
               skipped: dict[str, str] | None = None) -> dict[str, list[str]]:
    """``--set`` specs by the mode whose candidates they make: MPS keys (``mps.*``) the
    MPS candidates, XSched keys the XSched candidates, native neither. A key for a mode
    the race does not run is an error naming it."""
    out: dict[str, list[str]] = {}
    for spec in sets:
        lhs = spec.partition("=")[0]
        key = lhs.partition(".")[2]
        owner = registry.owner_of(key)
        if owner is None:  # no mode's: refused as a sweep refuses it
            parse_settings([spec], scen)
            continue
        mode = owner.name
        if mode not in modes:
            why = (f"{mode} is skipped here: {skipped[mode]}" if skipped and mode in skipped
                   else f"--modes {','.join(modes)} races no {mode} candidate")
            keys = "; ".join(f"{m.label} keys: {', '.join(m.sweep_keys)}"
                             for m in registry.modes() if m.sweep_keys)
            raise UsageError(f"--set {spec!r}: {key or lhs!r} is an {owner.label} key, but "
                             f"{why}; add {mode} to --modes or leave this --set out "
                             f"({keys}; native takes none)", title="Setting for no candidate")
        out.setdefault(mode, []).append(spec)
    return out


def plan_candidates(scen: Scenario, obj: Objective, modes: list[str], sets: list[str],
                    backends: Backends, skipped: dict[str, str] | None = None
                    ) -> list[tuple[Candidate, Step]]:
    """Every candidate with the step that runs it. ``--set`` keys replace their own
    mode's grid (``split_sets``). On ``--gpus`` the candidates are made from the
    workloads as written (a box round copies them onto its GPUs: ``plans.box``)."""
    scen = scen.unreplicated()
    grids: dict[str, list[dict[str, dict[str, int]]]] = {
        m.name: [_for_lows(scen, obj, dict(kv)) for kv in m.advise_grid]
        for m in registry.modes()}
    for mode, specs in split_sets(sets, modes, scen, skipped).items():
        grids[mode] = parse_settings(specs, scen)
    out: list[tuple[Candidate, Step]] = []
    for mode in modes:
        if mode == NATIVE:
            out.append((Candidate("native", NATIVE, {}), Step(NATIVE, label="native",
                                                             candidate=True)))
            continue
        for s in grids[mode]:
            label = race.short_label(mode, race.settings_of(s))
            backend = backends.for_scenario(mode, apply_setting(scen, s))
            out.append((Candidate(label, mode, race.settings_of(s)),
                        Step(mode, backend, label, s, candidate=True)))
    return out


def frontier_lines(advice: M.Advice) -> list[str]:
    """Every candidate's SLO metric against its price, with intervals: a table and a
    braille scatter (marks a, b, c, ... as in the table)."""
    out, pts = _table(advice)
    slo = advice.slo
    return out + scatter(pts, hline=slo.latency_ms,
                         xlabel="price, samples/s (right is cheaper)",
                         ylabel=f"{slo.workload} {slo.metric} ms (the dotted line: the SLO)")


def standings_lines(advice: M.Advice) -> list[str]:
    """The frontier's table alone: what a headless race prints after each round, so
    its console log holds every candidate's intervals even if the snapshot is lost."""
    return _table(advice)[0]


def _table(advice: M.Advice) -> tuple[list[str], list[Any]]:
    slo = advice.slo
    rows = sorted(advice.candidates, key=lambda c: -(c.price.estimate or 0.0))
    out = [f"{'':2} {'candidate':<30} {'runs':>4}  {slo.workload + ' ' + str(slo.metric):>24}"
           f"  {'price (samples/s)':>26}  status"]
    pts = []
    for i, c in enumerate(rows):
        mark = chr(ord("a") + i) if i < 26 else "*"
        s, p = c.slo_metric, c.price

        iv = race.estimate_text
        out.append(f"{mark:2} {c.label[:30]:<30} {c.runs:>4}  {iv(s, '{:.2f}'):>24}  "
                   f"{iv(p, '{:,.0f}'):>26}  {c.status}")
        if s.estimate is not None and p.estimate is not None:
            pts.append((mark, p.estimate, s.estimate, p.lo, p.hi, s.lo, s.hi))
    return out, pts


def _minutes(s: float | msgspec.UnsetType | None) -> float:
    """A budget in minutes (a record always has it where it is printed)."""
    assert isinstance(s, (int, float))
    return s / 60


def advice_lines(advice: M.Advice) -> list[str]:
    """Everything advise prints at the end: the sentence first."""
    if advice.final is False:
        live = [c for c in advice.candidates if c.status == race.SURVIVING]
        head = (f"Advise running: round {advice.rounds}, {len(live)} of "
                f"{len(advice.candidates)} candidates left, {advice.runs} runs in "
                f"{advice.seconds / 60:.1f} min (budget {_minutes(advice.budget_s):g} min)")
    else:
        head = race.sentence(advice)
    lines = ["=== advice " + "=" * 60, head]
    toml = race.toml_for(advice)
    if toml:
        lines += ["", "Paste into the scenario:", *toml]
    # a fleet's race adds its blocks to the intervals' words (``blocks.race_note``)
    note = advice.intervals.removeprefix(INTERVALS) \
        if advice.intervals and advice.intervals.startswith(INTERVALS) else ""
    lines += ["", f"Frontier ({INTERVALS}{note}):",
              *frontier_lines(advice)]
    why = race.reasons(advice)
    if why and advice.final is not False:
        lines += ["", "Not chosen:", *(f"- {w}" for w in why)]
    if advice.undecided:
        lines.append(advice.undecided)
    for mode, reason in advice.skipped.items():
        lines.append(f"Skipped {mode}: {reason}")
    if advice.final is not False:
        lines.append(f"Runs: {advice.runs} in {advice.seconds / 60:.1f} min "
                     f"(budget {_minutes(advice.budget_s):.0f} min); a full grid of the same "
                     f"rounds would have taken {advice.grid_runs} runs.")
    return lines


#: the candidates one phase runs, each with its GPU (None: the scenario as it is, on
#: its own device)
Placed = list[tuple[Candidate, int | None]]


class Race:
    """One advise race: the candidates, their steps, the rounds, the budget. Driven by
    the headless plan (``run_advise``) and by the dashboard (``A``) alike: ``round()``
    gives the next round's phases, ``record()`` takes each finished phase, ``after_round()``
    judges and says whether to go on, ``advice()`` is the record (live or final).

    On a scenario replicated onto GPUs (``--gpus``) a round spreads its candidates over
    them (``plans.box``, ``fill``): each phase runs several candidates on every GPU, each
    on about k/c of them, the assignment rotated every round; with ``mix`` (a plan that
    runs split phases: the headless race) native shares a phase with MPS and XSched
    candidates on GPUs of its own. Elsewhere each phase runs one candidate."""

    def __init__(self, scen: Scenario, obj: Objective, plan: list[tuple[Candidate, Step]],
                 budget_s: float, seed: int = 0, skipped: dict[str, str] | None = None,
                 say: Callable[[str], None] | None = None, backends: Backends | None = None,
                 mix: bool = False) -> None:
        self.scen = scen
        self.mix = mix
        self.gpus = scen.gpus
        self.backends = backends or Backends()
        self.phases = 0  # phases recorded (a box phase holds several runs)
        self.obj = obj
        self.lows = lows_of(scen, obj)
        self.cands = [c for c, _ in plan]
        self.steps = {c.label: st for c, st in plan}
        self.budget_s = budget_s
        self.seed = seed
        self.skipped = skipped or {}
        self.rng = random.Random(seed)
        self.rounds = 0
        self.clock: Callable[[], float] = time.monotonic  # tests give their own
        self.t0 = self.clock()
        #: the next round's candidates where only part of it fits the budget
        self.part: list[str] | None = None
        self.winner: Candidate | None = None
        self.said: set[str] = set()
        self.say = say or (lambda text: print(text, flush=True))

    def round(self) -> list[tuple[Placed, Step]]:
        """This round's phases, in a shuffled order, for the survivors whose run can
        still decide something (``race.to_run``); empty: the race is over."""
        live = [c for c in self.cands if c.alive]
        if not live or self.winner is not None:
            return []
        self.rounds += 1
        order = race.to_run(self.cands, self.obj)
        rest = len(live) - len(order)
        cut = 0
        if self.part is not None:  # a partial round (``after_round``): the part that fits
            cut = sum(c.label not in self.part for c in order)
            order = [c for c in order if c.label in self.part]
            self.part = None
        if self.gpus:
            phases = [self._box_step(bp) for bp in self._layout(order, self.rounds)]
            self.rng.shuffle(phases)
            what = "; ".join(step.label or "" for _, step in phases)
            head = (f"{len(order)} candidates in {len(phases)} phases on GPUs "
                    f"{','.join(map(str, self.gpus))} ({what})")
        else:
            self.rng.shuffle(order)
            phases = [([(c, None)], self.steps[c.label]) for c in order]
            head = f"{len(order)} candidates ({', '.join(c.label for c in order)})"
        self.say(f"=== advise round {self.rounds}: {head}"
                 + (f"; {rest} waiting (decided on their own side)" if rest else "")
                 + (f"; {cut} left out (the budget)" if cut else ""))
        return phases

    def _layout(self, order: list[Candidate], rnd: int) -> list[box.BoxPhase]:
        """The box phases of round ``rnd`` for ``order`` (in the plan's order: the Latin
        square's rows)."""
        entries = [box.Entry(c.label, c.mode, box.phase_wide(self.steps[c.label].backend))
                   for c in order]
        return box.layout(entries, self.gpus, rnd, fill=True, mix=self.mix)

    def _box_step(self, bp: box.BoxPhase) -> tuple[Placed, Step]:
        """The step of one box phase: the candidates' copies, each pinned to its GPU with
        its candidate's settings, under one backend."""
        by = {c.label: c for c in self.cands}
        placed = [(self.steps[lb].setting, g) for lb, g in bp.placed]
        sc = box.box_scenario(self.scen, placed)
        modes = dict.fromkeys(bp.mode_of(lb) for lb in bp.labels)
        backends = {m: self.backends.for_scenario(m, sc) for m in modes}
        step = Step(bp.mode, backends.get(bp.mode), bp.where(),
                    box.copy_settings(self.scen, placed), only=box.copies(self.scen, bp.gpus),
                    candidate=True, copy_modes=box.phase_copy_modes(self.scen, bp),
                    backends=backends if bp.modes else None)
        return [(by[lb], g) for lb, g in bp.placed], step

    def record(self, placed: Placed, phase: Any) -> None:
        """A finished phase (a PhaseSnapshot), or None if it never started: a run of each
        candidate it placed (a failed phase fails every one of them)."""
        self.phases += 1
        mine: dict[str, tuple[Candidate, list[int]]] = {}
        for c, gpu in placed:  # a candidate spread over several GPUs: one run of them all
            mine.setdefault(c.label, (c, []))[1].extend([] if gpu is None else [gpu])
        for c, gpus in mine.values():
            if phase is None:
                c.status, c.reason = race.FAILED, "its phase could not start"
            else:
                race.record_run(c, phase, self.obj, self.lows, tuple(gpus) or None)

    def _phases_of(self, order: list[Candidate]) -> int:
        """How many phases the next round would run for ``order``."""
        return len(self._layout(order, self.rounds + 1)) if self.gpus else len(order)

    def after_round(self) -> bool:
        """Judge; True while another round should run."""
        self.winner = race.judge(self.cands, self.obj)
        for c in self.cands:
            if c.status != race.SURVIVING and c.label not in self.said:
                self.say(f"    {c.label}: {c.status} ({c.reason})")
                self.said.add(c.label)
        used = self.clock() - self.t0
        self.say(f"--- after round {self.rounds} ({used / 60:.1f} min; {INTERVALS}):")
        for line in standings_lines(self.advice(final=False)):
            self.say(line)
        if self.winner is not None or not any(c.alive for c in self.cands):
            return False
        # the next round, or the part of it that fits, the most informative first
        order = first.ranked(self.cands, race.to_run(self.cands, self.obj), self.obj)
        k = fitting(len(order), lambda n: self._phases_of(order[:n]), used, self.phases,
                    self.budget_s)
        if k < len(order) and k:
            self.part = [c.label for c in order[:k]]
            self.say(partial_line("advise", k, len(order), used, self.phases, self.budget_s)
                     + f" ({', '.join(self.part)})")
        if not k:
            if self.rounds < race.MIN_RUNS:
                self.say(f"xwatch: advise: one round took {used / 60:.1f} min; the budget "
                         f"({self.budget_s / 60:g} min) has no room for a second, and a "
                         f"decision needs {race.MIN_RUNS} runs of each candidate: give "
                         f"--budget {math.ceil(used * (race.MIN_RUNS + 1) / 60)} or more, or "
                         "fewer candidates (--modes, --set)")
            return False
        return True

    def publish(self, session: Session) -> None:
        """The live advice on the session (the dashboard shows it)."""
        session.advice = self.advice(final=False)

    def advice(self, final: bool = True) -> M.Advice:
        """The snapshot's ``advice`` record; ``final`` settles the statuses."""
        used = self.clock() - self.t0
        winner, decided = self.winner, self.winner is not None
        op: race.Open | None = None
        if final:
            if winner is None:  # at the budget: the cheapest meeting the SLO with confidence
                meeting = [c for c in self.cands if c.alive and c.meets(self.obj)]
                winner = max(meeting, key=lambda c: c.price.est) if meeting else None
            if winner is not None:
                winner.status = race.CHOSEN
            op = race.still_open(self.cands, self.obj) if not decided else None
            for c in self.cands:
                if c.alive:
                    c.status = race.UNDECIDED
                    if op is not None and c.label in op.waits:
                        words, k = op.waits[c.label]
                        c.reason = f"open: {words}; " + (
                            f"about {race.more_rounds(k)} to tell" if k is not None
                            else "the runs so far cannot tell")
        near = race.closest(self.cands) if winner is None else None
        obj = self.obj
        runs = sum(c.runs for c in self.cands) + sum(1 for c in self.cands
                                                      if c.status == race.FAILED)
        return M.Advice(
            slo=M.Slo(workload=obj.workload, metric=str(obj.metric),
                      percentile=obj.metric.q, latency_ms=obj.latency_ms),
            choice=None if winner is None else M.Choice(label=winner.label, mode=winner.mode,
                                                        settings=dict(winner.settings)),
            met=winner is not None, decided=decided, final=final,
            closest=near.label if near is not None else None,
            candidates=race.as_records(self.cands, op.waits if op is not None else None),
            runs=runs,
            rounds=self.rounds, grid_runs=self.rounds * len(self.cands),
            seconds=round(used, 1), budget_s=self.budget_s, seed=self.seed,
            skipped=dict(self.skipped),
            undecided=race.undecided_note(self.cands, obj, run_s=used / max(1, runs),
                                          chosen=winner)
            if final and not decided else "",
            more_rounds=op.rounds if op is not None else None,
            likely=op.likely.label if op is not None and op.likely is not None else None,
            intervals=INTERVALS + race_note([(c.label, c.slo_values, c.blocks)
                                             for c in self.cands if c.status != race.FAILED]),
        )

    def status(self) -> int:
        """0: a choice meets the SLO with confidence; 3: none does; 1: every one failed."""
        if all(c.status == race.FAILED for c in self.cands):
            return EXIT_FAILED
        return EXIT_OK if any(c.status == race.CHOSEN for c in self.cands) else EXIT_GATE


def make_race(scen: Scenario, obj: Objective, modes: list[str], sets: list[str],
              backends: Backends, budget_min: float,
              seed: int = 0, skipped: dict[str, str] | None = None,
              say: Callable[[str], None] | None = None, mix: bool = False) -> Race:
    base = scen.unreplicated()  # on --gpus: candidates are made as written, then copied
    if not lows_of(base, obj):
        raise UsageError(f"advise prices the workloads below {obj.workload}'s priority, and "
                         f"{scen.name} has none")
    plan = plan_candidates(base, obj, modes, sets, backends, skipped)
    rc = Race(scen, obj, plan, budget_min * 60.0, seed, skipped, say, backends, mix)
    # the copies a candidate gets in a run: on --gpus the fewest GPUs any candidate holds
    # in a round of all of them (``plans.box``'s fill), else its one copy
    copies = 1
    if scen.gpus:
        held = collections.Counter(lb for bp in rc._layout(rc.cands, 1) for lb, _ in bp.placed)
        copies = min(held.values(), default=1)
    pooled = check_runs_can_bound(base, obj, copies)
    if pooled and say is not None:
        say(f"xwatch: advise: {pooled}")
    return rc


#: named per-request metrics whose values a request gives: one (``None``: one per
#: request), or one per output token but the first (``itl_ms``)
PER_REQUEST = {"ttft_ms": 1, "tpot_ms": 1, "e2e_ms": 1, "latency_ms": 1}


def values_a_request(w: Workload, metric: Metric) -> int | None:
    """How many values of ``metric`` (``P99``, ``itl_ms:P99``) one request of ``w``
    gives: 1 for the latency, TTFT, TPOT and e2e, ``new_tokens - 1`` for the ITL (the
    gaps between output tokens); None for a metric xwatch cannot count ahead (a
    command's own)."""
    name = metric.name
    if not name:
        return 1
    if name == "itl_ms":
        return max(0, w.new_tokens - 1)
    return PER_REQUEST.get(name)


def highest_bounded(n: int) -> float:
    """The highest percentile ``n`` values can bound from above at 95% (``requests_to_
    bound``'s inverse), rounded down to a whole percentile."""
    if n < 1:
        return 0.0
    q = math.floor(100.0 * (0.025 ** (1.0 / n)))
    while q > 0 and requests_to_bound(q) > n:
        q -= 1
    return float(q)


def check_runs_can_bound(scen: Scenario, obj: Objective, copies: int = 1) -> str | None:
    """A race whose runs cannot bound the SLO percentile from above can never say
    "met": refuse it before it spends the budget, whatever its metric. The values a run
    gives a candidate are its rate x the run's seconds x the values a request gives
    (``values_a_request``) x the copies it gets (``copies``: GPUs a candidate runs on in
    one phase). Where one copy's values cannot bound the percentile but the copies
    together can, a run's value is taken over the copies' pooled values: the sentence
    that says so is returned (None: each copy bounds it, or only the runs can tell: a
    closed loop, a metric of a command's own)."""
    w = next((x for x in scen.workloads if obj.workload in (x.name, x.base_name)), None)
    if w is None or not w.rate or not scen.duration_s:
        return None  # closed loop: only the runs can tell
    per = values_a_request(w, obj.metric)
    if per is None:
        return None
    need = requests_to_bound(obj.metric.q)
    one = w.rate * scen.duration_s * per
    if one >= need:
        return None
    what = "requests" if per == 1 else f"{obj.metric.name} values"
    if one * copies >= need:
        return (f"each copy of {w.name} gives about {one:.0f} {what} a run, too few to bound "
                f"its {obj.metric} from above (that needs {need}); its {copies} copies a run "
                f"give {one * copies:.0f} together, so a run's value is taken over their "
                "pooled values")
    got = one * copies
    dur = math.ceil(need / (w.rate * per * copies)) + 1
    ways = [f"--duration {dur} or more"]
    if scen.gpus:
        ways.append(f"each candidate on {math.ceil(need / one)} GPUs or more (its copies "
                    "pooled)")
    low = highest_bounded(int(got))
    if low >= 1:
        ways.append(f"an objective on P{low:g} or lower")
    per_words = "" if per == 1 else f" x {per} values a request"
    copy_words = "" if copies == 1 else f" x {copies} copies"
    raise UsageError(
        f"each run measures {scen.duration_s:g} s, so {w.name} at {w.rate:g} requests/s "
        f"gives about {got:.0f} {what} a run ({w.rate:g}/s x {scen.duration_s:g} s{per_words}"
        f"{copy_words}); its {obj.metric} has an upper bound (the 95% order statistic) only "
        f"from {need} values a run, so no candidate could meet {obj.metric} < "
        f"{obj.latency_ms:g} ms with confidence. Give " + "; or ".join(ways),
        title="Runs too short to decide")


async def run_advise(scen: Scenario, opts: Options, modes: list[str],
                     skipped: dict[str, str], backends: Backends) -> int:
    """Race the candidates headless; print and record the advice; the exit status."""
    driver = Driver(scen, opts, backends)
    say = driver.observer.say
    obj = objective(scen, opts.slo)
    rc = make_race(scen, obj, modes, list(opts.sets), backends, opts.budget_min, opts.seed,
                   skipped, say=say, mix=True)

    def finish(session: Session) -> int | None:
        advice = rc.advice()
        session.advice = advice
        for line in advice_lines(advice):
            say(line)
        return rc.status()

    return await driver.run(Plan(list(rc.steps.values()), race=rc, finish=finish,
                                 tolerant=True))


def race_modes() -> list[str]:
    """The modes a race runs unless told (``--modes``): native, then every mode with
    candidates of its own (``Mode.advise_grid``) by name (``native,mps,xsched``)."""
    return [NATIVE, *sorted(m.name for m in registry.modes() if m.advise_grid)]


def usable_modes(wanted: list[str], explicit: bool, backends: Backends
                 ) -> tuple[list[str], dict[str, str]]:
    """The mechanisms to race and those skipped (with why); an explicitly asked one
    that cannot run is an error."""
    keep, skipped = [], {}
    for m in wanted:
        mode = registry.get(m)
        reason = None if mode.backend_factory is None or backends.get(m) is not None else \
            backends.unavailable.get(m) or f"{mode.label} is not available here"
        if reason is None:
            keep.append(m)
        elif explicit:
            raise UsageError(f"advise --modes names {m}, which cannot run here: {reason}",
                             title=f"{m} not available")
        else:
            skipped[m] = reason
    if not keep:
        raise UsageError("no mechanism can run here")
    return keep, skipped

