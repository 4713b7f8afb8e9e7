"""``xwatch capacity``'s plan (``run``): the searches over the one runner, each round's
probes, the budget, the record."""

from xwatch.core.plans.capacity.run import (
    DEDICATED,
    LOW_ALONE,
    CapacityRun,
    make_run,
    parse_rates,
    run_capacity,
)

__all__ = ["DEDICATED", "LOW_ALONE", "CapacityRun", "make_run", "parse_rates", "run_capacity"]
