"""Streaming latency statistics with bounded memory.

Definitions (documented in docs/measurement.md and checked by tests against an exact
computation):

- **Percentile** Pq is the nearest-rank percentile: the smallest recorded value
  v such that at least q% of the values are <= v (``exact_percentile``). The
  streaming estimate comes from a log-bucketed histogram whose buckets are
  ``RELATIVE_WIDTH`` wide (0.5%); it reports the bucket's geometric centre,
  clamped to [min, max], so it is within 0.25% (relative) of the exact value.
- **mean**, **std** (population, ddof=0), **min**, **max** and counts are
  exact (Welford's algorithm).
- A **summary** (``Moments.summary``) is the snapshot's own ``model.Summary``: the
  above rounded to 6 decimals, as written, and None where there is no value; so is a
  per-second row (``SecondRow``).
- **Phase** statistics cover every measured request of a phase; **window**
  statistics cover requests that *ended* in the last ``window_s`` seconds;
  per-second rows cover requests that ended in that second of the phase.

Memory: one histogram per phase (a few thousand buckets at most), full
histograms only for the seconds inside the window, and a compact row for every
older second (capped at ``MAX_SECONDS``), so an hour-long run stays small.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

from xwatch.core import model as M

RELATIVE_WIDTH = 0.005
_LOG_GAMMA = math.log1p(RELATIVE_WIDTH)
_INV_LOG_GAMMA = 1.0 / _LOG_GAMMA
_MIN_VALUE = 1e-6  # ms; anything at or below lands in one bottom bucket
_MIN_INDEX = math.floor(math.log(_MIN_VALUE) * _INV_LOG_GAMMA)
MAX_SECONDS = 6 * 3600  # per-second rows kept per workload and phase
MAX_INTS = 4096  # distinct whole-number values counted exactly

PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0), ("p999", 99.9))


#: upper bounds (ms) of the coarse cumulative latency buckets snapshots carry (and the
#: Prometheus histogram exposes): 0.1 ms to 10 s in 1-2.5-5 steps
LATENCY_BUCKETS_MS: tuple[float, ...] = (
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
    1000.0, 2500.0, 5000.0, 10000.0)


def bucket_index(v: float) -> int:
    if v <= _MIN_VALUE:
        return _MIN_INDEX
    return math.floor(math.log(v) * _INV_LOG_GAMMA)


def bucket_value(i: int) -> float:
    """Geometric centre of bucket ``i``."""
    return math.exp((i + 0.5) * _LOG_GAMMA)


@lru_cache(maxsize=256)
def _fraction(q: float) -> Fraction:
    """``q`` as the decimal the user wrote (99.9 is 999/10, not the nearest double)."""
    return Fraction(repr(float(q)))


def nearest_rank(n: int, q: float) -> int:
    """The 1-based nearest rank of percentile ``q`` among ``n`` values: the smallest r
    with r >= q/100 * n, in exact arithmetic (``math.ceil(99.9 / 100 * 1000)`` is
    1000, one too many, in floating point)."""
    f = _fraction(q)
    num, den = f.numerator * n, f.denominator * 100
    return min(n, max(1, -(-num // den)))


def exact_percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of ``values`` (the definition xwatch uses)."""
    if not values:
        raise ValueError("no values")
    s = sorted(values)
    return s[nearest_rank(len(s), q) - 1]


class LogHistogram:
    """Sparse log-bucketed histogram (counts per bucket index).

    The buckets in order are cached until the next ``add`` or ``merge`` (every change
    adds to ``n``): a snapshot reads them three times (percentiles, CDF, the
    histogram itself) and sorts them once."""

    __slots__ = ("_sorted", "_sorted_n", "counts", "n")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.n = 0
        self._sorted: list[tuple[int, int]] = []
        self._sorted_n = -1

    def add(self, v: float) -> None:
        i = _MIN_INDEX if v <= _MIN_VALUE else math.floor(math.log(v) * _INV_LOG_GAMMA)
        c = self.counts
        c[i] = c.get(i, 0) + 1
        self.n += 1

    def merge(self, other: LogHistogram) -> None:
        c = self.counts
        for i, k in other.counts.items():
            c[i] = c.get(i, 0) + k
        self.n += other.n

    def quantiles(self, qs: Iterable[float], vmin: float, vmax: float) -> list[float]:
        """Nearest-rank estimates for percentiles ``qs`` (ascending order not needed)."""
        n = self.n
        if n == 0:
            return [math.nan for _ in qs]
        return self.at_ranks([nearest_rank(n, q) for q in qs], vmin, vmax)

    def at_ranks(self, wanted: Sequence[int], vmin: float, vmax: float) -> list[float]:
        """The values at 1-based ranks ``wanted`` (each clamped to 1..n): the bucket
        holding that order statistic, reported as above."""
        n = self.n
        if n == 0:
            return [math.nan for _ in wanted]
        ranks = [k if 1 <= k <= n else (1 if k < 1 else n) for k in wanted]
        out = [math.nan] * len(ranks)
        buckets = iter(self.items())
        exp, g = math.exp, _LOG_GAMMA  # bucket_value, inlined: a CDF asks 100 ranks
        cum, i, v = 0, 0, math.nan
        # a CDF's ranks come ascending: visited in their own order, without a sort by key
        order = range(len(ranks)) if ranks == sorted(ranks) else \
            sorted(range(len(ranks)), key=ranks.__getitem__)
        for j in order:
            r = ranks[j]
            if cum < r:
                while cum < r:
                    i, k = next(buckets)
                    cum += k
                v = min(max(exp((i + 0.5) * g), vmin), vmax)
            out[j] = v
        return out

    def items(self) -> list[tuple[int, int]]:
        """(bucket index, count), ascending: what snapshots carry (do not modify)."""
        if self._sorted_n != self.n:
            self._sorted = sorted(self.counts.items())
            self._sorted_n = self.n
        return self._sorted

    @classmethod
    def from_items(cls, items: Iterable[tuple[int, int]]) -> LogHistogram:
        h = cls()
        for i, k in items:
            h.counts[int(i)] = h.counts.get(int(i), 0) + int(k)
            h.n += int(k)
        return h


def nan_if_none(v: float | None) -> float:
    """A statistic for arithmetic: NaN where the snapshot says it is unknown (None)."""
    return math.nan if v is None else v


def stat(s: M.Summary, key: str) -> float:
    """One statistic of a summary by name (``"p99"``), NaN where it is unknown."""
    v: float | None = getattr(s, key)
    return math.nan if v is None else v


def _r(v: float) -> float | None:
    """As the snapshot writes a statistic: 6 decimals; None where it is not finite."""
    return round(v, 6) if math.isfinite(v) else None


#: the statistics of no request
EMPTY = M.Summary()


class Moments:
    """Exact count/mean/std/min/max (Welford), exact counts per coarse latency bucket
    (``LATENCY_BUCKETS_MS``), plus a fine histogram for percentiles."""

    __slots__ = ("hist", "ints", "le", "max", "mean", "min", "n", "s2")

    def __init__(self) -> None:
        #: exact counts per value while every value is a whole number (a program that
        #: prints whole milliseconds): percentiles are then exact, not a bucket's centre;
        #: None once a fraction arrives or past ``MAX_INTS`` distinct values
        self.ints: dict[int, int] | None = {}
        self.n = 0
        self.mean = 0.0
        self.s2 = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.hist = LogHistogram()
        self.le = [0] * (len(LATENCY_BUCKETS_MS) + 1)  # per bucket; the last: above 10 s

    def add(self, v: float) -> None:
        ints = self.ints
        if ints is not None:
            if v.is_integer() and (len(ints) < MAX_INTS or v in ints):
                ints[int(v)] = ints.get(int(v), 0) + 1
            else:
                self.ints = None
        self.le[bisect_left(LATENCY_BUCKETS_MS, v)] += 1
        self.n += 1
        d = v - self.mean
        self.mean += d / self.n
        self.s2 += d * (v - self.mean)
        if v < self.min:
            self.min = v
        if v > self.max:
            self.max = v
        self.hist.add(v)

    def merge(self, o: Moments) -> None:
        if o.n == 0:
            return
        if self.ints is not None:
            if o.ints is None or len(self.ints) + len(o.ints) > 2 * MAX_INTS:
                self.ints = None
            else:
                for k, c in o.ints.items():
                    self.ints[k] = self.ints.get(k, 0) + c
        self.le = [a + b for a, b in zip(self.le, o.le)]
        if self.n == 0:
            self.n, self.mean, self.s2 = o.n, o.mean, o.s2
            self.min, self.max = o.min, o.max
            self.hist.merge(o.hist)
            return
        n = self.n + o.n
        d = o.mean - self.mean
        self.s2 += o.s2 + d * d * self.n * o.n / n
        self.mean += d * o.n / n
        self.n = n
        self.min = min(self.min, o.min)
        self.max = max(self.max, o.max)
        self.hist.merge(o.hist)

    def cumulative(self) -> list[int]:
        """Exactly how many values are <= each bound of ``LATENCY_BUCKETS_MS``."""
        out, run = [], 0
        for k in self.le[:-1]:
            run += k
            out.append(run)
        return out

    @property
    def integral(self) -> bool:
        """Every value so far is a whole number (an empty set counts as none)."""
        return self.ints is not None and self.n > 0

    def exact_quantiles(self, qs: Sequence[float]) -> list[float]:
        """Nearest-rank percentiles from the exact whole-number counts."""
        assert self.ints is not None
        ranks = [nearest_rank(self.n, q) for q in qs]
        out = [math.nan] * len(ranks)
        order = sorted(range(len(ranks)), key=ranks.__getitem__)
        cum, j = 0, 0
        for v, c in sorted(self.ints.items()):
            cum += c
            while j < len(order) and ranks[order[j]] <= cum:
                out[order[j]] = float(v)
                j += 1
        return out

    def summary(self) -> M.Summary:
        """The snapshot's statistics of these values (``model.Summary``: as written,
        6 decimals, None where there are no values)."""
        if self.n == 0:
            return EMPTY
        if self.ints is not None:
            qs = self.exact_quantiles([q for _, q in PERCENTILES])
        else:
            qs = self.hist.quantiles([q for _, q in PERCENTILES], self.min, self.max)
        p50, p90, p95, p99, p999 = qs
        return M.Summary(mean=_r(self.mean), std=_r(math.sqrt(max(self.s2, 0.0) / self.n)),
                         min=_r(self.min), p50=_r(p50), p90=_r(p90), p95=_r(p95), p99=_r(p99),
                         p999=_r(p999), max=_r(self.max))


class SecondRow(NamedTuple):
    """One second of a phase (requests that ended in [sec, sec+1) after the phase's t0):
    the snapshot's own row of a workload's ``series`` (``[sec, count, errors, late,
    samples, p50, p99, max, mean]``; ms as written, 6 decimals, None: no request)."""

    sec: int
    count: int  # type: ignore[assignment]  # the field hides tuple.count, never called
    errors: int
    late: int
    samples: int
    p50: float | None
    p99: float | None
    max: float | None
    mean: float | None


class _Second:
    __slots__ = ("_row", "errors", "late", "m", "samples", "sec")

    def __init__(self, sec: int) -> None:
        self.sec = sec
        self.m = Moments()
        self.errors = 0
        self.late = 0
        self.samples = 0
        self._row: SecondRow | None = None

    def row(self) -> SecondRow:
        """This second's row; computed again only when a request or error was added
        (a snapshot reads every second in the window; only the newest changes)."""
        m = self.m
        r = self._row
        if r is not None and r.count == m.n and r.errors == self.errors:
            return r
        if m.n:
            p50, p99 = m.exact_quantiles((50.0, 99.0)) if m.ints is not None else \
                m.hist.quantiles((50.0, 99.0), m.min, m.max)
            r = SecondRow(self.sec, m.n, self.errors, self.late, self.samples, _r(p50), _r(p99),
                          _r(m.max), _r(m.mean))
        else:
            r = SecondRow(self.sec, 0, self.errors, self.late, self.samples,
                          None, None, None, None)
        self._row = r
        return r


class Recorder:
    """All statistics of one workload in one phase.

    ``t0`` is the phase's time origin (monotonic seconds); events carry their
    own end time ``t``. ``slo_ms``, when set, is counted exactly (goodput).

    Hot path: each request updates exactly one ``Moments`` (its second's).
    Seconds that leave the window are folded into ``_done``; phase statistics
    are ``_done`` merged with the live seconds, computed when read.
    """

    def __init__(self, t0: float, window_s: float = 10.0, slo_ms: float | None = None) -> None:
        self.t0 = t0
        self.window_s = window_s
        self.slo_ms = slo_ms
        self._done = Moments()  # every finalized second, merged
        self.count = 0
        self.errors = 0
        self.late = 0
        self.samples = 0
        self.under_slo = 0
        self.service_n = 0
        self.service_sum = 0.0
        self.service_max = 0.0
        self.last_t = math.nan
        self._live: deque[_Second] = deque()  # seconds still inside the window
        self.rows: deque[SecondRow] = deque(maxlen=MAX_SECONDS)  # finalized seconds

    def add(self, latency_ms: float, t: float, batch: int = 1, late: bool = False,
            ok: bool = True, service_ms: float | None = None) -> None:
        sec = int(t - self.t0) if t >= self.t0 else -1
        live = self._live
        b = live[-1] if live and live[-1].sec == sec else self._second(sec)
        self.last_t = t
        if not ok:
            self.errors += 1
            b.errors += 1
            return
        b.m.add(latency_ms)
        self.count += 1
        if service_ms is not None:
            self.service_n += 1
            self.service_sum += service_ms
            if service_ms > self.service_max:
                self.service_max = service_ms
        self.samples += batch
        b.samples += batch
        if late:
            self.late += 1
            b.late += 1
        if self.slo_ms is not None and latency_ms <= self.slo_ms:
            self.under_slo += 1

    def _second(self, sec: int) -> _Second:
        live = self._live
        for b in reversed(live):  # out-of-order event for a recent second
            if b.sec == sec:
                return b
            if b.sec < sec:
                break
        b = _Second(sec)
        live.append(b)
        if len(live) > 1 and live[-2].sec > sec:  # keep ordered (rare)
            items = sorted(live, key=lambda x: x.sec)
            live.clear()
            live.extend(items)
        self._expire(live[-1].sec)
        return b

    def _expire(self, now_sec: int) -> None:
        horizon = now_sec - math.ceil(self.window_s) - 1
        live = self._live
        while live and live[0].sec < horizon:
            old = live.popleft()
            self._done.merge(old.m)
            self.rows.append(old.row())

    # ------------------------------------------------------------------ reads
    def phase_moments(self) -> Moments:
        """Every measured request of the phase (a fresh object)."""
        m = Moments()
        m.merge(self._done)
        for b in self._live:
            m.merge(b.m)
        return m

    def summary(self) -> M.Summary:
        return self.phase_moments().summary()

    def service_mean(self) -> float:
        return self.service_sum / self.service_n if self.service_n else math.nan

    def window(self, now: float) -> tuple[M.Summary, int, int, float]:
        """(latency summary, requests, samples, seconds covered) for requests that
        ended in the window. Per-second granularity: the window is the last
        ``window_s`` seconds of the phase clock, the current partial second
        included, so it covers between ``window_s - 1`` and ``window_s`` seconds
        (the fourth value): rates divide by that, not by ``window_s``."""
        return self.read(now)[1]

    def read(self, now: float) -> tuple[Moments, tuple[M.Summary, int, int, float]]:
        """``phase_moments()`` and ``window(now)`` at once: the live seconds are merged
        once for both (what a snapshot reads every second)."""
        now_sec = int(now - self.t0)
        lo = now_sec - math.ceil(self.window_s) + 1
        w = Moments()
        rest = Moments()
        samples = 0
        for b in self._live:
            if lo <= b.sec <= now_sec:
                w.merge(b.m)
                samples += b.samples
            else:
                rest.merge(b.m)
        phase = Moments()
        phase.merge(self._done)
        phase.merge(rest)
        phase.merge(w)
        return phase, (w.summary(), w.n, samples, max(0.0, now - (self.t0 + lo)))

    def recent_p99(self) -> float:
        """The largest per-second P99 among the seconds still in the window (at least
        the window's P99 up to a bucket's width; a few microseconds, where merging the
        window takes a hundred); the phase P99 when the window has none."""
        worst = max((p for b in self._live if (p := b.row().p99) is not None),
                    default=math.nan)
        return worst if worst == worst else nan_if_none(self.summary().p99)

    def series(self) -> list[SecondRow]:
        """Per-second rows, oldest first (finalized and live)."""
        return [*self.rows, *(b.row() for b in self._live)]

    def cdf(self, points: int = 100, m: Moments | None = None) -> list[tuple[float, float]]:
        """(latency, fraction <= latency) at evenly spaced quantiles, for charts."""
        m = m or self.phase_moments()
        if m.n == 0:
            return []
        # the nearest rank of q = 100 k / points, exactly: ceil(k n / points)
        n = m.n
        vals = m.hist.at_ranks([-(-k * n // points) for k in range(1, points + 1)],
                               m.min, m.max)
        return [(v, k / points) for k, v in enumerate(vals, 1)]
