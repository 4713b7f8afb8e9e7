"""SVG snapshots of the screens on deterministic data (a recorded snapshot in
replay mode: no clocks, no spinners). Update with --snapshot-update after
reviewing the change."""

from __future__ import annotations

from pathlib import Path

from xwatch.core.export.snapshot import load_snapshot
from xwatch.ui.app import make_app

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "snapshot_two_phases.json"


def _app():  # type: ignore[no-untyped-def]
    return make_app(replay=load_snapshot(FIXTURE), replay_source="fixture/snapshot.json")


def test_main_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(_app(), terminal_size=(120, 34))


def test_main_screen_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(_app(), terminal_size=(80, 24))


def test_comparison_table(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(_app(), press=["2"], terminal_size=(120, 34))


def test_xsched_panel(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(_app(), press=["3"], terminal_size=(120, 34))


def _fleet():  # type: ignore[no-untyped-def]
    from tests.helpers.fleet import fleet_snapshot

    return make_app(replay=fleet_snapshot(), replay_source="fleet")


def test_eight_gpus_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(_fleet(), terminal_size=(80, 24))


def test_eight_gpus_200x60(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(_fleet(), terminal_size=(200, 60))


def test_eight_gpus_one_gpu_drilled(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(_fleet(), press=["g", "g", "g", "g", "g", "g"], terminal_size=(120, 40))


def test_ray_boxes(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """A recorded compare over a Ray cluster's 3 boxes: each box a group of GPUs."""
    fleet = FIXTURE.parent / "fleet" / "three_boxes.json.gz"
    assert snap_compare(make_app(replay=load_snapshot(fleet), replay_source="fleet"),
                        terminal_size=(120, 40))


def test_ray_boxes_running(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """``run --ray`` while every box runs its phase (``tests/helpers/ray_dashboard.py``):
    the charts say which box runs and when its numbers arrive, no empty axes."""
    from tests.helpers.ray_dashboard import running_fleet

    assert snap_compare(running_fleet()[0], terminal_size=(120, 40))
