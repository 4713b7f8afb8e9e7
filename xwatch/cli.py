"""Command line: parse arguments, load the scenario, run the app or a headless
command. Errors are printed as a titled panel on stderr with exit status 2.

Textual is imported only for the commands that open the dashboard.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import math
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from xwatch.core.modes.base import MODES, MPS, XSCHED
from xwatch.errors import UsageError, XwatchError
from xwatch.scenario import (
    DEFAULT_SCENARIO,
    builtin_scenarios,
    keys_reference_markdown,
    load_scenario,
    parse_gpus,
)

EXIT_FAILED = 1
EXIT_USAGE = 2


def _add_run_args(p: argparse.ArgumentParser, headless_flag: bool = True) -> None:
    p.add_argument("scenario", nargs="?", default=DEFAULT_SCENARIO,
                   help="built-in scenario name or path to a .toml file (default: demo)")
    if headless_flag:
        p.add_argument("--headless", action="store_true",
                       help="no dashboard: progress lines on stdout, final table, exit code")
    p.add_argument("--duration", type=float, metavar="S",
                   help="measurement seconds per phase (default: the scenario's duration_s); "
                        "run: 0 runs until stopped (an agent for --metrics-port)")
    p.add_argument("--device", metavar="DEV", help="override every built-in workload's device")
    p.add_argument("--gpus", metavar="I,J,...",
                   help="run a copy of every workload on each listed GPU (PCI bus order, as "
                        "nvidia-smi numbers them), named NAME@I; overrides the scenario's gpus")
    p.add_argument("--export", metavar="DIR",
                   help="write DIR/snapshot.json (+ events.csv.gz, report)")
    p.add_argument("--spool-max-mb", type=float, default=1024, metavar="MB",
                   help="cap of the compressed raw-event spool; past it raw events are "
                        "dropped (counted) while statistics stay exact (default 1024)")
    p.add_argument("--telemetry", default="auto", choices=("auto", "amdsmi", "nvml", "host", "off"),
                   help="GPU telemetry backend (default: auto)")
    p.add_argument("--telemetry-interval", type=float, default=0.5, metavar="S",
                   help="seconds between telemetry samples (default 0.5)")
    p.add_argument("--telemetry-proc-interval", type=float, default=5.0, metavar="S",
                   help="seconds between per-process GPU queries, the costly part of a "
                        "poll (default 5)")
    p.add_argument("--server", metavar="CMD", help="the server workloads' command (one string, "
                   "split as a shell would, never run by one), e.g. 'vllm serve MODEL --port "
                   "8000'; needed by the built-in scenario serve-own (docs/serving.md)")
    p.add_argument("--served-model", metavar="NAME", help="the server workloads' request "
                   "`model` field (their served_model)")
    p.add_argument("--xsched", metavar="ROOT", help="XSched install folder (else XSCHED_HOME, "
                   "else the scenario's [xsched] root)")
    p.add_argument("--metrics-port", type=int, metavar="PORT",
                   help="serve Prometheus / OpenMetrics metrics on PORT (0: any free port; "
                        "the URL is printed) while the command runs")
    p.add_argument("--metrics-host", default="127.0.0.1", metavar="ADDR",
                   help="address the metrics endpoint binds (default 127.0.0.1; 0.0.0.0 "
                        "for every interface)")
    p.add_argument("--trace", type=float, metavar="S",
                   help="headless: record S seconds (0.5-10) of GPU kernel activity from "
                        "every built-in workload mid-phase (torch.profiler), and break HIGH's "
                        "requests down by the LOW kernels they waited behind")
    p.add_argument("--join-xserver", nargs="?", const="keep-policy",
                   choices=("keep-policy", "set-policy"), metavar="keep-policy|set-policy",
                   help="XSched: use the xserver already running on this machine (another "
                        "session's) instead of refusing to start; it is never stopped. Its "
                        "policy is kept (refused if it differs from the scenario's) unless "
                        "=set-policy (overrides [xsched] join)")
    p.add_argument("--join-mps", action="store_true",
                   help="MPS: make the workloads clients of the MPS control daemon already "
                        "serving these GPUs instead of refusing to start (overrides [mps] join)")
    p.add_argument("--no-preflight", action="store_true",
                   help="XSched and MPS phases: skip the few-second smoke test under the "
                        "mode that runs before the real workloads start")


def _add_repeat(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run the whole plan N times, interleaved (A B A B ...); each run is "
                        "one observation of its step, and changes get intervals over the "
                        "paired runs (default 1: one-run answers are judged against the "
                        "machine's recorded noise floor, else get no verdict)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="xwatch",
        description="Watch GPU scheduling contention live: start workloads, chart their "
                    "latency percentiles, switch between native and XSched scheduling.")
    sub = ap.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run a scenario (dashboard, or --headless)")
    _add_run_args(run)
    run.add_argument("--no-keep", action="store_true",
                     help="dashboard: do not keep this session in the sessions folder")
    run.add_argument("--keep", type=int, default=20, metavar="N",
                     help="dashboard: keep the newest N sessions (default 20)")
    run.add_argument("--keep-max-gb", type=float, default=2.0, metavar="GB",
                     help="dashboard: and at most this much of them (default 2)")
    run.add_argument("--mode", default="native", choices=MODES,
                     help="scheduling mode of the first phase (default native; mps: NVIDIA "
                          "Multi-Process Service under a private daemon)")
    sc = sub.add_parser("scenarios", help="list the built-in scenarios")
    sc.add_argument("--keys", action="store_true", help="print the scenario key reference")
    rp = sub.add_parser("replay", help="open the dashboard on a recorded snapshot")
    rp.add_argument("snapshot", help="DIR or DIR/snapshot.json, or a kept session: 'last' "
                    "or its number in `xwatch sessions`")
    rep = sub.add_parser("report", help="write a Markdown or HTML report of a snapshot")
    rep.add_argument("snapshot", help="DIR or DIR/snapshot.json, or 'last' or a number from "
                     "`xwatch sessions`")
    ss = sub.add_parser("sessions", help="list the kept dashboard sessions (newest first)")
    ss.add_argument("--recover", metavar="N|all",
                    help="rebuild an interrupted session (xwatch was killed) from its "
                         "spooled events")
    rep.add_argument("--format", choices=("md", "html"), default="md")
    rep.add_argument("--out", metavar="FILE", help="output file (default: stdout for md, "
                     "report.html next to the snapshot for html)")
    cmp_ = sub.add_parser("compare", help="headless A/B: one phase per mode (default native "
                          "then XSched), each with intervals, and the answer")
    _add_run_args(cmp_, headless_flag=False)
    _add_repeat(cmp_)
    cmp_.add_argument("--modes", default="native,xsched", metavar="M,M,...",
                      help="modes to compare, in this order: any of native, xsched, mps "
                           "(default native,xsched); the first is the baseline")
    cal = sub.add_parser("calibrate", help="headless: HIGH alone and everything together, "
                         "native and under XSched (or MPS); splits HIGH's latency change into "
                         "the mode's overhead, contention and what the mode recovers")
    _add_run_args(cal, headless_flag=False)
    _add_repeat(cal)
    cal.add_argument("--mode", default="xsched", choices=("xsched", "mps"),
                     help="the mode calibrated against native (default xsched)")
    sw = sub.add_parser("sweep", help="headless: native, then one XSched (or MPS) phase per "
                        "setting")
    _add_run_args(sw, headless_flag=False)
    _add_repeat(sw)
    sw.add_argument("--set", action="append", default=[], metavar="WL.KEY=V1,V2,...",
                    help="setting to sweep, e.g. low.threshold=1,2,4,8 (XSched) or "
                         "low.mps.active_thread_percentage=100,50,25 (MPS) (repeat; lists of "
                         "equal length are zipped)")
    for p in (cmp_, cal, sw):
        _add_gate(p)
    adv = sub.add_parser("advise", help="headless: race native, MPS and XSched settings to "
                         "the cheapest one that meets the SLO with confidence")
    _add_run_args(adv, headless_flag=False)
    adv.add_argument("--modes", metavar="M,M,...",
                     help="mechanisms to race (default native,mps,xsched: those this box "
                          "cannot run are skipped and named; named here, they are an error)")
    adv.add_argument("--set", action="append", default=[], metavar="WL.KEY=V1,V2,...",
                     help="replace a mechanism's candidate grid, in the sweep's syntax (e.g. "
                          "low.mps.active_thread_percentage=60,40 or low.threshold=2,4 "
                          "--set low.batch_size=1,2); MPS keys (mps.*) make the MPS "
                          "candidates, XSched keys the XSched ones, both may be given; with "
                          "--gpus each round runs its candidates side by side, one a GPU")
    adv.add_argument("--slo", metavar="[WL.][METRIC:]PNN=MS",
                     help="the objective (default: the scenario's [slo]), e.g. high.P99=10, "
                          "or on a named per-request metric chat.itl_ms:P99=6")
    adv.add_argument("--budget", type=float, default=20.0, metavar="MIN",
                     help="stop before a round that would end past MIN minutes (default 20)")
    adv.add_argument("--seed", type=int, default=0,
                     help="seed of each round's shuffled order (default 0; recorded)")
    nz = sub.add_parser("noise", help="headless: one configuration N times; the variance "
                        "within and between runs per metric, the runs a precision needs, and "
                        "the machine's noise floor recorded for one-run answers")
    _add_run_args(nz, headless_flag=False)
    nz.add_argument("--repeat", type=int, default=6, metavar="N",
                    help="runs of the configuration (default 6, at least 2)")
    nz.add_argument("--mode", default="native", choices=MODES,
                    help="the configuration's mode (default native)")
    nz.add_argument("--precision", type=float, default=5.0, metavar="PCT",
                    help="the half-width, in %% of the mean, that the runs-needed column "
                         "aims at for a difference of two settings (default 5)")
    doc = sub.add_parser("doctor", help="check python, torch, GPUs, telemetry and XSched")
    doc.add_argument("--xsched", metavar="ROOT")
    doc.add_argument("--python", metavar="EXE", help="interpreter to check (default: this one)")
    return ap


def _add_gate(p: argparse.ArgumentParser) -> None:
    from xwatch.core.analysis.verdict import GATES

    p.add_argument("--fail-if", choices=GATES, metavar="|".join(GATES),
                   help="exit 3 when the answer says so beyond noise: slower (the SLO "
                        "workload's SLO percentile, else HIGH's P99, is worse) or "
                        "lower-throughput (a LOW's samples/s is lower); also when a step "
                        "could not be judged (one run, no noise floor)")


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


def _load(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    args.until_stopped = args.duration == 0 and args.command == "run"
    if args.duration is not None and args.duration <= 0 and not args.until_stopped:
        hint = " (0, until stopped, is for `xwatch run`)" if args.duration == 0 else ""
        raise UsageError(f"--duration must be > 0 (got {args.duration:g}){hint}")
    scen = load_scenario(args.scenario).with_server(
        getattr(args, "server", None), getattr(args, "served_model", None))
    gpus = parse_gpus(args.gpus) if getattr(args, "gpus", None) is not None else None
    duration = None if args.until_stopped else args.duration
    scen = scen.with_overrides(duration_s=duration, device=args.device, gpus=gpus)
    if getattr(args, "join_xserver", None):
        scen = dataclasses.replace(scen, xsched=dataclasses.replace(
            scen.xsched, join=args.join_xserver))
    if getattr(args, "join_mps", False):
        scen = dataclasses.replace(scen, mps=dataclasses.replace(scen.mps, join=True))
    return scen


def _metrics(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Bind the metrics endpoint before anything starts (a bad port loses nothing)."""
    if getattr(args, "metrics_port", None) is None:
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
        from xwatch.core.plans.doctor import run_doctor
        return run_doctor(args.xsched, args.python)
    if cmd == "replay":
        from xwatch.core.export.snapshot import load_snapshot
        snap = load_snapshot(args.snapshot)
        from xwatch.ui.app import make_app
        make_app(replay=snap, replay_source=args.snapshot).run()
        return 0
    scen = _load(args)
    if cmd == "advise":
        return _advise(args, scen)
    modes = _modes(args)
    if getattr(args, "repeat", 1) < 1:
        raise UsageError(f"--repeat must be >= 1 (got {args.repeat})")
    xs = _xsched_backend(args, scen)
    if XSCHED in modes and xs is None:
        raise UsageError(f"{cmd} with XSched needs an XSched install: --xsched ROOT or "
                         "XSCHED_HOME", title="XSched not configured")
    if xs is not None and XSCHED in modes:
        xs.install.check(_platforms(scen))
        _check_box(xs, scen)
    mps = _mps_backend(args, scen, explicit=MPS in modes)
    _check_telemetry(getattr(args, "telemetry", "auto"))
    _check_export(getattr(args, "export", None))
    _check_devices(scen)
    args.metrics = _metrics(args)
    try:
        return _run(cmd, args, scen, xs, mps, modes)
    finally:
        if args.metrics is not None:
            args.metrics.stop()


def _advise(args: argparse.Namespace, scen: Any) -> int:
    """``xwatch advise``: the mechanisms this box can run (asked for by name, one that
    cannot is an error), checked before anything starts."""
    from xwatch.core.plans.advise import objective, plan_candidates, run_advise, usable_modes

    explicit = args.modes is not None
    wanted = [m.strip() for m in (args.modes or "native,mps,xsched").split(",") if m.strip()]
    bad = [m for m in wanted if m not in MODES]
    if bad or not wanted or len(set(wanted)) != len(wanted):
        raise UsageError(f"--modes {args.modes!r}: allowed: {', '.join(MODES)}, each once")
    if args.budget <= 0:
        raise UsageError(f"--budget must be > 0 minutes (got {args.budget:g})")
    obj = objective(scen, args.slo)  # a missing or malformed objective: before anything
    xs = _xsched_backend(args, scen) if XSCHED in wanted else None
    mps_backend, mps_why = _mps_backend(args, scen, explicit=explicit and MPS in wanted) \
        if MPS in wanted else (None, None)
    modes, skipped = usable_modes(wanted, explicit, xs, mps_backend, mps_why)
    if xs is not None and XSCHED in modes:
        xs.install.check(_platforms(scen))
        _check_box(xs, scen)
    plan_candidates(scen, obj, modes, args.set, xs, mps_backend, skipped)  # --set errors now
    _check_telemetry(args.telemetry)
    _check_export(args.export)
    _check_devices(scen)
    args.metrics = _metrics(args)
    try:
        return asyncio.run(run_advise(scen, args, modes, skipped, xsched=xs, mps=mps_backend,
                                      mps_unavailable=mps_why))
    finally:
        if args.metrics is not None:
            args.metrics.stop()


def _modes(args: argparse.Namespace) -> list[str]:
    """The modes this command will run (checked before anything starts)."""
    cmd = args.command
    if cmd == "compare":
        modes = [m.strip() for m in args.modes.split(",") if m.strip()]
        bad = [m for m in modes if m not in MODES]
        if bad or not modes:
            raise UsageError(f"--modes {args.modes!r}: unknown mode {bad[0] if bad else ''!r}; "
                             f"allowed: {', '.join(MODES)} (comma-separated, e.g. "
                             "native,mps,xsched)")
        if len(set(modes)) != len(modes):
            raise UsageError(f"--modes {args.modes!r} names a mode twice")
        if len(modes) < 2:
            raise UsageError("compare needs at least two modes (e.g. --modes native,mps)")
        return modes
    if cmd == "calibrate":
        return ["native", args.mode]
    if cmd == "sweep":
        sets = " ".join(getattr(args, "set", []) or [])
        return ["native", MPS if ".mps." in sets else XSCHED]
    if cmd == "noise":
        if args.repeat < 2:
            raise UsageError(f"noise needs --repeat 2 or more (got {args.repeat}): the "
                             "floor is the variance between runs")
        return [args.mode]
    return [getattr(args, "mode", "native")]


def _check_export(directory: str | None) -> None:
    """The export folder can be made and written: checked before anything starts, so a
    typo never costs a run (a full disk later is handled where it happens)."""
    if not directory:
        return
    import os
    import tempfile
    from pathlib import Path

    d = Path(directory)
    if d.exists() and not d.is_dir():
        raise UsageError(f"--export {directory}: that is a file, not a folder",
                         title="Export folder unusable")
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".xwatch-probe-", dir=d)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"--export {directory}: cannot write there ({e.strerror or e}); "
                         "nothing was started", title="Export folder unusable")


def _check_devices(scen: Any) -> None:
    """GPUs asked for (``--gpus``, ``cuda:N``) must exist; refused before anything
    starts. Where the count cannot be read, the workloads find out themselves."""
    from xwatch.core.telemetry.devices import gpu_count

    wanted = sorted({int(w.device.split(":")[1]) for w in scen.workloads
                     if w.model is not None and w.gpu is None and w.device.startswith("cuda:")})
    gpus = sorted(set(scen.gpus))
    if not wanted and not gpus:
        return
    n, how = gpu_count()
    if n is None:
        return
    asked = ", ".join([*(f"--gpus {','.join(map(str, gpus))}" for _ in [0] if gpus),
                       *(f"device cuda:{i}" for i in wanted)])
    if n == 0:
        raise UsageError(f"{asked}: this machine has no GPU ({how}); run on the CPU with "
                         "--device cpu, or where the GPUs are", title="No such GPU")
    bad = [i for i in [*gpus, *wanted] if i >= n]
    if bad:
        raise UsageError(f"{asked}: GPU {bad[0]} does not exist; this machine has {n} "
                         f"(0-{n - 1}; {how})", title="No such GPU")


def _check_telemetry(choice: str) -> None:
    """An explicit backend that cannot start is an error before anything starts."""
    if choice in ("auto", "off", "host"):
        return
    from xwatch.core.telemetry import select_backend

    backend, _, _ = select_backend(choice)  # raises TelemetryError, naming the cause
    if backend is not None:
        backend.close()


def _check_box(xs: Any, scen: Any) -> None:
    """Another session's xserver on this machine: refused now, before anything starts
    (or, joining it, its answer and policy checked)."""
    from xwatch.core.xsched.compat import check_join

    other = xs.other_xserver()
    if other is not None:
        change = check_join(xs.meta, scen, other)
        print(f"xwatch: joining {other.describe()}", file=sys.stderr)
        if change:
            print(f"xwatch: WARNING: {change}", file=sys.stderr)


def _platforms(scen: Any) -> set[str]:
    from xwatch.core.xsched.install import workload_platform
    return {workload_platform(w, scen) for w in scen.workloads}


def _mps_backend(args: argparse.Namespace, scen, explicit: bool):  # type: ignore[no-untyped-def]
    """(backend, why not): asked for explicitly, what stops MPS is an error (exit 2)."""
    from xwatch.core.mps.controller import backend_from_args
    return backend_from_args(scen, preflight=not getattr(args, "no_preflight", False),
                             explicit=explicit)


def _run(cmd: str, args: argparse.Namespace, scen, xs, mps, modes) -> int:  # type: ignore[no-untyped-def]
    mps_backend, mps_why = mps
    backends = {"xsched": xs, "mps": mps_backend, "mps_unavailable": mps_why}
    if cmd == "run" and args.headless:
        from xwatch.core.plans.headless import run_headless
        return asyncio.run(run_headless(scen, args, modes=modes, **backends))
    if cmd == "compare":
        from xwatch.core.plans.headless import run_headless
        return asyncio.run(run_headless(scen, args, modes=modes, **backends))
    if cmd == "calibrate":
        from xwatch.core.plans.calibrate import run_calibrate
        return asyncio.run(run_calibrate(scen, args, args.mode, **backends))
    if cmd == "sweep":
        from xwatch.core.plans.sweep import run_sweep
        return asyncio.run(run_sweep(scen, args, **backends))
    if cmd == "noise":
        from xwatch.core.plans.noise import run_noise
        return asyncio.run(run_noise(scen, args, args.mode, **backends))
    from xwatch.ui.app import make_app
    app = make_app(scenario=scen, mode=args.mode, export_dir=args.export,
                   telemetry=args.telemetry, telemetry_interval=args.telemetry_interval,
                   telemetry_proc_interval=args.telemetry_proc_interval,
                   spool_max_mb=args.spool_max_mb,
                   xsched=xs, mps=mps_backend, mps_unavailable=mps_why, metrics=args.metrics,
                   keep=0 if args.no_keep else max(1, args.keep),
                   keep_max_bytes=int(args.keep_max_gb * 2**30),
                   phase_s=math.inf if args.until_stopped else None)
    try:
        app.run()
    finally:
        if app.runner is not None:  # a crash of the app must not leave workloads behind
            app.runner.kill_now()
    _print_end(app)
    return int(app.return_code or 0)


def _print_end(app: Any) -> None:
    """What headless prints at the end, after the dashboard: the tables and the path."""
    from xwatch.core.analysis.verdict import answer_lines
    from xwatch.core.plans.console import final_table, interval_lines

    snap = app.final_snap
    if snap is None:
        return
    for p in snap.phases:
        if p.measuring:
            print(final_table(p, snap.telemetry))
            for line in interval_lines(p):
                print(line)
    for line in answer_lines(snap):
        print(line)
    if app.kept_path is not None:
        print(f"session kept: {app.kept_path} (`xwatch replay last`, `xwatch report last`, "
              "`xwatch sessions`)")
    elif app.keep_error:
        print(f"xwatch: session not kept: {app.keep_error}", file=sys.stderr)


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


def _xsched_backend(args: argparse.Namespace, scen):  # type: ignore[no-untyped-def]
    from xwatch.core.xsched.controller import backend_from_args
    return backend_from_args(getattr(args, "xsched", None), scen,
                             preflight=not getattr(args, "no_preflight", False))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

