"""Kernel capture on demand, inside the built-in worker.

xwatch asks by writing ``trace-request-<pid>.json`` (``{"id": K, "seconds": S}``) into
the folder named by ``XWATCH_TRACE_DIR`` and sending SIGUSR1. Between two requests the
worker starts ``torch.profiler`` (CUDA activity through CUPTI, or roctracer on ROCm:
the same API; CPU activity on a CPU device), records its own request boundaries for S
seconds, stops the profiler, reduces the trace to compact kernel records, writes
``trace-<pid>-<K>.json.gz`` next to the request and announces it on the event pipe
(``{"type": "trace", ...}``): never megabytes on the pipe.

Clocks: the profiler stamps events on the wall clock (ns since the epoch); xwatch's
clock is ``time.monotonic``. Right after the profiler starts, the worker opens and
closes a ``record_function("xwatch_anchor")`` between two monotonic readings; the
anchor's profiler timestamp against their midpoint gives the offset (error: half the
bracket, a few microseconds), and every kernel is written in monotonic seconds.

When idle this costs one attribute test per request.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import time
from typing import Any

TRACE_DIR_ENV = "XWATCH_TRACE_DIR"
MAX_SECONDS = 10.0
MAX_KERNELS = 400_000
ANCHOR = "xwatch_anchor"


def request_path(directory: str, pid: int) -> str:
    return os.path.join(directory, f"trace-request-{pid}.json")


def trace_path(directory: str, pid: int, capture_id: int) -> str:
    return os.path.join(directory, f"trace-{pid}-{capture_id}.json.gz")


class TraceControl:
    """Owned by the request loop: ``busy`` is False unless a capture is asked or runs."""

    def __init__(self, on_gpu: bool, writer: Any, name: str) -> None:
        self.on_gpu = on_gpu
        self.writer = writer
        self.name = name
        self.dir = os.environ.get(TRACE_DIR_ENV) or None
        self.busy = False
        self._asked = False
        self._prof: Any = None
        self._id = 0
        self._seconds = 0.0
        self._t_start = 0.0
        self._anchor_mono_ns = 0
        self._anchor_err_ns = 0
        self._requests: list[tuple[int, float, float]] = []
        self._partial = False
        if self.dir:
            signal.signal(signal.SIGUSR1, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._asked = True
        self.busy = True

    # ------------------------------------------------------------ the loop's calls
    def before(self) -> None:
        """Between requests: start an asked-for capture."""
        if self._asked and self._prof is None:
            self._asked = False
            self._start()

    def after(self, seq: int, start: float, end: float) -> None:
        """After a request: record it; stop the capture when its time is up."""
        if self._prof is None:
            if not self._asked:
                self.busy = False
            return
        self._requests.append((seq, start, end))
        if end - self._t_start >= self._seconds:
            self._finish()

    # ------------------------------------------------------------ capture
    def _start(self) -> None:
        assert self.dir is not None
        try:
            with open(request_path(self.dir, os.getpid())) as f:
                req = json.load(f)
            self._id = int(req.get("id", 0))
            self._seconds = min(MAX_SECONDS, max(0.1, float(req.get("seconds", 2.0))))
        except (OSError, ValueError, TypeError) as e:
            self.writer.emit({"type": "trace", "error": f"no capture request: {e}"})
            self.busy = False
            return
        from torch.profiler import ProfilerActivity, profile, record_function

        acts = [ProfilerActivity.CPU]
        if self.on_gpu:
            acts.append(ProfilerActivity.CUDA)
        self._requests = []
        try:
            self._prof = profile(activities=acts)
            self._prof.__enter__()
            a = time.monotonic_ns()
            with record_function(ANCHOR):
                pass
            b = time.monotonic_ns()
        except Exception as e:  # a profiler that cannot start is reported, not fatal
            self._prof = None
            self.busy = False
            self.writer.emit({"type": "trace", "id": self._id,
                              "error": f"{type(e).__name__}: {e}"[:500]})
            return
        self._anchor_mono_ns = (a + b) // 2
        self._anchor_err_ns = (b - a) // 2
        self._t_start = time.monotonic()

    def _finish(self) -> None:
        prof, self._prof = self._prof, None
        t_stop = time.monotonic()
        try:
            prof.__exit__(None, None, None)
            out = self._reduce(prof)
        except Exception as e:
            self.busy = self._asked
            self.writer.emit({"type": "trace", "id": self._id,
                              "error": f"{type(e).__name__}: {e}"[:500]})
            return
        assert self.dir is not None
        path = trace_path(self.dir, os.getpid(), self._id)
        out["cost_s"] = round(time.monotonic() - t_stop, 4)
        tmp = path + ".tmp"
        with gzip.open(tmp, "wt", compresslevel=3) as f:
            json.dump(out, f, separators=(",", ":"))
        os.replace(tmp, path)
        self.busy = self._asked
        self.writer.emit({"type": "trace", "id": self._id, "path": path,
                          "kernels": len(out["kernels"]), "requests": len(out["requests"]),
                          "t0": out["t0"], "t1": out["t1"], "cost_s": out["cost_s"],
                          "t": time.monotonic()})

    def _reduce(self, prof: Any) -> dict[str, Any]:
        """Kernel records on the monotonic clock: [name index, stream, start, end]."""
        events = prof.profiler.kineto_results.events()
        anchor = next((e for e in events if e.name() == ANCHOR), None)
        if anchor is None:
            raise RuntimeError("the profiler recorded no anchor event")
        offset = self._anchor_mono_ns - int(anchor.start_ns())
        names: dict[str, int] = {}
        kernels: list[list[Any]] = []
        gpu = self.on_gpu
        tid = int(anchor.start_thread_id())
        for e in events:
            dev = str(e.device_type())
            if gpu:
                if not dev.endswith("CUDA"):  # kernels, memcpy and memset on the device
                    continue
            elif not e.name().startswith("aten::") or dev.endswith("CUDA") \
                    or int(e.start_thread_id()) != tid:
                continue  # on a CPU device: the loop thread's aten operators stand in
            n = e.name()
            k = names.setdefault(n, len(names))
            s = (int(e.start_ns()) + offset) / 1e9
            kernels.append([k, int(e.device_resource_id()) if gpu else 0, round(s, 9),
                            round(s + int(e.duration_ns()) / 1e9, 9)])
            if len(kernels) >= MAX_KERNELS:
                break
        kernels.sort(key=lambda r: r[2])
        if not gpu:  # operators nest (conv2d > convolution > ...): keep the outermost
            top: list[list[Any]] = []
            for rec in kernels:
                if not top or rec[2] >= top[-1][3]:
                    top.append(rec)
            kernels = top
        return {"v": 1, "pid": os.getpid(), "name": self.name, "id": self._id,
                "device": "gpu" if gpu else "cpu", "seconds": self._seconds,
                "t0": round(self._t_start, 6), "t1": round(time.monotonic(), 6),
                "clock": {"method": "anchor", "offset_ns": offset,
                          "error_ns": self._anchor_err_ns},
                "names": sorted(names, key=names.__getitem__), "kernels": kernels,
                "requests": [[q, round(s, 6), round(e, 6)] for q, s, e in self._requests],
                "truncated": len(kernels) >= MAX_KERNELS, "partial": self._partial}

    def close(self) -> None:
        """The worker is stopping: a capture still running is written as it stands
        (``partial``) rather than lost."""
        if self._prof is not None:
            self._partial = True
            with contextlib.suppress(Exception):
                self._finish()
            self._prof = None


def load_trace(path: str) -> dict[str, Any]:
    """A worker's reduced trace (``trace-<pid>-<id>.json.gz``)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    try:
        import msgspec

        data = msgspec.json.decode(raw)
    except ImportError:
        data = json.loads(raw)
    if not isinstance(data, dict) or data.get("v") != 1:
        raise ValueError(f"{path}: not an xwatch kernel trace")
    return data
