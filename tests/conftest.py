"""Shared fixtures: run xwatch as a real subprocess, write scenario files; under
pytest-xdist (``-n``, pyproject's addopts), tests marked ``alone`` run with no other
test beside them, and tests marked ``cluster`` run first, on one worker."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Generator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
WORKLOADS = DATA / "workloads"
PY = sys.executable

# Kept dashboard sessions go to $XDG_STATE_HOME/xwatch/sessions: never the real home
# in tests (each test that looks at them sets its own folder).
_STATE = Path(tempfile.mkdtemp(prefix="xwatch-test-state-"))
os.environ["XDG_STATE_HOME"] = str(_STATE)


def _run_lock_dir() -> Path | None:
    """The folder of this run's locks, shared by its xdist workers; None without xdist."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return None
    d = Path(tempfile.gettempdir()) / f"xwatch-tests-{run}"
    d.mkdir(exist_ok=True)
    return d


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, object, None]:
    """Between xdist workers: every test holds the run's CPU lock shared, an ``alone``
    test holds it alone (a test whose time limits assume the CPUs to itself). Everyone
    passes a turnstile first, so a waiting ``alone`` test is not starved by the tests
    the other worker keeps starting. Taken before pytest-timeout's clock starts."""
    d = _run_lock_dir()
    if d is None:
        yield
        return
    alone = item.get_closest_marker("alone") is not None
    with open(d / "turnstile", "a") as gate, open(d / "cpu", "a") as cpu:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(cpu, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(cpu, fcntl.LOCK_UN)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``cluster`` (a module sharing one costly Ray cluster) go first, in
    their order: xdist's worksteal hands each worker a contiguous half and steals from
    a queue's end, so the module runs on one worker and starts one cluster, not two."""
    items.sort(key=lambda it: it.get_closest_marker("cluster") is None)


@pytest.fixture
def scenario_file(tmp_path: Path) -> Callable[[str], Path]:
    def write(text: str, name: str = "s.toml") -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).replace("@PY@", PY).replace("@W@", str(WORKLOADS)))
        return p
    return write


def run_xwatch(*args: str, timeout: float = 120, env: dict[str, str] | None = None,
               cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ)
    e.update(env or {})
    e.pop("XSCHED_HOME", None) if env is None or "XSCHED_HOME" not in env else None
    return subprocess.run([PY, "-m", "xwatch", *args], capture_output=True, text=True,
                          timeout=timeout, env=e, cwd=cwd or ROOT)
