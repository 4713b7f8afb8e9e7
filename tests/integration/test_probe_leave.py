"""XSched phases that survive a probe's exit (issue 64 goal 4), against the faithful
fake: the preflight's probes, held after their work, leave one at a time while nothing
talks to xserver, and the workloads start only once xserver lists none of them; the old
exit (``XWATCH_XSCHED_PROBE_WAIT=0``) races a busy xserver into its abort; an xserver
that dies before the phase's first measured second is started again and the phase run
once more (recorded), and a second death fails the phase saying so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_xwatch
from tests.helpers.fake_xsched import calls, have_cc, make_install
from tests.integration.test_explain_fake import model_scen

pytestmark = [pytest.mark.skipif(not have_cc(), reason="needs a C compiler for the fake shim"),
              pytest.mark.slow]


def _run(tmp_path: Path, install: Path, out: str, env: dict[str, str]
         ) -> tuple[int, str, dict[str, object]]:
    r = run_xwatch("run", str(model_scen(tmp_path)), "--headless", "--mode", "xsched",
                   "--xsched", str(install), "--export", str(tmp_path / out), timeout=240,
                   env=env)
    doc = json.loads((tmp_path / out / "snapshot.json").read_text())
    return r.returncode, r.stdout + r.stderr, doc


def test_the_workloads_start_only_once_xserver_lists_no_probe(tmp_path: Path) -> None:
    install = make_install(tmp_path / "xsched")
    # this xserver keeps a process that left listed (not "closed") for 1.5 s
    rc, out, doc = _run(tmp_path, install, "o", {"FAKE_LINGER_S": "1.5"})
    assert rc == 0, out
    (ph,) = doc["phases"]  # type: ignore[misc]
    lv = ph["preflight"]["leave"]
    assert lv["wait"] is True and lv["listed"] == [] and lv["note"] == "", lv
    assert "held at the start gate" in lv["quiet"], lv
    # each probe waited for its "closed" (1.5 s) before the next went: two probes
    assert lv["left_s"] >= 3.0, lv
    probes = [v["pid"] for v in ph["preflight"]["verdicts"]]
    assert all(v["status"] == "engaged" for v in ph["preflight"]["verdicts"])
    left = [c["pid"] for c in calls(install) if c["call"] == "leave"]
    assert set(probes) <= set(left)  # each probe left XSched itself
    for w in ph["workloads"].values():  # released by the gate after the probes were gone
        assert w["stages"]["mode"] <= w["stages"]["gate"] and w["count"] > 0, w["stages"]
    report = (tmp_path / "o" / "report.md").read_text()
    assert "probes' leave: held after their work, let go one at a time" in report


def test_the_old_probe_exit_aborts_a_busy_xserver_and_the_wait_does_not(
        tmp_path: Path) -> None:
    install = make_install(tmp_path / "xsched")
    busy = {"FAKE_ABORT_ON_BUSY_LEAVE": "1"}
    rc, out, doc = _run(tmp_path, install, "old", {**busy, "XWATCH_XSCHED_PROBE_WAIT": "0"})
    # both attempts: a probe left while xwatch was polling; xserver aborted each time
    assert rc == 1, out
    (ph,) = doc["phases"]  # type: ignore[misc]
    assert ph["status"] == "failed" and ph["retried"]["xserver_exit"]["returncode"] == -6
    assert "server.cpp:200" in ph["retried"]["error"], ph["retried"]
    assert "died before the first measured second in both attempts" in ph["error"]
    assert ph["preflight"]["leave"]["wait"] is False
    assert "running the phase once more" in out
    # the same xserver, the probes held and let go one at a time: no abort, no retry
    rc, out, doc = _run(tmp_path, install, "new", busy)
    assert rc == 0, out
    (ph,) = doc["phases"]  # type: ignore[misc]
    assert "retried" not in ph and ph["xsched"].get("xserver_exit") is None, ph["xsched"]
    assert ph["preflight"]["leave"]["listed"] == [] and ph["preflight"]["leave"]["wait"]


def test_an_xserver_that_dies_early_is_restarted_and_the_phase_run_once_more(
        tmp_path: Path) -> None:
    install = make_install(tmp_path / "xsched")
    # the install's first xserver aborts 1 s after its start (during the preflight)
    rc, out, doc = _run(tmp_path, install, "o", {"FAKE_ABORT_AFTER_S": "1"})
    assert rc == 0, out
    (ph,) = doc["phases"]  # type: ignore[misc]  # the failed attempt is not a phase
    assert ph["status"] == "done" and ph["name"] == "xsched-1" and ph["index"] == 0
    first = ph["retried"]
    assert first["xserver_exit"]["returncode"] == -6 and first["t"] > 0, first
    assert "Resource deadlock avoided" in first["error"], first  # xserver's last lines
    assert all(w["count"] > 0 for w in ph["workloads"].values())
    assert "xserver died" in out and "running the phase once more" in out
    report = (tmp_path / "o" / "report.md").read_text()
    assert "**xsched-1** ran twice: xserver died" in report
    assert "these are the second attempt's numbers." in report
    assert (install / "run" / "aborts").read_text() == "1"


def test_an_xserver_that_dies_early_twice_fails_the_phase(tmp_path: Path) -> None:
    install = make_install(tmp_path / "xsched")
    rc, out, doc = _run(tmp_path, install, "o", {"FAKE_ABORT_AFTER_S": "1",
                                                  "FAKE_ABORT_TIMES": "2"})
    assert rc == 1, out
    (ph,) = doc["phases"]  # type: ignore[misc]
    assert ph["status"] == "failed" and ph["t_measure"] is None
    assert "xserver died before the first measured second in both attempts" in ph["error"]
    assert ph["retried"]["xserver_exit"]["returncode"] == -6
    assert out.count("running the phase once more") == 1  # one retry, not more
    assert (install / "run" / "aborts").read_text() == "2"
    report = (tmp_path / "o" / "report.md").read_text()
    assert "(it died again: the phase failed)" in report
