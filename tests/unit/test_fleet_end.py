"""What a plan over a Ray cluster's boxes says at its end, without a cluster: a line a
box with its phases' statuses (a run the stop ended mid-phase named), the per-box
findings where more than one box ran (or that no box differs), the stop, the paths
of the export; the same lines kept for ``run --ray`` to print once the dashboard has
left the screen (``cli.fleet.dashboard_end``). On a recorded 3-box compare
(``tests/data/fleet/three_boxes.json.gz``); the real cluster:
``tests/integration/test_fleet_ray.py``."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from tests.conftest import ROOT
from xwatch.core import model as M
from xwatch.core.analysis.answer.boxes import NO_BOX_DIFFERS
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot
from xwatch.core.export.snapshot import load_snapshot
from xwatch.core.fleet import merge
from xwatch.core.fleet import plan as fp
from xwatch.core.fleet.connect import Box
from xwatch.core.plans.console import Console
from xwatch.core.plans.options import Options

FLEET = ROOT / "tests" / "data" / "fleet" / "three_boxes.json.gz"


class Said(Console):
    """The plan's lines, kept (stdout's and stderr's apart)."""

    def __init__(self) -> None:
        super().__init__()
        self.out: list[str] = []
        self.err: list[str] = []

    def say(self, text: str) -> None:
        self.out.append(text)

    def warn(self, text: str) -> None:
        self.err.append(text)


def _recorded() -> tuple[SessionSnapshot, list[Box]]:
    snap = load_snapshot(FLEET)
    nodes = sorted({(p.box.node_id, p.box.host) for p in snap.phases if p.box is not None})
    return snap, [Box(node_id=n, host=h, address="127.0.0.1", gpus=0) for n, h in nodes]


def _mboxes(boxes: list[Box]) -> list[M.Box]:
    return [M.Box(node_id=b.node_id, host=b.host) for b in boxes]


def test_a_line_a_box_with_its_phases_statuses() -> None:
    snap, boxes = _recorded()
    a, b, c = (f"box {x.name}: " for x in boxes)
    lines = merge.box_lines(snap.phases, _mboxes(boxes))
    # the recording: native-1 on the first box, mps-1 and mps-2 on the second, native-2
    # on the third
    assert lines == [a + "native-1 done", b + "mps-1 done, mps-2 done", c + "native-2 done"]
    many = [replace(snap.phases[1], name=f"mps-{k}", status="failed" if k == 3 else "done")
            for k in range(1, 6)]
    stopped = {boxes[2].node_id: "native r3"}
    lines = merge.box_lines(many, _mboxes(boxes), stopped)
    assert lines == [a + "no phase ran here",
                     b + "5 phases: 4 done, 1 failed (mps-3)",
                     c + "native r3 stopped mid-phase (its numbers never came back)"]


def test_per_box_findings_or_that_no_box_differs_where_more_than_one_box_ran() -> None:
    snap, _ = _recorded()
    assert merge.findings_or_none(snap.phases) == [NO_BOX_DIFFERS]
    one = [p for p in snap.phases if p.box == snap.phases[0].box]
    assert merge.findings_or_none(one) == []  # one box: none to differ from
    failed = [replace(p, status="failed") if p.box != one[0].box else p
              for p in snap.phases]
    assert merge.findings_or_none(failed) == []  # only one box ran a phase to its end


def _concluded(phases: tuple[PhaseSnapshot, ...], stopped: dict[int, str], export: str | None
               ) -> tuple[int, tuple[tuple[str, bool], ...], Said]:
    snap, boxes = _recorded()
    said = Said()
    fleet = fp.Fleet(None, boxes, said)
    fleet.stopped = stopped
    snap = merge.merged(snap.scenario, phases, snap.created_at)
    rc, end = fp._conclude(fleet, snap, Options(export=export), None, bool(stopped),
                           tolerant=False)
    return rc, end, said


def test_the_plan_ends_with_each_box_the_findings_and_the_paths(tmp_path: Path) -> None:
    """The lines the plan says at its end are the ones it keeps for the dashboard."""
    snap, boxes = _recorded()
    rc, end, said = _concluded(snap.phases, {}, str(tmp_path / "out"))
    assert rc == 0
    lines = [ln for ln, _ in end]
    assert lines == said.out and not said.err  # said and kept alike
    assert [ln for ln in lines if ln.startswith("box ")] == \
        merge.box_lines(snap.phases, _mboxes(boxes))
    assert f"per box: {NO_BOX_DIFFERS}" in lines
    assert f"snapshot: {tmp_path / 'out' / 'snapshot.json'}" in lines
    assert any(ln.startswith("report: ") for ln in lines)


def test_a_plan_stopped_mid_phase_names_each_box_s_stopped_run() -> None:
    """``q`` while every box ran its phase: no phase came back, and yet each box is
    named with the run that was stopped; no findings (no box ran), no export."""
    _, boxes = _recorded()
    rc, end, _ = _concluded((), {0: "native r1", 1: "native r2", 2: "native r3"}, None)
    assert rc != 0
    assert end == (("xwatch: stopped; every box's workloads stopped", False),
                   *((f"box {b.name}: native r{i + 1} stopped mid-phase (its numbers never "
                      "came back)", False) for i, b in enumerate(boxes)))


def test_the_dashboard_prints_the_plan_s_end_or_that_it_never_ended() -> None:
    from xwatch.cli.fleet import dashboard_end

    class Run:  # what ``dashboard_end`` reads of a ``FleetRun``
        outcome: fp.Outcome | None = None

    run = Run()
    assert dashboard_end(run) == [  # type: ignore[arg-type]
        ("xwatch: the plan over the boxes did not end (see above)", True)]
    snap, _ = _recorded()
    run.outcome = fp.Outcome(snap, 0, (("box vm/c60f1d: native-1 done", False),
                                       ("FAILED x", True)))
    assert dashboard_end(run) == [("box vm/c60f1d: native-1 done", False),  # type: ignore[arg-type]
                                  ("FAILED x", True)]
