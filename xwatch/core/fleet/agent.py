"""One box's side of a fleet plan, without Ray: ``BoxSession`` runs the phases the
command's process sends (``BoxWork``) with the local runner's own code, one
``Driver.step`` a phase in a session of this box, and answers each with its phase's
snapshot, named by its box. The Ray actor (``actor.BoxAgent``) holds one; the GPU
plan ``benchmarks/gpu/plans/ray-agent.sh`` drives one directly (``run_local``).

Before its phases, a box checks each mode the plan runs the way the command line does
(``registry.configure``, then ``check_now``): a mode that cannot run here (no XSched
install, no MPS rights) is refused on this box, with why (``preflight``), and the
command's process places none of its runs here.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from msgspec.structs import replace

from xwatch.core import model as M
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.snapshot import PhaseSnapshot
from xwatch.core.modes import registry
from xwatch.core.modes.base import NATIVE, ModeBackend
from xwatch.core.plans.driver import Driver, Step
from xwatch.core.plans.options import Backends, Options
from xwatch.core.plans.runner import Ending
from xwatch.errors import XwatchError
from xwatch.scenario import Scenario


@dataclass(frozen=True)
class BoxWork:
    """One phase for a box: its step (without backends: they are this box's, built
    here), the plan's round, its measured seconds, and the scenario each mode's backend
    is built for (a candidate's settings, a box phase's copies; absent: the backend as
    configured on this box)."""

    step: Step
    rnd: int
    duration_s: float
    scenarios: Mapping[str, Scenario] = field(default_factory=dict)


@dataclass(frozen=True)
class BoxResult:
    """A phase's answer: its snapshot named by its box (None: it never started) and the
    lines the box's driver said meanwhile."""

    phase: PhaseSnapshot | None
    lines: tuple[str, ...] = ()


class Relay:
    """The box's observer (``driver.Observer``): keeps what a phase says, and its latest
    tick for the command's progress line."""

    ticks = True

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.last: PhaseSnapshot | None = None

    def say(self, text: str) -> None:
        self.lines.append(text)

    def warn(self, text: str) -> None:
        self.lines.append(text)

    def tick(self, phase: PhaseSnapshot) -> None:
        self.last = phase

    def refused(self, err: XwatchError) -> None:
        self.lines.append(f"xwatch: {err.title}: {err}")

    def phase_ended(self, phase: PhaseSnapshot, telemetry: M.Telemetry | None,
                    ending: Ending) -> None:
        self.last = None


@dataclass(frozen=True)
class Progress:
    """A running phase as the command's process polls it: its progress line
    (``box_progress``) and its measured seconds so far (None: still loading)."""

    line: str
    measured_s: float | None


def box_progress(p: PhaseSnapshot) -> str:
    """``mps-2 4s high n=160 p99=1.90ms`` (``loading`` before its measured time)."""
    if not p.measuring:
        return f"{p.name} loading"
    ws = [w for w in p.workloads if w.count]
    if not ws:
        return f"{p.name} {p.elapsed_s:.0f}s"
    top = max(ws, key=lambda w: (w.priority, w.name))
    p99 = f" p99={top.phase.p99:.2f}ms" if top.phase.p99 is not None else ""
    return f"{p.name} {p.elapsed_s:.0f}s {top.name} n={top.count}{p99}"


def box_options(opts: Options) -> Options:
    """The command's options as a box runs them: nothing exported, served or kept there
    (the command's process writes the one snapshot)."""
    return dataclasses.replace(opts, metrics=None, export=None, keep=0)


def configure(args: argparse.Namespace | None, scen: Scenario, modes: list[str]
              ) -> tuple[Backends, dict[str, str]]:
    """This box's backends of ``modes`` and the modes refused here, with why (as the
    command line configures and checks them: ``cli.checks.backends_of``)."""
    configured: dict[str, ModeBackend] = {}
    refused: dict[str, str] = {}
    for mode in registry.modes():
        if mode.name not in modes or mode.name == NATIVE:
            continue
        if args is None:
            refused[mode.name] = "no command line to configure it from"
            continue
        try:
            backend, why = registry.configure(mode, args, scen, explicit=True)
            if backend is not None:
                backend.check_now()
                configured[mode.name] = backend
            elif why:
                refused[mode.name] = why
        except XwatchError as e:
            refused[mode.name] = f"{e.title}: {e}" if e.title else str(e)
    return Backends(configured, dict(refused)), refused


class BoxSession:
    """A box's session: its driver (session, runner, supervisor) open across phases,
    each phase one ``Driver.step`` (see the module)."""

    def __init__(self, scen: Scenario, opts: Options, args: argparse.Namespace | None,
                 modes: list[str], box: M.Box | None = None) -> None:
        self.scen = scen
        self.box = box
        self.backends, self.refused = configure(args, scen, modes)
        self.relay = Relay()
        self.driver = Driver(scen, box_options(opts), self.backends, observer=self.relay)
        self.driver.open()

    def preflight(self) -> dict[str, str]:
        """The modes this box cannot run, with why."""
        return dict(self.refused)

    def progress(self) -> Progress | None:
        """The running phase in a few words (None: no phase runs): its name, seconds, and
        its highest-priority workload's requests and P99 so far; its measured seconds."""
        last = self.relay.last
        if last is None:
            return None
        return Progress(box_progress(last), last.elapsed_s if last.measuring else None)

    async def run(self, work: BoxWork) -> BoxResult:
        """Run one phase here (the local runner's ``Driver.step``); its snapshot, named
        by this box."""
        self.relay.lines = []
        built = {m: self.backends.for_scenario(m, sc) for m, sc in work.scenarios.items()}
        step = dataclasses.replace(
            work.step, backend=built.get(work.step.mode),
            backends=built if work.step.copy_modes else None)
        if step.mode in self.refused or any(m in self.refused for m in
                                            (step.copy_modes or {}).values()):
            why = "; ".join(f"{m}: {w}" for m, w in self.refused.items())
            return BoxResult(None, (f"xwatch: refused on this box: {why}",))
        phase = await self.driver.step(step, work.rnd, work.duration_s)
        lines = tuple(self.relay.lines)
        if not isinstance(phase, Phase):  # never started, or stopped before it did
            return BoxResult(None, lines)
        snap = phase.snapshot(time.monotonic())
        return BoxResult(replace(snap, box=self.box) if self.box is not None else snap, lines)

    async def close(self) -> None:
        """Stop whatever still runs here and close the session."""
        self.driver.stop.set()
        runner = self.driver.runner
        if runner is not None:
            try:
                await asyncio.wait_for(runner.stop_phase(), timeout=20)
            finally:
                runner.kill_now()
        self.driver.host.end()


async def run_local(scen: Scenario, opts: Options, args: argparse.Namespace | None,
                    works: list[BoxWork], box: M.Box | None = None) -> list[BoxResult]:
    """The box agent's phase path on this machine, without Ray: one ``BoxSession``
    running ``works`` in order (what the actor does, for a GPU machine without Ray)."""
    modes = sorted({w.step.mode for w in works} | {m for w in works
                                                  for m in (w.step.copy_modes or {}).values()})
    bs = BoxSession(scen, opts, args, modes, box)
    try:
        return [await bs.run(w) for w in works]
    finally:
        await bs.close()
