"""The modes a phase can run in, and what a mode backend provides to the runner.

A backend prepares its mode for a phase (start a daemon, build each workload's
environment), watches it while the phase runs (a dead daemon fails the phase),
judges each running workload (is it really scheduled by the mode?), and tears
the mode down. Native has no backend: it is the absence of one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from xwatch.core.engine.live.phase import Phase
    from xwatch.core.engine.live.workload import WorkloadRun

NATIVE, XSCHED, MPS = "native", "xsched", "mps"
MODES = (NATIVE, XSCHED, MPS)
#: how each mode is named on screen and in reports
LABELS = {NATIVE: "native", XSCHED: "XSched", MPS: "MPS"}


#: a split phase's mode: its copies' modes joined (``native+xsched``)
SPLIT = "+"


def split_name(modes: tuple[str, ...] | list[str]) -> str:
    """The mode of a phase whose copies run in ``modes`` (in ``MODES`` order)."""
    return SPLIT.join(m for m in MODES if m in modes)


def modes_of(mode: str) -> tuple[str, ...]:
    """The modes a phase's ``mode`` names (a split phase: several)."""
    return tuple(mode.split(SPLIT))


def label(mode: str) -> str:
    return " + ".join(LABELS.get(m, m) for m in modes_of(mode))


class ModeBackend(Protocol):
    """What a non-native mode (XSched, MPS) provides to the runner."""

    mode: str

    async def enter(self, phase: Phase) -> dict[str, dict[str, str]]:
        """Prepare the mode; return extra environment per workload name."""

    async def settle(self, phase: Phase) -> None:
        """Wait for what ``enter`` left running beside the workloads' start (the MPS
        preflight); raise its failure. The start gate stays shut until this returns."""

    async def last_look(self, phase: Phase) -> None:
        """The phase's workloads are about to be stopped: the last moment they are seen
        running (MPS reads the client lists for those not proven clients yet: on a busy
        machine a short phase can end before its watch got to them). None here."""
        return None

    async def leave(self, phase: Phase) -> None:
        """Undo ``enter`` (stop daemons); must be safe to call twice."""

    def kill_now(self) -> None:
        """Synchronous emergency stop."""

    def failure(self) -> str | None:
        """Why the mode can no longer run this phase (its daemon died), else None."""

    def on_running(self, run: WorkloadRun, libraries: list[str] | None) -> None:
        """A workload of the phase is running; ``libraries``: the scheduler libraries
        its processes have mapped (None: unreadable). Evidence for the verdicts."""
