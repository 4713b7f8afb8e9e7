"""The dashboard of ``xwatch run --ray`` mid-plan, without a cluster, for the UI tests:
the boxes of a recorded 3-box compare (``tests/data/fleet/three_boxes.json.gz``), each
running its phase with the progress line and measured seconds its agent reports
(``Fleet.busy``, ``progress``, ``measured``, as the plan's ticker fills them), the plan
held until the dashboard quits (``HeldRun.run`` waits for its stop), and the first
``ended`` boxes' recorded phases ended (``Fleet.finished``, as the plan appends them).
Deterministic, for SVG snapshots. The real plan over a cluster:
tests/integration/test_fleet_ray.py."""

from __future__ import annotations

from pathlib import Path

from xwatch.core.export.snapshot import load_snapshot
from xwatch.core.fleet.connect import Box
from xwatch.core.plans.driver import Step
from xwatch.core.plans.options import Options
from xwatch.ui.app import XwatchApp, make_app
from xwatch.ui.fleet.run import FleetRun

FLEET = Path(__file__).resolve().parents[1] / "data" / "fleet" / "three_boxes.json.gz"


class HeldRun(FleetRun):
    """The dashboard's plan, its boxes' state set by the test: it runs nothing and ends
    when the dashboard stops it (``q``)."""

    async def run(self) -> None:
        await self.stop.wait()


def running_fleet(ended: int = 0) -> tuple[XwatchApp, HeldRun]:
    """The app over the recorded boxes: the first ``ended`` boxes' phases ended, every
    other box running ``native rN``, 1 s measured of its 2 s (the last one loading)."""
    snap = load_snapshot(FLEET)
    nodes = sorted({(p.box.node_id, p.box.host) for p in snap.phases if p.box is not None})
    boxes = [Box(node_id=n, host=h, address="127.0.0.1", gpus=0) for n, h in nodes]
    run = HeldRun(None, boxes, snap.scenario, Options(telemetry="off"), None, [Step("native")])
    f = run.fleet
    for i, b in enumerate(boxes):
        if i < ended:
            f.finished.extend(p for p in snap.phases if p.box is not None
                              and p.box.node_id == b.node_id)
            continue
        f.busy[i] = f"native r{i + 1}"
        loading = i == len(boxes) - 1
        f.progress[i] = "native-1 loading" if loading else \
            f"native-1 1s high@1 n={60 + i} p99=1.90ms"
        f.measured[i] = None if loading else 1.0
    return make_app(snap.scenario, run.opts, fleet=run), run
