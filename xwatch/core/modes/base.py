"""The names of the modes a phase can run in, and of a split phase's.

Native is named here (every other mode is measured against it); every mode, the tree's
own (``MODES``, the registry's ``BUILTIN``) and a registered one from outside the tree,
is known by ``modes.registry`` and declares what it can do by ``modes.contract``
(``ModeBackend``, re-exported here), its name and label among it.
"""

from __future__ import annotations

from xwatch.core.modes.contract import ModeBackend
from xwatch.core.modes.registry import BUILTIN

NATIVE = "native"
#: the tree's own modes, in the registry's order
MODES = tuple(name for name, _ in BUILTIN)


#: a split phase's mode: its copies' modes joined (``native+xsched``)
SPLIT = "+"


def split_name(modes: tuple[str, ...] | list[str]) -> str:
    """The mode of a phase whose copies run in ``modes`` (in the registry's order:
    ``MODES``, then the modes from outside the tree)."""
    from xwatch.core.modes import registry

    return SPLIT.join(m for m in registry.names() if m in modes)


def modes_of(mode: str) -> tuple[str, ...]:
    """The modes a phase's ``mode`` names (a split phase: several)."""
    return tuple(mode.split(SPLIT))


def label(mode: str) -> str:
    """How ``mode`` is named on screen and in reports (a split phase's: its modes')."""
    return " + ".join(_label(m) for m in modes_of(mode))


def _label(name: str) -> str:
    """A registered mode's label (``Mode.label``), else its name."""
    from xwatch.core.modes import registry

    mode = registry.find(name)
    return mode.label if mode is not None else name


__all__ = ["MODES", "NATIVE", "SPLIT", "ModeBackend", "label", "modes_of", "split_name"]
