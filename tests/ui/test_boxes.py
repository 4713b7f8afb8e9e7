"""The boxes of a plan over a Ray cluster as groups of GPUs (``ui.fleet.panel``): a
recorded 3-box compare (``tests/data/fleet/three_boxes.json.gz``) replayed, each box
titled by host and node id with its GPUs' numbers under it; the live states (a phase
running: said, with the box's progress line and no per-GPU numbers until it ends; a
box lost; idle) on the same recorded phases; a snapshot without boxes has no panel.
The real cluster: ``tests/integration/test_fleet_ray.py``."""

from __future__ import annotations

from pathlib import Path

from xwatch.core.export.snapshot import load_snapshot
from xwatch.ui.app import make_app
from xwatch.ui.fleet.panel import BoxesPanel, BoxView, box_text, box_views

DATA = Path(__file__).resolve().parents[1] / "data"
FLEET = DATA / "fleet" / "three_boxes.json.gz"


async def test_a_replayed_fleet_shows_each_box_with_its_gpus() -> None:
    snap = load_snapshot(FLEET)
    app = make_app(replay=snap, replay_source="fleet")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = str(app.query_one(BoxesPanel).render())
    lines = text.splitlines()
    titles = [ln for ln in lines if ln.startswith("▾ box ")]
    nodes = sorted({p.box.node_id for p in snap.phases if p.box is not None})
    assert [t.split(" · ")[1] for t in titles] == [f"node {n[:12]}" for n in nodes]
    assert all(t.endswith("GPUs 0,1") for t in titles), titles
    for p in snap.phases:  # each phase's numbers under its own box, a line per GPU
        assert p.box is not None
        start = lines.index(next(t for t in titles if p.box.node_id[:12] in t))
        group = lines[start + 1:]
        group = group[:next((i for i, ln in enumerate(group) if ln.startswith("▾")),
                            len(group))]
        for g in (0, 1):
            high = next(w for w in p.workloads if w.name == f"high@{g}")
            assert any(ln.split()[:3] == ["GPU", str(g), p.name] and
                       f"P99 {high.phase.p99:.2f} ms" in ln for ln in group), (p.name, group)


def test_a_running_box_says_so_and_shows_only_its_progress_line() -> None:
    phases = load_snapshot(FLEET).phases
    views = box_views(phases)
    running = BoxView(views[0].host, views[0].node_id, gpus=0, state="running",
                      doing="mps r2", progress="mps-2 1s high@1 n=60 p99=1.90ms")
    lost = BoxView(views[1].host, views[1].node_id, gpus=0, state="lost")
    idle = BoxView(views[2].host, views[2].node_id, gpus=0, state="idle")
    first = [p for p in phases if p.box is not None and p.box.node_id != views[0].node_id]
    text = box_text([running, lost, idle], first).plain
    assert f"box {running.short}: mps r2 running, results when it ends" in text
    assert "    so far: mps-2 1s high@1 n=60 p99=1.90ms" in text
    group = text.split("▾")[1]
    assert "GPU 0" not in group and "no phase finished" not in group, group
    assert "lost: its run failed and is named" in text.split("▾")[2]
    assert "idle" in text.split("▾")[3]


async def test_a_snapshot_without_boxes_has_no_boxes_panel() -> None:
    app = make_app(replay=load_snapshot(DATA / "snapshot_two_gpus.json"), replay_source="x")
    async with app.run_test(size=(120, 34)) as pilot:
        await pilot.pause()
        assert not app.query(BoxesPanel)
