"""A workload's requests due by the measured end and never completed (pure): which an
open-loop workload's schedule says were cut (``cut``), their waits as censored
latencies (``censored``), and a server's TTFT for them (``cut_ttft``).
``WorkloadRun.count_unfinished`` puts them together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xwatch.core.engine.stats import Moments
from xwatch.core.engine.worker.arrivals import due_times


def cut(ready_t0: float, rate: float, arrival: str, seed: int, burstiness: float,
        end: float, max_seq: int, holes: set[int], limit: int | None
        ) -> list[tuple[int, float]]:
    """The requests (number, scheduled send) due by ``end`` on the schedule from
    ``ready_t0`` and not counted: past the highest counted (``max_seq``) or skipped
    below it (``holes``: a server's requests end in any order)."""
    low = min(holes) - 1 if holes else max_seq  # the lowest not counted
    dues = due_times(ready_t0, rate, arrival, seed, end, skip=low, burstiness=burstiness,
                     limit=limit)
    return [(i, t) for i, t in enumerate(dues, low + 1) if i > max_seq or i in holes]


def censored(waits: Sequence[float], fastest: float) -> Moments:
    """The waits so far as latencies of at least that long, none below the fastest
    completed request (no request is served faster than the fastest one was)."""
    m = Moments()
    for w in waits:
        m.add(max(w, fastest))
    return m


def cut_ttft(cut: Sequence[tuple[int, float]], end: float,
             known: Mapping[int, tuple[float, float]], fastest: float) -> tuple[Moments, str]:
    """A server's cut requests' TTFT, and the unfinished note's words on it: where a request's
    first token came by ``end`` (``known``: its ``first`` event, the TTFT and when),
    that TTFT; else at least its wait (raised to the fastest TTFT answered), as the
    request latency takes a cut request. Without it a server that falls behind would
    read its TTFT from the requests it answered alone (docs/serving.md)."""
    m = Moments()
    seen = 0
    for i, t_due in cut:
        got = known.get(i)
        if got is not None and got[1] <= end:
            m.add(got[0])
            seen += 1
        else:
            m.add(max((end - t_due) * 1e3, fastest))
    return m, (f"; their TTFT in its percentiles: {seen} from their first token, "
               f"{m.n - seen} at least their wait")


def limit(requests: int | None, drain: tuple[int, bool] | None) -> int | None:
    """The most requests the schedule sends: the workload's ``requests``, or those sent
    before a drain, the fewer."""
    return min((n for n in (requests, drain[0] if drain else None) if n is not None),
               default=None)
