"""The preflight smoke: a few seconds of tiny GPU work, run under the XSched shim
with a workload's own environment before that workload's real (slow to load)
model starts. ``python -m xwatch.core.engine.worker.smoke DEVICE STREAM SECONDS``.
STREAM: ``created``, ``default``, or ``graph`` (the step captured once as a CUDA graph,
after a warm-up on a side stream as PyTorch's recipe asks, then replayed on a created
stream: what a graphed decoder does; on a CPU all three are one plain run).

Prints two JSON lines on stdout (``start`` after torch and the device are up,
``done`` with the iteration count); a crash shows as the exit status and stderr.
SIGUSR1 ends the work early, as if SECONDS had passed (after at least three
iterations): the MPS preflight stops its probe once the probe was seen as a client.
With ``XWATCH_PROBE_HOLD=1`` (the XSched preflight's, ``xsched/leave/probes.py``) the
probe, after its ``done`` line, stays in XSched, idle, until SIGUSR2 (at most
``HOLD_MAX_S``), then leaves XSched's global scheduler (its mode's fork support,
``support.before_exit``), prints
``{"type": "left", "left": true}`` (false: it could not switch, and leaves at its exit
as before) and, told again (every probe has left), exits: the preflight lets its probes
leave one at a time while nothing else talks to xserver (docs/gpus-start.md, "A probe's
exit and xserver").
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time

HOLD_ENV = "XWATCH_PROBE_HOLD"
HOLD_MAX_S = 120.0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    device_name = args[0] if args else "cpu"
    stream_kind = args[1] if len(args) > 1 else "created"
    seconds = float(args[2]) if len(args) > 2 else 2.0
    early: list[int] = []
    signal.signal(signal.SIGUSR1, lambda *_: early.append(1))  # before torch's threads
    hold = os.environ.get(HOLD_ENV) == "1"
    if hold:  # blocked before torch starts threads, so sigtimedwait alone receives it
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
    import torch

    if device_name == "auto":
        device_name = "cuda:0" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device_name)
    on_gpu = dev.type == "cuda"
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(16, 10)).to(dev).eval()
    x = torch.randn(1, 3, 64, 64, device=dev)
    w = torch.randn(256, 256, device=dev)
    stream = torch.cuda.Stream(device=dev) if on_gpu and stream_kind in ("created", "graph") \
        else None
    sync = (lambda: torch.cuda.synchronize(dev)) if on_gpu else (lambda: None)

    def eager() -> None:
        model(x)
        (w @ w).sum()

    step = eager
    print(json.dumps({
        "type": "start", "pid": os.getpid(), "torch": torch.__version__,
        "cuda": getattr(torch.version, "cuda", None), "hip": getattr(torch.version, "hip", None),
        "device": str(dev), "stream": (stream_kind if on_gpu else "n/a (cpu)"),
        "device_name": torch.cuda.get_device_name(dev) if on_gpu else "cpu"}), flush=True)
    ctx = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
    if stream_kind == "graph" and on_gpu:  # on a CPU every kind is the same "n/a" run
        from xwatch.core.engine.worker.models import capture_graph

        with torch.inference_mode():
            graph, _ = capture_graph(dev, eager)
            torch.cuda.synchronize(dev)
        step = graph.replay
    times: list[float] = []
    end = time.monotonic() + seconds
    with torch.inference_mode(), ctx:
        while (time.monotonic() < end and not early) or len(times) < 3:
            t = time.monotonic()
            step()
            sync()
            times.append((time.monotonic() - t) * 1e3)
    times.sort()
    print(json.dumps({"type": "done", "iters": len(times), "early": bool(early),
                      "median_ms": round(times[len(times) // 2], 4)}), flush=True)
    if hold:
        from xwatch.core.engine.worker.support import before_exit

        told = signal.sigtimedwait({signal.SIGUSR2}, HOLD_MAX_S) is not None
        left = before_exit()
        print(json.dumps({"type": "left", "told": told, "left": left}), flush=True)
        if left and told:  # its exit tells xserver's process monitor, whose cleanup is one
            # more scheduling batch: it ends when told again, once every probe has left
            signal.sigtimedwait({signal.SIGUSR2}, HOLD_MAX_S)
    return 0


if __name__ == "__main__":
    sys.exit(main())
