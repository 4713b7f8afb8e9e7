"""XSched's part in keeping each mode's workloads clean of the other modes, and proving
it (``ISOLATION``, the mode's ``modes.contract.Isolation``; ``modes.isolation`` asks it).

By construction: another mode's phase gets no ``XSCHED_*``, no XSched shim in
``LD_PRELOAD``, no ``LD_LIBRARY_PATH`` entry that holds a shim (the configured install's
``lib/``, or any folder with ``libshimcuda.so`` / ``libshimhip.so`` beside a
``libcuda.so*`` / ``libamdhip64.so*``). By proof: a shim mapped in a workload's process
marks XSched (``marks``): under XSched the first half of engaged, in a native or MPS
phase its failure (``failure_text``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from xwatch.core.modes.contract import Scrubbing

SHIM_NAMES = ("libshimcuda.so", "libshimhip.so")
DRIVER_PREFIXES = ("libcuda.so", "libamdhip64.so")


def is_shim(path: str) -> bool:
    """An XSched interception library (any build of the shim)."""
    base = os.path.basename(path)
    return any(base.startswith(s) for s in SHIM_NAMES)


def holds_shim(folder: str, install_libs: Iterable[str] = ()) -> bool:
    """A library folder through which a program would load an XSched shim."""
    if not folder:
        return False
    try:
        real = str(Path(folder).resolve())
    except OSError:
        real = folder
    if any(real == str(Path(x).resolve()) for x in install_libs):
        return True
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(n in SHIM_NAMES for n in names) and \
        any(n.startswith(DRIVER_PREFIXES) for n in names)


class XschedIsolation:
    """XSched's ``modes.contract.Isolation``."""

    maps_proof = True

    def scrub(self, env: Mapping[str, str], mode: str, cleaned: Scrubbing,
              libs: list[str], private_dir: str | None) -> None:
        for k in sorted(env):
            if k.startswith("XSCHED_"):
                cleaned.drop(k, f"XSched variable: not for a {mode} phase")
        pre = env.get("LD_PRELOAD", "")
        if pre:
            parts = pre.replace(":", " ").split()
            kept = [x for x in parts if not is_shim(x) and
                    not any(os.path.dirname(x) == lib for lib in libs)]
            if len(kept) != len(parts):
                shims = ", ".join(sorted(set(parts) - set(kept)))
                cleaned.drop("LD_PRELOAD", f"it preloads the XSched shim ({shims})",
                             " ".join(kept))
        lp = env.get("LD_LIBRARY_PATH", "")
        if lp:
            parts = lp.split(":")
            bad = [x for x in parts if holds_shim(x, libs)]
            if bad:
                kept = [x for x in parts if x not in bad]
                cleaned.drop("LD_LIBRARY_PATH", "it holds the XSched shim ahead of the driver: "
                             + ", ".join(bad), ":".join(kept))

    def private_dir(self, scratch_dir: str) -> str | None:
        return None

    def record(self, envs: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
        return {}

    def marks(self, path: str) -> bool:
        return is_shim(path)

    def failure_text(self, mode: str, name: str, pid: int, libraries: list[str],
                     origin: str) -> str:
        shim = next((x for x in libraries if is_shim(x)), libraries[0])
        return (f"{name}: the XSched shim {shim} is mapped in its process (pid {pid}) during "
                f"a {mode} phase, so this is not a clean {mode} baseline; it came from "
                f"{origin}")


ISOLATION = XschedIsolation()
