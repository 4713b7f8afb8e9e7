"""``--ray ADDRESS|auto`` on compare, advise, capacity and noise: the cluster joined, its
boxes found, the plan's parts built as the local plan builds them (the modes, the
objective, the candidates), then run over the boxes (``core/fleet/plan.py``); on the
dashboard (``run --ray``, ``run_dashboard``): the same plan, shown live (``ui.fleet``)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from xwatch.cli.checks import check_export, modes_of
from xwatch.cli.parser import options_of
from xwatch.core.plans.options import Backends
from xwatch.errors import UsageError
from xwatch.scenario import Scenario

if TYPE_CHECKING:
    from xwatch.ui.app import XwatchApp
    from xwatch.ui.fleet.run import FleetRun

#: main's race helpers: --modes and --budget checked; the race's backends and modes
RaceModes = Callable[[argparse.Namespace], tuple[bool, list[str]]]
RaceBackends = Callable[[argparse.Namespace, Scenario, list[str], bool],
                        tuple[Backends, list[str], dict[str, str]]]


def run_fleet(cmd: str, args: argparse.Namespace, scen: Scenario, race_modes: RaceModes,
              race_backends: RaceBackends) -> int:
    """Run ``cmd`` over the cluster at ``args.ray``; the exit status."""
    from xwatch.core.fleet import plan as fp
    from xwatch.core.fleet.connect import connect, discover
    from xwatch.core.plans.driver import Step

    opts = options_of(args)
    if opts.repeat < 1:
        raise UsageError(f"--repeat must be >= 1 (got {opts.repeat})")
    check_export(opts.export)
    if vars(args).get("metrics_port") is not None:
        raise UsageError("--metrics-port serves one box's numbers: with --ray each box "
                         "serves its own (docs/fleet.md); leave --metrics-port out",
                         title="Metrics endpoint with --ray")
    parts = _race_parts(cmd, args, scen, opts, race_modes, race_backends) \
        if cmd in ("advise", "capacity") else None
    ray = connect(args.ray)
    boxes = discover(ray)
    if parts is not None:
        rc, backends, modes, record = parts
        return asyncio.run(fp.run_race(ray, boxes, scen, opts, args, rc, backends, modes,
                                       record)).status
    if cmd == "noise":
        from xwatch.core.plans.noise import record_floor

        mode = args.mode

        def finish(snap: Any) -> tuple[Any, int | None]:
            import msgspec

            many = len({p.box.node_id for p in snap.phases if p.box is not None}) > 1
            rec, status = record_floor(snap, scen, mode, opts.precision, print,
                                       machine=f"its runs were spread over {len(boxes)} "
                                       "boxes" if many else None)
            return msgspec.structs.replace(snap, noise_floor=rec), status

        return asyncio.run(fp.run_steps(ray, boxes, scen, opts, args, [Step(mode)],
                                        finish=finish)).status
    modes = modes_of(args)
    if opts.layout != "replicate":
        raise UsageError("--layout split runs the modes side by side on one box's GPUs; "
                         "with --ray each run is one mode on one box: leave --layout out",
                         title="Split layout with --ray")
    return asyncio.run(fp.run_steps(ray, boxes, scen, opts, args,
                                    [Step(m) for m in modes])).status


def run_dashboard(args: argparse.Namespace, scen: Scenario) -> int:
    """``xwatch run --ray``: the dashboard over the boxes (``fleet_dashboard``); after
    it, what the plan said at its end (``dashboard_end``)."""
    app, run = fleet_dashboard(args, scen)
    app.run()
    for line, warning in dashboard_end(run):
        print(line, file=sys.stderr if warning else sys.stdout, flush=True)
    return int(run.outcome.status) if run.outcome is not None else 1


def dashboard_end(run: FleetRun) -> list[tuple[str, bool]]:
    """What ``run --ray`` prints once the dashboard has left the screen (each line, and
    whether it goes to stderr): the lines the plan said at its end, as compare --ray
    prints them (``plan.Outcome.end``: the stop, the answer, a line a box with its
    phases' statuses, the per-box findings where more than one box ran, the failures,
    the snapshot's and reports' paths); that the plan never ended where it did not."""
    if run.outcome is None:
        return [("xwatch: the plan over the boxes did not end (see above)", True)]
    return list(run.outcome.end)


def fleet_dashboard(args: argparse.Namespace, scen: Scenario) -> tuple[XwatchApp, FleetRun]:
    """The dashboard app of ``run --ray`` and its plan (``ui.fleet.run.FleetRun``): every box
    runs one phase of ``--mode``, side by side, through the fleet's plan
    (``plan.run_steps``, as compare's); the boxes shown as groups of GPUs."""
    from xwatch.core.fleet.connect import connect, discover
    from xwatch.core.plans.driver import Step
    from xwatch.ui.app import make_app
    from xwatch.ui.fleet.run import FleetRun

    if args.headless:
        raise UsageError("run --headless --ray: headless plans over the boxes are compare "
                         "--ray and noise --ray (docs/fleet.md); leave --headless out for "
                         "the dashboard", title="Headless run with --ray")
    if args.duration == 0:
        raise UsageError("--duration 0 runs a phase until stopped: over the boxes each "
                         "phase needs its planned end; give --duration S",
                         title="Endless phases with --ray")
    if args.metrics_port is not None:
        raise UsageError("--metrics-port serves one box's numbers: with --ray each box "
                         "serves its own (docs/fleet.md); leave --metrics-port out",
                         title="Metrics endpoint with --ray")
    check_export(args.export)
    ray = connect(args.ray)
    boxes = discover(ray)
    opts = dataclasses.replace(options_of(args), repeat=len(boxes), keep=0)
    run = FleetRun(ray, boxes, scen, opts, args, [Step(args.mode)])
    return make_app(scen, opts, fleet=run), run


def _race_parts(cmd: str, args: argparse.Namespace, scen: Scenario, opts: Any,
                race_modes: RaceModes, race_backends: RaceBackends) -> Any:
    """advise's or capacity's race, built as the local command builds it, over backends
    that remember each candidate's scenario (``plan.Recording``); every refusal here."""
    from xwatch.core.fleet.plan import Recording

    explicit, wanted = race_modes(args)
    local, modes, skipped = race_backends(args, scen, wanted, explicit)
    backends = Recording(local.configured, local.unavailable)
    if cmd == "advise":
        from xwatch.core.plans.advise import advice_lines, make_race, objective

        obj = objective(scen, args.slo)
        rc = make_race(scen, obj, modes, list(opts.sets), backends, opts.budget_min,
                       opts.seed, skipped, say=print, mix=True)

        def record() -> tuple[dict[str, Any], int | None]:
            advice = rc.advice()
            for line in advice_lines(advice):
                print(line, flush=True)
            return {"advice": advice}, rc.status()

        return rc, backends, modes, record
    from xwatch.core.analysis.capacity.lines import capacity_lines
    from xwatch.core.plans.capacity import make_run

    cr = make_run(scen, opts, modes, skipped, backends, say=print)

    def record_cap() -> tuple[dict[str, Any], int | None]:
        rec = cr.record_of()
        for line in capacity_lines(rec):
            print(line, flush=True)
        return {"capacity": rec}, cr.status()

    return cr, backends, modes, record_cap
