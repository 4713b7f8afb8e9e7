"""The example mode from outside the tree (``tests/fixtures/outmode``), installed as pip
would install it: its package on the path and a ``.dist-info`` whose
``entry_points.txt`` carries its ``pyproject.toml``'s ``xwatch.modes`` entry point, so
that ``importlib.metadata`` finds it as it finds any installed package's. And the
scenario it is measured with: LOW honours its share (``OUTMODE_SHARE / 0.02`` req/s:
25/s at the default 0.5, against 20/s natively)."""

from __future__ import annotations

import os
from pathlib import Path

import tomllib

from tests.conftest import ROOT
from tests.helpers import scenarios

FIXTURE = ROOT / "tests" / "fixtures" / "outmode"


def install(target: Path) -> list[str]:
    """Install the example mode into ``target`` (its metadata there, the package
    beside); the folders to put on ``sys.path`` / ``PYTHONPATH``."""
    meta = tomllib.loads((FIXTURE / "pyproject.toml").read_text())["project"]
    dist = target / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {meta['name']}\n"
                                   f"Version: {meta['version']}\n")
    groups = meta["entry-points"]
    (dist / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
        for group, eps in groups.items()))
    return [str(target), str(FIXTURE)]


def env(target: Path) -> dict[str, str]:
    """The environment of an ``xwatch`` process that has the example mode installed."""
    return {"PYTHONPATH": os.pathsep.join([*install(target),
                                           os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def scenario(tmp_path: Path, duration: float = 1.5, top: str = "") -> Path:
    lo = scenarios.producer(20, "--service-ms", "5", "--rate-from-env", "OUTMODE_SHARE:0.02")
    return scenarios.two(tmp_path, duration, lo=lo, top=top)
