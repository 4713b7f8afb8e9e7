"""The calibrate decomposition, per percentile of the high-priority workload:

- shim overhead  = alone under XSched - alone native
- contention     = together native - alone native
- XSched recovers = together native - together under XSched
- LOW's price    = LOW samples/s together under XSched vs together native

and one plain sentence saying what that means. Pure: works on any snapshot whose
phases carry ``PhaseSnapshot.calibrate`` ("alone" | "together")."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from xwatch.core.analysis.participation import Participation, participation
from xwatch.core.analysis.stats.copies import combine, copies_of, role
from xwatch.core.analysis.stats.noise import floors_in
from xwatch.core.analysis.stats.runs import RunValue
from xwatch.core.analysis.verdict import NATIVE, UNMEASURED, Change, latency_change
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot
from xwatch.core.engine.stats import nan_if_none, stat
from xwatch.core.modes.base import label as mode_label
from xwatch.core.modes.registry import CALIBRATED
from xwatch.scenario import Scenario

PCTS = (("p50", "P50"), ("p95", "P95"), ("p99", "P99"))


def high_names(scen: Scenario) -> tuple[str, ...]:
    top = max(w.priority_value for w in scen.workloads)
    return tuple(w.name for w in scen.workloads if w.priority_value == top)


@dataclass(frozen=True)
class Row:
    pct: str  # "P50"
    alone_native: float
    alone_xsched: float
    together_native: float
    together_xsched: float

    @property
    def shim_overhead(self) -> float:
        return self.alone_xsched - self.alone_native

    @property
    def contention(self) -> float:
        return self.together_native - self.alone_native

    @property
    def recovered(self) -> float:
        return self.together_native - self.together_xsched


@dataclass(frozen=True)
class Calibration:
    workload: str
    rows: tuple[Row, ...]
    low_native_sps: float
    low_xsched_sps: float
    missing: tuple[str, ...]  # phases that did not run or failed
    verdict: str
    mode: str = CALIBRATED
    #: P99 recovered (together native - together mode) and the mode's own cost (alone
    #: mode - alone native), with 95% intervals pooled over repeats
    recovered_p99: Change | None = None
    overhead_p99: Change | None = None
    #: who took part in the mode's mechanism, in the together and the alone runs
    #: (``analysis.participation``): a role in which it took no part gets no verdict
    together_part: Participation = NATIVE
    alone_part: Participation = NATIVE

    @property
    def low_price_pct(self) -> float:
        if not self.low_native_sps or math.isnan(self.low_native_sps):
            return math.nan
        return (self.low_xsched_sps - self.low_native_sps) / self.low_native_sps * 100


def _find(snap: SessionSnapshot, role: str, mode: str) -> PhaseSnapshot | None:
    found = [p for p in snap.phases if p.calibrate == role and p.mode == mode]
    return found[-1] if found else None


def _all(snap: SessionSnapshot, role: str, mode: str) -> list[PhaseSnapshot]:
    return [p for p in snap.phases if p.calibrate == role and p.mode == mode]


def mode_of(snap: SessionSnapshot) -> str:
    """The mode calibrated against native (the registry's ``CALIBRATED`` unless the
    phases say another)."""
    return next((p.mode for p in snap.phases if p.calibrate
                 and p.mode != "native"), CALIBRATED)


def calibrate(snap: SessionSnapshot) -> Calibration | None:
    """The decomposition, or None when the snapshot holds no calibrate phases."""
    if not any(p.calibrate for p in snap.phases):
        return None
    # with --gpus every GPU's copy of HIGH counts (analysis.stats.copies): each run's
    # value is the geometric mean of the copies', named by the scenario's name
    high = high_names(snap.scenario)[0]
    if snap.scenario.gpus:
        high = role(high)
    lows = [w.name for w in snap.scenario.workloads if w.name not in high_names(snap.scenario)]
    mode = mode_of(snap)
    phases = {(r, m): _find(snap, r, m) for r in ("alone", "together")
              for m in ("native", mode)}
    def usable(p: PhaseSnapshot | None) -> bool:
        return p is not None and p.status != "failed" and bool(copies_of(p, high))

    missing = tuple(f"{r} {m}" + ("" if p is None else f" ({p.status})")
                    for (r, m), p in phases.items() if not usable(p))

    def val(role: str, mode: str, key: str) -> float:
        p = phases[(role, mode)]
        if p is None or p.status == "failed":
            return math.nan
        vs = [RunValue(stat(w.phase, key), math.nan) for w in copies_of(p, high)]
        return combine(vs, "log").est

    rows = tuple(Row(label, val("alone", "native", k), val("alone", mode, k),
                     val("together", "native", k), val("together", mode, k))
                 for k, label in PCTS)

    def low_sps(mode: str) -> float:
        p = phases[("together", mode)]
        if p is None or p.status == "failed":
            return math.nan
        total = 0.0
        for n in lows:
            w = p.workload(n)
            total += nan_if_none(w.throughput.samples_per_s) if w is not None else 0.0
        return total

    # intervals, pooled over repeats: what the mode recovers under contention (together
    # native minus together under the mode) and what the mode alone costs
    floors = floors_in(snap.noise_floors)  # one run each: judged against the recorded floor
    rec = latency_change(high, 99.0, _all(snap, "together", mode),
                         _all(snap, "together", "native"), floors)
    # no floor for HIGH alone: it was recorded for the whole scenario
    over = latency_change(high, 99.0, _all(snap, "alone", "native"), _all(snap, "alone", mode))
    cal = Calibration(high, rows, low_sps("native"), low_sps(mode), missing, "", mode,
                      rec, over, participation(_all(snap, "together", mode), snap.scenario),
                      participation(_all(snap, "alone", mode), snap.scenario))
    return dataclasses.replace(cal, verdict=verdict(cal))


def _ms(v: float) -> str:
    return f"{abs(v):.2f} ms"


def _iv(c: Change) -> str:
    """The interval of a calibrate difference, as the sentence states it."""
    d = c.diff
    return f"{'?' if d.lo is None else f'{d.lo:+.2f}'}, {'?' if d.hi is None else f'{d.hi:+.2f}'}"


def verdict(c: Calibration) -> str:
    """One sentence in plain words."""
    if c.missing:
        return ("Incomplete calibration: " + ", ".join(c.missing) + " did not give "
                f"{c.workload} latencies, so the parts cannot all be separated.")
    name = mode_label(c.mode)
    absent = [f"{where}, {part.no_verdict().removeprefix('no verdict: ')}"
              for where, part in (("together", c.together_part), ("alone", c.alone_part))
              if not part.took_part]
    if absent:  # no effect of a mechanism that took no part
        return ("No verdict: " + "; ".join(absent) + f". The calibration measured no {name} "
                "effect there: its numbers are runs without it.")
    scope = c.together_part.scope()
    scope = f"{scope[0].upper()}{scope[1:]}. " if scope else ""
    p50 = next(r for r in c.rows if r.pct == "P50")
    p99 = next(r for r in c.rows if r.pct == "P99")
    median = "lowers" if p50.recovered >= 0 else "raises"
    tail_verb = "lowers" if p99.recovered >= 0 else "raises"
    joint = "and" if (p50.recovered >= 0) == (p99.recovered >= 0) else "but"
    rec = c.recovered_p99
    rec_iv = f" [{_iv(rec)}]" if rec is not None else ""
    if rec is not None and rec.basis == UNMEASURED:
        tail_part = (f"{tail_verb} its P99 by {_ms(p99.recovered)} (within-run{rec_iv}; one "
                     "run each, so whether that exceeds run-to-run noise is unmeasured)")
    elif rec is not None and rec.way == 0:
        tail_part = f"its P99 change ({p99.recovered:+.2f} ms{rec_iv}) is within noise"
        joint = "and"
    else:
        tail_part = f"{tail_verb} its P99 by {_ms(p99.recovered)}{rec_iv}"
    parts = [f"{name} {median} {c.workload}'s median under contention by "
             f"{_ms(p50.recovered)} {joint} {tail_part}"]
    ov = c.overhead_p99
    ov_iv = f" [{_iv(ov)}]" if ov is not None else ""
    what = "the shim" if c.mode == "xsched" else name
    tail = f"; {what} alone adds {_ms(p99.shim_overhead)}{ov_iv} to P99" \
        if p99.shim_overhead > 0 else \
        f"; {what} alone changes P99 by {p99.shim_overhead:+.2f} ms{ov_iv}"
    if ov is not None and ov.basis == UNMEASURED:
        tail += " (one run each: no verdict)"
    elif ov is not None and ov.way == 0:
        tail += " (within noise)"
    cause = ""
    if p99.shim_overhead > 0 and p99.recovered < 0 and p99.shim_overhead >= -p99.recovered * 0.5:
        cause = ", so most of the added tail comes from the shim itself, not from the " \
                "low-priority work"
    elif p99.contention > 0 and p99.recovered >= 0:
        cause = (f", recovering {min(100.0, p99.recovered / p99.contention * 100):.0f}% of the "
                 f"{_ms(p99.contention)} that contention added")
    price = "" if math.isnan(c.low_price_pct) else \
        f". Low-priority throughput changes by {c.low_price_pct:+.1f}%"
    return scope + ", ".join(parts) + tail + cause + price + "."
