"""An inference loop of one's own, as xwatch watches it (docs/howto/own-program.md).

A small convolutional network answers requests at a fixed rate (open loop: each
request has a scheduled send time, and its latency counts from that time). Each
request's latency goes to xwatch as one JSON line on the file descriptor named by
XWATCH_EVENT_FD (docs/protocol.md); stdout and stderr stay free for logs.

On a GPU its work runs on a stream it creates (``torch.cuda.Stream``): XSched's shim
turns every created stream into an XQueue that xserver can hold back or release.
``--default-stream`` keeps the work on PyTorch's default stream instead, which XSched
1.2 does not schedule: the how-to's deliberately unschedulable variant.

Run by hand (no xwatch) it prints its events on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time

import torch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=float, default=float(os.environ.get("XWATCH_RATE", 20.0)),
                    help="requests a second (default: XWATCH_RATE, which xwatch sets from "
                         "the scenario's rate and xwatch capacity varies; else 20)")
    ap.add_argument("--size", type=int, default=64, help="image side in pixels")
    ap.add_argument("--default-stream", action="store_true",
                    help="stay on PyTorch's default stream (XSched cannot schedule it)")
    ap.add_argument("--requests", type=int, default=0, help="stop after this many (0: never)")
    ap.add_argument("--busy-ms", type=float, default=10.0,
                    help="on a GPU, about how long one request keeps it busy: the forward "
                         "passes a request makes are chosen at warm-up to take this long "
                         "(XSched's proof needs to see the work queued; on a CPU: one pass)")
    args = ap.parse_args()
    torch.set_num_threads(1)  # one core: leave the others to the program beside it

    fd = int(os.environ.get("XWATCH_EVENT_FD", sys.stdout.fileno()))

    def send(event: dict[str, object]) -> None:
        os.write(fd, (json.dumps(event) + "\n").encode())

    stop = False

    def on_term(signum: int, frame: object) -> None:  # xwatch's stop: finish cleanly
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    stream = torch.cuda.Stream() if dev.type == "cuda" and not args.default_stream else None
    on_stream = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()

    def sync() -> None:  # stop the clock only once the GPU is done
        if stream is not None:
            stream.synchronize()
        elif dev.type == "cuda":
            torch.cuda.synchronize()

    with torch.inference_mode(), on_stream:
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10),
        ).to(dev).eval()
        x = torch.randn(1, 3, args.size, args.size, device=dev)
        send({"type": "hello", "pid": os.getpid(), "model": "own-cnn", "device": str(dev),
              "torch": torch.__version__, "batch": 1, "rate": args.rate,
              "stream": "created" if stream is not None else "default"})
        for _ in range(10):  # warm-up: not measured
            model(x)
        sync()
        passes = 1
        if dev.type == "cuda":  # a request's passes: about --busy-ms of GPU work
            t = time.monotonic()
            for _ in range(20):
                model(x)
            sync()
            passes = max(1, round(args.busy_ms / ((time.monotonic() - t) * 1e3 / 20)))
            print(f"infer: {passes} forward passes a request (about {args.busy_ms:g} ms of "
                  f"{dev})", file=sys.stderr, flush=True)
        gap = 1.0 / args.rate
        t0 = time.monotonic() + gap
        send({"type": "ready", "t0": t0})
        seq = 0
        while not stop:
            due = t0 + seq * gap
            if due - time.monotonic() > 0.002:  # sleep, then spin the last 2 ms: on time
                time.sleep(due - time.monotonic() - 0.002)
            while time.monotonic() < due:
                pass
            start = time.monotonic()
            for _ in range(passes):
                model(x)
            sync()
            end = time.monotonic()
            send({"latency_ms": round((end - due) * 1e3, 3),
                  "service_ms": round((end - start) * 1e3, 3),
                  "sched_delay_ms": round(max(0.0, start - due) * 1e3, 3),
                  "late": start - due > 1e-3, "seq": seq, "t": end})
            seq += 1
            stop = stop or seq == args.requests
    send({"type": "bye", "count": seq, "t": time.monotonic()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
