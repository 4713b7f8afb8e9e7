"""Which of an advise race's next runs go first when only part of a round fits the
budget (pure; ``plans.driver.fitting`` says how many fit): the likely choice (its SLO interval
under the objective is what any decision waits for), then the candidates closest to
being decided (the fewest rounds ``race.still_open`` says would tell them), then,
where the runs cannot say yet, its rivals: those under the objective by estimate,
the highest price first, then those over it, the nearest to the objective first.

The order only picks which runs are bought: every interval is still a candidate's
own runs at its own looks (``race``), so the promise over every look holds whichever
runs a round holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xwatch.core.analysis.stats import race
from xwatch.core.analysis.stats.race import Candidate, Objective


def ranked(cands: Sequence[Candidate], order: Sequence[Candidate],
           obj: Objective) -> list[Candidate]:
    """``order`` (the next round's candidates, ``race.to_run``) the most informative
    first (see the module); ties keep ``order``'s order."""
    likely = race.likely_choice(cands, obj)
    waits = race.still_open(cands, obj).waits

    def key(c: Candidate) -> tuple[bool, float, bool, float]:
        k = waits.get(c.label, ("", None))[1]
        est, price = c.slo.est, c.price.est
        under = est == est and est < obj.latency_ms
        near = -price if under and price == price else (
            math.log(est / obj.latency_ms) if est == est and est > 0 else math.inf)
        return (c is not likely, math.inf if k is None else float(k), not under, near)

    return sorted(order, key=key)
