"""Eight GPUs x two workloads on one screen (``tests/helpers/fleet.py``): the table
folds to a roll-up line per GPU and expands on keys, the charts roll up until ``g``
picks a GPU, the GPU panel keeps to a line per device, at 80x24 and at 200x60."""

from __future__ import annotations

import pytest

from tests.helpers.fleet import fleet_snapshot
from xwatch.ui.app import make_app
from xwatch.ui.widgets.charts import CdfChart, LatencyChart, ThroughputChart, UtilChart
from xwatch.ui.widgets.panels import GpuPanel
from xwatch.ui.widgets.tables import WorkloadTable


def _app():  # type: ignore[no-untyped-def]
    return make_app(replay=fleet_snapshot(), replay_source="fleet")


def _visible(table: WorkloadTable) -> list[str]:
    """The table's lines on screen (after its scroll position)."""
    top = int(table.scroll_offset.y)
    return table.plain.splitlines()[top:top + table.scrollable_content_region.height]


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_eight_gpus_fold_to_a_line_each_and_all_fit(size: tuple[int, int]) -> None:
    app = _app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        table = app.query_one(WorkloadTable)
        assert table.folded
        lines = _visible(table)
        # the header, a line per GPU, the roll-up over all: every GPU is on screen
        assert len(lines) == 10 and lines[-1].startswith(" all 8 GPUs")
        assert [ln.split()[2] for ln in lines[1:9]] == [str(g) for g in range(8)]
        assert "HIGH P99 worst 21.32 ms (GPU 5), best 6.41 ms (GPU 1)" in lines[-1]
        assert "low@6 failed" in table.group_lines[6]
        assert "2/2 running" in table.group_lines[0]
        # the charts keep their room: the latency chart below the table has rows to draw
        chart = app.query_one(LatencyChart)
        assert chart.region.y >= table.region.bottom and chart.region.height >= 6
        assert chart.plt.title_text.startswith("HIGH latency ms, per second · 8 GPUs")
        assert [ln[2] for ln in chart.plt.lines] == \
            ["P99 worst GPU", "P99 best GPU", "P50 worst GPU"]
        assert [ln[2] for ln in app.query_one(ThroughputChart).plt.lines] == ["LOW total"]
        if size[1] >= 30:  # the second row (CDF, GPU panel, util) is dropped below 30 rows
            panel = app.query_one(GpuPanel)
            text = panel.plain
            assert all(f"gpu{g} " in text for g in range(8))
            assert panel.region.height <= 10 and app.query_one(UtilChart).region.height >= 4
            util = app.query_one(UtilChart)
            assert [ln[2] for ln in util.plt.lines] == ["mean", "lowest", "highest"]
            assert "high@5 (worst P99) latency CDF" in app.query_one(CdfChart).plt.title_text
        await pilot.press("q")


async def test_g_drills_into_one_gpu_and_e_expands_every_gpu() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        table = app.query_one(WorkloadTable)
        chart = app.query_one(LatencyChart)
        for _ in range(8):  # roll-up -> GPU 0 -> ... -> GPU 7
            await pilot.press("g")
        await pilot.pause(0.2)
        assert chart.gpu == 7
        assert [ln[2] for ln in chart.plt.lines] == ["high@7 p50", "high@7 p99", "low@7 p50",
                                                     "low@7 p99"]
        assert "◀ charts" in table.group_lines[7] and table.group_lines[7].startswith("▾")
        assert all(table.group_lines[g].startswith("▸") for g in range(7))
        seen = _visible(table)  # GPU 7 and its copies are scrolled into view
        assert any(ln.startswith("▾ GPU 7") for ln in seen)
        assert any(ln.split()[:1] == ["low@7"] for ln in seen)
        assert app.query_one(ThroughputChart).plt.title_text.endswith("GPU 7")
        await pilot.press("g")  # back to the roll-up
        assert chart.gpu is None
        await pilot.press("e")  # every GPU's copies: taller than the room, so it scrolls
        await pilot.pause(0.2)
        assert not table.folded
        assert len(table.plain.splitlines()) == 1 + 8 * 3 + 1
        assert table.virtual_size.height > table.scrollable_content_region.height
        for _ in range(12):  # the keyboard reaches every row too (no mouse needed)
            await pilot.press("right_square_bracket")
        await pilot.pause(0.1)
        assert _visible(table)[-1].startswith(" all 8 GPUs")
        await pilot.press("left_square_bracket")
        await pilot.pause(0.1)
        assert not _visible(table)[-1].startswith(" all 8 GPUs")
        table.scroll_end(animate=False)
        await pilot.pause(0.1)
        assert _visible(table)[-1].startswith(" all 8 GPUs")
        await pilot.press("e")
        await pilot.pause(0.1)
        assert table.folded
        await pilot.press("q")


async def test_xsched_lanes_show_one_gpu_the_worst_first() -> None:
    """In an XSched phase the lane strip under the charts holds one GPU's copies: the
    GPU whose HIGH has the worst P99, until ``g`` picks another."""
    from xwatch.ui.widgets.panels import LaneStrip

    app = make_app(replay=fleet_snapshot(xsched=True), replay_source="fleet")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause(0.3)
        lane = app.query_one(LaneStrip)
        lines = lane.plain.splitlines()
        assert lane.display and lines[0].startswith("lanes of GPU 5 (worst HIGH P99)")
        assert [ln.split()[0] for ln in lines[1:3]] == ["high@5", "low@5"]
        assert len(lines) == 4  # the two lanes and the legend
        for _ in range(3):
            await pilot.press("g")
        await pilot.pause(0.2)
        assert lane.plain.splitlines()[0] == "lanes of GPU 2 · g: another GPU"
        assert lane.plain.splitlines()[1].startswith("high@2")
        await pilot.press("q")


@pytest.mark.parametrize(("size", "folded"), [((120, 40), True), ((200, 60), False)])
async def test_four_gpus_fold_only_where_they_would_not_fit(size: tuple[int, int],
                                                            folded: bool) -> None:
    """Four GPUs x two: 14 rows; folded under 50 rows (13 fit), expanded at 200x60
    (the table may take 20 rows there)."""
    app = make_app(replay=fleet_snapshot(gpus=4), replay_source="fleet")
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        table = app.query_one(WorkloadTable)
        assert table.folded is folded
        assert len(_visible(table)) == (1 + 4 + 1 if folded else 1 + 4 + 8 + 1)
        await pilot.press("q")


async def test_a_rejected_backend_says_what_to_do_in_whole_words() -> None:
    """The GPU panel names why each other backend was not used: the words that say what
    to do, in full, and the exception's own text left to the snapshot."""
    import msgspec

    from xwatch.core.telemetry import why_not

    snap = fleet_snapshot()
    assert snap.telemetry is not None
    why = why_not("amdsmi", KeyError("/opt/rocm/lib/libamd_smi.so: cannot open shared object"))
    tel = msgspec.structs.replace(snap.telemetry, rejected={"amdsmi": why})
    app = make_app(replay=msgspec.structs.replace(snap, telemetry=tel), replay_source="fleet")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause(0.3)
        text = " ".join(app.query_one(GpuPanel).plain.split())
        assert "not amdsmi: library missing: libamd_smi.so (ROCm's amd-smi-lib) was not " \
               "found" in text
        assert "KeyError" not in text  # the exception's text: in the snapshot, not here
        await pilot.press("q")
