"""The dashboard with a mode from outside the tree (``tests/fixtures/outmode``, found
through its entry point): the app made by the one factory binds the mode's key and
shows its tab; the key switches a phase into the mode and back, its proof is recorded
and its tab shows it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import TabbedContent

from tests.helpers import outmode
from xwatch.core.modes import registry
from xwatch.core.plans.options import Backends
from xwatch.scenario import load_scenario
from xwatch.ui.app import make_app


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[None]:
    """The example mode installed for this test only (the registry reads it again)."""
    paths = outmode.install(tmp_path / "site")
    sys.path[:0] = paths
    registry.refresh()
    try:
        yield
    finally:
        for p in paths:
            sys.path.remove(p)
        for name in [m for m in sys.modules if m.startswith("xwatch_outmode")]:
            del sys.modules[name]
        registry.refresh()


async def _wait(pred: Any, pilot: Any, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.1)):
        if pred():
            return
        await pilot.pause(0.1)
    raise AssertionError("condition not reached")


async def test_its_key_runs_a_phase_in_it_and_its_tab_shows_the_proof(
        tmp_path: Path, installed: None) -> None:
    assert "outmode" in registry.names()
    scen = load_scenario(str(outmode.scenario(tmp_path, duration=60)))
    mode = registry.get("outmode")
    backend, why = registry.configure(mode, argparse.Namespace(), scen, explicit=False)
    assert backend is not None and why is None
    app = make_app(scen, telemetry="off", backends=Backends.of(backend))
    async with app.run_test(size=(120, 36)) as pilot:
        assert app.query_one(TabbedContent).get_pane("outmode") is not None
        await _wait(lambda: app.session is not None and app.session.current is not None
                    and app.session.current.runs["low"].rec.count > 2, pilot)
        await pilot.press("o")
        await _wait(lambda: app.session.current.mode == "outmode"  # type: ignore[union-attr]
                    and app.session.current.proof == {  # type: ignore[union-attr]
                        "high": "engaged", "low": "engaged"}, pilot)
        app.query_one(TabbedContent).active = "outmode"
        await _wait(lambda: "engaged" in str(app.query_one("#outmode-panel").render()), pilot)
        await pilot.press("o")  # back to native
        await _wait(lambda: app.session.current.mode == "native" and  # type: ignore[union-attr]
                    app.session.current.runs["low"].rec.count > 0, pilot)
        await app.action_quit()
