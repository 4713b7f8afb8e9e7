"""Which of a capacity round's loads go first when only part of the round fits the
budget (pure; ``plans.driver.fitting`` says how many fit): those closest to being decided;
and, for a search the budget ends, what its next load still needed (``still``).

A load's key, smallest first:

1. the runs it still needs for its verdict: as its mean and the pooled variance stand
   (``loads.runs_to_clear``, at least 1), else the runs to its first look
   (``Design.first`` less those it has); LOW alone, the runs of it still to come;
2. its search's bracket, the log of ``failed / met`` (a side missing: infinite): the
   narrower, the nearer its search is to done;
3. the dedicated search before the others (its bracket divides every share).

The order only picks which runs are bought: every verdict is still a load's own runs
at its own looks (``search``), so the bracket's promise holds whichever runs a round
holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xwatch.core.analysis.capacity import search as cap
from xwatch.core.analysis.capacity.loads import runs_to_clear
from xwatch.core.analysis.stats import sequential as seq


def runs_needed(hunt: cap.Hunt, s: cap.Search, rate: float) -> int:
    """The runs the load ``rate`` of ``s`` still needs for its verdict (key 1)."""
    d = hunt.design
    ld = s.loads.get(rate)
    if ld is None or ld.runs < d.first:
        early = d.first - (0 if ld is None else ld.runs)
        if ld is not None and s.runaways and ld.slo and ld.slo[0] < hunt.slo_ms:
            early = max(early, d.wary - ld.runs)  # met only on ``Design.wary`` runs there
        return early
    r = seq.log_runs(ld.slo, ld.ses, bounded=ld.bounded)
    k = None if r is None else runs_to_clear(r, hunt.prior, hunt.slo_ms,
                                             2.0 * hunt.load_alpha(), d, not s.runaways)
    need = max(1, d.max_runs + 1 if k is None else k)
    if s.runaways and r is not None and r.mean < math.log(hunt.slo_ms):
        need = max(need, d.wary - ld.runs)  # met only on ``Design.wary`` runs there
    return need


def ranked(hunt: cap.Hunt, entries: Sequence[tuple[cap.Search | None, float]]) -> list[int]:
    """The positions of ``entries`` (a search's load, or LOW alone: ``None``) the most
    informative first (see the module); ties keep their order."""
    def key(i: int) -> tuple[int, float, bool]:
        s, rate = entries[i]
        if s is None:
            return max(1, cap.LOW_RUNS - len(hunt.low_alone)), math.inf, True
        m, f = s.met(), s.failed()
        width = math.log(f / m) if m and f else math.inf
        return runs_needed(hunt, s, rate), width, not s.dedicated

    return sorted(range(len(entries)), key=key)


def still(hunt: cap.Hunt, s: cap.Search) -> str:
    """What ``s``'s next load still needed when the budget ended, for its reason: "its
    next load, 243 req/s (2 runs), needed about 6 more runs for a verdict, as its runs
    stand" (``runs_needed``), "... was not yet run", or "... needed 1 more before its
    first look"; "" where it has no next load."""
    rate = s.next
    if rate is None or not s.alive:
        return ""
    k = runs_needed(hunt, s, rate)
    ld = s.loads.get(rate)
    runs = 0 if ld is None else ld.runs
    what = f"its next load, {rate:g} req/s"
    if not runs:
        return f"{what}, was not yet run"
    what += f" ({runs} run{'s' * (runs != 1)})"
    if k > hunt.design.max_runs:
        return f"{what}, could not be told from the objective within {hunt.design.max_runs} runs"
    if runs + k <= hunt.design.first:
        return f"{what}, needed {k} more before its first look"
    return (f"{what}, needed about {k} more run{'s' * (k != 1)} for a verdict, as its "
            "runs stand")
