"""Headless runs (``run --headless``, ``compare``, ``sweep``): a plan of phases
run back to back, one progress line per second, a final table per phase, an exit
status scripts can trust, and an optional exported snapshot (+ report)."""

from __future__ import annotations

import argparse
import asyncio
import math
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xwatch.core import model as M
from xwatch.core.analysis.verdict import answer_lines
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.session import Session
from xwatch.core.plans.console import (
    capture_lines,
    failure_reasons,
    final_table,
    interval_lines,
    progress_line,
)
from xwatch.core.plans.runner import ModeBackend, Runner
from xwatch.errors import UsageError, XwatchError
from xwatch.scenario import Scenario

EXIT_OK, EXIT_FAILED, EXIT_GATE = 0, 1, 3
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True)
class Step:
    """One phase of a headless plan. ``backend`` replaces the XSched backend for
    this phase (sweeps: one per setting); ``label`` names the setting."""

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

    @property
    def key(self) -> str:
        """What repeats of this step share (``analysis.verdict.step_key``)."""
        base = f"{self.role}-{self.mode}" if self.role else self.mode
        return f"{base} [{self.label}]" if self.label and not self.role else base


def interleave(steps: list[Step], repeat: int) -> list[tuple[int, Step]]:
    """``repeat`` rounds of the plan, A B A B ...: drift over time hits every step alike.
    (round number from 1, step)."""
    return [(k + 1, st) for k in range(max(1, repeat)) for st in steps]


def split_rounds(scen: Scenario, modes: list[str], repeat: int) -> list[tuple[int, Step]]:
    """``compare --layout split``: one phase a repeat, every mode at once on GPUs of its
    own, rotated every repeat (``plans.box.split_gpus``)."""
    from xwatch.core.modes.base import split_name
    from xwatch.core.plans.box import split_copies, split_gpus

    out = []
    for r in range(max(1, repeat)):
        placed = split_gpus(modes, scen.gpus, r)
        where = " | ".join(f"{m} @GPU{','.join(str(g) for g, x in placed.items() if x == m)}"
                           for m in modes)
        out.append((r + 1, Step(split_name(modes), label=where,
                                copy_modes=split_copies(scen, placed))))
    return out


def _out(line: str) -> None:
    print(line, flush=True)


async def run_headless(scen: Scenario, args: argparse.Namespace, modes: list[str],
                       xsched: ModeBackend | None = None, mps: ModeBackend | None = None,
                       mps_unavailable: str | None = None) -> int:
    """Run ``modes`` back to back; return the process exit status."""
    return await run_plan(scen, args, [Step(m) for m in modes], xsched, mps, mps_unavailable)


#: an adaptive plan: given the session so far, the (round, step) pairs to run, lazily
Schedule = Callable[[Session], Iterator[tuple[int, Step]]]
#: what a plan does with the finished session before the answer is printed: its own
#: lines, records on the session (``session.advice``, ...); an exit status to use
#: instead of 0, or None
Finish = Callable[[Session], int | None]
#: a plan's own answer, printed last (after the compare-style answer): calibrate's verdict
Conclude = Callable[[Any], list[str]]


async def run_plan(scen: Scenario, args: argparse.Namespace, steps: list[Step],
                   xsched: ModeBackend | None = None, mps: ModeBackend | None = None,
                   mps_unavailable: str | None = None, schedule: Schedule | None = None,
                   finish: Finish | None = None, floors: bool = True,
                   tolerant: bool = False, conclude: Conclude | None = None,
                   rounds: list[tuple[int, Step]] | None = None) -> int:
    """Run ``steps`` (``--repeat`` rounds, interleaved; or the (round, step) pairs of
    ``rounds``, planned ahead: a sweep's box rounds; or what ``schedule`` yields)
    into one session; print the answer; apply ``--fail-if``; export. With
    ``floors`` the machine's recorded noise floors of the modes run are carried in
    the snapshot (one-run answers are judged against them). ``tolerant`` plans
    (advise) expect failed phases: ``finish`` decides the exit status. ``conclude``
    gives the plan's own answer from the final snapshot, printed last."""
    from xwatch.core.export.floors import lookup, this_machine
    from xwatch.core.telemetry import start_telemetry

    session = Session(scen, spool_max_mb=getattr(args, "spool_max_mb", 1024))
    runner = Runner(scen, session, xsched=xsched, mps=mps, mps_unavailable=mps_unavailable)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    got: list[int] = []

    def on_signal(sig: int) -> None:
        got.append(sig)
        stop.set()

    for s in SIGNALS:
        loop.add_signal_handler(s, on_signal, s)
    telemetry = start_telemetry(session, getattr(args, "telemetry", "auto"),
                                getattr(args, "telemetry_interval", 0.5),
                                getattr(args, "telemetry_proc_interval", 5.0))
    for name, why in telemetry.rejected.items():
        _out(f"telemetry: skipped {name}: {why}")
    phases: list[Phase] = []
    repeat = int(getattr(args, "repeat", 1) or 1)
    fail_if = getattr(args, "fail_if", None)
    modes = list(dict.fromkeys(st.mode for st in steps))
    found = lookup(this_machine(telemetry.info), scen.to_dict(), modes) if floors else {}
    if found:
        session.noise_floors = {m: f.as_model() for m, f in found.items()}
        for f in found.values():
            _out(f"noise floor: {f.describe()} (one-run answers are judged against it)")
    if fail_if and repeat < 2 and schedule is None and modes[0] not in found:
        for s in SIGNALS:
            loop.remove_signal_handler(s)
        telemetry.stop()
        session.close()
        raise UsageError(
            f"--fail-if {fail_if} needs a run-level answer: with one run per step a "
            f"change can only be judged against this machine's recorded noise floor, and "
            f"there is none for {scen.name} in {modes[0]} mode here. Add --repeat 3 (or "
            f"more), or record the floor first: xwatch noise {scen.name} --mode {modes[0]}",
            title="Gate cannot be judged")
    plan: Iterator[tuple[int, Step]] = schedule(session) if schedule is not None else \
        iter(rounds if rounds is not None else interleave(steps, repeat))
    yielded = 0
    phase_s = math.inf if getattr(args, "until_stopped", False) else scen.duration_s
    metrics = getattr(args, "metrics", None)
    publisher = asyncio.create_task(_publish(session, metrics)) if metrics is not None else None
    try:
        per = "until stopped" if phase_s == math.inf else f"{phase_s:g} s per phase"
        gpus = f" on GPUs {','.join(map(str, scen.gpus))}" if scen.gpus else ""
        reps = f" x {repeat} repeats, interleaved" if repeat > 1 else ""
        if rounds is not None and rounds and rounds[0][1].copy_modes:
            reps += " (modes side by side in each phase, rotated over the GPUs every repeat)"
        elif rounds is not None and repeat > 1:
            reps += " (settings side by side, rotated over the GPUs every repeat)"
        _out(f"xwatch: scenario {scen.name} ({scen.source}), {len(scen.workloads)} workloads"
             f"{gpus}, {per}, phases "
             f"{' -> '.join(st.label or st.mode for st in steps)}{reps}, "
             f"telemetry {telemetry.backend_name}")
        for rnd, step in plan:
            if stop.is_set():
                break
            yielded += 1
            if step.backend is not None:
                runner.backends[step.mode] = step.backend
            for m, b in (step.backends or {}).items():
                if b is not None:
                    runner.backends[m] = b
            if step.label or repeat > 1:
                _out(f"--- {step.mode}: {step.label or step.mode}"
                     + (f" (repeat {rnd} of {repeat})" if repeat > 1 else ""))
            phase = await _run_step(runner, session, phase_s, step, stop,
                                    getattr(args, "trace", None))
            if phase is None:
                continue
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
            phases.append(phase)
            if phase.t_measure is not None or phase.status != "failed":
                snap = phase.snapshot(time.monotonic())
                tel = session.telemetry.export(None) if session.telemetry is not None \
                    else None
                _out(final_table(snap, tel))
                for line in interval_lines(snap):
                    _out(line)
                for line in capture_lines(snap):
                    _out(line)
    finally:
        await runner.stop_phase()
        runner.kill_now()
        telemetry.stop()
        if publisher is not None and metrics is not None:
            publisher.cancel()
            metrics.publish(session.snapshot())  # the final numbers, until the exporter stops
        for s in SIGNALS:
            loop.remove_signal_handler(s)
    own = finish(session) if finish is not None and not got else None
    final = session.snapshot()
    if (len({st.key for st in steps}) > 1 or repeat > 1) and not tolerant:
        lines = answer_lines(final)
        if lines:
            _out("=== answer " + "=" * 60)
            for line in lines:
                _out(line)
    own_answer = conclude(final) if conclude is not None and not got else []
    if own_answer:
        _out("=== " + own_answer[0] + " " + "=" * max(3, 66 - len(own_answer[0])))
        for line in own_answer[1:]:
            _out(line)
    status = _verdict(phases, yielded, got)
    if own is not None and (status == EXIT_OK or (tolerant and not got)):
        status = own
    if fail_if and status == EXIT_OK:
        status = _gate(final, fail_if)
    export = getattr(args, "export", None)
    if export and not _export(session, export):
        status = status or EXIT_FAILED  # a requested artefact that is missing is a failure
    session.close()
    return status


def _gate(snap: Any, fail_if: str) -> int:
    """``--fail-if``: EXIT_GATE when the answer is worse beyond noise, or cannot be
    judged (one run per step and no recorded floor)."""
    from xwatch.core.analysis.verdict import gate, unjudged

    tripped = gate(snap, fail_if)
    for line in tripped:
        print(f"GATE {fail_if}: {line}", file=sys.stderr)
    blind = unjudged(snap)
    for step in blind:
        print(f"GATE {fail_if}: {step}: not judged (one run each, no noise floor)",
              file=sys.stderr)
    if tripped or blind:
        return EXIT_GATE
    _out(f"gate --fail-if {fail_if}: passed")
    return EXIT_OK


async def _publish(session: Session, metrics: Any, every_s: float = 1.0) -> None:
    """Hand the metrics exporter a fresh snapshot every ``every_s`` (scrapes read it)."""
    while True:
        metrics.publish(session.snapshot())
        await asyncio.sleep(every_s)


async def _run_step(runner: Runner, session: Session, phase_s: float, step: Step,
                    stop: asyncio.Event, trace_s: float | None = None) -> Phase | None:
    # a kernel capture in the middle of the measured time (agent mode: after 5 s)
    at = 5.0 if phase_s == math.inf else max(1.0, (phase_s - (trace_s or 0.0)) / 2)
    asked = False

    def tick(p: Phase) -> None:
        nonlocal asked
        _out(progress_line(p.snapshot(time.monotonic())))
        if trace_s and not asked and p.t_measure is not None \
                and time.monotonic() - p.t_measure >= at:
            asked = True
            cap = runner.request_capture(trace_s)
            _out(f"kernel capture {cap.id}: {cap.seconds:g} s of "
                 f"{', '.join(cap.workloads)}" if cap else
                 "kernel capture: no workload offers one (built-in workloads only)")

    try:
        return await runner.run_phase(
            step.mode, phase_s, stop=stop, on_tick=tick,
            only=step.only, prefix=step.role, copy_modes=step.copy_modes)
    except XwatchError as e:  # e.g. xserver would not start: a failed phase, go on
        print(f"xwatch: {e.title}: {e}", file=sys.stderr, flush=True)
        failed = session.current
        if failed is not None and failed.mode == step.mode:
            if step.role:
                failed.calibrate = step.role
            return failed
        return None


def _export(session: Session, directory: str) -> bool:
    """Write the snapshot and reports; True when everything asked for was written.
    A snapshot that cannot be written where asked goes to a safe place instead, and
    the message says where: what was measured is never lost."""
    from xwatch.core.export.snapshot import write_snapshot

    try:
        path = write_snapshot(session, directory)
    except OSError as e:
        print(f"xwatch: snapshot not written to {directory}: {e}", file=sys.stderr, flush=True)
        safe = _safe_place(session)
        try:
            path = write_snapshot(session, safe)
        except OSError as e2:
            print(f"xwatch: and not to {safe} either: {e2}", file=sys.stderr)
            return False
        print(f"xwatch: snapshot saved instead to {path} (nothing measured is lost)",
              file=sys.stderr)
        _reports(path)
        return False
    _out(f"snapshot: {path}")
    return _reports(path)


def _reports(path: Any) -> bool:
    from xwatch.core.export.report import write_reports

    try:
        for p in write_reports(path):
            _out(f"report: {p}")
        return True
    except Exception as e:  # a report problem never loses the snapshot
        print(f"xwatch: report not written: {e}", file=sys.stderr)
        return False


def _safe_place(session: Session) -> str:
    """Where a snapshot goes when the asked-for folder fails: the sessions folder,
    else the temporary folder."""
    import tempfile
    from datetime import datetime

    from xwatch.core.export.sessions import root

    name = f"{datetime.now():%Y%m%d-%H%M%S}-{session.scenario.name}-unsaved"
    for base in (root(), Path(tempfile.gettempdir())):
        try:
            base.mkdir(parents=True, exist_ok=True)
            probe = base / f".{name}.probe"
            probe.write_bytes(b"")
            probe.unlink()
            return str(base / name)
        except OSError:
            continue
    return str(Path(tempfile.gettempdir()) / name)


def _verdict(phases: list[Phase], planned: int, got: list[int]) -> int:
    if got:
        _out(f"xwatch: interrupted by {signal.Signals(got[0]).name}; workloads stopped")
        return 128 + got[0]
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
    for line in failed:
        print(f"FAILED {line}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK
