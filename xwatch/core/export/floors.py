"""Recorded noise floors on disk: one JSON file per host, GPU, driver, scenario
content and mode under ``$XDG_STATE_HOME/xwatch/noise/`` (else
``~/.local/state/xwatch/noise/``), written atomically. ``xwatch noise`` writes
them; compare, calibrate, sweep and the dashboard read them for one-run
answers and carry the ones they used in their snapshot."""

from __future__ import annotations

import json
import os
import socket
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from xwatch.core import model as M
from xwatch.core.analysis.stats.noise import (
    Floor,
    MachineKey,
    floor_key,
    machine_of,
    scenario_digest,
)


def root() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"),
                                                            ".local", "state")
    return Path(base) / "xwatch" / "noise"


def this_machine(telemetry_info: M.TelemetryInfo | None) -> MachineKey:
    return machine_of(socket.gethostname(), telemetry_info)


def path_for(machine: Mapping[str, Any], digest: str, mode: str) -> Path:
    return root() / f"{mode}-{floor_key(machine, digest, mode)}.json"


def save(floor: Floor) -> Path:
    """Write ``floor`` where lookups for its machine, scenario and mode find it."""
    path = path_for(floor.machine, floor.digest, floor.mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(floor.as_dict(), f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def lookup(machine: Mapping[str, Any], scenario_dict: Mapping[str, Any],
           modes: Iterable[str]) -> dict[str, Floor]:
    """The recorded floors of these modes for this machine and scenario content."""
    digest = scenario_digest(scenario_dict)
    out: dict[str, Floor] = {}
    for mode in modes:
        try:
            out[mode] = Floor.from_dict(json.loads(path_for(machine, digest, mode).read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out
