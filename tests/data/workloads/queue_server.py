"""A server of known capacity, simulated in real time: requests arrive at the rate in
XWATCH_RATE (evenly spaced, open loop) and one server answers them one at a time, each
in SERVICE_MS, so its capacity (the knee) is 1000 / SERVICE_MS requests/s. Below it every
request takes SERVICE_MS (plus up to JITTER_MS of noise in what is reported); above it
the queue, and each request's latency, grows for as long as it runs. Each request is
reported (the event protocol) at the moment it leaves the server.

argv: SERVICE_MS [JITTER_MS]
"""

import json
import os
import random
import sys
import time

service = float(sys.argv[1]) / 1000.0
jitter = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
rate = float(os.environ["XWATCH_RATE"])
fd = int(os.environ["XWATCH_EVENT_FD"])
rng = random.Random(os.getpid())


def emit(obj):
    os.write(fd, (json.dumps(obj) + "\n").encode())


emit({"type": "hello", "pid": os.getpid(), "model": "queue", "rate": rate})
t0 = time.monotonic()
emit({"type": "ready", "t0": t0})
free = t0  # when the server is next free
i = 0
while True:
    arrive = t0 + i / rate
    done = max(arrive, free) + service
    free = done
    now = time.monotonic()
    if done > now:
        time.sleep(done - now)
    i += 1
    emit({"seq": i, "t": done, "latency_ms": (done - arrive) * 1000.0
          + rng.uniform(0.0, jitter), "service_ms": service * 1000.0})
