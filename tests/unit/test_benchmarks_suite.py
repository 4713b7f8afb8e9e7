"""The benchmark suite: every benchmark script is registered once with what it
measures, how long it takes and whether it needs a GPU (``python -m benchmarks check``);
every GPU plan dry-runs and names only scripts and scenarios that exist. The suite is
driven as a user drives it, through its command line: tests never import benchmarks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLANS = sorted(p.stem for p in (ROOT / "benchmarks" / "gpu" / "plans").glob("*.sh"))


def _benchmarks(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_every_benchmark_script_is_registered_once() -> None:
    r = _benchmarks("check")
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"\d+ benchmarks, 0 problems\n", r.stdout), r.stdout


def test_an_unregistered_script_is_named(tmp_path: Path) -> None:
    stray = ROOT / "benchmarks" / "stats" / f"stray_{os.getpid()}.py"
    stray.write_text('"""A script nobody registered."""\n')
    try:
        r = _benchmarks("check")
    finally:
        stray.unlink()
    assert r.returncode == 1
    assert f"benchmarks/stats/{stray.name}: not registered" in r.stderr


def test_every_plan_is_listed() -> None:
    listed = _benchmarks("list").stdout
    assert PLANS and all(f"device-{p} " in listed for p in PLANS)


@pytest.mark.parametrize("plan", PLANS)
def test_a_plan_dry_runs_and_names_what_exists(plan: str, tmp_path: Path) -> None:
    out = tmp_path / plan
    r = subprocess.run(["bash", "benchmarks/gpu/device.sh", plan, str(out), "DRY=1",
                        "XS=/opt/xsched"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PATH": os.environ["PATH"]})
    assert r.returncode == 0, r.stderr
    cmds = (out / "commands.txt").read_text()
    assert cmds.count("\n$ ") >= 1 and (out / "done").exists(), cmds
    for path in re.findall(r"benchmarks/[\w./-]+\.(?:py|toml|cu|sh)", cmds):
        assert (ROOT / path).is_file(), f"plan {plan} names {path}, which is not there"


def test_an_unknown_plan_and_a_bad_parameter_are_refused(tmp_path: Path) -> None:
    r = subprocess.run(["bash", "benchmarks/gpu/device.sh", "nope", str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "no plan nope" in r.stderr
    r = subprocess.run(["bash", "benchmarks/gpu/device.sh", "baseline", str(tmp_path), "S"],
                       cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "not NAME=VALUE" in r.stderr


def test_run_passes_its_arguments_on() -> None:
    cmd = _benchmarks("show", "aa-check", "x.json", "native").stdout.splitlines()
    assert cmd[0] == sys.executable and cmd[-2:] == ["x.json", "native"]
    assert cmd[1].endswith("benchmarks/stats/aa_check.py")
    cmd = _benchmarks("show", "device-modes", "OUT").stdout.splitlines()
    assert cmd[0] == "bash" and cmd[1].endswith("benchmarks/gpu/device.sh")
    assert cmd[-2:] == ["modes", "OUT"]
    r = _benchmarks("show", "nope")
    assert r.returncode == 2 and "no benchmark 'nope'" in r.stderr
