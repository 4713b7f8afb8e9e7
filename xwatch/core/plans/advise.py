"""``xwatch advise``: race native, MPS and XSched settings to the cheapest one that
meets the SLO with confidence, on this box (a plan over the one runner; the
statistics are ``analysis.race``).

Candidates: native; MPS with the lower-priority workloads at client priority 1 and
100/75/50/25% of the SMs; XSched with their threshold/batch at 1/1, 2/1, 4/2, 8/4,
16/8 (``--set`` replaces a mechanism's grid, in the sweep's syntax). Mechanisms this
box cannot run are skipped and named (asked for with ``--modes``, they are an
error). Each round runs every surviving candidate once, in a shuffled order; the
race stops when one candidate wins, when none survives, or before a round that
would overrun ``--budget``.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Iterator
from typing import Any

from xwatch.core.analysis import race
from xwatch.core.analysis.race import Candidate, Objective
from xwatch.core.engine.session import Session
from xwatch.core.export.braille import scatter
from xwatch.core.modes.base import MPS, NATIVE, XSCHED
from xwatch.core.plans.headless import EXIT_FAILED, EXIT_GATE, EXIT_OK, Step, run_plan
from xwatch.core.plans.sweep import apply_setting, parse_settings, sweep_mode
from xwatch.errors import UsageError
from xwatch.scenario import Scenario

MPS_GRID = tuple({"mps.priority": 1, "mps.active_thread_percentage": p}
                 for p in (100, 75, 50, 25))
XSCHED_GRID = tuple({"threshold": t, "batch_size": b}
                    for t, b in ((1, 1), (2, 1), (4, 2), (8, 4), (16, 8)))
DEFAULT_BUDGET_MIN = 20.0


def objective(scen: Scenario, text: str | None) -> Objective:
    """The scenario's ``[slo]``, or ``--slo [WORKLOAD.]PNN=MS`` (e.g. high.P99=10)."""
    slo = scen.slo
    if text:
        lhs, sep, rhs = text.partition("=")
        wl, _, metric = lhs.rpartition(".")
        names = [w.name for w in scen.workloads]
        if not wl:
            wl = slo.workload if slo else _top(scen)
        try:
            ms = float(rhs)
            q = float(metric.upper().removeprefix("P"))
        except ValueError:
            raise UsageError(f"--slo {text!r}: expected [WORKLOAD.]PNN=MS, e.g. high.P99=10")
        if not sep or not metric.upper().startswith("P") or not 0 < q < 100 or ms <= 0:
            raise UsageError(f"--slo {text!r}: expected [WORKLOAD.]PNN=MS, e.g. high.P99=10")
        if wl not in names:
            raise UsageError(f"--slo {text!r}: no workload {wl!r}; workloads: {', '.join(names)}")
        return Objective(wl, f"P{q:g}", ms)
    if slo is None:
        raise UsageError(f"advise needs an objective: the scenario {scen.name} has no [slo] "
                         "table; give one with --slo high.P99=10 (workload.percentile=ms)",
                         title="No SLO")
    return Objective(slo.workload, f"P{slo.percentile:g}", slo.latency_ms)


def _top(scen: Scenario) -> str:
    return max(scen.workloads, key=lambda w: w.priority_value).name


def lows_of(scen: Scenario, obj: Objective) -> list[str]:
    """The workloads below the SLO workload's priority: their samples/s is the price."""
    top = scen.workload(obj.workload).priority_value
    return [w.name for w in scen.workloads if w.priority_value < top]


def _for_lows(scen: Scenario, obj: Objective, kv: dict[str, int]) -> dict[str, dict[str, int]]:
    bases = list(dict.fromkeys(w.base_name for w in scen.workloads if w.name in
                               lows_of(scen, obj)))
    return {b: dict(kv) for b in bases}


def plan_candidates(scen: Scenario, obj: Objective, modes: list[str], sets: list[str],
                    xsched: Any, mps: Any) -> list[tuple[Candidate, Step]]:
    """Every candidate with the step that runs it."""
    from xwatch.core.mps.controller import MpsController
    from xwatch.core.xsched.controller import XschedController

    grids: dict[str, list[dict[str, dict[str, int]]]] = {
        MPS: [_for_lows(scen, obj, kv) for kv in MPS_GRID],
        XSCHED: [_for_lows(scen, obj, kv) for kv in XSCHED_GRID]}
    if sets:
        given = parse_settings(sets, scen)
        grids[sweep_mode(given)] = given
    out: list[tuple[Candidate, Step]] = []
    for mode in modes:
        if mode == NATIVE:
            out.append((Candidate("native", NATIVE, {}), Step(NATIVE, label="native",
                                                             candidate=True)))
            continue
        for s in grids[mode]:
            sc = apply_setting(scen, s)
            label = race.short_label(mode, race.settings_of(s))
            backend: Any
            if mode == MPS:
                backend = MpsController(mps.tool, sc, preflight=mps.preflight)
            else:
                backend = XschedController(xsched.install, sc, poll_s=xsched.poll_s,
                                           preflight=xsched.preflight)
            out.append((Candidate(label, mode, race.settings_of(s)),
                        Step(mode, backend, label, s, candidate=True)))
    return out


def frontier_lines(advice: dict[str, Any]) -> list[str]:
    """Every candidate's SLO metric against its price, with intervals: a table and a
    braille scatter (marks a, b, c, ... as in the table)."""
    slo = advice["slo"]
    rows = sorted(advice["candidates"], key=lambda c: -(c["price"]["estimate"] or 0.0))
    out = [f"{'':2} {'candidate':<30} {'runs':>4}  {slo['workload'] + ' ' + slo['metric']:>24}"
           f"  {'price (samples/s)':>26}  status"]
    pts = []
    for i, c in enumerate(rows):
        mark = chr(ord("a") + i) if i < 26 else "*"
        s, p = c["slo_metric"], c["price"]

        def iv(d: dict[str, Any], fmt: str) -> str:
            if d["estimate"] is None:
                return "-"
            lo = "?" if d["lo"] is None else fmt.format(d["lo"])
            hi = "?" if d["hi"] is None else fmt.format(d["hi"])
            return f"{fmt.format(d['estimate'])} [{lo}, {hi}]"

        out.append(f"{mark:2} {c['label'][:30]:<30} {c['runs']:>4}  {iv(s, '{:.2f}'):>24}  "
                   f"{iv(p, '{:,.0f}'):>26}  {c['status']}")
        if s["estimate"] is not None and p["estimate"] is not None:
            pts.append((mark, p["estimate"], s["estimate"], p["lo"], p["hi"], s["lo"], s["hi"]))
    out += scatter(pts, hline=slo["latency_ms"], xlabel="price, samples/s (right is cheaper)",
                   ylabel=f"{slo['workload']} {slo['metric']} ms (the dotted line: the SLO)")
    return out


def advice_lines(advice: dict[str, Any]) -> list[str]:
    """Everything advise prints at the end: the sentence first."""
    lines = ["=== advice " + "=" * 60, race.sentence(advice)]
    toml = race.toml_for(advice)
    if toml:
        lines += ["", "Paste into the scenario:", *toml]
    lines += ["", "Frontier (95% intervals over runs, Bonferroni over the candidates):",
              *frontier_lines(advice)]
    why = race.reasons(advice)
    if why:
        lines += ["", "Not chosen:", *(f"- {w}" for w in why)]
    if advice.get("undecided"):
        lines.append(advice["undecided"])
    for mode, reason in (advice.get("skipped") or {}).items():
        lines.append(f"Skipped {mode}: {reason}")
    lines.append(f"Runs: {advice['runs']} in {advice['seconds'] / 60:.1f} min "
                 f"(budget {advice['budget_s'] / 60:.0f} min); a full grid of the same "
                 f"rounds would have taken {advice['grid_runs']} runs.")
    return lines


async def run_advise(scen: Scenario, args: argparse.Namespace, modes: list[str],
                     skipped: dict[str, str], xsched: Any = None, mps: Any = None,
                     mps_unavailable: str | None = None) -> int:
    """Race the candidates; print and record the advice; the exit status."""
    obj = objective(scen, getattr(args, "slo", None))
    if not lows_of(scen, obj):
        raise UsageError(f"advise prices the workloads below {obj.workload}'s priority, and "
                         f"{scen.name} has none")
    plan = plan_candidates(scen, obj, modes, list(getattr(args, "set", []) or []), xsched, mps)
    cands = [c for c, _ in plan]
    steps = {c.label: st for c, st in plan}
    budget_s = float(getattr(args, "budget", DEFAULT_BUDGET_MIN)) * 60.0
    seed = int(getattr(args, "seed", 0) or 0)
    state: dict[str, Any] = {"winner": None, "rounds": 0, "t0": time.monotonic(),
                             "budget_hit": False}
    lows = lows_of(scen, obj)

    def schedule(session: Session) -> Iterator[tuple[int, Step]]:
        rng = random.Random(seed)
        said: set[str] = set()
        while True:
            live = [c for c in cands if c.alive]
            if not live:
                return
            state["rounds"] += 1
            rnd = state["rounds"]
            order = live[:]
            rng.shuffle(order)
            print(f"=== advise round {rnd}: {len(order)} candidates "
                  f"({', '.join(c.label for c in order)})", flush=True)
            for c in order:
                before = len(session.phases)
                yield rnd, steps[c.label]
                if len(session.phases) > before:
                    ph = session.phases[-1]
                    race.record_run(c, ph.snapshot(time.monotonic()), obj, lows)
                else:
                    c.status, c.reason = race.FAILED, "its phase could not start"
            state["winner"] = race.judge(cands, obj)
            for c in cands:
                if c.status != race.SURVIVING and c.label not in said:
                    print(f"    {c.label}: {c.status} ({c.reason})", flush=True)
                    said.add(c.label)
            if state["winner"] is not None:
                return
            if not any(c.alive for c in cands):
                return
            used = time.monotonic() - state["t0"]
            if used + used / rnd > budget_s:
                state["budget_hit"] = True
                if rnd < race.MIN_RUNS:
                    print(f"xwatch: advise: one round took {used / 60:.1f} min; the budget "
                          f"({budget_s / 60:g} min) has no room for a second, and a decision "
                          f"needs {race.MIN_RUNS} runs of each candidate: give --budget "
                          f"{math.ceil(used * (race.MIN_RUNS + 1) / 60)} or more, or fewer "
                          "candidates (--modes, --set)", flush=True)
                return

    def finish(session: Session) -> int | None:
        used = time.monotonic() - state["t0"]
        winner: Candidate | None = state["winner"]
        decided = winner is not None
        if winner is None:  # at the budget: the cheapest that meets the SLO with confidence
            meeting = [c for c in cands if c.alive and c.meets(obj)]
            winner = max(meeting, key=lambda c: c.price.est) if meeting else None
        if winner is not None:
            winner.status = race.CHOSEN
        for c in cands:
            if c.alive:
                c.status = race.UNDECIDED
        near = race.closest(cands) if winner is None else None
        advice: dict[str, Any] = {
            "slo": {"workload": obj.workload, "metric": obj.metric,
                    "percentile": float(obj.metric[1:]), "latency_ms": obj.latency_ms},
            "choice": None if winner is None else {"label": winner.label, "mode": winner.mode,
                                                   "settings": dict(winner.settings)},
            "met": winner is not None, "decided": decided,
            "closest": near.label if near is not None else None,
            "candidates": race.as_records(cands),
            "runs": sum(c.runs for c in cands) + sum(1 for c in cands if c.status == race.FAILED),
            "rounds": state["rounds"], "grid_runs": state["rounds"] * len(cands),
            "seconds": round(used, 1), "budget_s": budget_s, "seed": seed,
            "skipped": skipped,
            "undecided": race.undecided_note([c for c in cands if c.status == race.UNDECIDED
                                              or c is winner]) if not decided else "",
        }
        session.extra["advice"] = advice
        for line in advice_lines(advice):
            print(line, flush=True)
        if all(c.status == race.FAILED for c in cands):
            return EXIT_FAILED
        return EXIT_OK if winner is not None else EXIT_GATE

    return await run_plan(scen, args, [st for _, st in plan], xsched, mps, mps_unavailable,
                          schedule=schedule, finish=finish, tolerant=True)


def usable_modes(wanted: list[str], explicit: bool, xsched: Any, mps: Any,
                 mps_why: str | None) -> tuple[list[str], dict[str, str]]:
    """The mechanisms to race and those skipped (with why); an explicitly asked one
    that cannot run is an error."""
    why = {XSCHED: None if xsched is not None else
           "no XSched install (--xsched ROOT or XSCHED_HOME)",
           MPS: None if mps is not None else (mps_why or "MPS is not available here")}
    keep, skipped = [], {}
    for m in wanted:
        reason = why.get(m)
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

