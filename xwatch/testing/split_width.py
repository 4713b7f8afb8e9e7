"""``compare --layout split`` against one phase per mode at equal wall time, simulated with
run-shared effects: each design's interval widths and their coverage of a known truth
(``benchmarks/stats/split_width_sim.py`` prints them; tests/unit/test_split_sim.py checks
them)."""


from __future__ import annotations

import math
import random
from collections.abc import Sequence

from xwatch.core.analysis.stats.copies import combine
from xwatch.core.analysis.stats.intervals import Interval
from xwatch.core.analysis.stats.resolution import resolution_ms
from xwatch.core.analysis.stats.runs import RunValue, paired_interval
from xwatch.core.engine.stats import bucket_index, bucket_value
from xwatch.core.plans.box import split_gpus

#: (copy, run-shared, GPU) SDs of the log metric, issue 51's noise run
STRUCTURES = {"HIGH P50": (0.034, 0.025, 0.0), "HIGH P99": (0.15, 0.0, 0.023)}
MODES = ("a", "b")


def _run_value(vals: Sequence[float]) -> float:
    return combine([RunValue(v, math.nan) for v in vals], "log").est


def session(design: str, sds: tuple[float, float, float], gpus: int, rounds: int,
            rng: random.Random, base_ms: float = 20.0, effect: float = 0.0
            ) -> tuple[Interval, float]:
    """One simulated compare of two modes (B = A x e^effect) with ``rounds`` repeats of
    the replicate layout, or as many phases of wall time split (``rounds * 2``): the
    product's interval of B - A (ms) and the truth it estimates (the expected paired
    difference over this box's GPUs, run and copy effects included)."""
    sc, sr, sg = sds
    box = list(range(gpus))
    fx = [rng.gauss(0.0, sg) for _ in box]

    def copy(g: int, run: float, mode: str) -> float:
        d = effect if mode == "b" else 0.0
        return bucket_value(bucket_index(base_ms * math.exp(d + run + fx[g]
                                                              + rng.gauss(0.0, sc))))

    a: list[float] = []
    b: list[float] = []
    every_a: list[float] = []
    every_b: list[float] = []
    sets: list[list[int]] = []  # the GPUs each run of B used (A: the rest)
    if design == "replicate":
        for _ in range(rounds):
            for mode, out, every in (("a", a, every_a), ("b", b, every_b)):
                run = rng.gauss(0.0, sr)
                vals = [copy(g, run, mode) for g in box]
                every += vals
                out.append(_run_value(vals))
            sets.append(box)
    elif design == "split":
        for r in range(rounds * len(MODES)):
            placed = split_gpus(MODES, box, r)
            run = rng.gauss(0.0, sr)
            va = [copy(g, run, "a") for g in box if placed[g] == "a"]
            vb = [copy(g, run, "b") for g in box if placed[g] == "b"]
            every_a += va
            every_b += vb
            a.append(_run_value(va))
            b.append(_run_value(vb))
            sets.append([g for g in box if placed[g] == "b"])
    else:
        raise ValueError(f"design {design!r}: replicate or split")
    iv = paired_interval(a, b, resolution_ms(every_a), resolution_ms(every_b))
    # the truth: each run's expected B - A given this box's GPU effects, averaged over
    # the runs' GPU sets (E[e^run] and E[e^mean copy noise] are log-normal means)
    truth = 0.0
    for s in sets:
        sa = s if design == "replicate" else [g for g in box if g not in s]
        n_a, n_b = len(sa), len(s)
        ea = math.exp(sum(fx[g] for g in sa) / n_a + sc ** 2 / (2 * n_a))
        eb = math.exp(effect + sum(fx[g] for g in s) / n_b + sc ** 2 / (2 * n_b))
        truth += base_ms * math.exp(sr ** 2 / 2) * (eb - ea)
    return iv, truth / len(sets)


def width_and_coverage(design: str, sds: tuple[float, float, float], gpus: int, rounds: int,
                       sims: int, seed: int, effect: float = 0.1, base_ms: float = 20.0
                       ) -> tuple[float, float]:
    """(the mean width relative to ``base_ms``, the share of intervals covering the truth)."""
    rng = random.Random(seed)
    width = covered = 0.0
    for _ in range(sims):
        iv, truth = session(design, sds, gpus, rounds, rng, base_ms, effect)
        assert iv.lo is not None and iv.hi is not None
        width += (iv.hi - iv.lo) / base_ms
        covered += iv.lo <= truth <= iv.hi
    return width / sims, covered / sims


def predicted_ratio(sds: tuple[float, float, float], gpus: int, modes: int = 2) -> float:
    """split / replicate SD of the mean paired difference at equal wall time (the
    t quantiles aside: split has m times the runs, so also more degrees of freedom)."""
    sc, sr, sg = sds
    rep = 2 * (sr ** 2 + sc ** 2 / gpus)
    per = gpus / modes
    split = 2 * sc ** 2 / per + 2 * sg ** 2 / per
    return math.sqrt(split / modes / rep)
