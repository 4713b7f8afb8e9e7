"""Racing settings to the cheapest one that meets an SLO, with confidence (pure).

Each candidate (a mode and its settings) has runs; each run gives one value of the
SLO metric (the SLO workload's percentile) and one price (the summed samples/s of
the workloads below the SLO's priority: what sharing leaves the background work).
Over its runs a candidate gets Student's t intervals (``analysis.runs``) at a
Bonferroni-corrected level, 1 - 0.05 / candidates, so that all the intervals of
one look hold together at 95%. After each round (every survivor run once, in a
shuffled order):

- a candidate whose SLO interval lies above the objective is dropped (``dropped-slo``);
- a candidate whose price interval lies below the best SLO-meeting candidate's
  price interval is dropped (``dropped-dominated``);
- a candidate whose run failed is ``failed``;
- the race ends when a candidate meets the SLO with confidence (its upper bound
  under the objective) and its price beats every other survivor's with confidence,
  or when it is the last survivor meeting the SLO.

The intervals are recomputed at every look (the race peeks), which the Bonferroni
level does not correct for: a decision at the last look is as sure as its
interval, earlier drops somewhat less. This is F-Race's trade (Birattari et al.)
with t intervals instead of a Friedman test. ``still_open`` says, at the budget, what
each open candidate waits for (its SLO interval to leave the objective, or its price
interval to leave the likely choice's) and about how many more rounds would give it,
at the race's own level, if the means and spreads stay as they are.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xwatch.core.analysis.intervals import Interval
from xwatch.core.analysis.noise import usable
from xwatch.core.analysis.runs import RATE, mean_interval, run_value, t_ppf
from xwatch.core.engine.session import PhaseSnapshot

CHOSEN, DROPPED_SLO, DROPPED_DOMINATED = "chosen", "dropped-slo", "dropped-dominated"
UNDECIDED, FAILED, SURVIVING = "undecided", "failed", "surviving"
MIN_RUNS = 2  # no decision on fewer runs (no interval)
NO_INTERVAL = Interval(math.nan, None, None)


@dataclass(frozen=True)
class Objective:
    workload: str
    metric: str  # "P99"
    latency_ms: float


@dataclass
class Candidate:
    """One setting in the race: its name, mode, settings and what its runs gave."""

    label: str
    mode: str
    settings: dict[str, Any]  # {"low.threshold": 2} (the sweep's names)
    slo_values: list[float] = field(default_factory=list)
    prices: list[float] = field(default_factory=list)
    status: str = SURVIVING
    reason: str = ""
    slo: Interval = NO_INTERVAL
    price: Interval = NO_INTERVAL

    @property
    def runs(self) -> int:
        return len(self.slo_values)

    @property
    def alive(self) -> bool:
        return self.status == SURVIVING

    def meets(self, obj: Objective) -> bool:
        return self.slo.hi is not None and self.slo.hi < obj.latency_ms

    def fails(self, obj: Objective) -> bool:
        return self.slo.lo is not None and self.slo.lo > obj.latency_ms


def interval_at(xs: Sequence[float], confidence: float) -> Interval:
    """A t interval over runs at ``confidence`` (the mean's, as ``mean_interval``),
    cut at 0 below: latencies and throughputs are never negative."""
    base = mean_interval(xs)
    vals = [x for x in xs if x == x]
    if len(vals) < 2 or base.lo is None:
        return base
    mean = base.est
    sd = math.sqrt(sum((x - mean) ** 2 for x in vals) / (len(vals) - 1))
    half = t_ppf(1.0 - (1.0 - confidence) / 2.0, len(vals) - 1) * sd / math.sqrt(len(vals))
    return Interval(mean, max(0.0, mean - half), mean + half)


def record_run(c: Candidate, p: PhaseSnapshot, obj: Objective, lows: Sequence[str]) -> None:
    """Add one finished phase of ``c`` (a failed or cut-short one fails the candidate)."""
    w = p.workload(obj.workload)
    if p.status == "failed" or w is None or not w.count:
        c.status, c.reason = FAILED, str(p.extra.get("error") or f"phase {p.name} {p.status}")
        return
    if not usable(p):
        return  # stopped before its end: not a run
    c.slo_values.append(run_value(w, obj.metric).est)
    c.prices.append(sum(run_value(lw, RATE).est for n in lows
                        if (lw := p.workload(n)) is not None and lw.count))


def judge(cands: Sequence[Candidate], obj: Objective) -> Candidate | None:
    """Update intervals and drop what is decided; the winner once there is one."""
    live = [c for c in cands if c.alive]
    conf = level(cands)
    for c in cands:
        if c.status != FAILED:
            c.slo = interval_at(c.slo_values, conf)
            c.price = interval_at(c.prices, conf)
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


def level(cands: Sequence[Candidate]) -> float:
    """The race's confidence per interval: 95% Bonferroni-corrected over the candidates
    that have not failed (what ``judge`` uses)."""
    return 1.0 - 0.05 / max(1, len([c for c in cands if c.status != FAILED]))


def _sd(xs: Sequence[float]) -> float:
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def _first_k(n: int, ok: Callable[[int], bool], most: int) -> int | None:
    """The least k in [n, most] with ok(k) (ok is monotone in k), or None."""
    if not ok(most):
        return None
    lo, hi = n, most
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def rounds_to_tell(xs: Sequence[float], bound: float, confidence: float = 0.95,
                   most: int = 200) -> int | None:
    """About how many more runs would put the interval of ``xs``'s mean (at
    ``confidence``) wholly on one side of ``bound``, if its mean and spread stay as
    they are: 0 when it is already; None when the runs cannot tell (fewer than two,
    a mean on the bound, or more than ``most`` in all)."""
    vals = [x for x in xs if x == x]
    n = len(vals)
    if n < 2:
        return None
    gap, sd = abs(sum(vals) / n - bound), _sd(vals)
    if not gap > 0:
        return None
    q = 1.0 - (1.0 - confidence) / 2.0
    k = _first_k(n, lambda k: t_ppf(q, k - 1) * sd / math.sqrt(k) < gap, most)
    return None if k is None else k - n


def rounds_to_decide(a: Candidate, b: Candidate, confidence: float = 0.95,
                     most: int = 200) -> int | None:
    """About how many more rounds would separate ``a`` and ``b``'s prices (their
    intervals at ``confidence`` no longer overlapping, if the means and spreads stay
    as they are)."""
    gap = abs(a.price.est - b.price.est)
    if not gap > 0 or a.runs < 2 or b.runs < 2:
        return None
    sa, sb, n = _sd(a.prices), _sd(b.prices), max(a.runs, b.runs)
    q = 1.0 - (1.0 - confidence) / 2.0
    k = _first_k(n, lambda k: t_ppf(q, k - 1) * (sa + sb) / math.sqrt(k) < gap, most)
    return None if k is None else k - n


@dataclass(frozen=True)
class Open:
    """What the budget left open: the likely choice (the highest price among those
    whose SLO estimate is under the objective; None when no estimate is), each open
    candidate's wait in words with its rounds, and the rounds the whole race would
    need (None: the runs so far cannot tell)."""

    likely: Candidate | None
    waits: dict[str, tuple[str, int | None]]
    rounds: int | None


def still_open(cands: Sequence[Candidate], obj: Objective,
               confidence: float | None = None) -> Open:
    """Per open candidate (surviving, undecided, or chosen by estimate at the budget),
    the decision it waits for and about how many more rounds would give it."""
    conf = level(cands) if confidence is None else confidence
    live = [c for c in cands if c.status in (SURVIVING, UNDECIDED, CHOSEN)]
    goal = f"{obj.workload} {obj.metric}"
    under = [c for c in live if c.slo.est == c.slo.est and c.slo.est < obj.latency_ms]
    likely = max(under, key=lambda c: c.price.est) if under else None
    waits: dict[str, tuple[str, int | None]] = {}
    for c in live:
        side = "under" if c.slo.est < obj.latency_ms else "above"
        slo_k = 0 if c.meets(obj) or c.fails(obj) else \
            rounds_to_tell(c.slo_values, obj.latency_ms, conf)
        slo_words = f"{goal} {c.slo.text()} ms, {side} {obj.latency_ms:g} ms by estimate"
        if likely is None or c is likely:
            if c is likely and c.meets(obj) and len(live) == 1:
                continue
            waits[c.label] = (slo_words, slo_k)
        elif c.price.est > likely.price.est:  # cheaper, but over the SLO by estimate
            waits[c.label] = (slo_words, slo_k)
        else:  # dearer than the likely choice: told apart by price (or by the SLO)
            # a drop for price needs the likely choice to meet the SLO with confidence too
            k_likely = 0 if likely.meets(obj) else \
                rounds_to_tell(likely.slo_values, obj.latency_ms, conf)
            k_price = rounds_to_decide(c, likely, conf)
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
                   confidence: float | None = None, run_s: float | None = None) -> str:
    """What the budget left open, and about how many more rounds (and runs: each open
    candidate runs until its own decision; minutes at ``run_s`` a run) would settle it."""
    op = still_open(cands, obj, confidence)
    if not op.waits:
        return ""
    goal = f"{obj.workload} {obj.metric} < {obj.latency_ms:g} ms"
    if op.likely is None:
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
    return f"Undecided at the budget: {head}; {total}{more}."


def short_label(mode: str, settings: Mapping[str, Any]) -> str:
    """``mps low pri=1 sm=50%``, ``xsched low th=4 b=2``: a candidate's name in tables."""
    short = {"mps.priority": "pri", "mps.active_thread_percentage": "sm", "threshold": "th",
             "batch_size": "b", "priority": "prio", "level": "lvl"}
    by_wl: dict[str, list[str]] = {}
    for k, v in settings.items():
        wl, _, key = k.partition(".")
        word = short.get(key, key.removeprefix("mps."))
        by_wl.setdefault(wl, []).append(f"{word}={v}%" if word == "sm" else f"{word}={v}")
    return " ".join([mode, *(f"{wl} {' '.join(kv)}" for wl, kv in by_wl.items())])


def as_records(cands: Sequence[Candidate]) -> list[dict[str, Any]]:
    """The candidates as the snapshot's ``advice.candidates`` carries them."""
    def iv(i: Interval) -> dict[str, float | None]:
        d = i.as_dict()
        return {"estimate": d["est"], "lo": d["lo"], "hi": d["hi"]}

    return [{"label": c.label, "mode": c.mode, "settings": dict(c.settings), "runs": c.runs,
             "slo_metric": iv(c.slo), "price": iv(c.price), "status": c.status,
             "reason": c.reason} for c in cands]


def closest(cands: Sequence[Candidate]) -> Candidate | None:
    """The candidate whose SLO metric came closest (lowest estimate) when none met it."""
    ok = [c for c in cands if c.status != FAILED and c.slo.est == c.slo.est]
    return min(ok, key=lambda c: c.slo.est) if ok else None


def settings_of(step_setting: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    """``{"low": {"threshold": 2}}`` -> ``{"low.threshold": 2}`` (the sweep's names)."""
    return {f"{wl}.{k}": v for wl, kv in (step_setting or {}).items() for k, v in kv.items()}


# ------------------------------------------------------------ words
def _mode_words(mode: str, settings: Mapping[str, Any]) -> str:
    name = {"native": "native (no sharing mechanism)", "mps": "MPS", "xsched": "XSched"}[mode]
    if not settings:
        return name
    parts = []
    for k, v in settings.items():
        wl, _, key = k.partition(".")
        if key == "mps.active_thread_percentage":
            parts.append(f"{wl} at {v}% of SMs")
        elif key == "mps.priority":
            parts.append(f"{wl} client priority {v}")
        else:
            parts.append(f"{wl} {key} {v}")
    return f"{name}, " + ", ".join(parts)


def _num(v: float | None, fmt: str) -> str:
    return "?" if v is None or v != v else fmt.format(v)


def sentence(advice: Mapping[str, Any]) -> str:
    """The answer in one sentence (from the snapshot's ``advice`` record)."""
    slo = advice["slo"]
    want = f"{slo['workload']} {slo['metric']} < {slo['latency_ms']:g} ms"
    cands = {c["label"]: c for c in advice["candidates"]}
    native = next((c for c in advice["candidates"] if c["mode"] == "native"), None)
    choice = advice.get("choice")
    if choice is None:
        near = advice.get("closest")
        c = cands.get(near) if near else None
        tail = "" if c is None else (
            f"; the closest is {_mode_words(c['mode'], c['settings'])}: {slo['workload']} "
            f"{slo['metric']} {_num(c['slo_metric']['estimate'], '{:.2f}')} ms "
            f"[{_num(c['slo_metric']['lo'], '{:.2f}')}, {_num(c['slo_metric']['hi'], '{:.2f}')}]")
        live = [x for x in advice["candidates"] if x["status"] == UNDECIDED]
        if not live:
            return f"No setting meets {want}: every one was dropped or failed{tail}."
        few = min(x["runs"] for x in live) < MIN_RUNS
        why = (f" (the budget ended after {advice.get('rounds', 1)} round(s); a decision "
               f"needs at least {MIN_RUNS} runs of each)" if few else " within the budget")
        lk = cands.get(advice.get("likely") or "")
        if lk is not None and not few:
            k = advice.get("more_rounds")
            when = f", about {more_rounds(k)} from a decision," if k else ""
            tail = (f"; the likely choice{when} is {_mode_words(lk['mode'], lk['settings'])}: "
                    f"{slo['workload']} {slo['metric']} "
                    f"{_num(lk['slo_metric']['estimate'], '{:.2f}')} ms "
                    f"[{_num(lk['slo_metric']['lo'], '{:.2f}')}, "
                    f"{_num(lk['slo_metric']['hi'], '{:.2f}')}], price "
                    f"{_num(lk['price']['estimate'], '{:,.0f}')}/s "
                    f"[{_num(lk['price']['lo'], '{:,.0f}')}, {_num(lk['price']['hi'], '{:,.0f}')}]")
        return f"No setting met {want} with confidence{why}{tail}."
    c = cands[choice["label"]]
    s, p = c["slo_metric"], c["price"]
    rel = ""
    if native is not None and native is not c and native["price"]["estimate"]:
        rel = f", {(p['estimate'] / native['price']['estimate'] - 1) * 100:+.0f}% against native"
    sure = "" if advice.get("decided", True) else \
        " (the cheapest by estimate: the budget ended before its price was told apart)"
    return (f"Use {_mode_words(c['mode'], c['settings'])}: {slo['workload']} {slo['metric']} "
            f"{_num(s['estimate'], '{:.2f}')} ms [{_num(s['lo'], '{:.2f}')}, "
            f"{_num(s['hi'], '{:.2f}')}] < {slo['latency_ms']:g} ms; price "
            f"{_num(p['estimate'], '{:,.0f}')}/s [{_num(p['lo'], '{:,.0f}')}, "
            f"{_num(p['hi'], '{:,.0f}')}]{rel}{sure}.")


def toml_for(advice: Mapping[str, Any]) -> list[str]:
    """The scenario lines that deploy the choice (and the mode to run it in)."""
    choice = advice.get("choice")
    if choice is None:
        return []
    mode, settings = choice["mode"], choice["settings"]
    lines = [f"# run it with: xwatch run SCENARIO --mode {mode}"]
    by_wl: dict[str, dict[str, Any]] = {}
    for k, v in settings.items():
        wl, _, key = k.partition(".")
        by_wl.setdefault(wl, {})[key] = v
    for wl, kv in by_wl.items():
        lines.append(f'# in the [[workload]] table with name = "{wl}":')
        table = "mps" if mode == "mps" else "xsched"
        lines.append(f"[workload.{table}]")
        for key, v in kv.items():
            lines.append(f"{key.removeprefix('mps.')} = {v}")
    if not by_wl:
        lines.append("# no settings: every workload as it is")
    return lines


def reasons(advice: Mapping[str, Any]) -> list[str]:
    """Why each candidate that was not chosen left the race."""
    return [f"{c['label']}: {c['status']}" + (f" - {c['reason']}" if c.get("reason") else "")
            for c in advice["candidates"] if c["status"] != CHOSEN]
