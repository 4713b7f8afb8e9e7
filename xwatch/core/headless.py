"""Headless runs (``xwatch run --headless``, ``xwatch compare``): one progress
line per second, a final table per phase, an exit status scripts can trust,
and an optional exported snapshot (+ report)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time

from xwatch.core.console import failure_reasons, final_table, progress_line
from xwatch.core.runner import ModeBackend, Runner
from xwatch.core.session import Phase, Session
from xwatch.errors import XwatchError
from xwatch.scenario import Scenario

EXIT_OK, EXIT_FAILED = 0, 1


def _out(line: str) -> None:
    print(line, flush=True)


async def run_headless(scen: Scenario, args: argparse.Namespace, modes: list[str],
                       xsched: ModeBackend | None = None) -> int:
    """Run ``modes`` back to back; return the process exit status."""
    from xwatch.core.telemetry import start_telemetry

    session = Session(scen)
    runner = Runner(scen, session, xsched=xsched)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    got: list[int] = []

    def on_signal(sig: int) -> None:
        got.append(sig)
        stop.set()

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(s, on_signal, s)
    telemetry = start_telemetry(session, getattr(args, "telemetry", "auto"),
                                getattr(args, "telemetry_interval", 0.5))
    phases: list[Phase] = []
    try:
        _out(f"xwatch: scenario {scen.name} ({scen.source}), {len(scen.workloads)} workloads, "
             f"{scen.duration_s:g} s per phase, modes {' -> '.join(modes)}, "
             f"telemetry {telemetry.backend_name}")
        for mode in modes:
            if stop.is_set():
                break
            try:
                phase = await runner.run_phase(
                    mode, scen.duration_s, stop=stop,
                    on_tick=lambda p: _out(progress_line(p.snapshot(time.monotonic()))))
            except XwatchError as e:  # e.g. xserver would not start: a failed phase
                print(f"xwatch: {e.title}: {e}", file=sys.stderr, flush=True)
                failed_phase = session.current
                if failed_phase is not None and failed_phase.mode == mode:
                    phases.append(failed_phase)
                continue
            phases.append(phase)
            _out(final_table(phase.snapshot(time.monotonic())))
    finally:
        await runner.stop_phase()
        runner.kill_now()
        telemetry.stop()
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(s)
    status = _verdict(session, phases, modes, got)
    export = getattr(args, "export", None)
    if export:
        _export(session, export)
    session.close()
    return status


def _export(session: Session, directory: str) -> None:
    from xwatch.core.report import write_reports
    from xwatch.core.snapshot import write_snapshot

    path = write_snapshot(session, directory)
    _out(f"snapshot: {path}")
    try:
        for p in write_reports(path):
            _out(f"report: {p}")
    except Exception as e:  # a report problem never loses the snapshot
        print(f"xwatch: report not written: {e}", file=sys.stderr)


def _verdict(session: Session, phases: list[Phase], modes: list[str], got: list[int]) -> int:
    if got:
        _out(f"xwatch: interrupted by {signal.Signals(got[0]).name}; workloads stopped")
        return 128 + got[0]
    failed: list[str] = []
    for p in phases:
        snap = p.snapshot(p.t_end or 0.0)
        for reason in failure_reasons(snap):
            failed.append(f"{p.name}: {reason}")
        if p.status == "failed" and not failure_reasons(snap):
            failed.append(f"{p.name}: {p.extra.get('error', 'phase failed')}")
    if len(phases) < len(modes):
        failed.append("not every phase ran")
    for line in failed:
        print(f"FAILED {line}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


