"""``xwatch calibrate``: four phases into one snapshot - the high-priority
workloads alone natively, alone under XSched, then everything natively and
everything under XSched - so that HIGH's latency change can be split into what
the shim itself costs, what contention costs, and what XSched gets back
(``analysis.calibrate``)."""

from __future__ import annotations

from typing import Any

from xwatch.core.analysis.calibrate import calibrate, high_names
from xwatch.core.modes.base import label
from xwatch.core.modes.registry import CALIBRATED
from xwatch.core.plans.driver import Driver, Plan, Step
from xwatch.core.plans.options import Backends, Options
from xwatch.errors import UsageError
from xwatch.scenario import Scenario

__all__ = ["CALIBRATED", "calibrate_steps", "run_calibrate", "verdict_lines"]


def calibrate_steps(scen: Scenario, mode: str = CALIBRATED) -> list[Step]:
    high = high_names(scen)
    if len(high) == len(scen.workloads):
        raise UsageError("calibrate needs workloads of lower priority than the highest "
                         f"(every workload of {scen.name} has the same priority)")
    name = label(mode)
    return [Step("native", label="HIGH alone, native", only=high, role="alone"),
            Step(mode, label=f"HIGH alone, {name}", only=high, role="alone"),
            Step("native", label="together, native", role="together"),
            Step(mode, label=f"together, {name}", role="together")]


async def run_calibrate(scen: Scenario, opts: Options, mode: str, backends: Backends) -> int:
    """Run the four phases; the report and the Compare tab show the decomposition,
    and the console ends with its verdict sentence, as the report has it."""
    return await Driver(scen, opts, backends).run(
        Plan(calibrate_steps(scen, mode), conclude=verdict_lines))


def verdict_lines(snap: Any) -> list[str]:
    """The console's last word: a title, then calibrate's verdict sentence."""
    cal = calibrate(snap)
    return [] if cal is None else ["calibration", cal.verdict]
