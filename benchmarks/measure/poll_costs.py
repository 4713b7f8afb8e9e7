"""What each of the observer's periodic polls costs this machine's CPU, taken apart.

    python benchmarks/measure/poll_costs.py [--queues 288] [--polls 500] [--gap S] [--nvml]
                                    [--spawn TOOL]

The dashboard's background work is a handful of polls (docs/benchmarks.md, "the
observer per mode"): XSched's ``/xqueues`` ten times a second, NVML twice a second
(the per-process queries every 2 s), and, under MPS, the control tool asked once a
second whether the daemon answers. This prints, per poll, the calling thread's own
CPU (``time.thread_time``: what the dashboard's figure counts) and the wall time:

- ``syscall``: one cheap system call (``getppid``) and one ``stat``: how costly a
  trip into the kernel is on this machine (a sandboxed kernel makes every socket
  poll dearer);
- ``/xqueues``: xwatch's own client against a local stand-in that answers what
  XSched 1.2's xserver answers (``--queues`` XQueues, the real server's three-space
  indent), split into the HTTP exchange and the decoding; then the same over one
  kept-alive connection (``XWATCH_XSERVER_KEEPALIVE=1``); with ``--gap S`` also
  polls S seconds apart, as the dashboard polls, taken apart into connect, send,
  receive, close and copy, and again with the next connection opened right after a
  poll (pre-connected) to see whether a spaced poll's cost is its connection;
- ``nvml`` (``--nvml``, on an NVIDIA machine): each NVML call a telemetry sample
  makes, on GPU 0;
- ``spawn`` (``--spawn TOOL``): ``subprocess.run`` of TOOL as the MPS watch runs
  ``nvidia-cuda-mps-control``, from a process holding a dashboard-sized heap.

The stand-in runs in a process of its own, so its CPU is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

SERVER = r"""
import json, socket, sys
n, port_file = int(sys.argv[1]), sys.argv[2]
rows = [{"handle": 0x7F0000000000 + i * 4096, "device": 0x100, "level": 1,
         "pid": 1000 + (i % 2), "threshold": 16, "batch_size": 8, "ready": i % 7 == 0,
         "suspended": False} for i in range(n)]
body = json.dumps({"xqueues": rows, "processes": [
    {"pid": 1000, "cmdline": "python3 -m xwatch.core.engine.worker"},
    {"pid": 1001, "cmdline": "python3 -m xwatch.core.engine.worker"}]}, indent=3).encode()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
open(port_file, "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept()
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            got = c.recv(65536)
            if not got:
                break
            buf += got
        if b"\r\n\r\n" not in buf:
            break
        head, buf = buf.split(b"\r\n\r\n", 1)
        close = b"connection: close" in head.lower()
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\nConnection: %s\r\n\r\n"
                  % (len(body), b"close" if close else b"keep-alive") + body)
        if close:
            break
    c.close()
"""


def per_call(fn: Callable[[], object], n: int) -> tuple[float, float]:
    """(thread CPU, wall) per call, microseconds, after a short warm-up."""
    for _ in range(min(20, n)):
        fn()
    c, w = time.thread_time(), time.perf_counter()
    for _ in range(n):
        fn()
    return (time.thread_time() - c) / n * 1e6, (time.perf_counter() - w) / n * 1e6


def row(name: str, cost: tuple[float, float]) -> None:
    print(f"  {name:<44} {cost[0]:9.1f} us CPU {cost[1]:9.1f} us wall", flush=True)


def syscalls(n: int) -> None:
    print("syscall")
    row("getppid", per_call(os.getppid, n * 100))
    row("stat('/')", per_call(lambda: os.stat("/"), n * 20))


def xqueues(queues: int, n: int, gap: float = 0.0) -> None:
    import tempfile

    from xwatch.core.xsched.client import XserverClient, decode_xqueues

    port_file = tempfile.mktemp(prefix="xwatch-pollcost-")
    srv = subprocess.Popen([sys.executable, "-c", SERVER, str(queues), port_file])
    try:
        end = time.monotonic() + 10
        while not os.path.exists(port_file) or not open(port_file).read():
            if time.monotonic() > end:
                raise SystemExit("the stand-in xserver did not start")
            time.sleep(0.05)
        port = int(open(port_file).read())
        c = XserverClient(port)
        c.keepalive = False
        _, raw = c._get_closing("/xqueues")
        print(f"/xqueues ({queues} XQueues, {len(raw)} bytes a poll)")
        row("poll (fresh connection, as xwatch polls)", per_call(c.xqueue_rows, n))
        row("  of which the HTTP exchange", per_call(lambda: c._get_closing("/xqueues"), n))
        row("  of which decoding", per_call(lambda: decode_xqueues(raw), n))
        k = XserverClient(port)
        k.keepalive = True
        row("poll (one kept-alive connection)", per_call(k.xqueue_rows, n))
        k._drop()  # the stand-in serves one connection at a time
        if gap > 0:
            spaced(port, gap, max(20, min(n, int(30 / gap))))
    finally:
        srv.kill()
        srv.wait()
        os.unlink(port_file)


def _steps(port: int, gap: float, n: int, preconnect: bool) -> list[float]:
    """Polls ``gap`` seconds apart: each step's thread CPU per poll, microseconds."""
    import socket

    req = b"GET /xqueues HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    buf = bytearray(1 << 17)
    tt = time.thread_time
    acc = [0.0] * 5  # connect, send, receive, close, copy

    def connect() -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2.0)
        s.connect(("127.0.0.1", port))
        return s

    nxt = connect() if preconnect else None
    for _ in range(n):
        time.sleep(gap)
        t0 = tt()
        s = nxt if nxt is not None else connect()
        t1 = tt()
        s.sendall(req)
        t2 = tt()
        got = 0
        while True:
            k = s.recv_into(memoryview(buf)[got:])
            if not k:
                break
            got += k
        t3 = tt()
        s.close()
        t4 = tt()
        bytes(buf[:got])
        t5 = tt()
        conn = t1 - t0
        if preconnect:
            nxt = connect()
            conn += tt() - t5  # the next poll's connection is this poll's cost
        for i, v in enumerate((conn, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            acc[i] += v
    if nxt is not None:
        nxt.close()
    return [v / n * 1e6 for v in acc]


def spaced(port: int, gap: float, n: int) -> None:
    """The HTTP exchange of polls ``gap`` apart, step by step, fresh and pre-connected."""
    print(f"/xqueues polled {gap:g} s apart ({n} polls), thread CPU per poll in us:")
    print(f"  {'':<34} {'connect':>8} {'send':>6} {'recv':>6} {'close':>6} {'copy':>6} "
          f"{'total':>6}")
    for pre in (False, True, False, True):
        steps = _steps(port, gap, n, pre)
        name = "pre-connected after the last poll" if pre else "fresh connection (as xwatch)"
        print(f"  {name:<34} " + " ".join(f"{v:{w}.0f}" for v, w in
                                          zip(steps, (8, 6, 6, 6, 6))) +
              f" {sum(steps):6.0f}", flush=True)


def nvml(n: int) -> None:
    import pynvml as nv

    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    print(f"nvml (GPU 0: {nv.nvmlDeviceGetName(h)})")
    calls: dict[str, Callable[[], object]] = {
        "nvmlDeviceGetUtilizationRates": lambda: nv.nvmlDeviceGetUtilizationRates(h),
        "nvmlDeviceGetMemoryInfo": lambda: nv.nvmlDeviceGetMemoryInfo(h),
        "nvmlDeviceGetPowerUsage": lambda: nv.nvmlDeviceGetPowerUsage(h),
        "nvmlDeviceGetTemperature": lambda: nv.nvmlDeviceGetTemperature(
            h, nv.NVML_TEMPERATURE_GPU),
        "nvmlDeviceGetClockInfo(SM)": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
        "nvmlDeviceGetComputeRunningProcesses": lambda: nv.nvmlDeviceGetComputeRunningProcesses(h),
    }

    def proc_util() -> object:
        try:
            return nv.nvmlDeviceGetProcessUtilization(h, 0)
        except nv.NVMLError:
            return None
    calls["nvmlDeviceGetProcessUtilization (all buffered)"] = proc_util
    try:  # as xwatch reads it every 2 s: the samples newer than the last read
        newest = max([0, *(int(x.timeStamp) for x in nv.nvmlDeviceGetProcessUtilization(h, 0))])
    except nv.NVMLError:
        newest = 0

    def proc_util_2s() -> object:
        try:
            return nv.nvmlDeviceGetProcessUtilization(h, max(0, newest - 2_000_000))
        except nv.NVMLError:
            return None
    calls["nvmlDeviceGetProcessUtilization (the last 2 s)"] = proc_util_2s
    for name, fn in calls.items():
        row(name, per_call(fn, n))
    from xwatch.core.telemetry.base import Targets
    from xwatch.core.telemetry.nvml import NvmlBackend

    b = NvmlBackend()
    b.open()
    row("a sample, counters only (xwatch)", per_call(lambda: b.sample(Targets(), procs=False), n))
    row("a sample with the per-process queries", per_call(lambda: b.sample(Targets()), n))
    b.close()


def spawn(tool: str, n: int) -> None:
    import textual.app  # noqa: F401  (a dashboard-sized heap: what is forked)

    import xwatch.ui.app  # noqa: F401
    heap = [bytearray(1000) for _ in range(50_000)]
    print(f"spawn ({tool}, heap of {len(heap)} objects more)")
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": "/nonexistent"}
    row(f"subprocess.run([{tool!r}])", per_call(lambda: subprocess.run(
        [tool], input="get_server_list\n", capture_output=True, text=True, env=env,
        timeout=5), max(10, n // 10)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queues", type=int, default=288)
    ap.add_argument("--polls", type=int, default=500)
    ap.add_argument("--nvml", action="store_true")
    ap.add_argument("--spawn", metavar="TOOL")
    ap.add_argument("--gap", type=float, default=0.0, metavar="S",
                    help="also poll /xqueues S seconds apart, step by step (0.1: as xwatch)")
    a = ap.parse_args()
    print(json.dumps({"cpus": os.cpu_count(), "uname": " ".join(os.uname())}))
    syscalls(a.polls)
    xqueues(a.queues, a.polls, a.gap)
    if a.nvml:
        nvml(a.polls)
    if a.spawn:
        spawn(a.spawn, a.polls)


if __name__ == "__main__":
    main()
