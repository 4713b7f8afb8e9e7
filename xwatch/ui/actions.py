"""What the dashboard does to its session on a key, as ``SessionActions``, a base
of the app: the snapshot export (``s``, written in a thread), keeping the session in
the sessions folder at exit, live XSched and MPS control (``k``) and quit (``q``,
ctrl+c, SIGTERM/SIGHUP: every workload stopped, telemetry stopped, the session kept)."""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import datetime
from pathlib import Path
from typing import Any

from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.plans.runner import MPS, XSCHED
from xwatch.errors import XwatchError
from xwatch.ui.runs import PhaseRuns
from xwatch.ui.screens.control import ControlRequest, ControlScreen, MpsControlScreen


class SessionActions(PhaseRuns):
    """Export, keep, live control and quit; ``XwatchApp`` sets the attributes below."""

    replay_source: str | None
    export_dir: str | None
    sampler: Any
    keep: int
    keep_max_bytes: int
    keep_dir: Path | None
    kept_path: Path | None
    keep_error: str | None
    final_snap: SessionSnapshot | None
    last_export: Path | None
    _hangup: bool

    async def action_export(self) -> None:
        if self.session is None:
            if self.replay_source:
                self.notify(f"replay: the snapshot is already on disk ({self.replay_source})")
            return
        from xwatch.core.export.snapshot import prepare_export

        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        assert self.scenario is not None
        target = Path(self.export_dir or ".") / f"xwatch-{self.scenario.name}-{stamp}"
        prep = prepare_export(self.session)
        self.notify(f"writing snapshot to {target} …", timeout=3)
        self.run_worker(lambda: self._write_export(prep, target), thread=True,
                        exit_on_error=False, group="export", description="export")

    def _write_export(self, prep: Any, target: Path) -> None:
        from xwatch.core.export.report import write_reports
        from xwatch.core.export.snapshot import write_export

        try:
            path = write_export(prep, target)
            write_reports(path)
        except Exception as e:
            self.call_from_thread(self.notify, f"{type(e).__name__}: {e}",
                                  title="Snapshot not written", severity="error", markup=False)
            return
        self.last_export = path
        self.call_from_thread(self.notify, f"{path}\n(+ events.csv.gz, report.md, report.html)",
                              title="Snapshot written", timeout=10, markup=False)

    def _keep(self) -> None:
        """Write this session into the sessions folder (on any exit but SIGKILL)."""
        from xwatch.core.export.sessions import keep

        assert self.session is not None and self.keep_dir is not None
        try:
            self.kept_path = keep(self.session, self.keep_dir, self.keep, self.keep_max_bytes)
        except Exception as e:  # the events stay in the .live folder: recoverable
            self.keep_error = f"{type(e).__name__}: {e} (events left in {self.keep_dir}; " \
                              "`xwatch sessions --recover` rebuilds them)"

    def action_control(self) -> None:
        if self._not_live():
            return
        assert self.runner is not None
        ctl = self.runner.xsched
        phase = self.runner.phase
        if phase is not None and phase.mode == MPS and phase.t_end is None:
            self.push_screen(MpsControlScreen(), self._on_control)
            return
        if ctl is None or phase is None or phase.mode != XSCHED or phase.t_end is not None:
            self.notify("live control works while an XSched phase runs (press x first)"
                        if ctl is not None else (self.runner.can_run(XSCHED) or ""),
                        title="XSched control", severity="warning", timeout=8, markup=False)
            return
        names = [w.name for w in self.scenario.workloads]  # type: ignore[union-attr]
        pols = ctl.policy_names() if hasattr(ctl, "policy_names") else None
        self.push_screen(ControlScreen(names, getattr(ctl, "policy", "HPF"), pols),
                         self._on_control)

    def _on_control(self, req: ControlRequest | None) -> None:
        if req is not None:
            self._spawn(self._do_control(req))

    async def _do_control(self, req: ControlRequest) -> None:
        assert self.runner is not None
        ctl: Any = self.runner.xsched
        try:
            if req.action == "mps_threads":
                mps: Any = self.runner.backends.get(MPS)
                servers = await mps.set_active_thread_percentage(int(req.priority or 100))
                self.notify(f"active thread percentage {req.priority} on MPS server(s) "
                            f"{', '.join(map(str, servers))}", title="MPS", timeout=6)
                return
            if req.action == "priority":
                n = await ctl.set_priority(req.workload, req.priority)
                msg = f"{req.workload}: priority {req.priority} on {n} XQueue(s)"
            elif req.action == "config":
                n = await ctl.configure(req.workload, req.level, req.threshold, req.batch_size)
                msg = f"{req.workload}: config applied to {n} XQueue(s)"
            else:
                await ctl.set_policy(req.policy)
                msg = f"policy {req.policy}"
            self.notify(msg, title="XSched", timeout=6)
        except XwatchError as e:
            self.notify(str(e), title=e.title, severity="error", timeout=12, markup=False)

    async def action_quit(self) -> None:
        if self.quitting:
            return
        self.quitting = True
        if self.runner is not None:
            self.notify("stopping workloads…", timeout=5)
            # with no planned end (--duration 0), quitting is the planned end
            phase = self.runner.phase
            planned = self.phase_s == float("inf") and phase is not None \
                and phase.t_measure is not None
            try:
                await asyncio.wait_for(self.runner.stop_phase(planned_end=planned), timeout=20)
            except Exception:
                pass
            finally:
                self.runner.kill_now()
        if self.sampler is not None:
            await asyncio.to_thread(self.sampler.stop)
        if self.session is not None:
            self.final_snap = self.session.snapshot()
            if self.keep_dir is not None:
                await asyncio.to_thread(self._keep)
            self.session.close()
        if self._hangup:
            os._exit(128 + signal.SIGHUP)
        self.exit(0)
