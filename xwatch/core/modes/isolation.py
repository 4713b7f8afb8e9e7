"""Keeps each mode's workloads clean of the other modes, and proves it.

By construction: a phase starts its workloads from the user's environment minus
every other mode's traces (``clean_env``). A native phase gets no ``XSCHED_*``,
no XSched shim in ``LD_PRELOAD``, no ``LD_LIBRARY_PATH`` entry that holds a shim
(the configured install's ``lib/``, or any folder with ``libshimcuda.so`` /
``libshimhip.so`` beside a ``libcuda.so*`` / ``libamdhip64.so*``), no
``CUDA_MPS_*``, and a private empty MPS pipe folder, so that even a system-wide
MPS daemon cannot take it in. XSched and MPS phases lose the other one's traces.
What was removed is recorded per phase, with the reason.

By proof: once a workload runs, ``scheduler_libraries`` reads the
``/proc/PID/maps`` of it and its children. A shim mapped in a native or MPS phase
fails the phase, naming the library and where it came from (``shim_origin``);
where the maps cannot be read the verdict is "unverified", never "clean".
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from xwatch.core import model as M
from xwatch.core.modes.base import MPS, NATIVE, XSCHED
from xwatch.core.procs import environ, maps, tree

SHIM_NAMES = ("libshimcuda.so", "libshimhip.so")
DRIVER_PREFIXES = ("libcuda.so", "libamdhip64.so")
#: folder of private, empty MPS pipe directories (non-MPS phases point CUDA there)
NO_MPS_DIR = "no-mps"
#: set when xwatch restarted itself without the shim on its own library path (JSON:
#: what was removed); phases add it to their record
SELF_CLEANED_ENV = "XWATCH_SELF_CLEANED"


def self_cleaned(env: Mapping[str, str]) -> list[dict[str, str]]:
    """What xwatch took off its own environment at start (see the CLI), for the record."""
    import json

    try:
        got = json.loads(env.get(SELF_CLEANED_ENV) or "[]")
    except ValueError:
        return []
    return [{"name": str(r.get("name")), "value": str(r.get("value")),
             "why": f"{r.get('why')} (removed from xwatch's own environment at start, so "
                    "no phase inherits it)"} for r in got if isinstance(r, dict)]


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


@dataclass
class Cleaned:
    """A mode's starting environment and what was taken out of the user's."""

    env: dict[str, str]
    removed: list[dict[str, str]] = field(default_factory=list)  # {"name", "value", "why"}

    def as_record(self) -> list[dict[str, str]]:
        return [dict(r) for r in self.removed]


def clean_env(env: Mapping[str, str], mode: str, install_libs: Iterable[str] = (),
              private_dir: str | None = None) -> Cleaned:
    """``env`` minus the traces of every mode other than ``mode`` (see the module)."""
    out = dict(env)
    libs = [str(x) for x in install_libs]
    c = Cleaned(out)

    def drop(name: str, why: str, keep: str | None = None) -> None:
        c.removed.append({"name": name, "value": env.get(name, ""), "why": why})
        if keep:
            out[name] = keep
        else:
            out.pop(name, None)

    if mode != XSCHED:
        for k in sorted(env):
            if k.startswith("XSCHED_"):
                drop(k, f"XSched variable: not for a {mode} phase")
        pre = env.get("LD_PRELOAD", "")
        if pre:
            parts = pre.replace(":", " ").split()
            kept = [x for x in parts if not is_shim(x) and
                    not any(os.path.dirname(x) == lib for lib in libs)]
            if len(kept) != len(parts):
                shims = ", ".join(sorted(set(parts) - set(kept)))
                drop("LD_PRELOAD", f"it preloads the XSched shim ({shims})", " ".join(kept))
        lp = env.get("LD_LIBRARY_PATH", "")
        if lp:
            parts = lp.split(":")
            bad = [x for x in parts if holds_shim(x, libs)]
            if bad:
                kept = [x for x in parts if x not in bad]
                drop("LD_LIBRARY_PATH", "it holds the XSched shim ahead of the driver: "
                     + ", ".join(bad), ":".join(kept))
    if mode != MPS:
        for k in sorted(env):
            if k.startswith("CUDA_MPS_"):
                drop(k, f"MPS client variable: not for a {mode} phase")
        if private_dir:
            out["CUDA_MPS_PIPE_DIRECTORY"] = private_dir  # empty: no MPS daemon can answer
    return c


def private_dir(scratch_dir: str) -> str:
    """The empty folder every non-MPS mode's workloads get as their MPS pipe folder
    (made here, in the session's scratch folder)."""
    d = os.path.join(scratch_dir, NO_MPS_DIR)
    os.makedirs(d, exist_ok=True)
    return d


def record(mode: str, removed: list[dict[str, str]],
           envs: Mapping[str, Mapping[str, str]]) -> M.Isolation:
    """A phase's isolation record: what was removed, and the private pipe folder its
    non-MPS modes were given (``envs``: each mode's cleaned environment)."""
    pipe = next((env.get("CUDA_MPS_PIPE_DIRECTORY") for m, env in envs.items() if m != MPS),
                None)
    return M.Isolation(mode=mode, removed=[M.Removed(**r) for r in removed], mps_pipe=pipe,
                       workloads={})


# ------------------------------------------------------------ proof from the maps
def scheduler_libraries(pid: int, install_libs: Iterable[str] = ()) -> list[str] | None:
    """XSched libraries mapped by ``pid`` or any of its children (sorted, unique);
    None when the maps cannot be read (not Linux, permissions, process gone)."""
    libs = [str(x) for x in install_libs]
    seen: set[str] = set()
    read_any = False
    for p in tree(pid):
        mapped = maps(p)
        if mapped is None:
            continue
        read_any = True
        for path in mapped:
            if is_shim(path) or any(path.startswith(lib.rstrip("/") + "/") for lib in libs):
                seen.add(path)
    return sorted(seen) if read_any else None


def shim_origin(pid: int, lib: str, added: Mapping[str, str]) -> str:
    """Where a mapped shim came from, from the process's own environment and what
    the scenario (``added``: what xwatch set for it) gave it."""
    env = environ(pid) or {}
    folder = os.path.dirname(lib)
    for var in ("LD_PRELOAD", "LD_LIBRARY_PATH"):
        val = env.get(var, "")
        hit = lib in val.replace(":", " ").split() if var == "LD_PRELOAD" else \
            folder in val.split(":")
        if hit:
            by = "the workload's own env in the scenario" if var in added else \
                "the process itself (its environment at exec was cleaned)"
            return f"{var}={val} (set by {by})"
    return "loaded by the program itself (rpath, dlopen or a wrapper), not through xwatch's " \
           "environment"


def verdict(mode: str, libraries: list[str] | None) -> str:
    """clean | shim-mapped | shim-loaded | shim-missing | unverified."""
    if libraries is None:
        return "unverified"
    shim = any(is_shim(x) for x in libraries)
    if mode == XSCHED:
        return "shim-loaded" if shim else "shim-missing"
    return "shim-mapped" if shim else "clean"


def failure_text(mode: str, name: str, pid: int, libraries: list[str],
                 origin: str) -> str:
    shim = next((x for x in libraries if is_shim(x)), libraries[0])
    what = "native" if mode == NATIVE else mode
    return (f"{name}: the XSched shim {shim} is mapped in its process (pid {pid}) during a "
            f"{what} phase, so this is not a clean {what} baseline; it came from {origin}")
