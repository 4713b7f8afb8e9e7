"""Shared fixtures: run xwatch as a real subprocess, write scenario files."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
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
