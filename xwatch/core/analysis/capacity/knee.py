"""Where a capacity search probes next (pure): the knee estimated from every load's
runs so far, and the rate that most narrows the bracket around it. Placement only:
no verdict is taken from here (``search`` judges each load on its own runs and the
pooled variance), so the bracket's promise never rests on the curve's shape; a poor
estimate costs runs, not coverage.

- **The curve** (``isotonic``): the loads' mean log SLO values, weighted by their runs,
  fitted non-decreasing in the load (pool-adjacent-violators): the SLO metric rises
  with the load, so a load whose estimate dips below a lower load's is pooled with it
  rather than read as a second crossing.
- **The knee** (``crossing``): where that fit crosses the objective, interpolated
  linearly in log load and log value between the last point under it and the first
  over it (a power law ``slo (r / K) ** k`` gives its knee exactly); beyond the loads
  probed, extrapolated along the slope of the last two distinct points (``SLOPE`` where
  there is no rise to go on).
- **The probe** (``place``): inside a bracket ``(lower, upper)`` wider than
  ``TARGET ** 2`` the knee estimate moved by ``TARGET ** HALF`` (or further, where the
  search says the curve is too flat for its runs to tell a load that near) to the side that leaves
  the narrower gap if it comes out as expected (the load just above the knee fails, the
  one just below meets, and the two end within ``TARGET``), kept ``EDGE`` of the gap's
  log width from its ends; in a bracket narrower than ``TARGET ** 2`` the rate that
  ends the search whichever way it is decided, as far from the knee estimate as that
  allows (the further from the knee, the fewer runs it needs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: the log-log slope taken where the loads show no rise yet (a queue is steeper)
SLOPE = 1.0
#: ``loads.Design.flat``'s (not xwatch's): where the loads show a rise of at most
#: ``SLOPE`` (one load, or a curve still on its floor: a service time), the knee is
#: extrapolated along the rise they show but no flatter than this, so that the step
#: grows with the margin (the SLO metric at 40% of the objective: ``2.5 ** 2``, bounded
#: by ``search.GROWTH``)
FLAT = 0.5
#: a probe keeps this share of the gap's log width from each end
EDGE = 0.15
#: a probe beside the knee estimate lies ``TARGET ** HALF`` from it: a pair either side
#: spans ``TARGET ** (2 HALF)``, within ``TARGET`` with room for rates given to three
#: figures (``search.nice``)
HALF = 0.45


def isotonic(ys: Sequence[float], ws: Sequence[float]) -> list[float]:
    """The weighted least-squares non-decreasing fit of ``ys`` (in the order given),
    by pool-adjacent-violators; weights > 0."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for y, w in zip(ys, ws):
        blocks.append([y, w, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    out: list[float] = []
    for m, _, c in blocks:
        out.extend([m] * int(c))
    return out


def crossing(rates: Sequence[float], logs: Sequence[float], ws: Sequence[float],
             objective: float, least: float = SLOPE) -> float | None:
    """The load at which the non-decreasing fit of the mean log values ``logs`` (at
    ``rates``, weighted by ``ws``) crosses ``log(objective)``: interpolated in log-log
    between the points either side, extrapolated beyond them along a slope of at least
    ``least`` (None: no load)."""
    got = _cross(rates, logs, ws, objective, least)
    return None if got is None else got[0]


def rise(rates: Sequence[float], logs: Sequence[float], ws: Sequence[float],
         objective: float, least: float = SLOPE) -> float:
    """The fit's log-log slope where it crosses the objective (``crossing``'s segment,
    or the slope it extrapolates along; ``least`` with no load)."""
    got = _cross(rates, logs, ws, objective, least)
    return least if got is None else got[1]


def _cross(rates: Sequence[float], logs: Sequence[float], ws: Sequence[float],
           objective: float, least: float = SLOPE) -> tuple[float, float] | None:
    pts = sorted(zip(rates, logs, ws))
    if not pts:
        return None
    xs = [math.log(r) for r, _, _ in pts]
    fit = isotonic([y for _, y, _ in pts], [w for _, _, w in pts])
    goal = math.log(objective)
    for i in range(1, len(xs)):
        if fit[i - 1] < goal <= fit[i]:
            slope = (fit[i] - fit[i - 1]) / (xs[i] - xs[i - 1])
            return math.exp(xs[i - 1] + (goal - fit[i - 1]) / slope), slope
    # beyond the loads: along the slope of the nearest two distinct fitted values
    end = len(xs) - 1 if fit[-1] < goal else 0
    others = [i for i in range(len(xs)) if fit[i] != fit[end]]
    near = (max(others) if end else min(others)) if others else None
    slope = least
    if near is not None:
        slope = max(least, (fit[end] - fit[near]) / (xs[end] - xs[near]))
    return math.exp(xs[end] + (goal - fit[end]) / slope), slope


def place(lower: float, upper: float, knee: float | None, target: float,
          off: float | None = None) -> float:
    """The next rate inside the bracket ``(lower, upper)`` (see the module): ``target``
    is the width to reach (``upper / lower`` at most); ``off``, how far from the knee
    estimate (log rate) a load is placed, where more than ``HALF`` of ``target``."""
    g = math.log(upper / lower)
    step = math.log(target)
    half = HALF * step if off is None else max(off, HALF * step)
    if g <= 2.0 * step:  # one probe ends it, whichever way it is decided
        a, b = math.log(upper) - step, math.log(lower) + step  # a <= b
        if knee is None:
            return math.exp((a + b) / 2.0)
        k = math.log(knee)
        return math.exp(a if abs(a - k) >= abs(b - k) else b)
    if knee is None:
        return math.sqrt(lower * upper)
    k = math.log(knee)
    up, down = k + half, k - half
    # as expected, ``up`` fails (the gap becomes lower..up), ``down`` meets (down..upper)
    x = up if up - math.log(lower) <= math.log(upper) - down else down
    lo_x, hi_x = math.log(lower) + EDGE * g, math.log(upper) - EDGE * g
    return math.exp(min(max(x, lo_x), hi_x))
