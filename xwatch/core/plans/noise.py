"""``xwatch noise``: a machine's noise floor. One configuration run N times
(phases back to back, all of one setting); for every workload and metric the
variance of a run's estimate split into its within-run and between-run parts,
how many runs (of what length) a given precision needs, and the record in the
state folder that one-run answers are judged against (``export.floors``)."""

from __future__ import annotations

import math
from collections.abc import Callable

from xwatch.core import model as M
from xwatch.core.analysis.participation import participation
from xwatch.core.analysis.stats.noise import Floor, floor_of, scenario_digest
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import SessionSnapshot, utc_now
from xwatch.core.export.floors import save, this_machine
from xwatch.core.model.metric import Metric
from xwatch.core.modes.base import label
from xwatch.core.plans.driver import EXIT_FAILED, Driver, Plan, Step
from xwatch.core.plans.options import DEFAULT_NOISE_RUNS, Backends, Options
from xwatch.scenario import Scenario

DEFAULT_RUNS = DEFAULT_NOISE_RUNS


def _fmt(v: float, unit: str) -> str:
    if v != v:
        return "-"
    return f"{v:,.0f}{unit}" if abs(v) >= 100 else f"{v:.3g}{unit}" if abs(v) < 1 else \
        f"{v:.2f}{unit}"


def floor_lines(f: Floor, precision_pct: float) -> list[str]:
    """The floor as a table: per workload and metric the mean, the run-to-run SD and
    its split, and the runs per setting a +-``precision_pct``% difference needs."""
    lines = [f"=== noise floor: {f.scenario}, {label(f.mode)}, {f.runs} runs of "
             f"{f.run_s:.1f} s " + "=" * 20,
             f"{'workload':<12} {'metric':<9} {'mean':>10} {'run sd':>16} {'between':>9} "
             f"{'within':>9}  runs per setting for ±{precision_pct:g}% of a difference: "
             f"{f.run_s:.0f} s | {4 * f.run_s:.0f} s runs"]
    for key, s in f.splits.items():
        wl, metric = key.split("/", 1)
        per = Metric.parse(metric).change_unit  # "/s" follows its number, "ms" a space
        unit = per if per.startswith("/") else " " + per
        sd = math.sqrt(s.total)
        rel = f" ({sd / abs(s.mean) * 100:.1f}%)" if s.mean else ""
        half = precision_pct / 100 * abs(s.mean)
        k1, k4 = s.runs_needed(half), s.runs_needed(half, run_s=4 * s.run_s)
        w = math.sqrt(s.within) if s.within == s.within else math.nan
        lines.append(f"{wl:<12} {metric:<9} {_fmt(s.mean, unit):>10} "
                     f"{_fmt(sd, unit) + rel:>16} {_fmt(math.sqrt(s.between), ''):>9} "
                     f"{_fmt(w, ''):>9}  {k1 or '>10000'} | {k4 or '>10000'}")
    lines.append("run sd: how much one run's estimate varies from run to run; between: the "
                 "part longer runs do not shrink; within: the run's own sampling error (both "
                 "as SDs). Where 'between' dominates, add runs, not seconds.")
    return lines


def record_floor(snap: SessionSnapshot, scen: Scenario, mode: str, precision: float,
                 say: Callable[[str], None], tel: M.TelemetryInfo | None = None,
                 machine: str | None = None) -> tuple[M.NoiseFloor | None, int | None]:
    """The floor of ``snap``'s runs of ``mode``, printed and saved: (its record; the exit
    status to use, None: the plan's own). The local plan's and the fleet's
    (``core/fleet``) alike; ``machine``: why the runs are no one machine's (runs over
    several boxes), printed and not saved as this machine's floor."""
    fl = floor_of(snap.phases, mode, utc_now(), scen.name,
                  scenario_digest(scen.to_dict()), this_machine(tel))
    rec = fl.as_model()
    if fl.runs < 2:
        say(f"xwatch: noise: {fl.runs} usable run(s) of {label(mode)}; a floor needs "
            "at least 2: nothing recorded")
        return rec, EXIT_FAILED
    for line in floor_lines(fl, precision):
        say(line)
    if fl.boxes > 1:
        say(f"Box is a block: {fl.boxes} boxes; 'between' is within a box (each box's level "
            f"removed, {fl.runs - fl.boxes} degrees of freedom).")
    part = participation(snap.phases, snap.scenario)
    if not part.took_part:  # the runs are not the mode's: no floor of it
        say(f"xwatch: noise: {part.no_verdict()}; a floor of these runs is not "
            f"{label(mode)}'s: nothing recorded")
        return rec, EXIT_FAILED
    if part.line():
        say(f"note: {part.line()}")
    if machine is not None:
        say(f"xwatch: noise: {machine}: not recorded as this machine's floor")
        return rec, None
    try:
        path = save(fl)
    except OSError as e:
        say(f"xwatch: noise floor not recorded: {e}")
        return rec, EXIT_FAILED
    say(f"noise floor recorded: {path} (compare, calibrate, sweep and the "
        "dashboard judge one-run answers against it)")
    return rec, None


async def run_noise(scen: Scenario, opts: Options, mode: str, backends: Backends) -> int:
    """Run ``mode`` ``--repeat`` times and record the floor."""
    precision = opts.precision
    driver = Driver(scen, opts, backends)
    say = driver.observer.say

    def finish(session: Session) -> int | None:
        tel = session.telemetry.info if session.telemetry is not None else None
        rec, status = record_floor(session.snapshot(), scen, mode, precision, say, tel)
        session.noise_floor = rec
        return status

    return await driver.run(Plan([Step(mode)], finish=finish, floors=False))
