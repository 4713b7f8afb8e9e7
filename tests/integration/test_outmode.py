"""A mode from outside the tree (``tests/fixtures/outmode``), installed through its
entry point in the group ``xwatch.modes``, runs as native, MPS and XSched do: ``xwatch
compare`` measures it against native (its proof recorded, its report section written)
and ``xwatch advise`` races its settings and says how to deploy the winner. Nothing of
xwatch names it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_xwatch
from tests.helpers import outmode
from xwatch.core.export.snapshot import load_snapshot


def test_compare_measures_a_mode_installed_from_outside_the_tree(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run_xwatch("compare", str(outmode.scenario(tmp_path)), "--modes", "native,outmode",
                   "--telemetry", "off", "--export", str(out),
                   env=outmode.env(tmp_path / "site"), timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    snap = load_snapshot(out / "snapshot.json")
    assert [p.mode for p in snap.phases] == ["native", "outmode"]
    native, mine = snap.phases
    # the proof: read from each running process's environment, recorded by the mode
    assert mine.proof == {"high": "engaged", "low": "engaged"} and native.proof is None
    low = {p.mode: p.workload("low") for p in snap.phases}
    assert low["outmode"] is not None and low["native"] is not None
    assert "OUTMODE_SHARE" in low["outmode"].launch.env  # the mode's environment
    assert "OUTMODE_SHARE" not in low["native"].launch.env
    report = (out / "report.md").read_text()
    assert "## OutMode" in report and "| outmode-1 | low | engaged |" in report, report
    assert "OutMode vs native" in r.stdout and "low samples/s +" in r.stdout, r.stdout


def test_an_unknown_mode_is_refused_naming_the_installed_ones(tmp_path: Path) -> None:
    r = run_xwatch("compare", str(outmode.scenario(tmp_path)), "--modes", "native,nomode",
                   "--telemetry", "off", env=outmode.env(tmp_path / "site"))
    assert r.returncode == 2
    assert "allowed: native, xsched, mps, outmode" in r.stderr, r.stderr


def test_advise_races_the_modes_settings_and_deploys_the_winner(tmp_path: Path) -> None:
    out = tmp_path / "out"
    f = outmode.scenario(tmp_path, top='[slo]\nworkload = "high"\npercentile = 90\n'
                                       "latency_ms = 50")
    r = run_xwatch("advise", str(f), "--modes", "native,outmode", "--telemetry", "off",
                   "--budget", "2", "--export", str(out),
                   env=outmode.env(tmp_path / "site"), timeout=300)
    assert r.returncode in (0, 3), r.stdout + r.stderr
    doc = json.loads((out / "snapshot.json").read_text())
    labels = {c["label"] for c in doc["advice"]["candidates"]}
    assert labels == {"native", "outmode low share=0.5",
                      "outmode low share=0.25"}, labels
    assert {p["mode"] for p in doc["phases"]} == {"native", "outmode"}
    choice = doc["advice"]["choice"]
    if choice is not None and choice["mode"] == "outmode":  # deployed as the mode says
        assert 'env = { OUTMODE_SHARE = "' in r.stdout, r.stdout


@pytest.mark.slow
def test_compare_demo_runs_it_beside_native_with_torch_workers(tmp_path: Path) -> None:
    """The issue's words: ``xwatch compare demo --modes native,outmode`` headless, the
    built-in torch workers on the CPU, a short phase each."""
    out = tmp_path / "out"
    r = run_xwatch("compare", "demo", "--modes", "native,outmode", "--duration", "3",
                   "--device", "cpu", "--telemetry", "off", "--export", str(out),
                   env=outmode.env(tmp_path / "site"), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    snap = load_snapshot(out / "snapshot.json")
    assert [p.mode for p in snap.phases] == ["native", "outmode"]
    assert snap.phases[1].proof == {"high": "engaged", "low": "engaged"}
    assert "OutMode vs native" in r.stdout
