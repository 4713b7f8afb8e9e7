"""The one retry of a phase whose xserver died before its first measured second (issue
64 goal 4): whether a phase ended that way, what the retry records of the first attempt
(``PhaseRetry``), and the reason given when the second attempt ends the same way.
``Driver.step`` runs the retry (``XschedBackend.died_early``, ``XserverRetry``); the
first attempt measured nothing, so it is not one of the session's phases."""

from __future__ import annotations

import time
from dataclasses import dataclass

from xwatch.core import model as M
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.live.session import Session


def xserver_died_early(phase: Phase) -> M.XserverExit | None:
    """How xserver ended, when it died in ``phase`` (a failed phase) before its first
    measured second; None otherwise."""
    xs = phase.xsched
    if xs is None or phase.status != "failed" or not xs.xserver_exit:
        return None
    died = xs.xserver_exit
    first_s = None if phase.t_measure is None else phase.t_measure - phase.t_start + 1.0
    return died if first_s is None or died.t <= first_s else None


def first_attempt(phase: Phase, died: M.XserverExit, session: Session
                  ) -> tuple[M.PhaseRetry, str]:
    """The record of the failed first attempt, and the console's line about the retry
    (logged in ``session``); the attempt is taken out of its phases (the
    retry takes its name and index)."""
    end = phase.t_end if phase.t_end is not None else time.monotonic()
    first = M.PhaseRetry(error=phase.error or died.reason, xserver_exit=died,
                         t=round(end - phase.t_start, 3))
    line = (f"{phase.name}: xserver died {died.t:.1f} s into the phase, before its first "
            f"measured second ({died.reason}); starting xserver again and running the "
            "phase once more")
    session.log("xwatch", "warning", line)
    if phase in session.phases:
        session.phases.remove(phase)
    return first, line


def failed_twice(phase: Phase, first: M.PhaseRetry) -> None:
    """The retry's xserver died early too: the phase fails, saying so."""
    why = ("xserver died before the first measured second in both attempts (the first: "
           f"{first.error})")
    phase.error = f"{phase.error}; {why}" if phase.error else why


@dataclass(frozen=True)
class XserverRetry:
    """The retry of ``phase``, whose xserver died early (``died``): the backend's
    ``modes.contract.Retry``."""

    phase: Phase
    died: M.XserverExit

    def first_attempt(self, session: Session) -> tuple[M.PhaseRetry, str]:
        return first_attempt(self.phase, self.died, session)

    def failed_twice(self, first: M.PhaseRetry) -> None:
        failed_twice(self.phase, first)


def retry_of(phase: Phase) -> XserverRetry | None:
    """``phase``'s retry when its xserver died early (``xserver_died_early``), else None."""
    died = xserver_died_early(phase)
    return XserverRetry(phase, died) if died is not None else None
