"""The names of the modes a phase can run in, and of a split phase's.

The tree's own modes are named here (the snapshot and the reports spell them so);
every mode, a registered one from outside the tree too, is known by ``modes.registry``
and declares what it can do by ``modes.contract`` (``ModeBackend``, re-exported here).
"""

from __future__ import annotations

from xwatch.core.modes.contract import ModeBackend

NATIVE, XSCHED, MPS = "native", "xsched", "mps"
MODES = (NATIVE, XSCHED, MPS)
#: how each mode is named on screen and in reports
LABELS = {NATIVE: "native", XSCHED: "XSched", MPS: "MPS"}


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
    return " + ".join(LABELS.get(m) or _label(m) for m in modes_of(mode))


def _label(name: str) -> str:
    """A registered mode's label (one from outside the tree), else its name."""
    from xwatch.core.modes import registry

    mode = registry.find(name)
    return mode.label if mode is not None else name


__all__ = ["LABELS", "MODES", "MPS", "NATIVE", "SPLIT", "XSCHED", "ModeBackend", "label",
           "modes_of", "split_name"]
