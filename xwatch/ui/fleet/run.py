"""The dashboard over a Ray cluster's boxes (``xwatch run --ray ADDRESS|auto``): the
plan run through the fleet's own path (``core.fleet.plan.run_steps``, as compare and
noise run it), on the app's event loop, and what the screen reads of it.

``FleetRun`` holds the plan's ``Fleet`` (its boxes, which are busy, lost, each one's
progress line, the phases as they end), its stop (the dashboard's quit, instead of
the signals, which Textual owns) and its outcome; ``FleetConsole`` keeps what the plan
says for the Logs tab; ``FleetController`` refuses the keys that start phases on this
machine (the boxes run the plan) and stops the plan on quit, every box's workloads
stopped before the app leaves.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from textual.app import App

from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.fleet import merge
from xwatch.core.fleet import plan as fp
from xwatch.core.fleet.connect import Box
from xwatch.core.plans.console import Console
from xwatch.core.plans.driver import Step
from xwatch.core.plans.options import Options
from xwatch.scenario import Scenario
from xwatch.ui.controller import PlanSaid, SessionController
from xwatch.ui.fleet.panel import BoxView


class FleetConsole(Console):
    """The plan's lines (``Fleet.out``) for the Logs tab, and kept for the terminal
    after the dashboard ends (``lines``)."""

    def __init__(self) -> None:
        super().__init__()
        self.app: App[int] | None = None
        self.lines: list[str] = []

    def say(self, text: str) -> None:
        self.lines.append(text)
        if self.app is not None:
            self.app.post_message(PlanSaid(text))

    def warn(self, text: str) -> None:
        self.say(text)
        if self.app is not None and text.startswith("FAILED"):
            self.app.notify(text, severity="error", timeout=12, markup=False)


class FleetRun:
    """One plan over the boxes for the dashboard: one phase of ``steps`` a box each
    round (``--repeat`` rounds; see the module)."""

    def __init__(self, ray: Any, boxes: list[Box], scen: Scenario, opts: Options,
                 args: argparse.Namespace | None, steps: list[Step]) -> None:
        self.ray, self.scen, self.opts, self.args, self.steps = ray, scen, opts, args, steps
        self.out = FleetConsole()
        self.fleet = fp.Fleet(ray, boxes, self.out)
        self.stop = asyncio.Event()
        self.outcome: fp.Outcome | None = None
        self._snap: tuple[int, SessionSnapshot | None] = (0, None)
        #: a phase's planned measured seconds (each box's "12 s of 30 s")
        self.phase_s = opts.phase_s(scen)

    async def run(self) -> None:
        """The plan, to its end or its stop (every agent closed either way)."""
        self.outcome = await fp.run_steps(self.ray, self.fleet.boxes, self.scen, self.opts,
                                          self.args, self.steps, fleet=self.fleet,
                                          stop=self.stop)

    def views(self) -> list[BoxView]:
        """Each box now: lost, running (its run, progress line and measured seconds) or
        idle; done once the plan ended."""
        f = self.fleet
        out = []
        for i, b in enumerate(f.boxes):
            state = "lost" if i in f.dead else "running" if i in f.busy else \
                "done" if self.outcome is not None else "idle"
            out.append(BoxView(host=b.host, node_id=b.node_id, gpus=b.gpus, state=state,
                               doing=f.busy.get(i), progress=f.progress.get(i),
                               measured_s=f.measured.get(i), planned_s=self.phase_s))
        return out

    def snapshot(self) -> SessionSnapshot | None:
        """The phases that ended so far as one session (``merge.merged``: the answer over
        them), rebuilt only when a phase ended; the plan's own snapshot at its end."""
        if self.outcome is not None:
            return self.outcome.snap
        phases = list(self.fleet.finished)
        if not phases:
            return None
        if self._snap[0] != len(phases):
            self._snap = (len(phases), merge.merged(self.scen, phases,
                                                    self.fleet.created_at))
        return self._snap[1]


class FleetController(SessionController):
    """The dashboard's controller over a fleet (see the module)."""

    def __init__(self, app: App[int], run: FleetRun) -> None:
        super().__init__(app, None, None)
        self.run = run

    def not_live(self) -> bool:
        self.app.notify("--ray: the boxes run the plan (one phase of "
                        f"{', '.join(s.mode for s in self.run.steps)} a box each round); "
                        "keys that start phases work on one box's dashboard (xwatch run "
                        "without --ray)", severity="warning", timeout=8)
        return True

    async def export(self) -> None:
        self.app.notify("--ray: the snapshot and its reports are written when the plan "
                        "ends, with --export DIR", timeout=6)

    async def quit(self) -> None:
        """Stop the plan (every box's workloads stopped, the agents closed), leave."""
        if self.quitting:
            return
        self.quitting = True
        self.run.stop.set()
        self.app.notify("stopping every box's workloads…", timeout=5)
        task = getattr(self.app, "fleet_task", None)
        if task is not None:
            await asyncio.wait({task}, timeout=60)
        self.app.exit(0)
