"""The request loop: warm-up, arrival process, timing, events.

Timing rules (the numbers must be true):
- every request ends with a device synchronize before its clock stops;
- open-loop latency counts from the *scheduled* send time, so a stalled GPU
  shows up as latency and late starts, never as silently missing requests;
- warm-up iterations are never reported as requests;
- all times are ``time.monotonic()`` (CLOCK_MONOTONIC, shared with xwatch).

The start is timed in stages (``Stages``): monotonic stamps taken between the steps
of the start, never on the request path, sent in the hello, warm and ready events.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from typing import Any

from xwatch.core.engine.protocol import (
    GATE_ENV,
    PROTOCOL_VERSION,
    WARM,
    EventWriter,
    open_workload_pipe,
)
from xwatch.core.engine.worker import LATE_THRESHOLD_S, REPORTED_ENV_PREFIXES
from xwatch.core.engine.worker.arrivals import Schedule
from xwatch.core.engine.worker.config import WorkerConfig


class _Heartbeat(threading.Thread):
    """Sends a heartbeat every ``interval`` s (also while a request is stuck on
    the GPU) and exits the process if its parent (xwatch) disappears."""

    def __init__(self, writer: EventWriter, interval: float) -> None:
        super().__init__(name="xwatch-heartbeat", daemon=True)
        self.writer = writer
        self.interval = interval
        self.ppid = os.getppid()
        self.count = 0
        self.inflight_since = 0.0
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.wait(self.interval):
            if os.getppid() != self.ppid:  # xwatch is gone: never outlive it
                os._exit(70)
            now = time.monotonic()
            since = self.inflight_since
            self.writer.write_line(
                f'{{"type":"hb","t":{now:.6f},"count":{self.count},'
                f'"inflight_s":{(now - since) if since else 0.0:.3f}}}\n')


class Stages(dict):  # type: ignore[type-arg]
    """When each stage of the worker's start ended (name -> monotonic seconds), in the
    order reached: ``python`` (the interpreter ran the worker's first line), ``torch``
    (imported), ``imports`` (the model's library too), ``context`` (the device is usable:
    on a GPU the first CUDA call created the context), ``model`` (built on the device,
    with its inputs), ``first`` (the first warm-up iteration: cuDNN autotuning, lazy
    kernel loading), ``warm`` (warm-up over), ``released`` (the start gate let it go).
    Sent as the events' ``stages`` (``docs/protocol.md``)."""

    def mark(self, name: str) -> None:
        self[name] = round(time.monotonic(), 6)


def _env_report() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(REPORTED_ENV_PREFIXES)}


def run(cfg: WorkerConfig, writer: EventWriter, stages: Stages | None = None) -> int:
    stages = Stages() if stages is None else stages
    import torch

    stages.mark("torch")
    from xwatch.core.engine.worker.models import build, device_info

    hb = _Heartbeat(writer, cfg.heartbeat_s)
    hb.start()
    forward, device, info = build(cfg, stages.mark)
    stages.mark("model")
    on_gpu = device.type == "cuda"
    prio = 0
    if on_gpu and cfg.stream == "created" and cfg.stream_priority == "high":
        # (least, greatest); a lower number is a higher priority
        prio = int(min(torch.cuda.Stream.priority_range()))  # type: ignore[call-arg]
    stream = torch.cuda.Stream(device=device, priority=prio) \
        if on_gpu and cfg.stream == "created" else None
    if on_gpu:
        def sync() -> None:
            torch.cuda.synchronize(device)
    else:
        def sync() -> None:
            return None

    from xwatch.core.engine.worker.trace import TraceControl

    # kernel capture on request (SIGUSR1): installed before the hello says it is there
    tc = TraceControl(on_gpu, writer, cfg.name)
    hello: dict[str, Any] = {
        "type": "hello", "v": PROTOCOL_VERSION, "pid": os.getpid(), "name": cfg.name,
        "python": sys.version.split()[0], "executable": sys.executable,
        "model": cfg.model, "batch": cfg.batch, "rate": cfg.rate, "arrival": cfg.arrival,
        "stream": ("created" if stream is not None else "default") if on_gpu
        else f"n/a (cpu; asked {cfg.stream})",
        "stream_requested": cfg.stream,
        "stream_priority": (f"{cfg.stream_priority} ({prio})" if stream is not None
                            else "n/a (default stream)") if on_gpu else "n/a (cpu)",
        "threads": torch.get_num_threads(), "env": _env_report(),
        "trace": tc.dir is not None,
        **info, **device_info(torch, device), "stages": dict(stages),
    }
    writer.emit(hello)

    ctx = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
    try:
        _loop(cfg, writer, hb, tc, forward, sync, ctx, torch, stages)
    finally:
        tc.close()  # a capture cut short by a stop is still written
    writer.emit({"type": "bye", "count": hb.count, "t": time.monotonic()})
    hb.stop_event.set()
    return 0


def _loop(cfg: WorkerConfig, writer: EventWriter, hb: _Heartbeat, tc: Any, forward: Any,
          sync: Any, ctx: Any, torch: Any, stages: Stages) -> None:
    from xwatch.core.engine.worker.models import TokenTimes, token_metrics

    monotonic = time.monotonic
    sleep = time.sleep
    batch = cfg.batch
    grad = contextlib.nullcontext() if cfg.train else torch.inference_mode()
    with grad, ctx:
        t_w = monotonic()
        for i in range(cfg.warmup):
            forward()
            sync()
            if i == 0:  # what the first request would pay (autotuning, lazy loading)
                stages.mark("first")
        stages.mark("warm")
        warm_ms = (monotonic() - t_w) * 1e3
        waited_ms = None
        if os.environ.get(GATE_ENV) == "1":  # the start gate: measure with the others
            writer.emit({"type": WARM, "warmup": cfg.warmup, "warmup_ms": round(warm_ms, 3),
                         "stages": dict(stages)})
            t_g = monotonic()
            while signal.sigtimedwait((signal.SIGUSR2,), 1.0) is None:
                pass
            stages.mark("released")
            waited_ms = round((monotonic() - t_g) * 1e3, 3)
        rate = cfg.rate
        t0 = monotonic() + 0.001
        # xwatch recomputes this schedule from t0 to count due-but-unfinished requests
        schedule = Schedule(t0, rate, cfg.arrival, cfg.seed, cfg.burstiness) if rate else None
        writer.emit({"type": "ready", "t0": t0, "warmup": cfg.warmup,
                     "warmup_ms": round(warm_ms, 3), "stages": dict(stages),
                     **({} if waited_ms is None else {"gate_wait_ms": waited_ms})})
        seq = 0
        limit = cfg.requests
        while limit is None or seq < limit:
            if schedule is not None:
                t_sched = schedule.next()
                now = monotonic()
                if t_sched > now:
                    sleep(t_sched - now)
            if tc.busy:
                tc.before()  # starts an asked-for capture (open loop: its cost is latency)
            start = monotonic()
            if schedule is None:
                t_sched = start
            hb.inflight_since = start
            out = forward()
            sync()
            end = monotonic()
            hb.inflight_since = 0.0
            seq += 1
            hb.count = seq
            delay = start - t_sched
            writer.request(seq, end, (end - t_sched) * 1e3, (end - start) * 1e3, delay * 1e3,
                           delay > LATE_THRESHOLD_S, batch, end,
                           token_metrics(out, t_sched) if type(out) is TokenTimes else "")
            if tc.busy:
                tc.after(seq, start, end)


def main(started: float | None = None) -> int:
    """The worker process; ``started``: when its interpreter ran its first line."""
    from xwatch.core.engine.worker import CONFIG_ENV

    stages = Stages(python=round(time.monotonic() if started is None else started, 6))
    writer = open_workload_pipe("worker")  # before torch starts any thread (the gate)
    if writer is None:
        return 2
    try:
        cfg = WorkerConfig.from_json(os.environ[CONFIG_ENV])
        return run(cfg, writer, stages)
    except KeyboardInterrupt:  # SIGINT from the supervisor: a clean stop
        with contextlib.suppress(OSError):
            writer.flush()
            writer.emit({"type": "bye", "stopped": True, "t": time.monotonic()})
        return 0
    except BaseException as e:  # report, then fail
        tb = traceback.format_exc()
        sys.stderr.write(tb)
        sys.stderr.flush()
        with contextlib.suppress(OSError):
            writer.flush()
            writer.emit({"type": "error", "message": f"{type(e).__name__}: {e}"[:4000],
                         "traceback": tb[-4000:]})
        return 1
