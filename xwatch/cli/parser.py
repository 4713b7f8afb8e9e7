"""The command line's grammar: ``build_parser``, every command and its arguments
(the shared run arguments, ``--repeat``, ``--fail-if``), and ``options_of``, the
plan's ``Options`` a command's arguments make (its defaults are the parser's).
``tools.docs`` generates the manual's command reference from it."""

from __future__ import annotations

import argparse
from dataclasses import fields

from xwatch.core.modes import registry
from xwatch.core.modes.base import MODES
from xwatch.core.plans.options import DEFAULT_NOISE_RUNS, MetricsSink, Options
from xwatch.scenario import (
    DEFAULT_SCENARIO,
)

DEFAULTS = Options()
#: arguments whose Options field has another name
RENAMED = {"set": "sets", "budget": "budget_min"}


def until_stopped(args: argparse.Namespace) -> bool:
    """``run --duration 0``: every phase runs until stopped."""
    return bool(args.command == "run" and args.duration == 0)


def options_of(args: argparse.Namespace, metrics: MetricsSink | None = None) -> Options:
    """The command's ``Options``: every parsed argument that names a field (``--set``
    is ``sets``, ``--budget`` ``budget_min``; the dashboard's ``--keep``/``--no-keep``
    and ``--keep-max-gb`` make ``keep`` and ``keep_max_bytes``; ``run --duration 0``
    makes ``until_stopped``); a field the command has no argument for keeps its
    default."""
    names = {f.name for f in fields(Options)}
    kw = {RENAMED.get(k, k): v for k, v in vars(args).items()
          if RENAMED.get(k, k) in names and k not in ("keep", "mode", "metrics")}
    if "sets" in kw:
        kw["sets"] = tuple(kw["sets"] or ())
    kw["until_stopped"] = until_stopped(args)
    if args.command == "run":  # the dashboard's (``calibrate --mode`` is the plan's)
        kw["mode"] = args.mode
        kw["keep"] = 0 if args.no_keep else max(1, args.keep)
        kw["keep_max_bytes"] = int(args.keep_max_gb * 2**30)
    return Options(**kw, metrics=metrics)


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
    p.add_argument("--spool-max-mb", type=float, default=DEFAULTS.spool_max_mb, metavar="MB",
                   help="cap of the compressed raw-event spool; past it raw events are "
                        "dropped (counted) while statistics stay exact (default 1024)")
    p.add_argument("--telemetry", default=DEFAULTS.telemetry,
                   choices=("auto", "amdsmi", "nvml", "host", "off"),
                   help="GPU telemetry backend (default: auto)")
    p.add_argument("--telemetry-interval", type=float, default=DEFAULTS.telemetry_interval,
                   metavar="S",
                   help="seconds between telemetry samples (default 0.5)")
    p.add_argument("--telemetry-proc-interval", type=float,
                   default=DEFAULTS.telemetry_proc_interval, metavar="S",
                   help="seconds between per-process GPU queries, the costly part of a "
                        "poll (default 5)")
    p.add_argument("--server", metavar="CMD", help="the server workloads' command (one string, "
                   "split as a shell would, never run by one), e.g. 'vllm serve MODEL --port "
                   "{port}' ({port}: a free port of its own; {device}: the device it "
                   "sees); needed by the built-in scenario serve-own (docs/serving.md)")
    p.add_argument("--served-model", metavar="NAME", help="the server workloads' request "
                   "`model` field (their served_model)")
    _add_mode_args(p, "install")
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
    _add_mode_args(p, "join")
    p.add_argument("--no-preflight", action="store_true",
                   help="XSched and MPS phases: skip the few-second smoke test under the "
                        "mode that runs before the real workloads start")


def _add_mode_args(p: argparse.ArgumentParser, place: str) -> None:
    """Every registered mode's own arguments at ``place`` (``ARGUMENT_PLACES``), in the
    registry's order."""
    for mode in registry.modes():
        mode.add_arguments(p, place)


def _add_repeat(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=DEFAULTS.repeat, metavar="N",
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
    rp.add_argument("snapshot", help="DIR or DIR/snapshot.json (or .json.gz), or a kept "
                    "session: 'last' or its number in `xwatch sessions`")
    rep = sub.add_parser("report", help="write a Markdown or HTML report of a snapshot")
    rep.add_argument("snapshot", help="DIR or DIR/snapshot.json (or .json.gz), or 'last' or a "
                     "number from `xwatch sessions`")
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
    cmp_.add_argument("--layout", choices=("replicate", "split"), default="replicate",
                      help="with --gpus: replicate (default) runs each mode in a phase of "
                           "its own on every GPU; split runs the modes at once in every "
                           "phase, each on GPUs of its own, rotated every repeat, and pairs "
                           "them inside each run")
    cal = sub.add_parser("calibrate", help="headless: HIGH alone and everything together, "
                         "native and under XSched (or MPS); splits HIGH's latency change into "
                         "the mode's overhead, contention and what the mode recovers")
    _add_run_args(cal, headless_flag=False)
    _add_repeat(cal)
    cal.add_argument("--mode", default="xsched", choices=("xsched", "mps"),
                     help="the mode calibrated against native (default xsched)")
    sw = sub.add_parser("sweep", help="headless: native, then each XSched (or MPS) setting "
                        "(with --gpus: side by side, one a GPU, rotated every repeat)")
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
    adv.add_argument("--budget", type=float, default=DEFAULTS.budget_min, metavar="MIN",
                     help="stop before a round that would end past MIN minutes (default 20)")
    adv.add_argument("--seed", type=int, default=DEFAULTS.seed,
                     help="seed of each round's shuffled order (default 0; recorded)")
    ca = sub.add_parser("capacity", help="headless: the highest load of the SLO workload "
                        "each way of sharing carries under the SLO with confidence, beside "
                        "the lower-priority work, and the shares of a dedicated GPU's work "
                        "each keeps")
    _add_run_args(ca, headless_flag=False)
    ca.add_argument("--modes", metavar="M,M,...",
                    help="mechanisms to search (default native,mps,xsched: those this box "
                         "cannot run are skipped and named; named here, they are an error)")
    ca.add_argument("--set", action="append", default=[], metavar="WL.KEY=V1,V2,...",
                    help="replace a mechanism's candidate grid, as advise's --set")
    ca.add_argument("--slo", metavar="[WL.][METRIC:]PNN=MS",
                    help="the objective (default: the scenario's [slo]), e.g. high.P99=10 "
                         "or chat.itl_ms:P99=6")
    ca.add_argument("--rates", metavar="LO:HI",
                    help="the SLO workload's offered rates searched, requests/s (default: a "
                         "quarter to 16 times the scenario's rate)")
    ca.add_argument("--budget", type=float, default=DEFAULTS.budget_min, metavar="MIN",
                    help="stop before a round that would end past MIN minutes (default 20); "
                         "each open bracket then says how wide it is")
    ca.add_argument("--seed", type=int, default=DEFAULTS.seed,
                    help="seed of each round's shuffled order (default 0)")
    nz = sub.add_parser("noise", help="headless: one configuration N times; the variance "
                        "within and between runs per metric, the runs a precision needs, and "
                        "the machine's noise floor recorded for one-run answers")
    _add_run_args(nz, headless_flag=False)
    nz.add_argument("--repeat", type=int, default=DEFAULT_NOISE_RUNS, metavar="N",
                    help="runs of the configuration (default 6, at least 2)")
    nz.add_argument("--mode", default="native", choices=MODES,
                    help="the configuration's mode (default native)")
    nz.add_argument("--precision", type=float, default=DEFAULTS.precision, metavar="PCT",
                    help="the half-width, in %% of the mean, that the runs-needed column "
                         "aims at for a difference of two settings (default 5)")
    for p in (cmp_, adv, ca, nz):
        p.add_argument("--ray", metavar="ADDRESS|auto",
                       help="run over the boxes of a Ray cluster (its head's HOST:6379, "
                            "ray://HOST:10001, or auto: the cluster this machine joined): "
                            "each node with GPUs or the xwatch_box resource is a box "
                            "(docs/fleet.md)")
    run.add_argument("--ray", metavar="ADDRESS|auto",
                     help="dashboard over the boxes of a Ray cluster (as compare --ray): "
                          "every box runs one phase of --mode, side by side; the boxes "
                          "shown as groups of GPUs (docs/fleet.md)")
    doc = sub.add_parser("doctor", help="check python, torch, GPUs, telemetry and XSched")
    _add_mode_args(doc, "doctor")
    doc.add_argument("--python", metavar="EXE", help="interpreter to check (default: this one)")
    return ap


def _add_gate(p: argparse.ArgumentParser) -> None:
    from xwatch.core.analysis.verdict import GATES

    p.add_argument("--fail-if", choices=GATES, metavar="|".join(GATES),
                   help="exit 3 when the answer says so beyond noise: slower (the SLO "
                        "workload's SLO percentile, else HIGH's P99, is worse) or "
                        "lower-throughput (a LOW's samples/s is lower); also when a step "
                        "that ran got no verdict (its XSched or MPS took no part: none of its "
                        "workloads was scheduled by it). One run per step and no noise floor "
                        "is refused before anything starts (exit 2, 'Gate cannot be judged')")
