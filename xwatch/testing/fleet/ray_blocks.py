"""Box as a block, against a known truth: runs placed over boxes the way a fleet plan
places them (``core.fleet.place``: batches of one run a box, rotated every batch), one
box slower than the others, run-to-run effects (normal or heavy-tailed), and the
intervals with the boxes as blocks (``analysis.stats.blocks``) and without them
(``benchmarks/stats/ray_blocks.py`` prints the full count; tests/unit/test_ray_blocks.py
runs a small version).

Two checks:

- ``race``: five candidates of an advise race, every candidate every round, every
  interval (SLO value and price) of every look from 2 runs against the truth: each
  candidate's level at the average box (the geometric mean over the boxes of its level
  there); a race misses when any interval of any look misses. A ``lost`` box leaves
  after round 4 (the design goes unbalanced).
- ``compare``: two modes interleaved A B A B over the boxes, the difference B - A
  (its level at the average box) with its interval, blocked against paired in the
  interleaved order (the pairs straddle boxes).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from xwatch.core.analysis.stats import race
from xwatch.core.analysis.stats.blocks import block_key, blocked_difference
from xwatch.core.analysis.stats.intervals import Interval
from xwatch.core.analysis.stats.runs import paired_interval
from xwatch.core.fleet import place

#: the five candidates' SLO levels (ms) and prices (samples/s) on a box of speed 1
LEVELS = (4.0, 4.6, 5.2, 3.6, 6.0)
PRICES = (1800.0, 1650.0, 1500.0, 1950.0, 1400.0)


@dataclass(frozen=True)
class Config:
    name: str
    boxes: tuple[float, ...]  # each box's slowdown (1.2: its latencies 20% longer)
    sigma: float = 0.03  # run effect on the SLO value (SD of its log)
    tau: float = 0.015  # run effect on the price (SD of its log)
    heavy: bool = False  # run effects Student t with 3 degrees of freedom (scaled)
    lost: bool = False  # the last box leaves after round 4
    whole_ms: bool = False  # SLO values printed in whole milliseconds


CONFIGS = (
    Config("one box of 3 20% slower", (1.0, 1.0, 1.2)),
    Config("boxes 0%, 10%, 20% slower, heavy tails", (1.0, 1.1, 1.2), heavy=True),
    Config("one of 3 20% slower, lost after round 4", (1.0, 1.0, 1.2), lost=True),
    Config("3 equal boxes", (1.0, 1.0, 1.0)),
    Config("whole milliseconds, one of 3 20% slower", (1.0, 1.0, 1.2), sigma=0.01,
           whole_ms=True),
)


def _effect(rng: random.Random, sd: float, heavy: bool) -> float:
    z = rng.gauss(0.0, 1.0)
    if heavy:  # t(3), scaled to unit variance
        z /= math.sqrt(rng.gammavariate(1.5, 2.0) / 3.0) * math.sqrt(3.0)
    return sd * z


def _boxes_of_round(n: int, alive: Sequence[int], batch0: int) -> tuple[list[int], int]:
    """The box of each of a round's ``n`` runs over the ``alive`` boxes (as
    ``fleet.plan.run_race``: batches of one run a box, each batch rotated), and the next
    batch's number."""
    out = [0] * n
    for c, rng in enumerate(place.chunks(n, len(alive))):
        queues, _ = place.place([frozenset()] * len(rng), [frozenset()] * len(alive),
                                batch0 + c)
        for b, js in enumerate(queues):
            for j in js:
                out[rng[j]] = alive[b]
    return out, batch0 + len(place.chunks(n, len(alive)))


@dataclass
class RaceCount:
    races: int = 0
    missed: int = 0
    missed_plain: int = 0
    #: the SLO's and the price's relative half-widths at 4 runs, blocked and not
    widths: dict[str, list[float]] | None = None

    def half(self, key: str) -> float:
        return statistics.median(self.widths[key]) if self.widths and self.widths[key] \
            else math.nan


def _half(iv: Interval) -> float:
    if iv.lo is None or iv.hi is None or not iv.lo > 0:
        return math.inf
    return math.log(iv.hi / iv.lo) / 2.0


def race_coverage(cfg: Config, races: int, looks: int, seed: int) -> RaceCount:
    """``races`` simulated races of ``looks`` rounds (looks 2..looks), counted."""
    rng = random.Random(seed)
    k = len(LEVELS)
    mean_log = sum(math.log(f) for f in cfg.boxes) / len(cfg.boxes)
    truth_slo = [math.log(v) + mean_log for v in LEVELS]
    truth_price = [math.log(p) - mean_log for p in PRICES]
    out = RaceCount(widths={"slo": [], "slo_plain": [], "price": [], "price_plain": []})
    for _ in range(races):
        blocked = [race.Candidate(f"c{i}", "native", {}) for i in range(k)]
        plain = [race.Candidate(f"c{i}", "native", {}) for i in range(k)]
        miss = miss_plain = False
        batch = 0
        for rnd in range(looks):
            alive = list(range(len(cfg.boxes)))
            if cfg.lost and rnd >= 4:
                alive = alive[:-1]
            where, batch = _boxes_of_round(k, alive, batch)
            for i in range(k):
                f = cfg.boxes[where[i]]
                slo = LEVELS[i] * f * math.exp(_effect(rng, cfg.sigma, cfg.heavy))
                price = PRICES[i] / f * math.exp(_effect(rng, cfg.tau, cfg.heavy))
                if cfg.whole_ms:
                    slo = float(round(slo))
                for c in (blocked[i], plain[i]):
                    c.slo_values.append(slo)
                    c.slo_ses.append(0.01 * slo)
                    c.prices.append(price)
                    c.price_res.append(12.8)  # one iteration of 128 samples over 10 s
                blocked[i].blocks.append(block_key(f"box{where[i]}", None))
            if rnd < 1:
                continue
            race.fit(blocked)
            race.fit(plain)
            for cands, mark in ((blocked, "b"), (plain, "p")):
                for i, c in enumerate(cands):
                    ok = _covers(c.slo, truth_slo[i]) and _covers(c.price, truth_price[i])
                    if not ok and mark == "b":
                        miss = True
                    elif not ok:
                        miss_plain = True
            if rnd == 3:
                w = out.widths or {}
                for i in range(k):
                    w["slo"].append(_half(blocked[i].slo))
                    w["slo_plain"].append(_half(plain[i].slo))
                    w["price"].append(_half(blocked[i].price))
                    w["price_plain"].append(_half(plain[i].price))
        out.races += 1
        out.missed += miss
        out.missed_plain += miss_plain
    return out


def _covers(iv: Interval, log_truth: float) -> bool:
    t = math.exp(log_truth)
    return (iv.lo is None or iv.lo <= t) and (iv.hi is None or t <= iv.hi)


@dataclass
class CompareCount:
    trials: int = 0
    covered: int = 0
    covered_plain: int = 0
    half: float = 0.0  # median half-width, blocked (ms)
    half_plain: float = 0.0
    least_half: float = math.inf  # the narrowest blocked half-width seen (ms)


def compare_coverage(cfg: Config, repeats: int, trials: int, seed: int,
                     base: float = 10.0, other: float = 11.0) -> CompareCount:
    """``trials`` simulated compares of two modes, ``repeats`` runs each, interleaved
    A B A B over the boxes in batches of one run a box, each batch rotated."""
    rng = random.Random(seed)
    mean_f = sum(cfg.boxes) / len(cfg.boxes)
    truth = (other - base) * mean_f
    out = CompareCount()
    halves: list[float] = []
    plain_halves: list[float] = []
    res = 1.0 if cfg.whole_ms else 0.0
    for _ in range(trials):
        where, _ = _boxes_of_round(2 * repeats, list(range(len(cfg.boxes))), 0)
        a: list[tuple[str, float]] = []
        b: list[tuple[str, float]] = []
        for j, box in enumerate(where):
            mu = base if j % 2 == 0 else other
            v = mu * cfg.boxes[box] * math.exp(_effect(rng, cfg.sigma, cfg.heavy))
            if cfg.whole_ms:
                v = float(round(v))
            (a if j % 2 == 0 else b).append((f"box{box}/", v))
        iv = blocked_difference(a, b, res, res)
        pv = paired_interval([v for _, v in a], [v for _, v in b], res, res)
        assert iv is not None and iv.lo is not None and iv.hi is not None
        assert pv.lo is not None and pv.hi is not None
        out.trials += 1
        out.covered += iv.lo <= truth <= iv.hi
        out.covered_plain += pv.lo <= truth <= pv.hi
        halves.append((iv.hi - iv.lo) / 2)
        plain_halves.append((pv.hi - pv.lo) / 2)
        out.least_half = min(out.least_half, (iv.hi - iv.lo) / 2)
    out.half = statistics.median(halves)
    out.half_plain = statistics.median(plain_halves)
    return out
