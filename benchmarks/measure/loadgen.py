"""The server workload's load generator: does it keep its schedule, and what does a
streamed token cost it? It drives the fake OpenAI server (``xwatch/testing/fake_openai``,
its own process) at rising rates of streamed chat requests, and reads back from its
events the lateness of every send (the real send minus the scheduled one) and from its
``bye`` its own CPU seconds while it measured (``time.process_time``: all its threads,
not the server's), per streamed token. It stops at the rate where the generator used
most of one core, or where the server could not keep up.

    python benchmarks/measure/loadgen.py [--rates 25,50,100,200,400,800] [--tokens 16] [--seconds 4]

Figures in docs/serving.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from xwatch.testing.serving import config, free_port, run_loadgen


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100 * len(xs)))] if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default="25,50,100,200,400,800")
    ap.add_argument("--tokens", type=int, default=16, help="streamed tokens per request")
    ap.add_argument("--token-ms", type=float, default=2.0, help="the server's gap per token")
    ap.add_argument("--seconds", type=float, default=4.0)
    a = ap.parse_args()
    print(f"# {os.cpu_count()} CPUs; {a.tokens} tokens a request, {a.token_ms:g} ms apart; "
          f"{a.seconds:g} s a rate")
    print("| req/s asked | req/s done | tokens/s | errors | late > 1 ms | send lateness "
          "p50 / p99 / max (ms) | generator CPU (core) | CPU per token (us) |")
    print("|---|---|---|---|---|---|---|---|")
    for rate in (float(x) for x in a.rates.split(",")):
        port = free_port()
        n = int(rate * a.seconds)
        t = time.monotonic()
        r = run_loadgen(config(port, "--first-ms", "5", "--token-ms", str(a.token_ms),
                               rate=rate, requests=n, warmup=2, new_tokens=a.tokens),
                        timeout=a.seconds * 10 + 30)
        wall = time.monotonic() - t
        bye = (r.of("bye") or [{}])[0]
        reqs = r.requests
        ready = (r.of("ready") or [{}])[0]
        span = max((e["t"] for e in reqs), default=0.0) - float(ready.get("t0", 0.0))
        delays = [e["sched_delay_ms"] for e in reqs]
        errors = sum(1 for e in reqs if e.get("ok") is False)
        tokens = int(bye.get("output_tokens", 0))
        cpu = float(bye.get("cpu_s", float("nan")))
        late = sum(1 for d in delays if d > 1.0)
        print(f"| {rate:g} | {len(reqs) / span if span > 0 else 0:.0f} | "
              f"{tokens / span if span > 0 else 0:.0f} | {errors} | {late} of {len(reqs)} | "
              f"{statistics.median(delays) if delays else float('nan'):.2f} / "
              f"{pct(delays, 99):.2f} / {max(delays, default=float('nan')):.2f} | "
              f"{cpu / span if span > 0 else float('nan'):.2f} | "
              f"{cpu / tokens * 1e6 if tokens else float('nan'):.0f} |", flush=True)
        if r.rc != 0:
            print(f"  (exit {r.rc}; {wall:.0f} s) {r.stderr[-300:]}")
            break
        if span > 0 and cpu / span > 0.85:
            print("  (the generator used most of one core: stop)")
            break


if __name__ == "__main__":
    main()
