"""The fork server with real torch workers on the CPU (issue 41 goal 1): the first
phase starts its workers by exec while the server imports; later phases fork them
(no imports paid), they measure like the others, and nothing outlives xwatch, not
even after a SIGKILL."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import psutil

from tests.conftest import PY, ROOT, run_xwatch
from tests.helpers.procs import wait_gone
from tests.helpers.scenarios import tiny_models


def _noise(tmp_path: Path, repeat: int, env: dict[str, str] | None = None) -> dict:
    f = tmp_path / "s.toml"
    f.write_text(tiny_models("forks", 2))
    out = tmp_path / "out"
    r = run_xwatch("noise", str(f), "--repeat", str(repeat), "--telemetry", "off",
                   "--export", str(out), timeout=300,
                   env={"XDG_STATE_HOME": str(tmp_path / "state"), **(env or {})})
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads((out / "snapshot.json").read_text())


def test_later_phases_fork_their_workers_which_measure_like_the_first(tmp_path: Path) -> None:
    doc = _noise(tmp_path, 3)
    p1, *later = doc["phases"]
    assert p1["workloads"]["high"]["launch"]["start"].startswith("exec (the fork server is "
                                                                 "still importing")
    servers = set()
    for p in later:
        for name, w in p["workloads"].items():
            m = re.fullmatch(r"fork \(fork server pid (\d+)\)", w["launch"]["start"])
            assert m, (p["name"], name, w["launch"])
            servers.add(int(m.group(1)))
            st = w["stages"]
            assert st["imports"] - st["python"] < 0.5, st  # imported once, in the server
            assert w["hello"]["pid"] not in servers and w["count"] > 0
            assert w["hello"]["threads"] == 1  # its own settings still apply
    assert len(servers) == 1
    pids = [w["hello"]["pid"] for p in doc["phases"] for w in p["workloads"].values()]
    assert len(set(pids)) == len(pids)  # a fresh process per workload and phase
    assert wait_gone([*servers, *pids], 5) == []


def test_off_switch_starts_every_worker_by_exec(tmp_path: Path) -> None:
    doc = _noise(tmp_path, 2, {"XWATCH_FORK_SERVER": "0"})
    assert {w["launch"]["start"] for p in doc["phases"] for w in p["workloads"].values()} \
        == {"exec"}


def test_sigkill_of_xwatch_leaves_no_forked_worker_nor_server(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text(tiny_models("forks", 4))
    p = subprocess.Popen([PY, "-m", "xwatch", "noise", str(f), "--repeat", "4",
                          "--telemetry", "off"], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL,
                         env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")})
    server = forked = None
    end = time.monotonic() + 240
    while time.monotonic() < end and not forked:
        for c in psutil.Process(p.pid).children():
            try:  # a phase's workers may exit while they are listed
                if "xwatch.core.engine.worker.zygote" in " ".join(c.cmdline()):
                    server = c
                    forked = [k.pid for k in c.children()]
            except psutil.Error:
                continue
        time.sleep(0.2)
    assert server is not None and forked, "no forked worker seen"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    assert wait_gone([server.pid, *forked], 10) == []
