"""The capacity search's per-look level for t looks (``analysis.capacity.loads.T_TABLE``):
for each alpha = 10^(-k/4), k = 4..20, the two-sided level that each of a load's looks at
2..10 runs may spend, with Student's t on the load's own runs alone (n - 1 degrees of
freedom, no pool: the case that spends the most), so that all nine looks together
cross with probability at most alpha.

Monte Carlo on Gaussian runs (the t statistics are scale-free, so one variance serves):
N paths of ten runs, the statistic |mean| sqrt(n) / sd at each look; a path crosses at
level a when some look's statistic exceeds t(1 - a/2, n - 1). The level is bisected so
that the crossing rate plus 2.33 of its binomial standard errors (a one-sided 99% upper
bound) stays at or under alpha, and printed as the table ``loads.py`` keeps. Only the
paths that cross at the known-variance Pocock level (an upper bound on the answer) are
kept per alpha, so memory stays small.

    python benchmarks/stats/t_looks.py [N_MILLIONS=200] [SEED=2026]

Takes about 5 minutes for 200 million paths on one core."""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from xwatch.core.analysis.capacity import loads
from xwatch.core.analysis.stats import sequential as seq

FIRST, LAST = 2, 10
KS = range(4, 21)
CHUNK = 1_000_000


def t_stats(rng: np.random.Generator, n: int) -> np.ndarray:
    """The looks' |t| statistics, one row a path (looks FIRST..LAST)."""
    x = rng.standard_normal((n, LAST))
    k = np.arange(1, LAST + 1)
    mean = np.cumsum(x, 1) / k
    ss = np.maximum(np.cumsum(x * x, 1) - k * mean ** 2, 0.0)  # rounding: never below 0
    m, d = mean[:, FIRST - 1:], k[FIRST - 1:]
    return (np.abs(m) * np.sqrt(d) / np.sqrt(ss[:, FIRST - 1:] / (d - 1))).astype(np.float32)


def quantiles(a: float) -> np.ndarray:
    return np.array([seq.t_quantile(1.0 - a / 2.0, n - 1) for n in range(FIRST, LAST + 1)],
                    dtype=np.float32)


def main(argv: list[str]) -> None:
    n_total = int(float(argv[0]) * 1e6) if argv else 200_000_000
    seed = int(argv[1]) if len(argv) > 1 else 2026
    rng = np.random.default_rng(seed)
    design = loads.Design(first=FIRST, max_runs=LAST)
    alphas = [10.0 ** (-k / 4) for k in KS]
    z_level = [loads.pocock_level(a, FIRST, LAST) for a in alphas]
    kept: list[list[np.ndarray]] = [[] for _ in alphas]
    t0, done = time.time(), 0
    while done < n_total:
        t = t_stats(rng, min(CHUNK, n_total - done))
        done += len(t)
        for i, az in enumerate(z_level):
            kept[i].append(t[(t > quantiles(az)).any(1)])
    print(f"# {done:,} paths, seed {seed}, {time.time() - t0:.0f} s; design {design}")
    rows = []
    for a, az, parts in zip(alphas, z_level, kept):
        t = np.concatenate(parts)

        def rate(level: float, t: np.ndarray = t) -> float:
            p = float((t > quantiles(level)).any(1).sum()) / done
            return p + 2.33 * math.sqrt(max(p, 1.0 / done) * (1.0 - p) / done)

        if rate(az) <= a:
            level = az
        else:
            lo, hi = az / 4.0, az
            while hi / lo > 1.0 + 1e-4:
                mid = math.sqrt(lo * hi)
                lo, hi = (mid, hi) if rate(mid) <= a else (lo, mid)
            level = lo
        rows.append(level)
        print(f"alpha {a:.3e}: z-Pocock each {az:.4e}, t each {level:.4e} "
              f"(x{az / level:.3f}); union {a / (LAST - FIRST + 1):.4e}; "
              f"{len(t):,} paths crossing at the z level", flush=True)
    print("T_TABLE = (" + ", ".join(f"{v:.4e}" for v in rows) + ")")


if __name__ == "__main__":
    main(sys.argv[1:])
