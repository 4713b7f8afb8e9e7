"""The fleet's speed (issue 68 goal 6): a real local Ray cluster of CPU boxes in a
loopback-only namespace (``xwatch.testing.fleet.cluster``), the same plan over 1 box and
over K boxes, with paced synthetic workloads (``xwatch/testing/fleet/paced.py``: latencies
drawn, not spent on a core) that do not compete for this machine's cores.

1. Runs a minute: ``xwatch noise`` with N runs a box (N on 1 box, K x N on K boxes);
   the runs a minute of the command (from its start to its end: the agents' start
   included) and of its phases (from the first phase's start to the last one's end). The
   goal: K boxes at least 0.8 x K times one box's runs a minute.
2. The interval at equal wall time: ``xwatch compare native,mps`` (``xwatch.testing.fake_mps``:
   the MPS phases run the same workloads), R repeats on 1 box, K x R on K boxes
   in about the same time; each answer's 95% interval width of HIGH's P50 and LOW's
   samples/s change, in % of the baseline.

    python benchmarks/measure/fleet_speed.py [--boxes 3] [--runs 4] [--repeat 2] [--duration 3]

Needs root (``unshare -n``) and the ray extra. Prints a Markdown table."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from xwatch.testing import fleet
from xwatch.testing.fake_mps import make_tool
from xwatch.testing.fleet.cluster import Holder, netns_refusal


def scenario(d: Path, duration: float) -> Path:
    py, prog = sys.executable, Path(fleet.__file__).parent / "paced.py"
    f = d / "paced.toml"
    f.write_text(f"""
name = "paced"
duration_s = {duration}
[[workload]]
name = "high"
priority = "high"
command = ["{py}", "{prog}", "50", "5"]
[[workload]]
name = "low"
priority = "low"
command = ["{py}", "{prog}", "25", "20", "--batch", "4"]
""")
    return f


def run(h: Holder, argv: list[str], timeout: float = 580) -> tuple[float, dict, str]:
    t0 = time.monotonic()
    r = h.run([sys.executable, "-m", "xwatch", *argv, "--ray", h.address, "--telemetry",
               "off"], timeout=timeout)
    wall = time.monotonic() - t0
    if r.returncode not in (0,):
        raise SystemExit(f"xwatch {' '.join(argv)}: exit {r.returncode}\n{r.stdout[-3000:]}"
                         f"\n{r.stderr[-3000:]}")
    out = argv[argv.index("--export") + 1]
    return wall, json.loads((Path(out) / "snapshot.json").read_text()), r.stdout


def phase_span(doc: dict) -> float:
    ts = [(datetime.fromisoformat(p["started_at"].replace("Z", "+00:00")),
           datetime.fromisoformat(p["ended_at"].replace("Z", "+00:00"))) for p in doc["phases"]]
    return (max(e for _, e in ts) - min(s for s, _ in ts)).total_seconds()


def width(doc: dict, wl: str, metric: str) -> float:
    a = next(x for x in doc["answer"] if x["workload"] == wl and x["metric"] == metric)
    if a["lo"] is None or a["hi"] is None:
        return float("nan")
    return (a["hi"] - a["lo"]) / abs(a["base"]) * 100


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boxes", type=int, default=3)
    ap.add_argument("--runs", type=int, default=4, help="noise runs a box")
    ap.add_argument("--repeat", type=int, default=2, help="compare repeats on one box")
    ap.add_argument("--duration", type=float, default=3.0)
    a = ap.parse_args()
    why = netns_refusal()
    if why:
        raise SystemExit(f"fleet_speed: {why}")
    d = Path(tempfile.mkdtemp(prefix="fleet-speed-"))
    tool = make_tool(d / "bin")
    f = scenario(d, a.duration)
    env = {"XWATCH_MPS_CONTROL": str(tool), "XDG_STATE_HOME": str(d / "state")}
    rows = {}
    for k in (1, a.boxes):
        t0 = time.monotonic()
        h = Holder(k, env=env)
        up = time.monotonic() - t0
        try:
            n = a.runs * k
            wall, doc, _ = run(h, ["noise", str(f), "--repeat", str(n), "--export",
                                   str(d / f"noise-{k}")])
            span = phase_span(doc)
            reps = a.repeat * k
            cwall, cdoc, _ = run(h, ["compare", str(f), "--modes", "native,mps", "--repeat",
                                     str(reps), "--export", str(d / f"compare-{k}")])
            rows[k] = dict(up=up, n=n, wall=wall, span=span, rpm=n / wall * 60,
                           rpm_phases=n / span * 60, reps=reps, cwall=cwall,
                           w_p50=width(cdoc, "high", "P50"),
                           w_sps=width(cdoc, "low", "samples/s"),
                           boxes=len({p["box"]["node_id"] for p in doc["phases"]}))
        finally:
            h.stop()
    one, many = rows[1], rows[a.boxes]
    print(f"# fleet speed: {a.boxes} boxes against 1, {a.duration:g} s phases, "
          f"{os.cpu_count()} cores\n")
    print("| boxes | cluster up (s) | noise runs | wall (s) | runs/min (command) | "
          "runs/min (phases) | compare repeats | wall (s) | HIGH P50 change: 95% width | "
          "LOW samples/s change: 95% width |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k, r in rows.items():
        print(f"| {k} ({r['boxes']} named) | {r['up']:.1f} | {r['n']} | {r['wall']:.1f} | "
              f"{r['rpm']:.1f} | {r['rpm_phases']:.1f} | {r['reps']} | {r['cwall']:.1f} | "
              f"{r['w_p50']:.2f}% | {r['w_sps']:.2f}% |")
    ratio, ratio_p = many["rpm"] / one["rpm"], many["rpm_phases"] / one["rpm_phases"]
    goal = 0.8 * a.boxes
    print(f"\nruns a minute, {a.boxes} boxes / 1 box: {ratio:.2f}x (command), "
          f"{ratio_p:.2f}x (phases); goal >= {goal:.1f}x: "
          f"{'MET' if ratio >= goal else 'NOT MET'} (command), "
          f"{'MET' if ratio_p >= goal else 'NOT MET'} (phases)")
    print(f"interval width at about equal wall time ({one['cwall']:.0f} s vs "
          f"{many['cwall']:.0f} s): HIGH P50 {one['w_p50']:.2f}% -> {many['w_p50']:.2f}%, "
          f"LOW samples/s {one['w_sps']:.2f}% -> {many['w_sps']:.2f}%")


if __name__ == "__main__":
    main()
