"""Where a phase's start goes: from the phase's start to its first measured second,
stage by stage, per mode (issue 41 goal 1: <= 5 s natively, <= 8 s under MPS, for
``intensive`` on the H100; issue 51 goal 5: the same on several GPUs, every copy forked
where one GPU's copy would be).

    python benchmarks/measure/phase_start.py intensive --modes native,mps --repeat 3 --duration 5
    python benchmarks/measure/phase_start.py intensive --modes native,mps --repeat 3 --gpus 0,1
    python benchmarks/measure/phase_start.py demo --modes native --repeat 3 --duration 2 --device cpu
    python benchmarks/measure/phase_start.py --from DIR [DIR ...]     # snapshots already taken
    ... -- --no-preflight                                      # anything after -- goes to xwatch

Runs ``xwatch compare SCENARIO --modes ... --repeat N --duration S --export DIR`` (with a
single mode, which compare refuses: ``xwatch run --headless --mode M`` N times; every
phase a fresh set of processes, as always), then reads each workload's ``stages``
(seconds after its phase's start, recorded by the supervisor, the start gate and the
worker's hello/warm/ready/bye events; ``docs/snapshot.md``) and prints, per mode, the
median and range over phases of each step:

- the summary: the workload the start gate waited for (the last one warm) from spawn to
  its first measured request, then the gate, the phase's start to its first measured
  second (``t_measure``), and the teardown;
- every workload's own steps (interpreter, ``import torch``, the model's library, the
  device context, the model, the first warm-up iteration, the rest of the warm-up, the
  gate's parts: the warm event read by xwatch, the others, the signal), and the phase's
  (the mode's daemon and preflight, the teardown, the gap to the next phase).

Per mode it also says how every copy started (``launch.start``: forked from the fork
server, or exec'd and why) and, in the phases after each run's first (the first is
exec'd while the fork server imports; an XSched first phase waits for them), whether
every copy was forked; with ``--gpus``
(a copy of every workload per GPU, ``NAME@GPU``), whether each copy ran on the GPU it
was pinned to: the PCI address its worker reported against the telemetry's address of
that GPU index (both in PCI bus order); and the goal line: phase start -> first
measured second against 5 s natively and 8 s under MPS, in the phases where every copy
was forked; and 8 s under XSched (issue 58 goal 4) in every XSched phase but its run's
first (a cold start, where nothing was imported yet: ``xwatch run --mode xsched``), its
first XSched phase included however its copies started: that one pays the xserver's
start and the preflight (its own line: the preflight's seconds, and how its probes
started: forked from XSched's fork server, or exec'd and why).

The account itself (steps, copies, goal lines) is ``xwatch/testing/starts.py``, which the
tests check. ``--markdown`` prints the tables as Markdown (for docs/benchmarks.md), ``--json FILE``
writes every phase's intervals and copies.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from xwatch.testing.starts import breakdown, render  # noqa: E402


def run_xwatch(scenario: str, modes: str, repeat: int, duration: float, export: Path,
               device: str | None, extra: list[str], gpus: str | None = None
               ) -> tuple[int, list[Path]]:
    """``xwatch compare`` into ``export``; with one mode (compare needs two), ``xwatch run
    --headless --mode M`` ``repeat`` times into ``export/run-K`` (each its own run: its
    one phase is a cold start: exec'd while the fork server imports, or, under XSched,
    waiting for them). The worst exit status and the
    folders written."""
    common = ["--duration", str(duration), *(["--device", device] if device else []),
              *(["--gpus", gpus] if gpus else []), *extra]
    if "," in modes:
        cmds = [(["compare", scenario, "--modes", modes, "--repeat", str(repeat)], export)]
    else:
        cmds = [(["run", scenario, "--headless", "--mode", modes], export / f"run-{k + 1}")
                for k in range(repeat)]
    worst, dirs = 0, []
    for args, d in cmds:
        cmd = [sys.executable, "-m", "xwatch", *args, *common, "--export", str(d)]
        print("running:", " ".join(cmd), file=sys.stderr, flush=True)
        rc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL).returncode
        worst = worst or rc
        if (d / "snapshot.json").exists():
            dirs.append(d)
        else:
            print(f"xwatch exited {rc} without a snapshot in {d}", file=sys.stderr)
    return worst, dirs


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", nargs="?", default="intensive")
    ap.add_argument("--modes", default="native,mps")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5.0, help="measured seconds a phase")
    ap.add_argument("--device", help="override every workload's device (cpu here)")
    ap.add_argument("--gpus", help="a copy of every workload on each of these GPUs (0,1)")
    ap.add_argument("--export", type=Path, help="where xwatch writes the snapshot "
                    "(default: a temporary folder, named at the end)")
    ap.add_argument("--from", dest="snapshots", nargs="+", type=Path,
                    help="read these snapshots (folders, snapshot.json or .json.gz) instead of running")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, help="write every phase's intervals here")
    a = ap.parse_args(argv)
    if a.snapshots:
        paths = a.snapshots
    else:
        export = a.export or Path(tempfile.mkdtemp(prefix="xwatch-phase-start-"))
        rc, paths = run_xwatch(a.scenario, a.modes, a.repeat, a.duration, export, a.device,
                               extra, a.gpus)
        if not paths:
            return 1
        if rc:
            print(f"note: xwatch exited {rc} (a failed phase?); reading its snapshots",
                  file=sys.stderr)
        print("snapshots: " + ", ".join(str(d / "snapshot.json") for d in paths),
              file=sys.stderr)
    phases: list[dict[str, Any]] = []
    from xwatch.core.export.snapshot import load_snapshot_dict

    for path in paths:  # a folder, its snapshot.json or a packed snapshot.json.gz
        phases += breakdown(load_snapshot_dict(path))
    if not any(p["workloads"] for p in phases):
        print("no workload recorded stages (a snapshot from before issue 41?)", file=sys.stderr)
        return 1
    print(render(phases, a.markdown), end="")
    if a.json:
        a.json.write_text(json.dumps(phases, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
