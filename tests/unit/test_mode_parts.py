"""What generic code asks of each mode instead of naming it (issue 66 goal 1): a mode's
upgrade of its records runs in the snapshot's loader, capacity says a candidate in its
mode's words and deploys it as its mode does, the dashboard's keys and help take each
mode's rows and words, and the alert bar each mode's warnings."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import msgspec

from xwatch.core import model as M
from xwatch.core.analysis.capacity.lines import consolidation, toml_lines
from xwatch.core.export.snapshot import upgraded
from xwatch.core.modes import registry

DATA = Path(__file__).resolve().parent.parent / "data"


def test_a_modes_upgrade_runs_in_the_loader_and_leaves_its_input_alone() -> None:
    raw = json.loads((DATA / "snapshot_calibrate_h100.json").read_text())
    stats = [w["stats"] for p in raw["phases"] if p.get("xsched")
             for w in p["xsched"]["workloads"].values()]
    assert stats and all("max_queues" in st for st in stats)
    assert upgraded(raw) is raw  # the current shape: the same object
    for st in stats:  # an older XSched record: no max_queues
        del st["max_queues"]
        st["queues"] = 7
    before = copy.deepcopy(raw)
    up = upgraded(raw)
    assert raw == before
    assert [w["stats"]["max_queues"] for p in up["phases"] if p.get("xsched")
            for w in p["xsched"]["workloads"].values()] == [7] * len(stats)


def _capacity(mode: str, settings: dict[str, M.SettingValue], candidate: str) -> M.Capacity:
    est = M.Estimate(estimate=0.8, lo=0.7, hi=0.9)
    return M.Capacity(
        slo=M.Slo(workload="chat", metric="P99", percentile=99, latency_ms=10),
        rates=[20.0, 320.0], low_workloads=["trainer"], low_alone=M.Estimate(),
        records=[M.CapacityRecord(candidate=candidate, mode=mode, settings=settings,
                                  workload="chat", metric="P99", slo_ms=10, met=80.0,
                                  failed=88.0, status="decided", high_share=est,
                                  low_share=est, total=est, runs=4)],
        decided=True, final=True, rounds=2, runs=4, seconds=60.0, intervals="...")


def test_capacity_says_and_deploys_a_candidate_as_its_mode_does() -> None:
    xs = _capacity("xsched", {"low.threshold": 4, "low.batch_size": 2}, "xsched low th=4")
    assert consolidation(xs)[0].startswith("xsched low th=4: 0.80")  # its name
    assert toml_lines(xs)[-3:] == ["[workload.xsched]", "threshold = 4", "batch_size = 2"]
    mps = _capacity("mps", {"low.mps.active_thread_percentage": 25}, "mps low sm=25%")
    assert consolidation(mps)[0].startswith("MPS at 25%: 0.80")
    assert toml_lines(mps)[-2:] == ["[workload.mps]", "active_thread_percentage = 25"]
    assert consolidation(_capacity("native", {}, "native"))[0].startswith("native: 0.80")


def test_the_keys_and_the_help_take_each_modes_rows_and_words() -> None:
    from xwatch.ui.keys import bindings, rows
    from xwatch.ui.screens.help import HELP

    keys = [k.keys for k in rows()]
    # each mode's rows at their places among the dashboard's own
    assert keys[:6] == ["`x`", "`m`", "`k` (MPS phase)", "`r`", "`s`", "`k`"]
    tabs = [m.name for m in registry.modes() if m.tab is not None]
    assert f"`1`-`{len(tabs) + 3}`" in keys
    assert [b.action for b in bindings() if b.key == "3"] == [f"tab({tabs[0]!r})"]
    assert "race native, MPS and XSched settings" in HELP
    assert "the XSched, MPS and Logs\n  tabs show the evidence). Before its models load" in HELP


def test_the_alert_bar_gets_each_modes_warnings() -> None:
    from xwatch.core.export.snapshot import load_snapshot

    snap = load_snapshot(DATA / "snapshot_calibrate_h100.json")
    p = next(p for p in snap.phases if p.xsched is not None)
    assert p.xsched is not None
    name, info = next(iter(p.xsched.workloads.items()))
    warned = msgspec.structs.replace(info, warnings=["a planted warning"])
    q = msgspec.structs.replace(p, xsched=msgspec.structs.replace(
        p.xsched, workloads={name: warned}))
    assert [(m.name, w) for m in registry.modes() for w in m.warnings(q)] == [
        ("xsched", (name, "a planted warning"))]
    assert [w for m in registry.modes() for w in m.warnings(p)] == []


def test_the_base_declaration_holds_every_member_of_the_contract() -> None:
    """``ModeBase`` gives every ``Mode`` member a default, so a declaration states only
    what it has: a subclass with a name and label alone is a whole mode, and each mode in
    the tree inherits what it does not state."""
    from dataclasses import dataclass, fields

    from xwatch.core.modes.contract import Mode, ModeBase

    members = {n for n in dir(Mode) if not n.startswith("_")}
    has = {f.name for f in fields(ModeBase)} | set(dir(ModeBase))
    assert len(members) > 30 and members <= has, members - has

    @dataclass(frozen=True)
    class Bare(ModeBase):
        name: str = "bare"
        label: str = "Bare"

    bare: Mode = Bare()
    assert (bare.name, bare.label, bare.key, bare.proof) == ("bare", "Bare", None, None)
    assert not bare.owns_key("bare.x") and bare.deploy({"k": 1}) == []
    assert bare.words({}) is None and bare.setting_words == {}
    for name in ("native", "mps", "xsched"):
        m = registry.get(name)
        assert isinstance(m, ModeBase), name
    assert registry.get("native").words({}) == "native"
    assert registry.get("xsched").words({}) is None  # inherited
