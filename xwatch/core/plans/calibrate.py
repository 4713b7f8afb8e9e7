"""``xwatch calibrate``: four phases into one snapshot - the high-priority
workloads alone natively, alone under XSched, then everything natively and
everything under XSched - so that HIGH's latency change can be split into what
the shim itself costs, what contention costs, and what XSched gets back
(``analysis.calibrate``)."""

from __future__ import annotations

import argparse
from typing import Any

from xwatch.core.analysis.calibrate import high_names
from xwatch.core.plans.headless import Step, run_plan
from xwatch.errors import UsageError
from xwatch.scenario import Scenario


def calibrate_steps(scen: Scenario) -> list[Step]:
    high = high_names(scen)
    if len(high) == len(scen.workloads):
        raise UsageError("calibrate needs workloads of lower priority than the highest "
                         f"(every workload of {scen.name} has the same priority)")
    return [Step("native", label="HIGH alone, native", only=high, role="alone"),
            Step("xsched", label="HIGH alone, XSched", only=high, role="alone"),
            Step("native", label="together, native", role="together"),
            Step("xsched", label="together, XSched", role="together")]


async def run_calibrate(scen: Scenario, args: argparse.Namespace, controller: Any) -> int:
    """Run the four phases; the report and the Compare tab show the decomposition."""
    return await run_plan(scen, args, calibrate_steps(scen), controller)
