"""The boxes of a plan over a Ray cluster as groups of GPUs (``ui.fleet.panel``): a
recorded 3-box compare (``tests/data/fleet/three_boxes.json.gz``) replayed, each box
titled by host and node id with its GPUs' numbers under it; the live states (a phase
running: said, with the box's progress line and no per-GPU numbers until it ends; a
box lost; idle) on the same recorded phases; a snapshot without boxes has no panel;
``run --ray`` mid-plan (``tests/helpers/ray_dashboard.py``): the charts say which box
still runs, until its numbers arrive, instead of empty axes.
The real cluster: ``tests/integration/test_fleet_ray.py``."""

from __future__ import annotations

from pathlib import Path

from textual.geometry import Region

from tests.helpers.ray_dashboard import running_fleet
from xwatch.core.export.snapshot import load_snapshot
from xwatch.ui.app import make_app
from xwatch.ui.fleet.panel import BoxesPanel, BoxView, box_text, box_views, waiting_lines
from xwatch.ui.widgets.charts import CdfChart, LatencyChart, ThroughputChart, UtilChart, _Chart

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


def test_each_running_box_s_waiting_line_counts_its_measured_seconds() -> None:
    views = box_views(load_snapshot(FLEET).phases)
    a, b, c, d = (BoxView(v.host, v.node_id, gpus=0, state="running", planned_s=30.0)
                  for v in (*views, views[0]))
    got = waiting_lines([
        a, BoxView(b.host, b.node_id, state="running", progress="mps-2 12s high n=9",
                   measured_s=12.4, planned_s=30.0),
        BoxView(c.host, c.node_id, state="running", progress="mps-2 loading", planned_s=30.0),
        BoxView(d.host, d.node_id, state="idle"), BoxView(d.host, d.node_id, state="lost")])
    assert got == [
        f"running on {a.short}: numbers arrive when the phase ends (starting, 0 s of 30 s)",
        f"running on {b.short}: numbers arrive when the phase ends (12 s of 30 s)",
        f"running on {c.short}: numbers arrive when the phase ends (loading, 0 s of 30 s)"]


def _chart_text(chart: _Chart) -> list[str]:
    w, h = chart.size
    return [s.text.rstrip() for s in chart.render_lines(Region(0, 0, w, h))]


async def test_the_charts_say_which_box_still_runs_instead_of_empty_axes() -> None:
    """``run --ray`` mid-plan: while no phase has ended, every chart says, for each box
    that runs, that its numbers arrive when its phase ends, with no axes; once a box's
    phase ended, its numbers are charted and the others still said under them; once
    the plan ended, nothing is said."""
    from xwatch.core.fleet.plan import Outcome

    app, run = running_fleet()
    charts = (LatencyChart, ThroughputChart, CdfChart, UtilChart)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        shorts = [b.name for b in run.fleet.boxes]
        for cls in charts:
            text = _chart_text(app.query_one(cls))
            assert text[0].strip() == cls.KIND and not any("┤" in ln or "└" in ln
                                                           for ln in text), text
            said = " ".join(" ".join(text).split())
            for s, when in zip(shorts, ("1 s", "1 s", "loading, 0 s"), strict=True):
                assert f"running on {s}: numbers arrive when the phase ends ({when} of 2 s)" \
                    in said, said
        # the first box's phase ended: its numbers charted, the two others still said
        first = run.fleet.boxes[0].node_id
        snap = load_snapshot(FLEET)
        run.fleet.finished.extend(p for p in snap.phases if p.box and p.box.node_id == first)
        del run.fleet.busy[0]
        app.refresh_view(force_charts=True)
        await pilot.pause()
        latency = app.query_one(LatencyChart)
        text = _chart_text(latency)
        assert latency.plt.lines and any("┤" in ln for ln in text)
        assert [ln.split(":")[0].strip() for ln in text if "running on" in ln] == \
            [f"running on {s}" for s in shorts[1:]]
        run.outcome = Outcome(snap, 0)  # the plan ended: nothing waits
        app.refresh_view(force_charts=True)
        await pilot.pause()
        assert all(not app.query_one(cls).notes for cls in charts)
        await pilot.press("q")
