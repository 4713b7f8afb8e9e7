"""A split phase's proof per copy on the MPS side: a copy of another mode that shows up
in the MPS servers' client lists fails the phase; the MPS copies themselves may."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

from xwatch.core.modes.base import NATIVE
from xwatch.core.mps.controller import MpsController

MPS = "mps"


def _phase(copy_modes: dict[str, str] | None) -> Any:
    me = os.getpid()
    runs = {n: SimpleNamespace(pid=me if n.endswith("@0") else me + 10 ** 6)
            for n in ("high@0", "low@0", "high@1", "low@1")}
    modes = copy_modes or {}
    return SimpleNamespace(copy_modes=copy_modes, runs=runs,
                           in_mode=lambda m, n: modes.get(n, MPS) == m,
                           mode_of=lambda n: modes.get(n, MPS), session=SimpleNamespace(
                               log=lambda *a: None), mps=None)


def test_a_native_copy_that_is_an_mps_client_fails_the_phase() -> None:
    ctl = MpsController("/t", SimpleNamespace())  # type: ignore[arg-type]
    split = {"high@0": NATIVE, "low@0": NATIVE, "high@1": MPS, "low@1": MPS}
    ctl.phase = _phase(split)
    lists = {111: [os.getpid()]}  # the native copies' pid (GPU 0) is listed as a client
    why = ctl.intruders(ctl.phase, lists)
    assert why is not None and "high@0" in why and "runs native" in why
    assert ctl.failure() == why
    ok = MpsController("/t", SimpleNamespace())  # type: ignore[arg-type]
    ok.phase = _phase({"high@0": MPS, "low@0": MPS, "high@1": NATIVE, "low@1": NATIVE})
    assert ok.intruders(ok.phase, lists) is None  # the client is an MPS copy
    assert ok.intruders(ok.phase, {111: []}) is None
    plain = MpsController("/t", SimpleNamespace())  # type: ignore[arg-type]
    plain.phase = _phase(None)  # a one-mode MPS phase: every copy a client
    assert plain.intruders(plain.phase, lists) is None
