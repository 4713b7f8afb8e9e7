"""The plan driver: one engine under every front end. A ``Driver`` holds the session's
host (``core.host``: the session, telemetry, noise floors, signals, the answer settled
as phases end, the kept session and the export) and the runner; it runs a ``Plan``
(phases, compare, sweep, noise, calibrate; an advise race or a capacity run through
``race``) as ``Step``s and tells an ``Observer`` what happens. Headless, the observer
prints (``console.Console``); the dashboard's posts messages to the app. The runner
(``plans.runner``) runs each phase.

Its job is a plan's run, from its first step to the exit status scripts trust (the
gate over the stored answer, the failures); the session around it is the host's.

A race's rounds and ``--budget`` (``fitting``, for advise's race and capacity's
searches alike): the whole next round where it fits; else the part of it that does,
its entries in the order the plan ranks them (the most informative first:
``analysis.first``), so that budget that could buy evidence is never left unused;
nothing once not even one entry fits. A phase's expected cost is the mean of the
phases so far (the time used over the phases recorded, the plan's start included):
no phase is started that this says would end past the budget."""

from __future__ import annotations

import asyncio
import math
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from xwatch.core import model as M
from xwatch.core.analysis.answer.stored import answer_lines
from xwatch.core.engine.causes import collapse
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot
from xwatch.core.host import SessionHost
from xwatch.core.modes.base import ModeBackend
from xwatch.core.modes.contract import Retry
from xwatch.core.plans.console import Console, failure_reasons
from xwatch.core.plans.options import Backends, Options
from xwatch.core.plans.runner import REFUSED, REPLACED, Ending, Runner
from xwatch.errors import UsageError, XwatchError
from xwatch.scenario import Scenario, Workload

if TYPE_CHECKING:
    from xwatch.core.telemetry import TelemetrySampler

EXIT_OK, EXIT_FAILED, EXIT_GATE = 0, 1, 3


class Observer(Protocol):
    """What a front end is told while a plan runs."""

    def say(self, text: str) -> None:
        """A line of the plan's story (headless: stdout)."""

    def warn(self, text: str) -> None:
        """A problem: a failed phase, a gate tripped (headless: stderr)."""

    #: whether ``tick`` is wanted (a snapshot a second costs the dashboard, which has
    #: its own refresh)
    ticks: bool

    def tick(self, phase: PhaseSnapshot) -> None:
        """The running phase, about once a second."""

    def refused(self, err: XwatchError) -> None:
        """A step's phase could not start (its mode would not start): the plan goes on."""

    def phase_ended(self, phase: PhaseSnapshot, telemetry: M.Telemetry | None,
                    ending: Ending) -> None:
        """A step's phase ended, and why (``runner.Ending``): its final numbers."""


@dataclass(frozen=True)
class Step:
    """One phase of a plan. ``backend`` replaces the mode's backend for this phase
    (sweeps: one per setting); ``label`` names the setting."""

    mode: str
    backend: ModeBackend | None = None
    label: str | None = None
    setting: Mapping[str, Mapping[str, M.SettingValue]] | None = None
    only: tuple[str, ...] | None = None  # run only these workloads (calibrate: HIGH alone)
    role: str | None = None  # calibrate: "alone" | "together"
    candidate: bool = False  # advise: ``label`` names a candidate, not a sweep setting
    #: a split phase (``compare --layout split``, advise's mixed box phases): each copy's
    #: mode (``mode`` names them all), and each mode's backend for this phase
    copy_modes: Mapping[str, str] | None = None
    backends: Mapping[str, ModeBackend | None] | None = None
    #: the phase's own workloads (a capacity probe: HIGH at the rate it probes), else
    #: the scenario's
    workloads: tuple[Workload, ...] | None = None

    @property
    def key(self) -> str:
        """What repeats of this step share (``analysis.verdict.step_key``)."""
        base = f"{self.role}-{self.mode}" if self.role else self.mode
        return f"{base} [{self.label}]" if self.label and not self.role else base


def interleave(steps: list[Step], repeat: int) -> list[tuple[int, Step]]:
    """``repeat`` rounds of the plan, A B A B ...: drift over time hits every step alike.
    (round number from 1, step)."""
    return [(k + 1, st) for k in range(max(1, repeat)) for st in steps]


#: what a plan does with the finished session before the answer is printed: its own
#: lines, records on the session (``session.advice``, ...); an exit status to use
#: instead of 0, or None
Finish = Callable[[Session], int | None]
#: a plan's own answer, printed last (after the compare-style answer): calibrate's verdict
Conclude = Callable[[Any], list[str]]
#: how a front end runs one step of a race: the phase, or None (it never started);
#: ``STOPPED``: the race must end here (a signal, or the user started something else)
RunStep = Callable[[int, Step], Awaitable["Phase | Stopped | None"]]


class Stopped:
    """The race is over: nothing more may run."""


STOPPED = Stopped()


class Race(Protocol):
    """What the driver needs of a race run round by round (``plans.advise.Race``,
    ``plans.capacity.CapacityRun``)."""

    rounds: int

    def round(self) -> Sequence[tuple[Any, Step]]: ...

    def record(self, placed: Any, phase: Any) -> None: ...

    def after_round(self) -> bool: ...

    def publish(self, session: Session) -> None:
        """Its live record on the session (the dashboard shows it)."""


@dataclass
class Plan:
    """The steps of a plan and what it does around them. ``rounds``: the (round, step)
    pairs planned ahead (a sweep's box rounds), else ``--repeat`` rounds of ``steps``
    interleaved; ``race``: an advise race that picks each round's steps as it goes.
    ``floors``: carry the machine's recorded noise floors of the modes run (one-run
    answers are judged against them); ``tolerant`` plans (advise) expect failed phases
    and ``finish`` decides the exit status; ``conclude`` is the plan's own answer from
    the final snapshot, printed last."""

    steps: list[Step]
    rounds: list[tuple[int, Step]] | None = None
    race: Race | None = None
    finish: Finish | None = None
    conclude: Conclude | None = None
    floors: bool = True
    tolerant: bool = False


class Driver:
    """One session's plan, its parts and its observer (see the module)."""

    def __init__(self, scen: Scenario, opts: Options, backends: Backends | None = None,
                 observer: Observer | None = None) -> None:
        self.scen = scen
        self.opts = opts
        self.backends = backends or Backends()
        self.observer: Observer = observer or Console()
        #: the session's life, shared with the dashboard (``core.host``)
        self.host = SessionHost(scen, opts, self.observer)
        self.runner: Runner | None = None
        self.got: list[int] = []  # the signals that stopped the plan
        self.phases: list[Phase] = []  # the plan's phases that ran (headless)
        self._ran = 0  # steps started
        self.stop = asyncio.Event()
        #: settle the answer as each phase ends, for a front end that shows it live (the
        #: dashboard's Compare tab); else once, at the plan's end
        self.live_answer = False
        self._racing = False  # a race's phases: its own record is its answer

    # ------------------------------------------------------------ the session
    @property
    def session(self) -> Session | None:
        return self.host.session

    @property
    def telemetry(self) -> TelemetrySampler | None:
        return self.host.telemetry

    @property
    def final_snap(self) -> SessionSnapshot | None:
        """The dashboard's last snapshot, its answer settled (``close``)."""
        return self.host.final_snap

    @property
    def kept_path(self) -> Path | None:
        return self.host.kept_path

    @property
    def keep_error(self) -> str | None:
        return self.host.keep_error

    def open(self) -> Session:
        """The session (``SessionHost.open``) and its runner."""
        b = self.backends
        session = self.host.open()
        self.runner = Runner(self.scen, session, backends=b)
        return session

    async def close(self, planned_end: bool = False) -> None:
        """The end of an interactive session: the phase stopped (20 s at most, then
        killed), then the host's end (``SessionHost.close``: the telemetry stopped, the
        answer settled, the session kept and closed)."""
        if self.runner is not None:
            try:
                await asyncio.wait_for(self.runner.stop_phase(planned_end=planned_end),
                                       timeout=20)
            except Exception:
                pass
            finally:
                self.runner.kill_now()
        await self.host.close()

    def _on_signal(self, sig: int) -> None:
        self.got.append(sig)
        self.stop.set()

    # ------------------------------------------------------------ a headless plan
    async def run(self, plan: Plan) -> int:
        """Run ``plan`` into one session; tell the observer; apply ``--fail-if``;
        export. Returns the process exit status."""
        out, opts, scen, host = self.observer, self.opts, self.scen, self.host
        self.open()
        runner = self.runner
        assert runner is not None
        host.catch_signals(self._on_signal)
        telemetry = host.start_telemetry()
        for name, why in telemetry.rejected.items():
            out.say(f"telemetry: skipped {name}: {why}")
        steps = plan.steps
        repeat = max(1, opts.repeat)
        fail_if = opts.fail_if
        modes = list(dict.fromkeys(st.mode for st in steps))
        found = host.load_floors(modes) if plan.floors else {}
        for f in found.values():
            out.say(f"noise floor: {f.describe()} (one-run answers are judged against it)")
        if fail_if and repeat < 2 and plan.race is None and modes[0] not in found:
            host.release_signals()
            host.stop_telemetry()
            host.end()
            raise UsageError(
                f"--fail-if {fail_if} needs a run-level answer: with one run per step a "
                f"change can only be judged against this machine's recorded noise floor, "
                f"and there is none for {scen.name} in {modes[0]} mode here. Add --repeat 3 "
                f"(or more), or record the floor first: xwatch noise {scen.name} --mode "
                f"{modes[0]}", title="Gate cannot be judged")
        phase_s = opts.phase_s(scen)
        metrics = opts.metrics
        if metrics is not None:
            host.publish(metrics)
        try:
            per = "until stopped" if phase_s == math.inf else f"{phase_s:g} s per phase"
            gpus = f" on GPUs {','.join(map(str, scen.gpus))}" if scen.gpus else ""
            reps = f" x {repeat} repeats, interleaved" if repeat > 1 else ""
            if plan.rounds and plan.rounds[0][1].copy_modes:
                reps += " (modes side by side in each phase, rotated over the GPUs every repeat)"
            elif plan.rounds is not None and repeat > 1:
                reps += " (settings side by side, rotated over the GPUs every repeat)"
            out.say(f"xwatch: scenario {scen.name} ({scen.source}), {len(scen.workloads)} "
                    f"workloads{gpus}, {per}, phases "
                    f"{' -> '.join(st.label or st.mode for st in steps)}{reps}, "
                    f"telemetry {telemetry.backend_name}")

            async def run_step(rnd: int, step: Step) -> Phase | Stopped | None:
                if not self.stop.is_set() and (step.label or repeat > 1):
                    out.say(f"--- {step.mode}: {step.label or step.mode}"
                            + (f" (repeat {rnd} of {repeat})" if repeat > 1 else ""))
                return await self.step(step, rnd, phase_s, trace_s=opts.trace)

            if plan.race is not None:
                await self.race(plan.race, run_step)
            else:
                for rnd, step in plan.rounds if plan.rounds is not None \
                        else interleave(steps, repeat):
                    if await run_step(rnd, step) is STOPPED:
                        break
        finally:
            await runner.stop_phase()
            runner.kill_now()
            host.stop_telemetry()
            if metrics is not None:
                host.stop_publishing(metrics)
            host.release_signals()
        return self._conclude(plan, repeat)

    # ------------------------------------------------------------ one step
    async def step(self, step: Step, rnd: int | None = None, duration_s: float | None = None,
                   trace_s: float | None = None) -> Phase | Stopped | None:
        """Run one step, the headless plans' and the dashboard's alike: its backends in
        place, its phase started and watched by the runner to its end (``duration_s``,
        else the options' phase length), the observer told. ``rnd``: the plan's round,
        the phase labelled as a run of its step (None: the dashboard's own phases, only
        a calibrate role noted); ``trace_s``: a kernel capture mid-phase. The phase (a
        mode that would not start: its failed phase, else None); ``STOPPED`` when the
        plan must end here (a signal before it started, or the phase was replaced by
        another: the dashboard's user started something else). A phase whose mode's daemon
        (XSched's xserver) died before its first measured second is run once more
        (``ModeBackend.died_early``)."""
        assert self.runner is not None and self.session is not None
        if self.stop.is_set():
            return STOPPED
        self._ran += 1
        runner, out = self.runner, self.observer
        if step.backend is not None:
            runner.backends[step.mode] = step.backend
        for m, b in (step.backends or {}).items():
            if b is not None:
                runner.backends[m] = b
        duration = self.opts.phase_s(self.scen) if duration_s is None else duration_s
        first: M.PhaseRetry | None = None
        while True:
            try:
                phase = await runner.start_phase(step.mode, step.only, step.role,
                                                 step.copy_modes, step.workloads)
                phase.retried = first
                _label(phase, step, rnd)
                ending = await runner.watch(phase, duration, stop=self.stop,
                                            on_tick=self._ticker(duration, trace_s))
            except XwatchError as e:  # e.g. xserver would not start: a failed phase, go on
                out.refused(e)
                failed = self.session.current
                if failed is None or failed.mode != step.mode:
                    return None
                failed.retried = first
                _label(failed, step, rnd)
                phase, ending = failed, REFUSED
            retry = self._died_early(phase)
            if retry is None or first is not None or self.stop.is_set():
                break
            first, line = retry.first_attempt(self.session)  # no longer a phase
            out.warn(line)
        if first is not None and (retry := self._died_early(phase)) is not None:
            retry.failed_twice(first)
        self.phases.append(phase)
        if self.live_answer and not self._racing:
            self.host.settle()
        tel = self.session.telemetry.export(None) if self.session.telemetry is not None \
            else None
        out.phase_ended(phase.snapshot(time.monotonic()), tel, ending)
        return STOPPED if ending == REPLACED else phase

    def _died_early(self, phase: Phase) -> Retry | None:
        """How to retry ``phase`` when its mode's daemon died early (the backends'
        ``died_early``), else None."""
        assert self.runner is not None
        return next((r for b in self.runner.backends.values() if b is not None
                     and (r := b.died_early(phase)) is not None), None)

    def _ticker(self, phase_s: float, trace_s: float | None) -> Callable[[Phase], None] | None:
        """What the runner calls about once a second: the observer's tick, and a kernel
        capture asked for in the middle of the measured time (agent mode: after 5 s)."""
        runner, out = self.runner, self.observer
        assert runner is not None
        if not out.ticks and not trace_s:
            return None
        at = 5.0 if phase_s == math.inf else max(1.0, (phase_s - (trace_s or 0.0)) / 2)
        asked = False

        def tick(p: Phase) -> None:
            nonlocal asked
            if out.ticks:
                out.tick(p.snapshot(time.monotonic()))
            if trace_s and not asked and p.t_measure is not None \
                    and time.monotonic() - p.t_measure >= at:
                asked = True
                cap = runner.request_capture(trace_s)
                out.say(f"kernel capture {cap.id}: {cap.seconds:g} s of "
                        f"{', '.join(cap.workloads)}" if cap else
                        "kernel capture: no workload offers one (built-in workloads only)")
        return tick

    # ------------------------------------------------------------ an advise race
    async def race(self, rc: Race, run: RunStep, live: bool = False) -> bool:
        """Run ``rc`` round by round, each step with ``run`` (the front end's way to run
        a phase), each finished phase recorded as a run of the candidates it placed;
        ``live``: the session's advice kept up to date after every phase. False when
        ``run`` stopped the race."""
        session, runner = self.session, self.runner
        assert session is not None and runner is not None
        saved = dict(runner.backends)  # each candidate brings its own backend
        self._racing = True
        try:
            while order := rc.round():
                for placed, step in order:
                    before = len(session.phases)
                    if await run(rc.rounds, step) is STOPPED:
                        return False
                    rc.record(placed, session.phases[-1].snapshot(time.monotonic())
                              if len(session.phases) > before else None)
                    if live:
                        rc.publish(session)
                if not rc.after_round():
                    break
            return True
        finally:
            runner.backends.update(saved)
            self._racing = False

    # ------------------------------------------------------------ the end
    def _conclude(self, plan: Plan, repeat: int) -> int:
        out, got, fail_if, host = self.observer, self.got, self.opts.fail_if, self.host
        assert host.session is not None
        own = plan.finish(host.session) if plan.finish is not None and not got else None
        final = host.settle()  # the answer every reader below reads
        if (len({st.key for st in plan.steps}) > 1 or repeat > 1) and not plan.tolerant:
            lines = answer_lines(final)
            if lines:
                out.say("=== answer " + "=" * 60)
                for line in lines:
                    out.say(line)
        own_answer = plan.conclude(final) if plan.conclude is not None and not got else []
        if own_answer:
            out.say("=== " + own_answer[0] + " " + "=" * max(3, 66 - len(own_answer[0])))
            for line in own_answer[1:]:
                out.say(line)
        status = self._verdict(self.phases, self._ran)
        if own is not None and (status == EXIT_OK or (plan.tolerant and not got)):
            status = own
        if fail_if and status == EXIT_OK:
            status = self._gate(final, fail_if)
        if self.opts.export and not host.export(self.opts.export):
            status = status or EXIT_FAILED  # a requested artefact that is missing is a failure
        if host.answer_error is not None:  # exported without its answer: a fault, said
            status = status or EXIT_FAILED
        host.end()
        return status

    def _gate(self, snap: SessionSnapshot, fail_if: str) -> int:
        """``--fail-if``: EXIT_GATE when the stored answer is worse beyond noise, or
        cannot be judged (a step's mechanism took no part, or one run per step and no
        recorded floor)."""
        from xwatch.core.analysis.answer.stored import gate, unjudged

        tripped = gate(snap, fail_if)
        for line in tripped:
            self.observer.warn(f"GATE {fail_if}: {line}")
        blind = unjudged(snap)
        for why in blind:
            self.observer.warn(f"GATE {fail_if}: {why}")
        if tripped or blind:
            return EXIT_GATE
        self.observer.say(f"gate --fail-if {fail_if}: passed")
        return EXIT_OK

    def _verdict(self, phases: list[Phase], planned: int) -> int:
        if self.got:
            self.observer.say(f"xwatch: interrupted by {signal.Signals(self.got[0]).name}; "
                              "workloads stopped")
            return 128 + self.got[0]
        failed: list[str] = []
        for p in phases:
            snap = p.snapshot(p.t_end or 0.0)
            label = f"{p.name} [{p.setting}]" if p.setting else p.name
            reasons = failure_reasons(snap)
            if p.error:
                failed.append(f"{label}: {p.error}")
            failed += [f"{label}: {r}" for r in reasons]
            if p.status == "failed" and not reasons and not p.error:
                failed.append(f"{label}: phase failed")
        if len(phases) < planned:
            failed.append("not every phase ran")
        for line in collapse(failed):
            self.observer.warn(f"FAILED {line}")
        return EXIT_FAILED if failed else EXIT_OK


def _label(phase: Phase, step: Step, rnd: int | None) -> None:
    """A plan's phase as a run of its step (``label_phase``); the dashboard's own
    phases (no round) only note a calibrate role."""
    if rnd is not None:
        label_phase(phase, step, rnd)
    elif step.role:
        phase.calibrate = step.role


def label_phase(phase: Phase, step: Step, rnd: int) -> None:
    """What a finished phase ran: its step, repeat, candidate or setting, role."""
    phase.step = step.key
    phase.repeat = rnd
    if step.candidate:
        phase.candidate = step.label
        phase.setting_values = {wl: dict(kv) for wl, kv in (step.setting or {}).items()}
    elif step.copy_modes:
        pass  # its copies' modes are recorded; its label is the round's header
    elif step.label and step.role is None:
        phase.setting = step.label
        phase.setting_values = {wl: dict(kv) for wl, kv in (step.setting or {}).items()}
    if step.role:
        phase.calibrate = step.role


async def run_headless(scen: Scenario, opts: Options, modes: list[str],
                       backends: Backends | None = None) -> int:
    """Run ``modes`` back to back (``run --headless``, ``compare``); the exit status."""
    return await Driver(scen, opts, backends).run(Plan([Step(m) for m in modes]))


# ------------------------------------------------------------ a round and the budget
def per_phase(used_s: float, phases: int) -> float:
    """A phase's expected cost: the mean phase's time so far."""
    return used_s / max(1, phases)


def fitting(count: int, phases_of: Callable[[int], int], used_s: float, phases: int,
            budget_s: float, cost: float | None = None) -> int:
    """The most entries ``k <= count`` (the first ``k`` in rank order) whose phases
    (``phases_of(k)``: ``k`` on one device, fewer on a box of GPUs) end within
    ``budget_s`` at the mean phase's time so far (``cost``: at that time a phase, where
    no phase has run yet): ``count`` when the round fits, 0 when not even one entry
    does."""
    cost = per_phase(used_s, phases) if cost is None else cost
    for k in range(count, 0, -1):
        if used_s + cost * phases_of(k) <= budget_s:
            return k
    return 0


def partial_line(what: str, k: int, n: int, used_s: float, phases: int,
                 budget_s: float) -> str:
    """The console's line for a partial round."""
    return (f"xwatch: {what}: a partial round: {k} of {n} runs fit in the budget "
            f"({(budget_s - used_s) / 60:.1f} min left at {per_phase(used_s, phases):.0f} s "
            f"a phase), the most informative first")
