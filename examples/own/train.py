"""A training loop of one's own that only prints, as xwatch watches it
(docs/howto/own-program.md).

Each training step (forward, loss, backward, SGD) of a small convolutional network on
a random batch prints one line, ``step 12: 41.37 ms``; the scenario's ``regex``
(``^step \\d+: (?P<latency_ms>[0-9.]+) ms``) turns each into a request of ``batch``
samples. Warm-up steps print ``warm-up ...`` lines, which the regex does not match.

On a GPU its work runs on a stream it creates (``torch.cuda.Stream``), which XSched's
shim turns into an XQueue; ``--default-stream`` keeps it on PyTorch's default stream.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time

import torch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=32, help="samples a step")
    ap.add_argument("--size", type=int, default=64, help="image side in pixels")
    ap.add_argument("--default-stream", action="store_true",
                    help="stay on PyTorch's default stream (XSched cannot schedule it)")
    ap.add_argument("--steps", type=int, default=0, help="stop after this many (0: never)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    stop = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    stream = torch.cuda.Stream() if dev.type == "cuda" and not args.default_stream else None
    on_stream = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()

    def sync() -> None:
        if stream is not None:
            stream.synchronize()
        elif dev.type == "cuda":
            torch.cuda.synchronize()

    with on_stream:
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10),
        ).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(args.batch, 3, args.size, args.size, generator=gen).to(dev)
        y = torch.randint(0, 10, (args.batch,), generator=gen).to(dev)
        where = "" if dev.type == "cpu" else \
            f", {'created' if stream is not None else 'default'} stream"
        print(f"training on {dev}, batch {args.batch}{where}", flush=True)
        step = 0
        while not stop:
            start = time.monotonic()
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            sync()
            ms = (time.monotonic() - start) * 1e3
            label = f"warm-up {step + 1}" if step < 3 else f"step {step - 2}"
            print(f"{label}: {ms:.2f} ms", flush=True)
            step += 1
            stop = stop or (args.steps > 0 and step - 3 == args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
