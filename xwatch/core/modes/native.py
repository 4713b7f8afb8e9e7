"""Native: the GPU shared as the driver shares it, the baseline every mode is measured
against. Its declaration (``modes.contract.Mode``) registers as every mode's does; it
runs without a backend and has no settings, controls or sections of its own."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xwatch.core.modes.contract import KeyHelp, Mode

if TYPE_CHECKING:
    from xwatch.core.engine.snapshot import PhaseSnapshot
    from xwatch.scenario import Scenario, Workload


@dataclass(frozen=True)
class NativeMode:
    """Native's declaration."""

    name: str = "native"
    label: str = "native"
    key: str | None = None
    tab: str | None = None
    control_screen: str | None = None
    report_sections: tuple[tuple[int, str], ...] = ()
    sweep_keys: tuple[str, ...] = ()
    short_keys: Mapping[str, str] = field(default_factory=dict)
    advise_grid: tuple[Mapping[str, Any], ...] = ()
    unavailable: str = ""
    backend_factory: str | None = None

    # -- names-ui
    env_prefixes: tuple[str, ...] = ()
    libraries: str | None = None
    report_environment: str | None = None
    metrics: str | None = None
    upgrade: str | None = None
    help: str = ""
    keys_help: tuple[KeyHelp, ...] = ()
    tab_view: str | None = None
    lanes: str | None = None
    compare_view: str | None = None

    # -- names-engine: the mode's own rules
    proof: str | None = None
    isolation: str | None = None
    verdicts: str | None = None
    setting_words: Mapping[str, str] = field(default_factory=dict)

    def owns_key(self, key: str) -> bool:
        return False

    def with_settings(self, w: Workload, kv: Mapping[str, Any]) -> Workload:
        return w

    def with_args(self, args: argparse.Namespace, scen: Scenario) -> Scenario:
        return scen

    def deploy(self, kv: Mapping[str, Any]) -> list[str]:
        return []

    # -- names-scen: its command-line arguments and its doctor checks
    doctor: str | None = None

    def add_arguments(self, parser: argparse.ArgumentParser, place: str) -> None:
        return None

    def words(self, settings: Mapping[str, Any]) -> str | None:
        return "native"

    def warnings(self, phase: PhaseSnapshot) -> list[tuple[str, str]]:
        return []


MODE: Mode = NativeMode()  # checked against the contract
