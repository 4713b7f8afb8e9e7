"""When an open-loop workload's requests are due: the one schedule that the worker
follows and that xwatch recomputes to count requests that were due but never
finished. Stdlib only (the worker imports it under any interpreter).

Fixed arrivals: request ``i`` (0-based) is due at ``t0 + i / rate``, computed, not
accumulated, so both sides get the same float. Poisson arrivals: gaps are
``random.Random(seed).expovariate(rate)`` in order. Gamma arrivals (vLLM's
``--burstiness``): gaps are ``gammavariate(shape=burstiness, scale=1/(rate*burstiness))``
(mean ``1/rate``; burstiness below 1 is burstier than Poisson, above 1 more even).
"""

from __future__ import annotations

import math
import random


class Schedule:
    """Due times of one open-loop workload, in order."""

    def __init__(self, t0: float, rate: float, arrival: str = "fixed", seed: int = 0,
                 burstiness: float = 1.0) -> None:
        self.t0 = t0
        self.rate = rate
        self.poisson = arrival == "poisson"
        self.gamma = arrival == "gamma"
        self.burstiness = burstiness
        self._rng = random.Random(seed)
        self._i = 0
        self._t = t0

    def next(self) -> float:
        """The due time of the next request."""
        if self.poisson:
            t = self._t
            self._t += self._rng.expovariate(self.rate)
        elif self.gamma:
            t = self._t
            k = self.burstiness
            self._t += self._rng.gammavariate(k, 1.0 / (self.rate * k))
        else:
            t = self.t0 + self._i / self.rate
        self._i += 1
        return t


def due_times(t0: float, rate: float, arrival: str, seed: int, until: float,
              skip: int = 0, limit: int | None = None, cap: int = 5_000_000,
              burstiness: float = 1.0) -> list[float]:
    """Due times of requests ``skip+1, skip+2, ...`` (1-based) due at or before
    ``until``; at most ``limit`` requests in all, at most ``cap`` returned."""
    if until < t0 or rate <= 0:
        return []
    if arrival not in ("poisson", "gamma"):
        due = math.floor((until - t0) * rate) + 1
        while due > 0 and t0 + (due - 1) / rate > until:  # float edge
            due -= 1
        if limit is not None:
            due = min(due, limit)
        return [t0 + i / rate for i in range(skip, min(due, skip + cap))]
    sched = Schedule(t0, rate, arrival, seed, burstiness)
    out: list[float] = []
    i = 0
    while len(out) < cap and (limit is None or i < limit):
        t = sched.next()
        if t > until:
            break
        if i >= skip:
            out.append(t)
        i += 1
    return out
