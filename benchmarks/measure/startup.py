"""Fixed start-up of a command workload: from xwatch's process start to the first
event it counts, and the parts (imports, spawn, first event), in a fresh interpreter.

    python benchmarks/measure/startup.py [--runs 5]

The workload is tests/data/workloads/pipe_producer.py (plain Python, emits its
first event at once), so what is measured is xwatch's own overhead plus one Python
start of the workload.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import time
t_start = time.monotonic()
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from xwatch.core.engine.live.session import Session
from xwatch.core.plans.runner import Runner
from xwatch.scenario import parse_scenario
t_imported = time.monotonic()

async def main():
    scen = parse_scenario({"workload": [{"name": "q", "priority": "high",
        "command": [sys.executable, sys.argv[1] + "/tests/data/workloads/pipe_producer.py", "1000"]}]})
    s = Session(scen)
    r = Runner(scen, s)
    ph = await r.start_phase("native")
    t_spawned = time.monotonic()
    run = ph.runs["q"]
    while run.rec.count == 0:
        await asyncio.sleep(0.001)
    t_first = time.monotonic()
    await r.stop_phase()
    s.close()
    print(t_imported - t_start, t_spawned - t_start, t_first - t_start)

asyncio.run(main())
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    rows = []
    for _ in range(a.runs):
        out = subprocess.run([sys.executable, "-c", PROBE, str(ROOT)], capture_output=True,
                             text=True, check=True).stdout.split()
        rows.append([float(x) for x in out])
    med = [statistics.median(c) for c in zip(*rows)]
    bare = []
    for _ in range(a.runs):
        r = subprocess.run([sys.executable, "-c", "import time; t=time.monotonic(); "
                            "import subprocess, sys; subprocess.run([sys.executable, '-c', "
                            "'pass']); print(time.monotonic()-t)"], capture_output=True,
                           text=True, check=True)
        bare.append(float(r.stdout))
    print(f"xwatch imports          {med[0] * 1e3:7.1f} ms")
    print(f"workload spawned        {med[1] * 1e3:7.1f} ms")
    print(f"first event counted     {med[2] * 1e3:7.1f} ms  (median of {a.runs})")
    print(f"bare: start one python  {statistics.median(bare) * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
