"""MPS's part in keeping each mode's workloads clean of the other modes (``ISOLATION``,
the mode's ``modes.contract.Isolation``; ``modes.isolation`` asks it): another mode's
phase gets no ``CUDA_MPS_*`` and a private empty MPS pipe folder, so that even a
system-wide MPS daemon cannot take it in. MPS leaves no library in a process to prove it
by the maps (its proof is the daemon's client list)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from xwatch.core.modes.contract import Scrubbing

#: folder of private, empty MPS pipe directories (non-MPS phases point CUDA there)
NO_MPS_DIR = "no-mps"
PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY"


class MpsIsolation:
    """MPS's ``modes.contract.Isolation``."""

    maps_proof = False

    def scrub(self, env: Mapping[str, str], mode: str, cleaned: Scrubbing,
              libs: list[str], private_dir: str | None) -> None:
        for k in sorted(env):
            if k.startswith("CUDA_MPS_"):
                cleaned.drop(k, f"MPS client variable: not for a {mode} phase")
        if private_dir:
            cleaned.env[PIPE_ENV] = private_dir  # empty: no MPS daemon can answer

    def private_dir(self, scratch_dir: str) -> str | None:
        """The empty folder every non-MPS mode's workloads get as their MPS pipe folder
        (made here, in the session's scratch folder)."""
        d = os.path.join(scratch_dir, NO_MPS_DIR)
        os.makedirs(d, exist_ok=True)
        return d

    def record(self, envs: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
        """The private pipe folder its other modes were given."""
        return {"mps_pipe": next((env.get(PIPE_ENV) for m, env in envs.items()
                                  if m != "mps"), None)}

    def marks(self, path: str) -> bool:
        return False

    def failure_text(self, mode: str, name: str, pid: int, libraries: list[str],
                     origin: str) -> str:
        return f"{name}: {', '.join(libraries)} mapped in its process (pid {pid}) from {origin}"


ISOLATION = MpsIsolation()
