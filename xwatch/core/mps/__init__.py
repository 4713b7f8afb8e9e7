"""The MPS mode (NVIDIA Multi-Process Service), one package: a private control daemon per
phase, each workload's client settings, and proof that every workload joined it.

``control`` finds and talks to ``nvidia-cuda-mps-control`` and checks that MPS can
run here; ``env`` gives each workload its client variables; ``controller`` is the
mode backend the runner drives.

This module is the mode's face to the rest of xwatch (``modes.contract``): ``MODE``, its
declaration (registered by ``modes.registry``: name, key, report section, scenario keys,
the backend it configures from the command line), and ``MpsBackend``, what the backend
declares beyond a phase's lifecycle (the settings one daemon holds for a phase, the live
control). It imports the rest of the package only inside functions.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xwatch.core.modes.contract import Control, Controls, KeyHelp, Mode, ModeBackend, ModeBase
from xwatch.errors import ModeError

if TYPE_CHECKING:
    from xwatch.scenario import Scenario, Workload

#: its name (``MpsMode.name``)
NAME = "mps"
#: the ``--set`` keys a sweep or advise varies (``[workload.mps]``, prefixed)
SWEEP_KEYS = ("mps.priority", "mps.active_thread_percentage")
PREFIX = "mps."


class MpsError(ModeError):
    """MPS cannot run here: no control tool, a GPU mode MPS cannot use, a daemon
    already serving the GPU, or the phase's daemon would not start."""

    title = "MPS problem"


class MpsBackend(ModeBackend):
    """What the MPS backend (``controller.MpsController``) declares beyond a phase's
    lifecycle, and its live control."""

    mode = NAME
    if TYPE_CHECKING:  # the controller's state these read
        tool: str
        preflight: bool

        async def set_active_thread_percentage(self, pct: int) -> list[int]: ...

    def phase_wide(self) -> tuple[tuple[str, str], ...]:
        """The control daemon is one per phase: its tool."""
        return (("tool", self.tool), ("preflight", str(self.preflight)))

    def controls(self) -> Controls:
        """The share of SMs for new work; the rest is read when a client starts."""
        return Controls(("threads",), title="MPS live control (the phase's private server)",
                        note="set_active_thread_percentage applies to work submitted from "
                        "now on. Client priority, per-client thread % and the pinned memory "
                        "limit are read when a client starts: change [workload.mps] and "
                        "restart (r).")

    async def control(self, request: Control) -> str:
        pct = request.values.get("percentage")
        servers = await self.set_active_thread_percentage(int(pct or 100))
        return f"active thread percentage {pct} on MPS server(s) " \
               f"{', '.join(map(str, servers))}"


@dataclass(frozen=True)
class MpsMode(ModeBase):
    """MPS's declaration (``modes.contract.Mode``)."""

    name: str = NAME
    label: str = "MPS"
    key: str | None = "m"
    control_screen: str | None = "xwatch.ui.screens.control:MpsControlScreen"
    report_sections: tuple[tuple[int, str], ...] = (
        (30, "xwatch.core.mps.report:mps_section"),)
    sweep_keys: tuple[str, ...] = SWEEP_KEYS
    short_keys: Mapping[str, str] = dataclasses.field(default_factory=lambda: {
        "mps.priority": "pri", "mps.active_thread_percentage": "sm"})
    advise_grid: tuple[Mapping[str, Any], ...] = tuple(
        {"mps.priority": 1, "mps.active_thread_percentage": p} for p in (100, 75, 50, 25))
    unavailable: str = "MPS mode needs an NVIDIA GPU and nvidia-cuda-mps-control (not found)"
    backend_factory: str | None = "xwatch.core.mps.controller:backend_of"

    # -- names-ui
    env_prefixes: tuple[str, ...] = ()  # CUDA_MPS_*: a failed workload shows them as CUDA_*
    report_environment: str | None = "xwatch.core.mps.report:environment"
    keys_help: tuple[KeyHelp, ...] = (
        KeyHelp(20, "`m`", "the same for MPS (NVIDIA): NATIVE <-> MPS under a private "
                "control daemon", (("m", "mode_on_off('mps')", "MPS on/off", True),)),
        KeyHelp(30, "`k` (MPS phase)", "the MPS server's active thread percentage, live"))

    # -- names-engine: the mode's own rules
    proof: str | None = "xwatch.core.mps.participation:PROOF"
    isolation: str | None = "xwatch.core.mps.isolation:ISOLATION"
    verdicts: str | None = "xwatch.core.mps.participation:WORDS"
    setting_words: Mapping[str, str] = dataclasses.field(default_factory=lambda: {
        "mps.active_thread_percentage": "{wl} at {v}% of SMs",
        "mps.priority": "{wl} client priority {v}"})

    def owns_key(self, key: str) -> bool:
        return key.startswith(PREFIX)

    def with_settings(self, w: Workload, kv: Mapping[str, Any]) -> Workload:
        own = {k[len(PREFIX):]: v for k, v in kv.items() if k.startswith(PREFIX)}
        return dataclasses.replace(w, mps=dataclasses.replace(w.mps, **own)) if own else w

    def with_args(self, args: argparse.Namespace, scen: Scenario) -> Scenario:
        """``--join-mps``: the control daemon already serving these GPUs, joined."""
        if not args.join_mps:
            return scen
        return dataclasses.replace(scen, mps=dataclasses.replace(scen.mps, join=True))

    def deploy(self, kv: Mapping[str, Any]) -> list[str]:
        return ["[workload.mps]", *(f"{k.removeprefix(PREFIX)} = {v}" for k, v in kv.items())]

    def add_arguments(self, parser: argparse.ArgumentParser, place: str) -> None:
        """``--join-mps``."""
        if place == "join":
            parser.add_argument(
                "--join-mps", action="store_true",
                help="MPS: make the workloads clients of the MPS control daemon already "
                     "serving these GPUs instead of refusing to start (overrides [mps] join)")

    def words(self, settings: Mapping[str, Any]) -> str | None:
        """``MPS at 50%``: its active thread percentage (None: not set)."""
        sm = next((v for k, v in settings.items() if k.endswith("active_thread_percentage")),
                  None)
        return f"MPS at {sm}%" if sm is not None else None


MODE: Mode = MpsMode()  # checked against the contract
