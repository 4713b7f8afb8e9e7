"""A mode's support for its workloads' processes (the mode contract's "fork support"):
what the fork server (``zygote``) and the worker ask of the mode whose environment they
run in. The environment names it: ``SUPPORT_ENV`` holds ``module:attr`` references
(comma-separated) that the mode puts in its workloads' environment, so a process loads
the support of its own mode and nothing else, and the worker stays free of the modes
(no registry, no mode package imported until its environment names one).

A support (``ForkSupport``) says which of its variables are read after the fork
(``lazy``: a forked child may differ from its server in them); judges a fork server
after its imports (``after_imports``: its state, or why it cannot fork); prepares a
forked child before its module runs (``in_child``); and lets a process leave the mode
before ``os._exit`` skips the exit the mode would see (``before_exit``)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from collections.abc import Mapping
from typing import Any, Protocol

#: the ``module:attr`` references of the supports of a process's mode (comma-separated)
SUPPORT_ENV = "XWATCH_FORK_SUPPORT"


class ForkSupport(Protocol):
    """A mode's support for the processes of its workloads (see the module)."""

    def lazy(self, name: str) -> bool:
        """Whether the mode's variable ``name`` is read after the fork, so a forked
        child may differ from its server in it."""

    def after_imports(self) -> tuple[Any, str | None]:
        """In a fork server, after its imports: (its state for ``in_child``, None), or
        (None, why its children would not be what an exec'd process is)."""

    def in_child(self, state: Any) -> None:
        """In a forked child, before its module runs (``state``: ``after_imports``'s)."""

    def before_exit(self) -> bool:
        """Before ``os._exit``: leave the mode as a normal exit would; whether it did."""


@functools.cache
def _load(ref: str) -> ForkSupport:
    module, _, attr = ref.partition(":")
    support: ForkSupport = getattr(importlib.import_module(module), attr)
    return support


def named(env: Mapping[str, str]) -> tuple[ForkSupport, ...]:
    """The supports ``env`` names (``SUPPORT_ENV``), loaded once per process."""
    return tuple(_load(ref) for ref in env.get(SUPPORT_ENV, "").split(",") if ref)


def before_exit(env: Mapping[str, str] = os.environ) -> bool:
    """Every support of this process's mode lets it leave (``ForkSupport.before_exit``);
    whether one did. A support that fails leaves the exit as it was."""
    try:
        supports = named(env)
    except Exception:  # the exit goes on as it was
        return False
    left = False
    for support in supports:
        with contextlib.suppress(Exception):
            left = support.before_exit() or left
    return left
