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
with t intervals instead of a Friedman test. ``rounds_to_decide`` estimates how many
more rounds would separate what the budget left undecided.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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
    conf = 1.0 - 0.05 / max(1, len([c for c in cands if c.status != FAILED]))
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


def rounds_to_decide(a: Candidate, b: Candidate, most: int = 200) -> int | None:
    """About how many more rounds would separate ``a`` and ``b``'s prices (their
    intervals no longer overlapping, if the means and spreads stay as they are)."""
    gap = abs(a.price.est - b.price.est)
    if not gap > 0 or a.runs < 2 or b.runs < 2:
        return None

    def sd(xs: Sequence[float]) -> float:
        m = sum(xs) / len(xs)
        return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))

    sa, sb = sd(a.prices), sd(b.prices)
    for k in range(max(a.runs, b.runs), most + 1):
        t = t_ppf(0.975, k - 1)
        if t * (sa + sb) / math.sqrt(k) < gap:
            return k - max(a.runs, b.runs)
    return None


def undecided_note(cands: Sequence[Candidate]) -> str:
    """What the budget left open, and about how many more rounds would settle it."""
    live = [c for c in cands if c.alive]
    if len(live) < 2:
        return ""
    live.sort(key=lambda c: -c.price.est if c.price.est == c.price.est else math.inf)
    a = live[0]
    parts = []
    for b in live[1:4]:
        k = rounds_to_decide(a, b)
        parts.append(f"{a.label} vs {b.label}: " + (f"about {k} more rounds" if k is not None
                                                      else "the runs so far cannot tell"))
    return "Undecided at the budget: " + "; ".join(parts) + "."


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
