"""The dashboard of ``xwatch run --ray`` driven by Textual's pilot, for
``test_fleet_ray`` (run inside the cluster's network namespace: ``python -m
tests.integration.fleet_dashboard_pilot ADDRESS SCENARIO EXPORT [quit]``): built as the
command builds it (``cli.fleet.fleet_dashboard``), watched until its plan ends, then
quit (``quit``: quit as soon as every box runs its phase, the plan stopped by ``q``);
prints one JSON line: the boxes panel's text while the phases ran and at the end, the
latency chart's text while they ran and none had ended, the plan's exit status, each box's id, and what
the command prints once the dashboard has left (``cli.fleet.dashboard_end``)."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from textual.geometry import Region

from xwatch.cli.checks import scenario_of
from xwatch.cli.fleet import dashboard_end, fleet_dashboard
from xwatch.cli.parser import build_parser
from xwatch.ui.fleet.panel import BoxesPanel
from xwatch.ui.widgets.charts import LatencyChart


def chart_text(chart: LatencyChart) -> str:
    w, h = chart.size
    return "\n".join(s.text.rstrip() for s in chart.render_lines(Region(0, 0, w, h)))


async def main(address: str, scenario: str, export: str, how: str = "end"
               ) -> dict[str, object]:
    args = build_parser().parse_args(["run", scenario, "--ray", address, "--telemetry",
                                      "off", "--gpus", "0,1", "--export", export])
    app, run = fleet_dashboard(args, scenario_of(args))
    running: list[str] = []
    charts: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 90
        while (app.fleet_task is None or not app.fleet_task.done()) and \
                time.monotonic() < deadline:
            await pilot.pause(0.25)
            app.refresh_view()
            text = str(app.query_one(BoxesPanel).render())
            if "running, results when it ends" in text and "so far:" in text:
                running.append(text)
                if not run.fleet.finished:  # no phase's numbers yet
                    charts.append(chart_text(app.query_one(LatencyChart)))
                if how == "quit" and text.count("so far: ") == len(run.fleet.boxes) and \
                        "so far: starting" not in text and not app.ctl.quitting:
                    await pilot.press("q")  # every box mid-phase: the plan stopped
        await pilot.pause()
        app.refresh_view()
        final = str(app.query_one(BoxesPanel).render())
        await pilot.press("q")
        await pilot.pause()
    return {"running": running[-1] if running else None, "final": final,
            "chart": charts[-1] if charts else None,
            "status": run.outcome.status if run.outcome else None,
            "boxes": [b.node_id for b in run.fleet.boxes], "end": dashboard_end(run)}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:5]))), flush=True)
