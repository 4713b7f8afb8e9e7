"""The benchmark suite: every benchmark script is registered once with what it
measures, how long it takes and whether it needs a GPU; every GPU plan dry-runs and
names only scripts and scenarios that exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.suite import BENCHES, GPU, command, every, plans

ROOT = Path(__file__).resolve().parents[2]
LIBS = {"__init__.py", "__main__.py", "suite.py"}


def test_every_benchmark_script_is_registered_once() -> None:
    names = [b.name for b in every()]
    assert len(names) == len(set(names))
    scripts = {b.script for b in BENCHES}
    on_disk = {p.name for p in (ROOT / "benchmarks").glob("*.py")} - LIBS
    assert on_disk - scripts == set(), "register these in benchmarks/suite.py BENCHES"
    for b in every():
        assert (ROOT / "benchmarks" / b.script).is_file(), b
        assert b.gpu in GPU and b.measures and b.takes, b


@pytest.mark.parametrize("plan", [p.args[0] for p in plans()])
def test_a_plan_dry_runs_and_names_what_exists(plan: str, tmp_path: Path) -> None:
    out = tmp_path / plan
    r = subprocess.run(["bash", "benchmarks/device.sh", plan, str(out), "DRY=1",
                        "XS=/opt/xsched"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PATH": os.environ["PATH"]})
    assert r.returncode == 0, r.stderr
    cmds = (out / "commands.txt").read_text()
    assert cmds.count("\n$ ") >= 1 and (out / "done").exists(), cmds
    for path in re.findall(r"benchmarks/[\w./-]+\.(?:py|toml|cu)", cmds):
        assert (ROOT / path).is_file(), f"plan {plan} names {path}, which is not there"


def test_an_unknown_plan_and_a_bad_parameter_are_refused(tmp_path: Path) -> None:
    r = subprocess.run(["bash", "benchmarks/device.sh", "nope", str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "no plan nope" in r.stderr
    r = subprocess.run(["bash", "benchmarks/device.sh", "baseline", str(tmp_path), "S"],
                       cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "not NAME=VALUE" in r.stderr


def test_run_passes_its_arguments_on() -> None:
    b = next(b for b in every() if b.name == "aa-check")
    assert command(b, ["x.json", "native"])[-2:] == ["x.json", "native"]
    assert command(b, [])[0] == sys.executable
    p = next(b for b in every() if b.name == "device-modes")
    assert command(p, ["OUT"])[0] == "bash" and command(p, ["OUT"])[-2:] == ["modes", "OUT"]
