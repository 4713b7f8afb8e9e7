"""CPU per draw of each live chart, as the dashboard pays it (and against another tree).

    python benchmarks/measure/chart_cost.py [--snapshot PATH] [--size 150x46] [--draws 200]
                                    [--rounds 3] [--against DIR]

Opens the dashboard in replay mode on a recorded snapshot (default: the H100 dashboard
run of 2026-11-24, ``data/results/h100-2026-11-24-xsched12/dash``) at the size
``dashboard_cpu`` uses, then, for each chart widget, marks its data changed and has
Textual render all its lines ``--draws`` times: ``render_figure``, the chart's strips,
and Textual's own per-line work (background, line filters), the same call
``dashboard_breakdown`` times as ``render_lines CLASS``. CPU is ``time.thread_time``.

Each round runs in a fresh process; with ``--against DIR`` the rounds alternate
between this tree and DIR (e.g. a checkout of main), so a drift of the machine is
shared, and both are printed: the range over the rounds, then the median.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SNAPSHOT = ROOT / "data" / "results" / "h100-2026-11-24-xsched12" / "dash" / "snapshot.json.gz"
CHARTS = ("LatencyChart", "ThroughputChart", "CdfChart", "UtilChart")


async def _measure(snapshot: str, size: tuple[int, int], draws: int) -> dict[str, object]:
    """ms of CPU per draw of each chart in the tree on ``sys.path[0]``."""
    from textual.geometry import Region

    from xwatch.core.export.snapshot import load_snapshot
    from xwatch.ui.app import make_app
    from xwatch.ui.widgets import charts

    app = make_app(replay=load_snapshot(snapshot), replay_source="chart_cost")
    out: dict[str, object] = {"tree": str(Path(charts.__file__).resolve().parents[3])}
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.5)
        for name in CHARTS:
            chart = app.query_one(getattr(charts, name))
            w, h = chart.size
            region = Region(0, 0, w, h)
            chart.render_lines(region)  # warm: style and colour caches filled
            spent = 0.0
            for _ in range(draws):
                chart._version += 1  # what ``show`` does to data that changed
                chart.refresh()
                t0 = time.thread_time()
                chart.render_lines(region)
                spent += time.thread_time() - t0
            out[name] = 1000 * spent / draws
            out[name + " size"] = f"{w}x{h}"
    return out


def _child(tree: str, args: argparse.Namespace) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--child", "--snapshot", args.snapshot,
           "--size", args.size, "--draws", str(args.draws)]
    env = dict(os.environ, PYTHONPATH=tree)
    r = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=True)
    res: dict[str, object] = json.loads(r.stdout.strip().splitlines()[-1])
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snapshot", default=str(DEFAULT_SNAPSHOT))
    ap.add_argument("--size", default="150x46", help="terminal COLSxROWS")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--against", metavar="DIR", help="another tree, measured in turn")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    cols, rows = (int(v) for v in a.size.split("x"))
    if a.child:
        sys.path.insert(0, os.getcwd())  # the tree this process was started in
        print(json.dumps(asyncio.run(_measure(a.snapshot, (cols, rows), a.draws))))
        return
    trees = [str(ROOT)] + ([str(Path(a.against).resolve())] if a.against else [])
    got: dict[str, dict[str, list[float]]] = {t: {c: [] for c in CHARTS} for t in trees}
    sizes: dict[str, object] = {}
    for rnd in range(a.rounds):
        for tree in trees if rnd % 2 == 0 else trees[::-1]:
            res = _child(tree, a)
            sizes = {c: res[c + " size"] for c in CHARTS}
            for c in CHARTS:
                got[tree][c].append(float(res[c]))  # type: ignore[arg-type]
            print(f"round {rnd + 1} {tree}: " + "  ".join(
                f"{c} {float(res[c]):.3f}" for c in CHARTS), flush=True)  # type: ignore[arg-type]
    print(f"\nms of CPU per draw ({a.draws} draws a round, {a.rounds} rounds, "
          f"terminal {a.size}, {Path(a.snapshot).parent.name})")
    print(f"{'chart':16s} {'size':>7s} " + " ".join(f"{Path(t).name:>22s}" for t in trees))
    for c in CHARTS:
        cells = [f"{min(v):.2f}-{max(v):.2f} ({statistics.median(v):.2f})"
                 for v in (got[t][c] for t in trees)]
        print(f"{c:16s} {sizes[c]!s:>7s} " + " ".join(f"{s:>22s}" for s in cells))
    if a.against:
        new, old = (sum(statistics.median(got[t][c]) for c in CHARTS) for t in trees)
        print(f"{'all four':16s} {'':>7s} {new:>22.2f} {old:>22.2f}   old/new {old / new:.2f}x")


if __name__ == "__main__":
    main()
