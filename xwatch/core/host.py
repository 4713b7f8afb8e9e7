"""The session host: one live session's life, the same under both front ends (the
headless plans' ``plans.driver.Driver``, and the dashboard's
``ui.controller.SessionController`` through the driver it holds).

It owns the session and its event spool (kept in the sessions folder, or not); the
signals that end it; the telemetry, started and stopped; this machine's recorded noise
floors; the metrics endpoint's snapshots; the comparison's answer, settled once as each
phase ends and stored on the session, so that the console, the ``--fail-if`` gate, the
snapshot and its report and the dashboard's Compare tab all read the same one; the
snapshot written with its reports (never lost: a safe place when the asked-for folder
fails); the session closed and kept. What runs in the session (a plan's steps, each
phase, the mode backends) is not here: ``plans.driver`` and ``plans.runner``."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import tempfile
import traceback
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec

from xwatch.core import model as M
from xwatch.core.analysis.answer.stored import session_answer
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.scenario import Scenario

if TYPE_CHECKING:
    from xwatch.core.analysis.stats.noise import Floor
    from xwatch.core.export.snapshot import PreparedExport
    from xwatch.core.telemetry import TelemetrySampler

#: the signals that end a session (a plan stops, the dashboard quits)
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class HostOptions(Protocol):
    """What the host reads of the options (``plans.options.Options``)."""

    @property
    def spool_max_mb(self) -> float: ...
    @property
    def telemetry(self) -> str: ...
    @property
    def telemetry_interval(self) -> float: ...
    @property
    def telemetry_proc_interval(self) -> float: ...
    @property
    def keep(self) -> int: ...
    @property
    def keep_max_bytes(self) -> int: ...
    @property
    def sessions_dir(self) -> Path | None: ...


class Teller(Protocol):
    """Where the host says what became of the snapshot (a plan's observer)."""

    def say(self, text: str) -> None: ...

    def warn(self, text: str) -> None: ...


class Publisher(Protocol):
    """Where each new snapshot goes while a plan runs (the metrics endpoint)."""

    def publish(self, snap: SessionSnapshot) -> None: ...


class SessionHost:
    """One session's life (see the module): ``begin_keeping`` (optional), ``open``,
    ``catch_signals``, ``start_telemetry``, ``load_floors``; ``settle`` as phases end;
    then ``close`` (the dashboard) or ``export`` and ``end`` (a plan)."""

    def __init__(self, scen: Scenario, opts: HostOptions, teller: Teller) -> None:
        self.scen = scen
        self.opts = opts
        self.teller = teller
        self.session: Session | None = None
        self.telemetry: TelemetrySampler | None = None
        #: the kept session's folder (``begin_keeping``), and what keeping it gave
        self.keep_dir: Path | None = None
        self.kept_path: Path | None = None
        self.keep_error: str | None = None
        self.final_snap: SessionSnapshot | None = None
        self._caught: list[signal.Signals] = []
        self._publisher: asyncio.Task[None] | None = None
        #: what the stored answer was settled on (``_answer_key``)
        self._settled: object = None
        #: the answer could not be computed (an analysis fault): what went wrong, once
        self.answer_error: str | None = None

    # ------------------------------------------------------------ the session
    def begin_keeping(self, argv: list[str]) -> Path:
        """Keep this session in the sessions folder (before ``open``); raises OSError
        when the folder is not writable."""
        from xwatch.core.export import sessions

        self.keep_dir = sessions.begin(self.scen, argv, self.opts.sessions_dir)
        return self.keep_dir

    def open(self) -> Session:
        """The session; a kept session (``begin_keeping``) spools its events into its
        folder and records each phase there as it ends."""
        self.session = Session(self.scen, spool_max_mb=self.opts.spool_max_mb,
                               spool_dir=str(self.keep_dir) if self.keep_dir else None)
        if self.keep_dir is not None:
            from xwatch.core.export.sessions import phase_recorder

            self.session.on_phase = phase_recorder(self.keep_dir)
        return self.session

    def catch_signals(self, handler: Callable[[int], None]) -> None:
        """SIGINT, SIGTERM and SIGHUP call ``handler`` on the running loop (where the
        loop can take them: not off the main thread, as a test's app may run)."""
        loop = asyncio.get_running_loop()
        for s in SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(s, handler, s)
                self._caught.append(s)

    def release_signals(self) -> None:
        loop = asyncio.get_running_loop()
        while self._caught:
            loop.remove_signal_handler(self._caught.pop())

    def start_telemetry(self) -> TelemetrySampler:
        """Start sampling the GPUs (a few hundred ms: the dashboard calls it in a thread)."""
        from xwatch.core.telemetry import start_telemetry

        assert self.session is not None
        o = self.opts
        self.telemetry = start_telemetry(self.session, o.telemetry, o.telemetry_interval,
                                         o.telemetry_proc_interval)
        return self.telemetry

    def stop_telemetry(self) -> None:
        if self.telemetry is not None:
            self.telemetry.stop()

    def load_floors(self, modes: Sequence[str]) -> dict[str, Floor]:
        """This machine's recorded noise floors for the scenario in ``modes``, carried by
        the session (one-run answers are judged against them)."""
        from xwatch.core.export.floors import lookup, this_machine

        assert self.session is not None
        info = self.telemetry.info if self.telemetry is not None else None
        found = lookup(this_machine(info), self.scen.to_dict(), list(modes))
        if found:
            self.session.noise_floors = {m: f.as_model() for m, f in found.items()}
        return found

    def publish(self, metrics: Publisher, every_s: float = 1.0) -> None:
        """Hand the metrics endpoint a fresh snapshot every ``every_s`` (scrapes read it),
        until ``stop_publishing``."""
        assert self.session is not None
        session = self.session

        async def loop() -> None:
            while True:
                metrics.publish(session.snapshot())
                await asyncio.sleep(every_s)

        self._publisher = asyncio.create_task(loop())

    def stop_publishing(self, metrics: Publisher) -> None:
        """The publishing stopped; the final numbers handed over, kept until it stops."""
        if self._publisher is not None and self.session is not None:
            self._publisher.cancel()
            self._publisher = None
            metrics.publish(self.session.snapshot())

    # ------------------------------------------------------------ the answer
    def settle(self) -> SessionSnapshot:
        """The session's answer computed once, now, from its phases, and stored on the
        session (``analysis.answer.stored``): every reader reads it. Called as
        each phase ends and at the session's end; the snapshot that carries it."""
        assert self.session is not None
        snap = self.session.snapshot()
        ans = self._answer(snap)
        if ans is None:  # kept as it stood: the phases and the snapshot go on
            return msgspec.structs.replace(snap, answer=self.session.answer)
        self.session.answer = ans
        self._settled = _answer_key(snap)
        return msgspec.structs.replace(snap, answer=self.session.answer)

    def _answer(self, snap: SessionSnapshot) -> M.SessionAnswer | None:
        """``session_answer``; None where it raised (a fault in the analysis, not in the
        run): said once with its traceback, kept in ``answer_error``, so that the phases
        measured are exported all the same and the plan's exit says it failed."""
        try:
            return session_answer(snap)
        except Exception as e:  # the run's data outlives an analysis fault
            if self.answer_error is None:
                self.answer_error = f"{type(e).__name__}: {e}"
                assert self.session is not None
                self.session.log("xwatch", "error", "the answer could not be computed "
                                 f"({self.answer_error}); every phase is kept and "
                                 "exported without it:\n" + traceback.format_exc())
                self.teller.warn(f"the answer could not be computed ({self.answer_error}); "
                                 "the phases are kept and exported without it")
            return None

    def settled(self, telemetry_last: int | None = 600) -> SessionSnapshot:
        """A snapshot taken now whose answer is the session's as it stands: the stored
        one where nothing it reads changed since it was settled; else computed for this
        snapshot (a phase still running: the dashboard's ``s``), stored only when every
        phase has ended (the Compare tab's answer is over finished phases)."""
        assert self.session is not None
        snap = self.session.snapshot(telemetry_last=telemetry_last)
        key = _answer_key(snap)
        if key is not None and key == self._settled:
            return snap
        ans = self._answer(snap)
        if ans is None:
            return msgspec.structs.replace(snap, answer=self.session.answer)
        if key is not None:
            self.session.answer, self._settled = ans, key
        return msgspec.structs.replace(snap, answer=ans)

    # ------------------------------------------------------------ the end
    def prepared(self) -> PreparedExport:
        """The session frozen for writing now, its answer as it stands (on the loop's
        thread; ``write`` then writes it on any thread)."""
        from xwatch.core.export.snapshot import prepare_export

        assert self.session is not None
        return prepare_export(self.session, self.settled(telemetry_last=None))

    @staticmethod
    def write(prep: PreparedExport, directory: str | Path) -> Path:
        """Write a prepared snapshot and its reports into ``directory``; the snapshot's
        path (on any thread)."""
        from xwatch.core.export.report import write_reports
        from xwatch.core.export.snapshot import write_export

        path = write_export(prep, directory)
        write_reports(path)
        return path

    def export(self, directory: str) -> bool:
        """Write the snapshot and reports; True when everything asked for was written.
        A snapshot that cannot be written where asked goes to a safe place instead, and
        the message says where: what was measured is never lost."""
        from xwatch.core.export.snapshot import write_snapshot

        assert self.session is not None
        out = self.teller
        snap = self.settled(telemetry_last=None)
        try:
            path = write_snapshot(self.session, directory, snap)
        except OSError as e:
            out.warn(f"xwatch: snapshot not written to {directory}: {e}")
            safe = _safe_place(self.session)
            try:
                path = write_snapshot(self.session, safe, snap)
            except OSError as e2:
                out.warn(f"xwatch: and not to {safe} either: {e2}")
                return False
            out.warn(f"xwatch: snapshot saved instead to {path} (nothing measured is lost)")
            self._reports(path)
            return False
        out.say(f"snapshot: {path}")
        return self._reports(path)

    def _reports(self, path: Path) -> bool:
        from xwatch.core.export.report import write_reports

        try:
            for p in write_reports(path):
                self.teller.say(f"report: {p}")
            return True
        except Exception as e:  # a report problem never loses the snapshot
            self.teller.warn(f"xwatch: report not written: {e}")
            return False

    def keep(self) -> None:
        """Write this session into the sessions folder (on any exit but SIGKILL)."""
        from xwatch.core.export.sessions import keep

        assert self.session is not None and self.keep_dir is not None
        try:
            self.kept_path = keep(self.session, self.keep_dir, self.opts.keep,
                                  self.opts.keep_max_bytes)
        except Exception as e:  # the events stay in the .live folder: recoverable
            self.keep_error = f"{type(e).__name__}: {e} (events left in {self.keep_dir}; " \
                              "`xwatch sessions --recover` rebuilds them)"

    async def close(self) -> None:
        """The end of an interactive session, its phase stopped: the telemetry stopped,
        the answer settled, the final snapshot taken, the session kept (when keeping)
        and closed."""
        if self.telemetry is not None:
            await asyncio.to_thread(self.telemetry.stop)
        if self.session is not None:
            self.final_snap = self.settle()
            if self.keep_dir is not None:
                await asyncio.to_thread(self.keep)
            self.session.close()

    def end(self) -> None:
        """The end of a plan's session (its snapshot written): its spool closed."""
        if self.session is not None:
            self.session.close()


def _answer_key(snap: SessionSnapshot) -> object:
    """What the answer is computed from, as far as it changes: each phase's name,
    status and end, the floors judged against, whether the phases are a capacity
    search's; None while a phase runs (its numbers change every second)."""
    if any(p.ended_at is None for p in snap.phases):
        return None
    return (tuple((p.name, p.status, p.ended_at, p.step, p.repeat) for p in snap.phases),
            tuple(snap.noise_floors or ()), snap.capacity is not None)


def _safe_place(session: Session) -> str:
    """Where a snapshot goes when the asked-for folder fails: the sessions folder,
    else the temporary folder."""
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
