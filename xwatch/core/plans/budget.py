"""How much of a race's next round fits in what is left of ``--budget`` (pure), for
advise's race (``plans.advise.Race``) and capacity's searches (``plans.capacity``)
alike: the whole round where it fits; else the part of it that does, its entries
taken in the order the plan ranks them (the most informative first:
``analysis.stats.first``, ``analysis.capacity.first``), so that budget that could buy
evidence is never left unused; nothing once not even one entry fits.

A phase's expected cost is the mean of the phases so far (the time used over the
phases recorded, the plan's start included): no phase is started that this says
would end past the budget.
"""

from __future__ import annotations

from collections.abc import Callable


def per_phase(used_s: float, phases: int) -> float:
    """A phase's expected cost: the mean phase's time so far."""
    return used_s / max(1, phases)


def fitting(count: int, phases_of: Callable[[int], int], used_s: float, phases: int,
            budget_s: float) -> int:
    """The most entries ``k <= count`` (the first ``k`` in rank order) whose phases
    (``phases_of(k)``: ``k`` on one device, fewer on a box of GPUs) end within
    ``budget_s`` at the mean phase's time so far: ``count`` when the round fits, 0
    when not even one entry does."""
    cost = per_phase(used_s, phases)
    for k in range(count, 0, -1):
        if used_s + cost * phases_of(k) <= budget_s:
            return k
    return 0


def partial_line(what: str, k: int, n: int, used_s: float, phases: int,
                 budget_s: float) -> str:
    """The console's line for a partial round."""
    return (f"xwatch: {what}: a partial round: {k} of {n} runs fit in the budget "
            f"({(budget_s - used_s) / 60:.1f} min left at {per_phase(used_s, phases):.0f} s "
            f"a phase), the most informative first")
