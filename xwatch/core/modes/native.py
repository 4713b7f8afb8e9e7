"""Native: the GPU shared as the driver shares it, the baseline every mode is measured
against. Its declaration (``modes.contract.Mode``) registers as every mode's does; it
runs without a backend and has no settings, controls or sections of its own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from xwatch.core.modes.contract import Mode, ModeBase


@dataclass(frozen=True)
class NativeMode(ModeBase):
    """Native's declaration: no backend, settings, controls or sections of its own."""

    name: str = "native"
    label: str = "native"

    def words(self, settings: Mapping[str, Any]) -> str | None:
        return "native"


MODE: Mode = NativeMode()  # checked against the contract
