"""The ``xwatch`` command: ``main`` (the entry point), the dispatch of each command
to its plan or the dashboard, the metrics endpoint, what is printed at the end, the
sessions listing, and errors as a titled panel on stderr (exit status 2)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import signal
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xwatch.cli.checks import (
    backends_of,
    check_devices,
    check_export,
    check_modes,
    check_ports,
    check_telemetry,
    modes_of,
    scenario_of,
)
from xwatch.cli.parser import build_parser, options_of
from xwatch.core.modes import registry
from xwatch.core.plans.options import Backends, Options
from xwatch.errors import UsageError, XwatchError
from xwatch.scenario import (
    builtin_scenarios,
    keys_reference_markdown,
    load_scenario,
)

if TYPE_CHECKING:
    from xwatch.core.export.prometheus import MetricsServer
    from xwatch.core.plans.driver import Driver
    from xwatch.scenario import Scenario

EXIT_FAILED = 1
EXIT_USAGE = 2


def _reexec_without_shim() -> None:
    """xwatch itself must not run with an XSched shim on its library path (seen on the
    H100: with XSched's lib/ on LD_LIBRARY_PATH and XSCHED_SCHEDULER=GLB in the shell,
    a library xwatch loads pulled the shim in and it aborted, looking for an xserver).
    Start again without the shim's folders; every phase records what was removed."""
    import json
    import os

    from xwatch.core.modes.isolation import SELF_CLEANED_ENV, clean_env

    if os.environ.get(SELF_CLEANED_ENV) is not None:
        return
    cleaned = clean_env(os.environ, "self")
    removed = [r for r in cleaned.removed if r["name"] in ("LD_PRELOAD", "LD_LIBRARY_PATH")]
    if not removed:
        return
    env = dict(os.environ)
    for r in removed:
        env[r["name"]] = cleaned.env.get(r["name"], "")
        if not env[r["name"]]:
            del env[r["name"]]
    env[SELF_CLEANED_ENV] = json.dumps(removed)
    os.execve(sys.executable, [sys.executable, "-m", "xwatch", *sys.argv[1:]], env)


def print_error(err: XwatchError) -> None:
    """A titled box; long lines wrap at word boundaries (very long words are split)."""
    width = max(len(err.title) + 4, min(100, max(len(x) for x in str(err).splitlines() or [""])))
    bar = "─" * (width + 2)
    print(f"┌{bar}┐\n│ {err.title.upper():<{width}} │\n├{bar}┤", file=sys.stderr)
    for line in str(err).splitlines() or [""]:
        for part in textwrap.wrap(line, width, break_on_hyphens=False) or [""]:
            print(f"│ {part:<{width}} │", file=sys.stderr)
    print(f"└{bar}┘", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        _reexec_without_shim()
    args_list = list(sys.argv[1:] if argv is None else argv)
    ap = build_parser()
    args = ap.parse_args(args_list)
    try:
        return _dispatch(ap, args)
    except XwatchError as e:
        print_error(e)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `xwatch scenarios --keys | head`: the reader left, as SIGPIPE would
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit's flush
        return 128 + signal.SIGPIPE


def _metrics(args: argparse.Namespace) -> MetricsServer | None:
    """Bind the metrics endpoint before anything starts (a bad port loses nothing)."""
    if args.metrics_port is None:
        return None
    from xwatch.core.export.prometheus import MetricsServer

    server = MetricsServer(args.metrics_port, args.metrics_host)
    server.start()
    print(f"xwatch: metrics at {server.url}", file=sys.stderr, flush=True)
    return server


def _dispatch(ap: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    cmd = args.command
    if cmd is None:
        args = ap.parse_args(["run"])
        cmd = "run"
    if cmd == "scenarios":
        if args.keys:
            print(keys_reference_markdown())
            return 0
        for name, path in builtin_scenarios().items():
            s = load_scenario(str(path))
            wl = ", ".join(f"{w.name}={w.describe()}" for w in s.workloads)
            print(f"{name:<10} {s.duration_s:>5.0f}s  {s.description}  [{wl}]")
        return 0
    if cmd == "sessions":
        return _sessions(args)
    if cmd in ("report", "replay"):
        from xwatch.core.export.sessions import resolve
        args.snapshot = str(resolve(args.snapshot))
    if cmd == "report":
        from xwatch.core.export.report import write_report_cli
        return write_report_cli(args.snapshot, args.format, args.out)
    if cmd == "doctor":
        from xwatch.cli.doctor import run_doctor
        return run_doctor(args)
    if cmd == "replay":
        from xwatch.core.export.snapshot import load_snapshot
        snap = load_snapshot(args.snapshot)
        from xwatch.ui.app import make_app
        make_app(replay=snap, replay_source=args.snapshot).run()
        return 0
    scen = scenario_of(args)
    if cmd == "run" and args.ray:  # the dashboard over a Ray cluster's boxes
        from xwatch.cli.fleet import run_dashboard
        return run_dashboard(args, scen)
    if vars(args).get("ray"):  # compare, advise, capacity, noise over a Ray cluster
        from xwatch.cli.fleet import run_fleet
        return run_fleet(cmd, args, scen, _race_modes, _race_backends)
    if cmd == "advise":
        return _advise(args, scen)
    if cmd == "capacity":
        return _capacity(args, scen)
    modes = modes_of(args)
    opts = options_of(args)
    if opts.repeat < 1:
        raise UsageError(f"--repeat must be >= 1 (got {opts.repeat})")
    backends = backends_of(args, scen, modes)
    _check_machine(opts.telemetry, opts.export, scen)
    metrics = _metrics(args)
    try:
        return _run(cmd, args, dataclasses.replace(opts, metrics=metrics), scen, backends,
                    modes)
    finally:
        if metrics is not None:
            metrics.stop()



def _check_machine(telemetry: str, export: str | None, scen: Scenario) -> None:
    """What a plan checks of this machine before anything starts: the telemetry backend
    asked for, the export folder, the devices and the servers' ports."""
    check_telemetry(telemetry)
    check_export(export)
    check_devices(scen)
    check_ports(scen)

def _race_modes(args: argparse.Namespace) -> tuple[bool, list[str]]:
    """A race's (advise's, capacity's) ``--modes`` (whether named, and which: each known,
    once) and ``--budget``, checked before anything starts."""
    from xwatch.core.plans.advise import race_modes

    wanted = [m.strip() for m in (args.modes or ",".join(race_modes())).split(",")
              if m.strip()]
    names = registry.names()
    bad = [m for m in wanted if m not in names]
    if bad or not wanted or len(set(wanted)) != len(wanted):
        raise UsageError(f"--modes {args.modes!r}: allowed: {', '.join(names)}, each once")
    if args.budget <= 0:
        raise UsageError(f"--budget must be > 0 minutes (got {args.budget:g})")
    return args.modes is not None, wanted


def _race_backends(args: argparse.Namespace, scen: Scenario, wanted: list[str],
                   explicit: bool) -> tuple[Backends, list[str], dict[str, str]]:
    """A race's backends and the modes this box can run (one asked for by name that
    cannot is an error): (the backends, the modes, the skipped and why)."""
    from xwatch.core.plans.advise import usable_modes

    backends = backends_of(args, scen, wanted, wanted=wanted, explicit=explicit, check=False)
    modes, skipped = usable_modes(wanted, explicit, backends)
    return backends, modes, skipped


def _advise(args: argparse.Namespace, scen: Scenario) -> int:
    """``xwatch advise``: the mechanisms this box can run (asked for by name, one that
    cannot is an error), checked before anything starts."""
    from xwatch.core.plans.advise import objective, plan_candidates, run_advise

    explicit, wanted = _race_modes(args)
    obj = objective(scen, args.slo)  # a missing or malformed objective: before anything
    backends, modes, skipped = _race_backends(args, scen, wanted, explicit)
    check_modes(backends, modes)
    plan_candidates(scen, obj, modes, args.set, backends, skipped)  # --set errors now
    _check_machine(args.telemetry, args.export, scen)
    metrics = _metrics(args)
    try:
        return asyncio.run(run_advise(scen, options_of(args, metrics), modes, skipped,
                                      backends))
    finally:
        if metrics is not None:
            metrics.stop()


def _capacity(args: argparse.Namespace, scen: Scenario) -> int:
    """``xwatch capacity``: as advise, its modes and backends checked, and the search
    (the SLO workload's rate, the runs' length at the lowest rate) before anything
    starts."""
    from xwatch.core.plans.capacity import make_run, run_capacity

    explicit, wanted = _race_modes(args)
    backends, modes, skipped = _race_backends(args, scen, wanted, explicit)
    opts = options_of(args)
    make_run(scen, opts, modes, skipped, backends, say=lambda _: None)  # its errors now
    check_modes(backends, modes)
    _check_machine(args.telemetry, args.export, scen)
    metrics = _metrics(args)
    try:
        return asyncio.run(run_capacity(scen, dataclasses.replace(opts, metrics=metrics),
                                        modes, skipped, backends))
    finally:
        if metrics is not None:
            metrics.stop()


def _check_split(scen: Scenario, modes: list[str]) -> None:
    """``compare --layout split`` needs two modes or more and a GPU for each."""
    gpus = list(scen.gpus)
    if len(modes) < 2 or len(gpus) < len(modes):
        raise UsageError(
            f"--layout split runs the modes side by side, each on GPUs of its own: it needs "
            f"two modes or more (--modes {','.join(modes)}) and at least one GPU per mode "
            f"(--gpus {','.join(map(str, gpus)) or 'not given'}); use --gpus with as many "
            "GPUs as modes, or --layout replicate", title="Split layout cannot be honoured")


def _run(cmd: str, args: argparse.Namespace, opts: Options, scen: Scenario,
         backends: Backends, modes: list[str]) -> int:
    if cmd == "compare" and opts.layout == "split":
        from xwatch.core.plans.box import split_rounds
        from xwatch.core.plans.driver import Driver, Plan, Step
        _check_split(scen, modes)
        return asyncio.run(Driver(scen, opts, backends).run(
            Plan([Step(m) for m in modes], rounds=split_rounds(scen, modes, opts.repeat))))
    if (cmd == "run" and args.headless) or cmd == "compare":
        from xwatch.core.plans.driver import run_headless
        return asyncio.run(run_headless(scen, opts, modes, backends))
    if cmd == "calibrate":
        from xwatch.core.plans.calibrate import run_calibrate
        return asyncio.run(run_calibrate(scen, opts, args.mode, backends))
    if cmd == "sweep":
        from xwatch.core.plans.sweep import run_sweep
        return asyncio.run(run_sweep(scen, opts, backends))
    if cmd == "noise":
        from xwatch.core.plans.noise import run_noise
        return asyncio.run(run_noise(scen, opts, args.mode, backends))
    from xwatch.ui.app import make_app
    app = make_app(scen, opts, backends=backends)
    try:
        app.run()
    finally:
        app.ctl.kill_now()  # a crash of the app must not leave workloads behind
    if app.ctl.driver is not None:
        _print_end(app.ctl.driver)
    return int(app.return_code or 0)


def _print_end(driver: Driver) -> None:
    """What headless prints at the end, after the dashboard: the tables and the path."""
    from xwatch.core.analysis.answer.stored import answer_lines
    from xwatch.core.plans.console import final_table, interval_lines

    snap = driver.final_snap
    if snap is None:
        return
    for p in snap.phases:
        if p.measuring:
            print(final_table(p, snap.telemetry))
            for line in interval_lines(p):
                print(line)
    for line in answer_lines(snap):
        print(line)
    if driver.kept_path is not None:
        print(f"session kept: {driver.kept_path} (`xwatch replay last`, `xwatch report last`, "
              "`xwatch sessions`)")
    elif driver.keep_error:
        print(f"xwatch: session not kept: {driver.keep_error}", file=sys.stderr)


def _sessions(args: argparse.Namespace) -> int:
    from xwatch.core.export import sessions

    entries = sessions.listing()
    if args.recover is not None:
        lost = [(i, e) for i, e in enumerate(entries) if e.state == "interrupted"]
        if args.recover != "all":
            if not args.recover.isdigit() or int(args.recover) >= len(entries) or \
                    entries[int(args.recover)].state != "interrupted":
                raise UsageError(f"--recover {args.recover}: not an interrupted session; "
                                 "interrupted: " + (", ".join(str(i) for i, _ in lost) or
                                                    "none"))
            lost = [(int(args.recover), entries[int(args.recover)])]
        for _, e in lost:
            print(f"recovered: {sessions.recover(e.path)}")
        return 0
    if not entries:
        print(f"no sessions in {sessions.root()} yet (the dashboard keeps one when it exits)")
        return 0
    print(f"sessions in {sessions.root()} (newest first; `xwatch replay N`, "
          "`xwatch report N`):")
    for i, e in enumerate(entries):
        print(sessions.describe(i, e))
    return 0
