"""Box and GPU as blocks: the level of each run's block removed before settings are
compared (pure, stdlib only).

Over a Ray cluster (``core.fleet``) each round's runs are placed over boxes x GPUs,
rotated as a Latin square, and each phase records its box (``Phase.box``) and GPU. A
box 20% slower than the others adds its difference to every run it holds; treated as
run-to-run variance, it widens every interval. Here the runs of the compared settings
are fitted by the two-way additive model (no interaction)::

    value = setting level + block level + error

by least squares (the normal equations solved exactly, the first block's level the
reference), which handles an unbalanced design (a lost node, a round that ran only some
candidates): a block whose runs are all one setting's fits that block's level and tells
nothing about the setting. What it gives (``additive``):

- each setting's level at the *average* block (``level``: its own level plus the mean of
  the block levels: on a balanced design the plain mean of its runs), and the factor of
  the error variance that is that level's variance (``var_factor``: 1/n on a balanced
  design, more when the design is unbalanced);
- a difference of two settings within a block (``diff``, ``diff_factor``);
- the residual sum of squares and its degrees of freedom, ``N - S - B + 1`` for ``N``
  runs of ``S`` settings over ``B`` connected blocks, each setting's share of both
  (``ss``, ``df``: the sum over its runs of ``1 - h_ii``, ``h`` the hat matrix; they sum
  to the residual degrees of freedom, and each setting's share of the sum of squares has
  that many times the error variance as its expectation).

One block (one box, one GPU) gives None: the callers then compute exactly what they did
before blocks existed. A design whose blocks do not connect the settings (a setting whose
every run is in blocks no other setting ran in) cannot tell a setting from its blocks:
None too, and the callers fall back to runs without blocks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from xwatch.core.analysis.stats.intervals import LOG_MAX, Interval
from xwatch.core.analysis.stats.resolution import widen
from xwatch.core.analysis.stats.runs import t95, t_ppf
from xwatch.core.analysis.stats.sequential import LogRuns

#: a pivot below this times the largest diagonal entry: the design is singular
_SINGULAR = 1e-10


def block_key(box: str | None, gpu: int | None) -> str:
    """A run's block: its box (``Box.short``; "" on one machine) and its GPU (where
    the run is one GPU's copy; None: every GPU's copies, or one device)."""
    return f"{box or ''}/{'' if gpu is None else gpu}"


@dataclass(frozen=True)
class Additive:
    """The fitted additive model ``setting + block`` (see the module docstring)."""

    settings: tuple[str, ...]
    blocks: tuple[str, ...]
    coef: tuple[float, ...]  # setting levels (in block 0), then blocks 1.. against block 0
    inv: tuple[tuple[float, ...], ...]  # (X'X)^-1
    ss: dict[str, float]  # each setting's residual sum of squares
    df: dict[str, float]  # each setting's share of the residual degrees of freedom
    runs: dict[str, int]
    resid_df: int  # N - S - B + 1: runs less the parameters fitted

    @property
    def resid_ss(self) -> float:
        return sum(self.ss.values())

    def _contrast(self, weights: dict[str, float]) -> list[float]:
        s, b = len(self.settings), len(self.blocks)
        a = [weights.get(x, 0.0) for x in self.settings] + [0.0] * (b - 1)
        total = sum(weights.values())
        for j in range(1, b):  # the mean block's level, with weight ``total``
            a[s + j - 1] = total / b
        return a

    def _value(self, a: Sequence[float]) -> float:
        return sum(x * c for x, c in zip(a, self.coef))

    def _factor(self, a: Sequence[float]) -> float:
        return sum(a[i] * self.inv[i][j] * a[j] for i in range(len(a)) for j in range(len(a)))

    def level(self, setting: str) -> float:
        """The setting's level at the average block."""
        return self._value(self._contrast({setting: 1.0}))

    def var_factor(self, setting: str) -> float:
        """Var(level) / error variance."""
        return self._factor(self._contrast({setting: 1.0}))

    def diff(self, a: str, b: str) -> float:
        """b - a within a block."""
        return self._value(self._contrast({b: 1.0, a: -1.0}))

    def diff_factor(self, a: str, b: str) -> float:
        return self._factor(self._contrast({b: 1.0, a: -1.0}))

    def _block_contrast(self, block: str) -> list[float]:
        """The block's level less the mean of the other blocks' levels."""
        s, n = len(self.settings), len(self.blocks)
        a = [0.0] * (s + n - 1)
        k = self.blocks.index(block)
        for j in range(1, n):
            a[s + j - 1] = 1.0 if j == k else -1.0 / (n - 1)
        return a

    def block_effect(self, block: str) -> tuple[float, float]:
        """The block's level against the mean of the others' (each setting's level
        removed), and the factor of the error variance that is its variance."""
        a = self._block_contrast(block)
        return self._value(a), self._factor(a)


def _inverse(m: list[list[float]]) -> list[list[float]] | None:
    """The inverse of a symmetric matrix by Gauss-Jordan with partial pivoting (None:
    singular)."""
    n = len(m)
    a = [row[:] + [1.0 if i == j else 0.0 for j in range(n)] for i, row in enumerate(m)]
    scale = max((abs(m[i][i]) for i in range(n)), default=0.0)
    if not scale > 0:
        return None
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(a[r][c]))
        if abs(a[p][c]) < _SINGULAR * scale:
            return None
        a[c], a[p] = a[p], a[c]
        piv = a[c][c]
        a[c] = [x / piv for x in a[c]]
        for r in range(n):
            if r != c and a[r][c] != 0.0:
                f = a[r][c]
                a[r] = [x - f * y for x, y in zip(a[r], a[c])]
    return [row[n:] for row in a]


def additive(rows: Sequence[tuple[str, str, float]]) -> Additive | None:
    """The additive model fitted to ``rows`` (setting, block, value; NaN values left
    out). None: fewer than two blocks, or the blocks do not connect the settings."""
    rows = [(s, b, v) for s, b, v in rows if v == v and not math.isinf(v)]
    settings = tuple(dict.fromkeys(s for s, _, _ in rows))
    blocks = tuple(dict.fromkeys(b for _, b, _ in rows))
    if len(blocks) < 2 or not settings:
        return None
    si = {s: i for i, s in enumerate(settings)}
    bi = {b: i for i, b in enumerate(blocks)}
    p = len(settings) + len(blocks) - 1

    def x_of(s: str, b: str) -> list[int]:
        x = [0] * p
        x[si[s]] = 1
        if bi[b]:
            x[len(settings) + bi[b] - 1] = 1
        return x

    xs = [x_of(s, b) for s, b, _ in rows]
    xtx = [[float(sum(x[i] * x[j] for x in xs)) for j in range(p)] for i in range(p)]
    inv = _inverse(xtx)
    if inv is None:
        return None
    xty = [sum(x[i] * v for x, (_, _, v) in zip(xs, rows)) for i in range(p)]
    coef = [sum(inv[i][j] * xty[j] for j in range(p)) for i in range(p)]
    ss = dict.fromkeys(settings, 0.0)
    df = dict.fromkeys(settings, 0.0)
    runs = dict.fromkeys(settings, 0)
    for x, (s, _, v) in zip(xs, rows):
        on = [i for i in range(p) if x[i]]
        e = v - sum(coef[i] for i in on)
        h = sum(inv[i][j] for i in on for j in on)
        ss[s] += e * e
        df[s] += 1.0 - h
        runs[s] += 1
    return Additive(settings, blocks, tuple(coef), tuple(tuple(r) for r in inv), ss,
                    {s: max(0.0, d) for s, d in df.items()}, runs, len(rows) - p)


def blocked_difference(a: Sequence[tuple[str, float]], b: Sequence[tuple[str, float]],
                       res_a: float = 0.0, res_b: float = 0.0) -> Interval | None:
    """B - A (each a run's (block, value)) within a block, with its 95% t interval on
    the additive model's residual degrees of freedom, never narrower than the values'
    resolution (as ``runs.paired_interval``: the error variance taken as at least
    ``(res_a² + res_b²) / 24`` a run, which on a balanced design adds the paired
    difference's ``(res_a² + res_b²) / 12`` a pair, and at least ``± (res_a + res_b) /
    2``). None: one block, a design that cannot separate the two settings from their
    blocks, or no residual degree of freedom."""
    fit = additive([("a", k, v) for k, v in a] + [("b", k, v) for k, v in b])
    if fit is None or "a" not in fit.runs or "b" not in fit.runs:
        return None
    dfree = fit.resid_df
    if dfree < 1:
        return None
    var = fit.resid_ss / dfree + (res_a * res_a + res_b * res_b) / 24.0
    est = fit.diff("a", "b")
    half = t95(dfree) * math.sqrt(var * fit.diff_factor("a", "b"))
    lo, hi = widen(est - half, est + half, est, res_a + res_b)
    return Interval(est, lo, hi)


def _logs(values: Sequence[float]) -> list[float]:
    """``values`` on the log scale as ``sequential.log_runs`` takes them (NaN kept in
    place; at or below 0: a tenth of the smallest positive one)."""
    pos = [v for v in values if v == v and not math.isinf(v) and v > 0]
    tiny = min(pos) / 10.0 if pos else 1.0
    return [math.log(max(v, tiny)) if v == v and not math.isinf(v) else math.nan
            for v in values]


def blocked_runs(runs: dict[str, LogRuns | None],
                 values: Mapping[str, tuple[Sequence[float], Sequence[str]]]
                 ) -> dict[str, LogRuns | None]:
    """Each setting's runs on the log scale (``sequential.log_runs``) with its blocks'
    levels removed: its level at the average block, its share of the additive model's
    residual sum of squares and degrees of freedom, and its effective number of runs
    (``LogRuns.dof``, ``LogRuns.n_eff``; the floor, resolution and bounds as they were).
    ``values``: each setting's run values and their blocks, in order. ``runs`` unchanged
    where any setting's runs lack their blocks, where the runs are in one block, or where
    the blocks do not connect the settings (``additive``)."""
    if any(len(vs) != len(bs) for vs, bs in values.values()):
        return runs
    rows = [(s, b, x) for s, (vs, bs) in values.items() if runs.get(s) is not None
            for x, b in zip(_logs(vs), bs)]
    fit = additive(rows)
    if fit is None:
        return runs
    out: dict[str, LogRuns | None] = {}
    for s, r in runs.items():
        if r is None or s not in fit.runs:
            out[s] = r
            continue
        vf = fit.var_factor(s)
        out[s] = replace(r, mean=fit.level(s), ss=fit.ss[s], dof=fit.df[s],
                         n_eff=1.0 / vf if vf > 0 else None)
    return out


def slower_blocks(rows: Sequence[tuple[str, str, float]], alpha: float = 0.05
                  ) -> list[tuple[str, Interval]]:
    """The blocks whose level is above the mean of the others' beyond noise: each
    block's effect on the log scale (``rows``: setting, block, value > 0) with its t
    interval on the residual degrees of freedom, ``alpha`` spread over the blocks, and
    those whose interval lies above 0, as ratios (1.18: 18% above the others)."""
    fit = additive([(s, b, math.log(v)) for s, b, v in rows if v == v and v > 0])
    if fit is None or fit.resid_df < 1:
        return []
    var = fit.resid_ss / fit.resid_df
    t = t_ppf(1.0 - alpha / (2 * len(fit.blocks)), fit.resid_df)
    out = []
    for b in fit.blocks:
        est, f = fit.block_effect(b)
        half = t * math.sqrt(var * f)
        if est - half > 0:
            top = est + half  # beyond any float (a t of thousands on 1 df): open above
            out.append((b, Interval(math.exp(est), math.exp(est - half),
                                    math.exp(top) if top <= LOG_MAX else None)))
    return out


def blocks_of(keys: Sequence[str]) -> tuple[int, int]:
    """How many boxes and how many blocks (box x GPU) ``block_key``s name."""
    return len({k.rpartition("/")[0] for k in keys}), len(set(keys))


def race_note(runs: Sequence[tuple[str, Sequence[float], Sequence[str]]]) -> str:
    """What a race's intervals add to their description where its runs were blocked
    (each candidate's label, run values and blocks, as ``blocked_runs`` takes them):
    the boxes and blocks; "" where they were not (one block, runs without blocks, a
    design that does not connect the candidates)."""
    if any(len(vs) != len(bs) for _, vs, bs in runs):
        return ""
    if additive([(s, b, v) for s, vs, bs in runs for v, b in zip(vs, bs)]) is None:
        return ""
    boxes, n = blocks_of([b for _, _, bs in runs for b in bs])
    gpus = f" (box x GPU: {n} blocks)" if n > boxes else ""
    return (f"; box is a block: {boxes} boxes{gpus}, each block's level removed before "
            "the candidates are compared (an additive model, candidate + block, on the "
            "log scale)")
