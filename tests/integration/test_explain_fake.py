"""XSched explained, against the faithful fake: preflight catches a crashing shim
in seconds (beside the real workloads' load, before they measure), passes an engaged one (cached for the
session), flags work that XSched never schedules, can be skipped; calibrate runs
its four phases into one snapshot and the report splits HIGH's latency change."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from tests.conftest import PY, WORKLOADS, run_xwatch
from tests.helpers.fake_xsched import have_cc, make_install

pytestmark = pytest.mark.skipif(not have_cc(), reason="needs a C compiler for the fake shim")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def model_scen(tmp_path: Path, hi_env: str = "", duration: float = 2.0) -> Path:
    f = tmp_path / "m.toml"
    f.write_text(f"""
duration_s = {duration}
device = "cpu"
[xsched]
platform = "hip"
port = {_port()}
[[workload]]
name = "high"
priority = "high"
model = "resnet18"
input = [3, 32, 32]
rate = 20
warmup = 1
threads = 1
[workload.xsched]
env = {{ {hi_env} }}
[[workload]]
name = "low"
priority = "low"
model = "resnet18"
input = [3, 32, 32]
warmup = 1
threads = 1
""")
    return f


@pytest.fixture
def install(tmp_path: Path) -> Path:
    return make_install(tmp_path / "xsched")


@pytest.mark.slow  # not alone: the other probe is hung only if it stops progressing
def test_preflight_catches_a_crashing_shim_before_workloads_load(tmp_path: Path,
                                                                 install: Path) -> None:
    f = model_scen(tmp_path, 'FAKE_SHIM_CRASH = "1"')
    t0 = time.monotonic()
    r = run_xwatch("run", str(f), "--headless", "--mode", "xsched", "--xsched", str(install),
                   "--export", str(tmp_path / "o"), timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == 1, r.stdout + r.stderr
    assert "XSched preflight failed" in r.stderr and took < 60
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    ph = doc["phases"][0]
    assert ph["status"] == "failed" and ph["error"].startswith("preflight:")
    # the cause, not XSched's log prefix
    assert "crashed (killed by SIGSEGV: cuda error 1: invalid argument" in ph["error"]
    v = ph["preflight"]["verdicts"]
    by = {x["workloads"][0]: x for x in v}
    assert by["high"]["status"] == "crashed" and by["low"]["status"] == "engaged"
    assert by["high"]["cause"].startswith("cuda error 1: invalid argument @ ")
    # the real workloads started beside the probes (held by the start gate), were
    # stopped by the failure, and measured nothing
    assert ph["t_measure"] is None
    for w in ph["workloads"].values():
        assert w["count"] == 0 and "spawn" in w["stages"] and "gate" not in w["stages"], w
    report = (tmp_path / "o" / "report.md").read_text()
    assert "## XSched preflight" in report and "| crashed |" in report


@pytest.mark.slow
def test_preflight_engaged_then_phase_runs_and_no_preflight_skips(tmp_path: Path,
                                                                  install: Path) -> None:
    # 2 s is enough: the start gate holds LOW until HIGH is warm too (before it, HIGH
    # once finished loading more than 2 s after LOW on two loaded cores, and measured
    # nothing)
    r = run_xwatch("run", str(model_scen(tmp_path)), "--headless", "--mode",
                   "xsched", "--xsched", str(install), "--export", str(tmp_path / "o"),
                   timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    ph = json.loads((tmp_path / "o" / "snapshot.json").read_text())["phases"][0]
    vs = ph["preflight"]["verdicts"]  # one probe per workload environment
    assert sorted(w for v in vs for w in v["workloads"]) == ["high", "low"]
    v = vs[0]
    assert all(x["status"] == "engaged" for x in vs)
    assert v["queues_max"] == 2 and v["iters"] >= 3
    assert v["stream"] == "n/a"
    # the probes ran beside the workloads' load: spawned before the preflight settled,
    # released by the start gate only after it passed
    for name in ("high", "low"):
        st = ph["workloads"][name]["stages"]
        assert st["daemon"] <= st["spawn"] < st["mode"] <= st["gate"], st
        # its probes do SMOKE_SECONDS (2 s) of work after the spawn: not before it
        assert st["mode"] - st["spawn"] >= 1.5, st
    # the phase ran, HIGH and LOW measured over the same window
    assert ph["workloads"]["high"]["count"] > 0 and ph["workloads"]["low"]["count"] > 0
    assert ph["xsched"]["poll_ms"] == 100 and "0.0.0.0" in ph["xsched"]["listen"]
    r2 = run_xwatch("run", str(model_scen(tmp_path)), "--headless", "--mode", "xsched",
                    "--xsched", str(install), "--no-preflight", "--export",
                    str(tmp_path / "o2"), timeout=180)
    assert r2.returncode == 0, r2.stdout + r2.stderr
    ph2 = json.loads((tmp_path / "o2" / "snapshot.json").read_text())["phases"][0]
    assert "preflight" not in ph2


@pytest.mark.slow
def test_preflight_not_scheduled_fails_the_phase(tmp_path: Path, install: Path) -> None:
    f = model_scen(tmp_path, 'FAKE_XQUEUE_READY = "never"')
    r = run_xwatch("run", str(f), "--headless", "--mode", "xsched", "--xsched", str(install),
                   "--export", str(tmp_path / "o"), timeout=120)
    assert r.returncode == 1
    ph = json.loads((tmp_path / "o" / "snapshot.json").read_text())["phases"][0]
    statuses = sorted(x["status"] for x in ph["preflight"]["verdicts"])
    assert statuses == ["engaged", "not-scheduled"]  # high's env differs from low's
    assert "not-scheduled" in ph["error"] and "never seen ready" in ph["error"]


async def test_preflight_verdict_is_cached_for_the_session(tmp_path: Path,
                                                           install: Path) -> None:
    from xwatch.core.engine.live.session import Session
    from xwatch.core.xsched.controller import XschedController
    from xwatch.core.xsched.install import XschedInstall
    from xwatch.core.xsched.preflight import clear_cache
    from xwatch.scenario import load_scenario

    clear_cache()
    scen = load_scenario(str(model_scen(tmp_path)))
    ctl = XschedController(XschedInstall(install, "test"), scen)
    session = Session(scen)
    took = []
    for _ in range(2):
        ph = session.new_phase("xsched")
        t0 = time.monotonic()
        await ctl.enter(ph)
        await ctl.settle(ph)  # the preflight runs beside the load: settled here
        took.append(time.monotonic() - t0)
        await ctl.leave(ph)
        ph.finish()
        assert ph.preflight is not None
        assert {v.status for v in ph.preflight.verdicts} == {"engaged"}
    pf = session.phases[1].preflight
    assert pf is not None and all(v.cached for v in pf.verdicts)
    assert took[1] < took[0] / 2
    session.close()


def test_calibrate_four_phases_and_decomposition(tmp_path: Path, install: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text(f"""
duration_s = 1.5
[xsched]
platform = "hip"
port = {_port()}
[[workload]]
name = "high"
priority = "high"
rate = 40
command = ["{PY}", "{WORKLOADS}/pipe_producer.py", "40"]
[[workload]]
name = "low"
priority = "low"
command = ["{PY}", "{WORKLOADS}/pipe_producer.py", "40"]
""")
    r = run_xwatch("calibrate", str(f), "--xsched", str(install), "--export",
                   str(tmp_path / "o"), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    got = [(p["name"], p["mode"], p.get("calibrate"), sorted(p["workloads"]))
           for p in doc["phases"]]
    assert got == [("alone-native-1", "native", "alone", ["high"]),
                   ("alone-xsched-1", "xsched", "alone", ["high"]),
                   ("together-native-1", "native", "together", ["high", "low"]),
                   ("together-xsched-1", "xsched", "together", ["high", "low"])]
    report = (tmp_path / "o" / "report.md").read_text()
    assert "## Calibration: where high's latency goes" in report
    assert "| P99 |" in report and "shim overhead" in report
    # the console ends with calibrate's own answer, the report's verdict sentence (then
    # only the paths of what was exported)
    verdict = next(ln for ln in report.splitlines() if ln.startswith("**XSched "))
    out = r.stdout.rstrip().splitlines()
    at = next(i for i, ln in enumerate(out) if ln.startswith("=== calibration "))
    assert out[at + 1] == verdict.strip("*"), r.stdout
    assert all(ln.startswith(("snapshot: ", "report: ")) for ln in out[at + 2:]), r.stdout
    lines = [ln for ln in report.splitlines() if ln.startswith("| P50 |")]
    assert lines  # the decomposition row, recomputed below from the phases' own numbers
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    p50 = {p["calibrate"] + p["mode"]: p["workloads"]["high"]["latency_ms"]["p50"]
           for p in doc["phases"]}
    assert float(cells[5]) == pytest.approx(p50["alonexsched"] - p50["alonenative"], abs=0.006)
    assert float(cells[7]) == pytest.approx(p50["togethernative"] - p50["togetherxsched"],
                                            abs=0.006)


def test_calibrate_refuses_a_scenario_without_lower_priorities(tmp_path: Path,
                                                               install: Path) -> None:
    f = tmp_path / "one.toml"
    f.write_text(f"""
[[workload]]
name = "a"
priority = "high"
command = ["{PY}", "{WORKLOADS}/pipe_producer.py", "40"]
""")
    r = run_xwatch("calibrate", str(f), "--xsched", str(install), timeout=30)
    assert r.returncode == 2 and "lower priority" in r.stderr
