"""Does a kept-alive connection read ``/xqueues`` as a fresh one does, and what does
each cost the polling thread? Against a running xserver (the real one, or the test fake).

    python benchmarks/investigations/xsched/keepalive_probe.py [--port P] [--seconds 30] [--wait 120]

Without ``--port`` it waits up to ``--wait`` s for a process whose ``argv[0]`` (or
``argv[1]``, a script's) ends in ``/xserver`` and reads the port from its command line
(``xserver POLICY PORT``, as xwatch starts it), so it can run beside ``xwatch run ...
--mode xsched``; ``--delay S`` starts polling S later (after the preflight's probes).

Every ~100 ms (each interval 0.5-1.5x, as xwatch's poll thread draws them) it polls once
by one of three paths, in a shuffled round, on the same xserver under the same load:

- ``fresh``: a new TCP connection per GET (``Connection: close``; xwatch's default);
- ``kept``: one kept-alive plain socket, reopened only when the server closes it
  (``Kept`` below: the poll's own reading, without the handshake);
- ``http.client``: a kept-alive ``http.client`` connection (``XWATCH_XSERVER_KEEPALIVE=1``
  before this probe existed: the client that hid ready XQueues on 2026-11-22 and -25).

Per path: polls, failures, the thread's CPU per poll (``time.thread_time``: user and
system, the TCP handshake included), and per process seen: polls that listed its
queues and how many of those showed one ready / suspended. The paths interleave, so a
difference in what they see is the path's, not the load's. Only polls taken while two
or more processes had queues are counted (the workloads, not the preflight's probes,
once those have gone).
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from xwatch.core.xsched.client import (
    XserverClient,
    _expected_length,
    _head,
    _parse_response,
    decode_xqueues,
)

PATHS = ("fresh", "kept", "http.client")


class Kept:
    """GETs on one kept-alive socket: reopened when the server closed it (an empty
    read) or said ``Connection: close``."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock: socket.socket | None = None
        self.buf = bytearray(1 << 16)

    def get(self, path: str) -> tuple[int, bytes]:
        for attempt in (0, 1):
            fresh = self.sock is None
            if self.sock is None:
                self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=2.0)
            s = self.sock
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                      "Accept: application/json\r\nConnection: keep-alive\r\n\r\n".encode())
            got, need = 0, -1
            while need < 0 or got < need:
                if got == len(self.buf):
                    self.buf.extend(bytes(len(self.buf)))
                n = s.recv_into(memoryview(self.buf)[got:])
                if not n:
                    break
                got += n
                if need < 0:
                    need = _expected_length(bytes(self.buf[:got]))
            data = bytes(self.buf[:got])
            head = _head(data)
            if head is None or need < 0 or \
                    head[1].get(b"connection", b"").lower() == b"close":
                s.close()
                self.sock = None
                if not data and not fresh and not attempt:
                    continue  # closed while idle: once more, on a new connection
            return _parse_response(data)
        raise OSError("no answer on a kept-alive connection")


def find_port(wait_s: float) -> int:
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            for i, arg in enumerate(argv[:2]):  # the binary, or a script's interpreter
                if arg.endswith(b"/xserver") and len(argv) > i + 2 and argv[i + 2].isdigit():
                    return int(argv[i + 2])
        time.sleep(0.2)
    raise SystemExit(f"no xserver process appeared within {wait_s:g} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--wait", type=float, default=120.0)
    ap.add_argument("--poll-ms", type=float, default=100.0)
    ap.add_argument("--paths", default=",".join(PATHS), help="of " + ", ".join(PATHS))
    ap.add_argument("--delay", type=float, default=0.0, metavar="S",
                    help="start polling S after the xserver appeared")
    a = ap.parse_args()
    paths = tuple(p for p in PATHS if p in a.paths.split(","))
    port = a.port or find_port(a.wait)
    time.sleep(a.delay)
    print(f"xserver on port {port}; polling {a.seconds:g} s by {', '.join(paths)}", flush=True)
    fresh, kept, httpc = XserverClient(port), Kept(port), XserverClient(port)
    httpc.keepalive = True
    get = {"fresh": lambda: fresh._get_closing("/xqueues"),
           "kept": lambda: kept.get("/xqueues"),
           "http.client": lambda: httpc._request("GET", "/xqueues", None)}
    rng = random.Random(1)
    cpu: dict[str, list[float]] = collections.defaultdict(list)
    fails: collections.Counter[str] = collections.Counter()
    last_fail: dict[str, str] = {}
    counted: collections.Counter[str] = collections.Counter()
    seen: dict[tuple[str, int], collections.Counter[str]] = collections.defaultdict(
        collections.Counter)
    end = time.monotonic() + a.seconds
    order: list[str] = []
    while time.monotonic() < end:
        if not order:
            order = list(paths)
            rng.shuffle(order)
        path = order.pop()
        t0 = time.thread_time()
        try:
            status, body = get[path]()
            rows = decode_xqueues(body) if status == 200 and body else []
            if status != 200:
                raise RuntimeError(f"HTTP {status}")
        except Exception as e:  # counted per path, the probe goes on
            fails[path] += 1
            last_fail[path] = f"{type(e).__name__}: {e}"
            rows = None
        spent = time.thread_time() - t0
        cpu[path].append(spent)
        if rows is not None:
            pids: dict[int, list[object]] = collections.defaultdict(list)
            for q in rows:
                pids[q.pid].append(q)
            if len(pids) >= 2:
                counted[path] += 1
                for pid, qs in pids.items():
                    c = seen[(path, pid)]
                    c["polls"] += 1
                    c["queues"] = max(c["queues"], len(qs))
                    c["ready"] += any(q.ready for q in qs)  # type: ignore[attr-defined]
                    c["suspended"] += any(q.suspended for q in qs)  # type: ignore[attr-defined]
        time.sleep(max(0.01, a.poll_ms / 1000 * rng.uniform(0.5, 1.5)))
    print(f"{'path':12s} {'polls':>6s} {'failed':>6s} {'cpu ms/poll':>11s} "
          f"{'median':>7s} {'counted':>7s}")
    for p in paths:
        xs = sorted(cpu[p])
        mean = 1000 * sum(xs) / len(xs) if xs else float("nan")
        med = 1000 * xs[len(xs) // 2] if xs else float("nan")
        print(f"{p:12s} {len(xs):6d} {fails[p]:6d} {mean:11.3f} {med:7.3f} {counted[p]:7d}")
    for p in paths:
        if p in last_fail:
            print(f"  {p}: last failure: {last_fail[p]}")
    print("per process (polls with both processes' queues listed):")
    for pid in sorted({pid for _, pid in seen}):
        parts = []
        for p in paths:
            c = seen.get((p, pid), collections.Counter())
            n = c["polls"]
            parts.append(f"{p} ready {c['ready']}/{n} ({100 * c['ready'] / n if n else 0:.0f}%)"
                         f" suspended {c['suspended']}/{n}")
        print(f"  pid {pid} ({seen[('fresh', pid)]['queues']} queues): " + "; ".join(parts))


if __name__ == "__main__":
    main()
