"""An independent yardstick for xwatch's numbers: the smallest honest open-loop
latency loop, written without any xwatch code.

ResNet-18 (random weights), batch 1, N req/s on a created CUDA stream: each
request's clock starts at its *scheduled* send time and stops after a device
synchronize; warm-up is excluded; percentiles are exact (sorted samples,
nearest rank). ``--with-low`` also runs ResNet-50 batch 1024 back to back in a
second process on the same GPU (the `intensive` pair).

    python3 benchmarks/measure/yardstick.py --seconds 30 [--with-low] [--device cuda:0]

Compare its P50/P99 with `xwatch run benchmarks/gpu/scenarios/high-alone.toml` (or
`intensive`) run in the same session on the same machine.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time


def nearest_rank(sorted_ms: list[float], q: float) -> float:
    """Exact: the smallest k with k >= q/100 * n, in integers (q as written, e.g. 99.9)."""
    from fractions import Fraction

    f = Fraction(repr(q))
    k = max(1, -(-(f.numerator * len(sorted_ms)) // (f.denominator * 100)))
    return sorted_ms[min(k, len(sorted_ms)) - 1]


def low_loop(device: str, ready: mp.Event, stop: mp.Event) -> None:  # type: ignore[type-arg]
    import torch
    import torchvision

    dev = torch.device(device)
    model = torchvision.models.resnet50(weights=None).to(dev).eval()
    x = torch.randn(1024, 3, 224, 224, device=dev)
    s = torch.cuda.Stream(device=dev)
    with torch.inference_mode(), torch.cuda.stream(s):
        for _ in range(3):
            model(x)
        torch.cuda.synchronize(dev)
        ready.set()
        while not stop.is_set():
            model(x)
            torch.cuda.synchronize(dev)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--with-low", action="store_true")
    ap.add_argument("--out", help="write every latency (ms, in request order) as JSON here")
    a = ap.parse_args()
    import torch
    import torchvision

    stop = ready = None
    proc = None
    if a.with_low:
        ctx = mp.get_context("spawn")
        stop, ready = ctx.Event(), ctx.Event()
        proc = ctx.Process(target=low_loop, args=(a.device, ready, stop), daemon=True)
        proc.start()
    dev = torch.device(a.device)
    model = torchvision.models.resnet18(weights=None).to(dev).eval()
    x = torch.randn(1, 3, 224, 224, device=dev)
    s = torch.cuda.Stream(device=dev)
    lat: list[float] = []
    with torch.inference_mode(), torch.cuda.stream(s):
        for _ in range(a.warmup):
            model(x)
        torch.cuda.synchronize(dev)
        if ready is not None:
            ready.wait(600)
        t0 = time.monotonic() + 0.001
        n = int(a.seconds * a.rate)
        for i in range(n):
            due = t0 + i / a.rate
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            model(x)
            torch.cuda.synchronize(dev)
            lat.append((time.monotonic() - due) * 1e3)
    if stop is not None and proc is not None:
        stop.set()
        proc.join(30)
    if a.out:
        import json

        with open(a.out, "w") as f:
            json.dump({"rate": a.rate, "seconds": a.seconds, "with_low": a.with_low,
                       "latency_ms": lat}, f)
    lat.sort()
    mean = sum(lat) / len(lat)
    print(f"yardstick resnet18 b1 @{a.rate:g}/s {a.seconds:g}s {'with' if a.with_low else 'no'} "
          f"low: n={len(lat)} mean={mean:.2f} p50={nearest_rank(lat, 50):.2f} "
          f"p95={nearest_rank(lat, 95):.2f} p99={nearest_rank(lat, 99):.2f} max={lat[-1]:.2f} ms",
          flush=True)


if __name__ == "__main__":
    main()
