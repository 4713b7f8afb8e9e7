"""Keeps each mode's workloads clean of the other modes, and proves it; each mode says
what its traces are (``Mode.isolation``: a ``modes.contract.Isolation``, e.g.
``xsched.rules.isolation``, ``mps.isolation``), asked here through the registry.

By construction: a phase starts its workloads from the user's environment minus
every other mode's traces (``clean_env``): a native phase gets none of XSched's
(``XSCHED_*``, its shim preloaded or on ``LD_LIBRARY_PATH``) nor MPS's (``CUDA_MPS_*``;
a private empty pipe folder, ``private_dir``); XSched and MPS phases lose the other
one's traces. What was removed is recorded per phase, with the reason (``record``).

By proof: once a workload runs, ``scheduler_libraries`` reads the
``/proc/PID/maps`` of it and its children. A library that marks another mode
(``Isolation.marks``: XSched's shim) mapped in a phase fails the phase, naming the
library and where it came from (``shim_origin``); where the maps cannot be read the
verdict is "unverified", never "clean".
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xwatch.core import model as M
from xwatch.core.procs import environ, maps, tree

if TYPE_CHECKING:
    from xwatch.core.modes.contract import Isolation

#: set when xwatch restarted itself without the shim on its own library path (JSON:
#: what was removed); phases add it to their record
SELF_CLEANED_ENV = "XWATCH_SELF_CLEANED"


def isolations() -> list[tuple[str, Isolation]]:
    """Every registered mode's isolation (``Mode.isolation``), in the registry's order."""
    from xwatch.core.modes import registry

    return [(m.name, registry.load_ref(m.isolation)) for m in registry.modes()
            if m.isolation is not None]


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


@dataclass
class Cleaned:
    """A mode's starting environment and what was taken out of the user's (``source``)."""

    env: dict[str, str]
    removed: list[dict[str, str]] = field(default_factory=list)  # {"name", "value", "why"}
    source: Mapping[str, str] = field(default_factory=dict)

    def drop(self, name: str, why: str, keep: str | None = None) -> None:
        """Take ``name`` out (``keep``: what is left of its value), saying why."""
        self.removed.append({"name": name, "value": self.source.get(name, ""), "why": why})
        if keep:
            self.env[name] = keep
        else:
            self.env.pop(name, None)

    def as_record(self) -> list[dict[str, str]]:
        return [dict(r) for r in self.removed]


def clean_env(env: Mapping[str, str], mode: str, install_libs: Iterable[str] = (),
              private_dir: str | None = None) -> Cleaned:
    """``env`` minus the traces of every mode other than ``mode`` (see the module)."""
    libs = [str(x) for x in install_libs]
    c = Cleaned(dict(env), source=env)
    for name, iso in isolations():
        if name != mode:
            iso.scrub(env, mode, c, libs, private_dir)
    return c


def private_dir(scratch_dir: str) -> str | None:
    """The private folder a mode keeps for the other modes' workloads (MPS's empty pipe
    folder: ``Isolation.private_dir``), made in the session's scratch folder; None: none
    is kept."""
    return next((d for _, iso in isolations()
                 if (d := iso.private_dir(scratch_dir)) is not None), None)


def record(mode: str, removed: list[dict[str, str]],
           envs: Mapping[str, Mapping[str, str]]) -> M.Isolation:
    """A phase's isolation record: what was removed, and what each mode keeps of it
    (``Isolation.record``: MPS's private pipe folder; ``envs``: each mode's cleaned
    environment)."""
    own = {k: v for _, iso in isolations() for k, v in iso.record(envs).items()}
    return M.Isolation(mode=mode, removed=[M.Removed(**r) for r in removed], workloads={},
                       **own)


# ------------------------------------------------------------ proof from the maps
def _marked(path: str, isos: list[tuple[str, Isolation]]) -> str | None:
    """The mode whose library ``path`` is (``Isolation.marks``), else None."""
    return next((name for name, iso in isos if iso.marks(path)), None)


def scheduler_libraries(pid: int, install_libs: Iterable[str] = ()) -> list[str] | None:
    """The modes' libraries (``Isolation.marks``, or under a configured mode's library
    folder) mapped by ``pid`` or any of its children (sorted, unique); None when the maps
    cannot be read (not Linux, permissions, process gone)."""
    libs = [str(x) for x in install_libs]
    isos = isolations()
    seen: set[str] = set()
    read_any = False
    for p in tree(pid):
        mapped = maps(p)
        if mapped is None:
            continue
        read_any = True
        for path in mapped:
            if _marked(path, isos) is not None or \
                    any(path.startswith(lib.rstrip("/") + "/") for lib in libs):
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
    """clean | shim-mapped | shim-loaded | shim-missing | unverified: under a mode proven
    by the maps (``Isolation.maps_proof``: XSched), whether its library is mapped; under
    any other, whether a library marking another mode is."""
    if libraries is None:
        return "unverified"
    isos = isolations()
    own = dict(isos).get(mode)
    if own is not None and own.maps_proof:
        return "shim-loaded" if any(own.marks(x) for x in libraries) else "shim-missing"
    return "shim-mapped" if any(_marked(x, isos) is not None for x in libraries) else "clean"


def failure_text(mode: str, name: str, pid: int, libraries: list[str],
                 origin: str) -> str:
    """Why a ``mode`` phase fails when another mode's library is mapped in workload
    ``name``'s process (``Isolation.failure_text`` of the mode it marks)."""
    isos = isolations()
    owner = next((_marked(x, isos) for x in libraries if _marked(x, isos) is not None),
                  None)
    iso = dict(isos).get(owner or "")
    if iso is None:
        return (f"{name}: {', '.join(libraries)} mapped in its process (pid {pid}) during a "
                f"{mode} phase; it came from {origin}")
    return iso.failure_text(mode, name, pid, libraries, origin)
