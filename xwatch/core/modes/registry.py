"""The modes by name: native, XSched and MPS, and any mode from outside the tree, each
registered the same way (a ``Mode`` at a ``module:attr`` reference, loaded when first
asked for).

The tree's own modes are listed in ``BUILTIN``; a package from outside declares its
own in the entry-point group ``xwatch.modes`` (``name = "package.module:MODE"``), read
through ``importlib.metadata``. Generic code asks this module (``get``, ``modes``,
``names``), never a mode's package: the packages are imported here by name, not at
import time, so that the stages below know nothing of them.
"""

from __future__ import annotations

import argparse
import importlib
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from xwatch.core.modes.contract import Configure, Mode, ModeBackend
from xwatch.errors import UsageError

if TYPE_CHECKING:
    from xwatch.scenario import Scenario

#: the entry-point group of modes from outside the tree
GROUP = "xwatch.modes"
#: the tree's own modes, in the order they are listed and shown
BUILTIN = (("native", "xwatch.core.modes.native:MODE"),
           ("xsched", "xwatch.core.xsched:MODE"),
           ("mps", "xwatch.core.mps:MODE"))
#: the tree's mode that calibrate measures against native unless told (``calibrate
#: --mode``, the dashboard's ``C``)
CALIBRATED = "xsched"

_registered: dict[str, Mode] = {}
_loaded = False


def load_ref(ref: str) -> Any:
    """The object a ``module:attr`` reference names."""
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def register(mode: Mode) -> None:
    """Register ``mode`` under its name (a second mode of one name is an error)."""
    old = _registered.get(mode.name)
    if old is not None and old is not mode:
        raise UsageError(f"mode {mode.name!r} is registered twice ({old!r}, {mode!r})",
                         title="Mode registered twice")
    _registered[mode.name] = mode


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for _, ref in BUILTIN:
        register(load_ref(ref))
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        if ep.name in _registered:
            continue  # the tree's own, or one installed twice
        try:
            mode = ep.load()
        except Exception as e:
            raise UsageError(f"the mode {ep.name!r} of entry point group {GROUP} "
                             f"({ep.value}) cannot be loaded: {type(e).__name__}: {e}",
                             title="Mode not loadable") from e
        if getattr(mode, "name", None) != ep.name:
            raise UsageError(f"entry point {ep.name} = {ep.value!r} (group {GROUP}) names "
                             f"a mode called {getattr(mode, 'name', None)!r}; the names "
                             "must match", title="Mode not loadable")
        register(mode)


def refresh() -> None:
    """Read the modes again when next asked (a package installed or removed since)."""
    global _loaded
    _registered.clear()
    _loaded = False


def modes() -> tuple[Mode, ...]:
    """Every registered mode, the tree's first."""
    _load()
    return tuple(_registered.values())


def names() -> tuple[str, ...]:
    return tuple(m.name for m in modes())


def find(name: str) -> Mode | None:
    _load()
    return _registered.get(name)


def get(name: str) -> Mode:
    """The mode called ``name``; an unknown name is a titled error naming those there
    are."""
    mode = find(name)
    if mode is None:
        raise UsageError(f"unknown mode {name!r}; allowed: {', '.join(names())}",
                         title="Unknown mode")
    return mode


def owner_of(key: str) -> Mode | None:
    """The mode whose ``--set`` key this is (None: no mode's)."""
    return next((m for m in modes() if m.owns_key(key)), None)


def configure(mode: Mode, args: argparse.Namespace, scen: Scenario,
              explicit: bool) -> tuple[ModeBackend | None, str | None]:
    """``mode``'s backend from the command line (``Mode.backend_factory``): (it, None),
    else (None, why not); (None, None) for a mode that runs without one."""
    if mode.backend_factory is None:
        return None, None
    factory: Configure = load_ref(mode.backend_factory)
    return factory(args, scen, explicit)
