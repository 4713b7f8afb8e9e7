"""A plan over the boxes of a Ray cluster, run from the command's process: the agents
started and checked (``Fleet.open``: each box's refusals named before any phase), each
batch of runs placed over the boxes (``place``) and run side by side, a lost box's run
failed and named while the plan goes on with the rest, a progress line of every box,
the merged snapshot, the answer, the exit status (``run_steps`` for compare and noise;
``run_race`` for advise's and capacity's races, round by round).

Phases, snapshots and the boxes' progress travel through Ray's actors and object store.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xwatch.core import model as M
from xwatch.core.analysis.answer.stored import answer_lines
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot, utc_now
from xwatch.core.fleet import actor, merge, place
from xwatch.core.fleet.agent import BoxResult, BoxWork, Progress
from xwatch.core.fleet.connect import Box, RayError
from xwatch.core.modes.base import ModeBackend
from xwatch.core.plans.console import Console, failure_reasons
from xwatch.core.plans.driver import EXIT_FAILED, EXIT_OK, Race, Step, interleave
from xwatch.core.plans.options import Backends, Options
from xwatch.scenario import Scenario

TICK_S = 2.0  # the progress line of every box, this often


@dataclass(frozen=True)
class Recording(Backends):
    """The command's backends, remembering the scenario each built backend is for (a
    candidate's, a box phase's): a box builds its own backend for that scenario."""

    built: dict[int, Any] = field(default_factory=dict)

    def for_scenario(self, mode: str, sc: Scenario) -> ModeBackend | None:
        b = super().for_scenario(mode, sc)
        if b is not None:
            self.built[id(b)] = (b, sc)
        return b

    def work(self, step: Step, rnd: int, duration_s: float) -> BoxWork:
        """``step`` as a box runs it: no backend objects, each one's scenario instead."""
        own = {step.mode: step.backend, **(step.backends or {})}
        scens = {m: self.built[id(b)][1] for m, b in own.items()
                 if b is not None and id(b) in self.built}
        return BoxWork(dataclasses.replace(step, backend=None, backends=None), rnd,
                       duration_s, scens)


def _needs(step: Step) -> frozenset[str]:
    return frozenset({step.mode, *(step.copy_modes or {}).values()})


class Fleet:
    """The agents of a cluster's boxes, and the runs sent to them."""

    def __init__(self, ray: Any, boxes: list[Box], out: Console) -> None:
        self.ray = ray
        self.boxes = boxes
        self.out = out
        self.agents: list[Any] = []
        self.refused: list[frozenset[str]] = []
        self.dead: set[int] = set()
        self.busy: dict[int, str] = {}
        self.phases: list[PhaseSnapshot] = []
        self.created_at = utc_now()
        self.signal = 0  # the signal that stopped the plan (0: none)
        #: the phases of runs whose box was lost (by id): the box's failure, not the run's
        self.lost: set[int] = set()
        #: each busy box's latest progress (``agent.box_progress``; None: not started)
        self.progress: dict[int, str | None] = {}
        #: each busy box's measured seconds so far (None: loading, or not polled yet)
        self.measured: dict[int, float | None] = {}
        #: the runs the plan's stop ended mid-phase, by box (``native r2``)
        self.stopped: dict[int, str] = {}
        #: every box's phases as each one ends (``phases``: a batch's, once it ended)
        self.finished: list[PhaseSnapshot] = []

    def names(self) -> list[str]:
        return [b.name for b in self.boxes]

    async def open(self, scen: Scenario, opts: Options, args: argparse.Namespace | None,
                   modes: list[str]) -> None:
        """An agent on every box, each box's refusals said (a mode no box runs: an
        error before anything starts)."""
        self.agents = actor.spawn(self.ray, self.boxes, scen, opts, args, modes)
        refusals = await asyncio.gather(*(a.preflight.remote() for a in self.agents))
        self.refused = [frozenset(r) for r in refusals]
        for b, r in zip(self.boxes, refusals, strict=True):
            for mode, why in r.items():
                self.out.warn(f"xwatch: box {b.name}: {mode} refused here: {why}")
        nowhere = [m for m in modes if all(m in r for r in self.refused)]
        if nowhere:
            raise RayError(f"no box can run {', '.join(nowhere)}: every box refused it "
                           "(above)", title="Mode refused on every box")
        self.out.say(f"xwatch: {len(self.boxes)} boxes: " + ", ".join(
            f"{b.name} ({b.gpus} GPUs)" if b.gpus else f"{b.name} (CPU)" for b in self.boxes))

    async def close(self) -> None:
        """Every agent closed (its phase stopped, its session closed), then let go."""
        live = [a for i, a in enumerate(self.agents) if i not in self.dead]
        await asyncio.gather(*(a.close.remote() for a in live), return_exceptions=True)
        for a in self.agents:
            self.ray.kill(a, no_restart=True)

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            parts = []
            for i, b in enumerate(self.boxes):
                if i in self.dead:
                    parts.append(f"{b.name}: lost")
                elif i in self.busy:
                    try:
                        got: Progress | None = await self.agents[i].progress.remote()
                    except Exception:
                        got = None
                    line = got.line if got is not None else None
                    self.progress[i] = line
                    self.measured[i] = got.measured_s if got is not None else None
                    parts.append(f"{b.name}: {self.busy[i]} {(line or 'starting').strip()}")
                else:
                    parts.append(f"{b.name}: idle")
            self.out.say("boxes | " + " | ".join(parts))

    async def run_batch(self, works: Sequence[BoxWork], batch: int) -> list[PhaseSnapshot]:
        """Run ``works`` side by side over the boxes (``place``); each one's phase in the
        order given (a run no box could take, or whose box was lost: a failed phase
        naming why)."""
        alive = [i for i in range(len(self.boxes)) if i not in self.dead]
        queues, nowhere = place.place([_needs(w.step) for w in works],
                                      [self.refused[i] for i in alive], batch)
        todo = {alive[q]: list(qs) for q, qs in enumerate(queues)}
        got: dict[int, PhaseSnapshot] = {}
        for j in nowhere:
            got[j] = merge.failed(works[j].step, works[j].rnd, None,
                                  "no box that is left runs its mode")

        async def drain(i: int) -> None:
            while todo.get(i):
                j = todo[i].pop(0)
                w, b = works[j], self.boxes[i]
                self.busy[i] = f"{w.step.label or w.step.mode} r{w.rnd}"
                self.out.say(f"--- box {b.name}: {w.step.mode}: {w.step.label or w.step.mode}"
                             f" (round {w.rnd})")
                try:
                    res: BoxResult = await self.agents[i].run.remote(w)
                except asyncio.CancelledError:  # the plan's stop: named at its end
                    self.stopped[i] = self.busy[i]
                    raise
                except Exception as e:  # the node or its agent died: Ray's error
                    self.dead.add(i)
                    why = " ".join(str(e).split())[:300]
                    self.out.warn(f"FAILED box {b.name} (Ray node {b.node_id}, host "
                                  f"{b.host}) lost mid-phase; its run of {w.step.key} "
                                  "failed; the plan goes on with the other boxes")
                    got[j] = merge.lost(w.step, w.rnd, M.Box(node_id=b.node_id, host=b.host),
                                        type(e).__name__ + ": " + why)
                    self.lost.add(id(got[j]))
                    self.finished.append(got[j])
                    left = todo.pop(i, [])
                    others = [o for o in todo if o not in self.dead]
                    for k, jj in enumerate(left):  # its waiting runs go to the others
                        if others:
                            todo[others[k % len(others)]].append(jj)
                        else:
                            got[jj] = merge.failed(works[jj].step, works[jj].rnd, None,
                                                   "every box was lost before it ran")
                    return
                finally:
                    self.busy.pop(i, None)
                    self.progress.pop(i, None)
                    self.measured.pop(i, None)
                for line in res.lines:
                    self.out.say(f"    [{b.name}] {line}")
                box = M.Box(node_id=b.node_id, host=b.host)
                got[j] = res.phase if res.phase is not None else merge.failed(
                    w.step, w.rnd, box, f"on box {box.short}: " + (
                        "; ".join(res.lines) or "its phase could not start"))
                self.finished.append(got[j])

        while any(todo.get(i) for i in todo if i not in self.dead):
            await asyncio.gather(*(drain(i) for i in list(todo) if i not in self.dead))
        out = [got[j] for j in range(len(works))]
        self.phases.extend(out)
        return out


@dataclass
class Outcome:
    """What a fleet plan ends with: the merged snapshot, the exit status, and what the
    plan said at its end (``_conclude``: each line, and whether it was a warning), for
    the dashboard to print once it has left the screen."""

    snap: SessionSnapshot
    status: int
    end: tuple[tuple[str, bool], ...] = ()


async def _with_fleet(fleet: Fleet, scen: Scenario, opts: Options,
                      args: argparse.Namespace | None, modes: list[str],
                      body: Callable[[], Any], stop: asyncio.Event | None = None) -> bool:
    """Open the fleet, run ``body`` under the ticker and the signals (or, ``stop``
    given, until it is set: the dashboard's quit, which owns the signals); False when
    stopped. The agents are closed whatever happens."""
    loop = asyncio.get_running_loop()
    signals = stop is None
    stop = stop if stop is not None else asyncio.Event()
    got: list[int] = []

    def caught(sig: int) -> None:
        got.append(sig)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) if signals else ():
        loop.add_signal_handler(sig, caught, sig)
    ticker = asyncio.create_task(fleet._ticker())
    try:
        await fleet.open(scen, opts, args, modes)
        work = asyncio.create_task(body())
        stopper = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait({work, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if work in done:
            stopper.cancel()
            work.result()
            return True
        work.cancel()
        await asyncio.wait({work}, timeout=10)  # each box's stopped run recorded
        if got:
            fleet.signal = got[0]
        return False
    finally:
        ticker.cancel()
        await fleet.close()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) if signals else ():
            loop.remove_signal_handler(sig)


def _conclude(fleet: Fleet, snap: SessionSnapshot, opts: Options, status: int | None,
              stopped: bool, tolerant: bool) -> tuple[int, tuple[tuple[str, bool], ...]]:
    """The stop (every box's workloads stopped by now), the answer, each box's line,
    the per-box findings, the failures, the export; the exit status and those lines
    (each with whether it was a warning)."""
    end: list[tuple[str, bool]] = []

    def say(line: str) -> None:
        end.append((line, False))
        fleet.out.say(line)

    def warn(line: str) -> None:
        end.append((line, True))
        fleet.out.warn(line)

    if stopped:
        why = f"interrupted by {signal.Signals(fleet.signal).name}" if fleet.signal \
            else "stopped"
        say(f"xwatch: {why}; every box's workloads stopped")
    if not tolerant:
        lines = answer_lines(snap)
        if lines:
            say("=== answer " + "=" * 60)
            for line in lines:
                say(line)
    stops = {fleet.boxes[i].node_id: run for i, run in fleet.stopped.items()}
    for line in merge.box_lines(snap.phases, [M.Box(node_id=b.node_id, host=b.host)
                                              for b in fleet.boxes], stops):
        say(line)
    for line in merge.findings_or_none(snap.phases):
        say(f"per box: {line}")
    failed = []
    for p in snap.phases:
        where = f" on box {p.box.short}" if p.box is not None else ""
        if p.error:
            failed.append(f"{p.name}{where}: {p.error}")
        failed += [f"{p.name}{where}: {r}" for r in failure_reasons(p)]
    for line in failed:
        warn(f"FAILED {line}")
    rc = EXIT_FAILED if failed or stopped else EXIT_OK
    if status is not None and (rc == EXIT_OK or tolerant):
        rc = status
    if opts.export and not merge.export(snap, opts.export, say, warn):
        rc = rc or EXIT_FAILED
    return (128 + fleet.signal if stopped and fleet.signal else rc), tuple(end)


async def run_steps(ray: Any, boxes: list[Box], scen: Scenario, opts: Options,
                    args: argparse.Namespace | None, steps: list[Step],
                    out: Console | None = None,
                    finish: Callable[[SessionSnapshot], tuple[SessionSnapshot, int | None]]
                    | None = None, fleet: Fleet | None = None,
                    stop: asyncio.Event | None = None) -> Outcome:
    """``--repeat`` rounds of ``steps`` interleaved (compare, noise, the dashboard's
    ``--ray``), in batches of one run a box; ``finish``: the plan's own record and
    status from the merged snapshot; ``fleet``: one made by the caller, who watches it
    (the dashboard); ``stop``: set to stop the plan (instead of the signals)."""
    fleet = fleet if fleet is not None else Fleet(ray, boxes, out or Console())
    runs = interleave(steps, opts.repeat)
    phase_s = opts.phase_s(scen)
    fleet.out.say(f"xwatch: scenario {scen.name} over {len(boxes)} boxes, {len(runs)} runs "
                  f"({' -> '.join(st.label or st.mode for st in steps)} x {opts.repeat}), "
                  f"{phase_s:g} s per phase")

    async def body() -> None:
        for c, rng in enumerate(place.chunks(len(runs), len(boxes))):
            await fleet.run_batch([BoxWork(runs[j][1], runs[j][0], phase_s) for j in rng], c)

    done = await _with_fleet(fleet, scen, opts, args, sorted({m for s in steps
                                                             for m in _needs(s)}), body, stop)
    kept = {id(p) for p in fleet.phases}  # stopped: the phases its last batch ended too
    snap = merge.merged(scen, fleet.phases if done else fleet.phases + [
        p for p in fleet.finished if id(p) not in kept], fleet.created_at)
    own = None
    if finish is not None and done:
        snap, own = finish(snap)
    return Outcome(snap, *_conclude(fleet, snap, opts, own, not done, tolerant=False))


async def run_race(ray: Any, boxes: list[Box], scen: Scenario, opts: Options,
                   args: argparse.Namespace | None, rc: Race, backends: Recording,
                   modes: list[str], record: Callable[[], tuple[dict[str, Any], int | None]],
                   out: Console | None = None) -> Outcome:
    """A race (advise's, capacity's) round by round: each round's phases side by side
    over the boxes, each finished phase recorded as its runs (a run whose box was lost
    is not: its phase is failed and named in the snapshot, and its candidates race on);
    ``record``: the race's record on the snapshot (``advice=`` or ``capacity=``) and its
    exit status."""
    fleet = Fleet(ray, boxes, out or Console())
    phase_s = opts.phase_s(scen)

    async def body() -> None:
        batch = 0
        while order := rc.round():
            works = [backends.work(step, rc.rounds, phase_s) for _, step in order]
            for c, rng in enumerate(place.chunks(len(works), len(boxes))):
                phases = await fleet.run_batch([works[j] for j in rng], batch + c)
                for j, ph in zip(rng, phases, strict=True):
                    if id(ph) in fleet.lost:  # the box's failure: its candidates race on
                        fleet.out.say(f"    {order[j][1].label or order[j][1].mode}: this "
                                      "run does not count (its box was lost), the "
                                      "candidates race on")
                        continue
                    rc.record(order[j][0], ph)
            batch += 1
            if not rc.after_round():
                break

    t0 = time.monotonic()
    done = await _with_fleet(fleet, scen, opts, args, modes, body)
    rec, own = record()
    snap = merge.merged(scen, fleet.phases, fleet.created_at, **rec)
    fleet.out.say(f"xwatch: the race took {(time.monotonic() - t0) / 60:.1f} min over "
                  f"{len(boxes)} boxes")
    return Outcome(snap, *_conclude(fleet, snap, opts, own, not done, tolerant=True))
