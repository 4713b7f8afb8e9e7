"""How long a capacity probe runs (pure): as long as it takes to give the SLO metric as
many values as a ``--duration`` run at the lowest rate asked (the run whose count
``plans.capacity.check_bounded`` vouches for), at least ``--shortest`` seconds.

Why: the percentile's within-run precision rests on how many values a run gives, not on
its seconds, so a run at 8 times the lowest rate needs an eighth of the time for the
same precision; the runs of one search then each give about the same count, which is
what the pooled variance (``sequential.moderated``) assumes. The floor ``--shortest``
keeps slow effects in every run (the work beside it: many of its iterations; a queue
near the knee: time to settle), and the part of the run-to-run variance that grows in a
shorter run is measured, not assumed: it is in the runs' spread that every interval is
built from (the simulation that checks the promise draws it: ``testing.capacity_sim``).
"""

from __future__ import annotations

import math

#: the default shortest run (s): a phase's start costs about 4 s on an H200, so a
#: shorter run saves little and keeps fewer of the work beside's iterations
SHORTEST_S = 5.0
#: run lengths are rounded up to this (s): tidy numbers in the console and snapshot
STEP_S = 0.5


def run_seconds(rate: float, lowest: float, duration: float, shortest: float) -> float:
    """A probe's measured seconds at ``rate`` (requests/s): ``duration`` at ``lowest``
    (the lowest rate asked), in proportion to ``lowest / rate`` above it, never under
    ``shortest`` nor over ``duration``, rounded up to ``STEP_S``."""
    if not rate > 0 or not lowest > 0:
        return duration
    want = duration * lowest / rate
    d = math.ceil(max(want, shortest) / STEP_S - 1e-9) * STEP_S
    return min(duration, d)
