"""Cost of one telemetry poll (device counters alone, and with the per-process
queries), and one real sample, optionally next to a busy GPU.

    python benchmarks/measure/telemetry_poll.py [--backend auto|nvml|amdsmi|host] [--polls 400]
                                        [--gpu-load]

--gpu-load starts a torch matmul loop on cuda:0 in a child process first, so the
sample shows a working GPU and our per-process numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import msgspec

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from xwatch.core.telemetry import select_backend
from xwatch.core.telemetry.base import Targets

LOAD = ("import torch, time\nx = torch.randn(8192, 8192, device='cuda')\n"
        "end = time.time() + 120\nwhile time.time() < end:\n    y = x @ x\n"
        "    torch.cuda.synchronize()\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--polls", type=int, default=400)
    ap.add_argument("--gpu-load", action="store_true")
    a = ap.parse_args()
    load = None
    pids: tuple[int, ...] = ()
    if a.gpu_load:
        load = subprocess.Popen([sys.executable, "-c", LOAD])
        pids = (load.pid,)
        time.sleep(8)
    backend, why, rejected = select_backend(a.backend)
    assert backend is not None
    print(f"backend: {backend.name} ({why}); rejected: {rejected}")
    print("describe:", msgspec.json.encode(backend.describe()).decode())
    sample = None
    for procs, label in ((False, "device counters only (every interval)"),
                         (True, "with per-process queries (every proc interval)")):
        costs = []
        for _ in range(a.polls):
            t0 = time.perf_counter()
            sample = backend.sample(Targets(pids=pids), procs=procs)
            costs.append((time.perf_counter() - t0) * 1e3)
            time.sleep(0.005)
        costs.sort()
        print(f"{label}: {len(costs)} polls, median {statistics.median(costs):.3f} ms, "
              f"p99 {costs[int(0.99 * len(costs)) - 1]:.3f} ms, max {costs[-1]:.3f} ms")
    one = msgspec.json.encode([s.to_model() for s in sample or []])
    print("one sample:", msgspec.json.format(one, indent=1).decode())
    backend.close()
    if load is not None:
        load.kill()


if __name__ == "__main__":
    main()
