"""Seen live (issue 64 goal 2): within 10 s of a workload's first requests under XSched
or MPS, the main screen's alert bar names the workload that takes no part in the
phase's mode and says what to do; the ones that take part are not named. Real
processes against the fake XSched install and the fake MPS control tool."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from tests.helpers.fake_xsched import have_cc, make_install
from tests.helpers.scenarios import producer, two
from tests.ui.test_app import wait_for
from xwatch.core.plans.options import Backends
from xwatch.scenario import load_scenario
from xwatch.ui.app import XwatchApp, make_app
from xwatch.ui.widgets.status import AlertBar

#: the goal: named within this many seconds of the workload's first requests
WITHIN_S = 10.0


async def _named_within(app: XwatchApp, pilot: object, name: str, words: str) -> float:
    """Seconds from ``name``'s first request to the alert bar's line on it, shown on the
    main screen (the Live tab)."""
    await wait_for(lambda: app.session is not None and app.session.current is not None
                   and name in app.session.current.runs
                   and app.session.current.runs[name].rec.count > 0, pilot, timeout=60)
    first = time.monotonic()
    bar = app.query_one(AlertBar)
    await wait_for(lambda: f"{name}: {words}" in getattr(bar, "plain", ""), pilot,
                   timeout=WITHIN_S)
    assert app.query_one(TabbedContent).active == "live"
    return time.monotonic() - first


@pytest.mark.skipif(not have_cc(), reason="needs a C compiler for the fake shim")
async def test_a_workload_xsched_does_not_schedule_is_named_on_the_main_screen(
        tmp_path: Path) -> None:
    from xwatch.core.xsched.controller import XschedController
    from xwatch.core.xsched.install import XschedInstall

    inst = make_install(tmp_path / "xs")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # low's queues are never ready (its work bypasses XSched), high's are
    f = two(tmp_path, 60, lo=producer(40, "--service-ms", "30"),
            top=f'[xsched]\nplatform = "hip"\nport = {port}\n',
            lo_extra='[workload.xsched]\nenv = { FAKE_XQUEUE_READY = "never" }')
    scen = load_scenario(str(f))
    app = make_app(scen, telemetry="off", mode="xsched",
                   backends=Backends.of(XschedController(XschedInstall(inst, "--xsched"), scen,
                                                       poll_s=0.1)))
    async with app.run_test(size=(120, 36)) as pilot:
        await _named_within(app, pilot, "low", "XSched is not scheduling it")
        bar = app.query_one(AlertBar)
        assert "run its GPU work on a CUDA stream it creates" in bar.plain  # what to do
        assert "high:" not in bar.plain
        assert app.session is not None and app.session.current is not None
        assert app.session.current.xsched is not None
        assert app.session.current.xsched.workloads["high"].status == "engaged"
        await app.action_quit()


async def test_a_workload_outside_mps_is_named_on_the_main_screen(tmp_path: Path) -> None:
    from tests.helpers.fake_mps import make_tool
    from xwatch.core.mps.controller import JOIN_GRACE_S, MpsController

    tool = make_tool(tmp_path / "bin")
    os.environ["FAKE_MPS_RECORD"] = str(tmp_path / "cmds.txt")
    f = two(tmp_path, 60, lo_extra='[workload.mps]\nenv = { FAKE_MPS_OUTSIDE = "1" }')
    scen = load_scenario(str(f))
    app = make_app(scen, telemetry="off", mode="mps",
                   backends=Backends.of(MpsController(str(tool), scen, poll_s=0.3)))
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            took = await _named_within(app, pilot, "low", "MPS is not serving it")
            assert took < JOIN_GRACE_S  # judged by its requests, not the start's grace
            bar = app.query_one(AlertBar)
            assert "CUDA_MPS_PIPE_DIRECTORY" in bar.plain and "high:" not in bar.plain
            await app.action_quit()
    finally:
        os.environ.pop("FAKE_MPS_RECORD", None)
