"""The fleet's parts without a cluster: the placement of runs over boxes (a Latin
square, refusals routed elsewhere), the merged snapshot (renamed, each phase naming its
box, a lost run failed and named, loaded back), the per-box findings, Ray's import with
amdsmi's missing library (a titled error), and the agent's guard stopping what its
agent left when the agent is SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from xwatch.core import model as M
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.export.snapshot import load_snapshot
from xwatch.core.fleet import guard, merge, place
from xwatch.core.plans.driver import Step
from xwatch.core.procs import pid_alive


def test_runs_rotate_over_the_boxes_as_a_latin_square() -> None:
    none = [frozenset()] * 3
    seen = {}
    for batch in range(3):
        queues, nowhere = place.place([frozenset({"native"})] * 3, none, batch)
        assert nowhere == [] and all(len(q) == 1 for q in queues)
        for box, q in enumerate(queues):
            seen[(batch, q[0])] = box
    for j in range(3):  # each run position meets every box once over 3 batches
        assert {seen[(b, j)] for b in range(3)} == {0, 1, 2}


def test_a_refused_mode_goes_to_the_next_box_or_nowhere() -> None:
    refused = [frozenset({"mps"}), frozenset(), frozenset({"mps"})]
    queues, nowhere = place.place([frozenset({"mps"}), frozenset({"native"}),
                                   frozenset({"xsched"})], refused, 0)
    assert queues == [[], [0, 1], [2]] and nowhere == []
    queues, nowhere = place.place([frozenset({"mps"})], [frozenset({"mps"})] * 2, 0)
    assert queues == [[], []] and nowhere == [0]
    assert [list(r) for r in place.chunks(5, 2)] == [[0, 1], [2, 3], [4]]


def _base() -> SessionSnapshot:
    return load_snapshot(ROOT / "tests" / "data" / "snapshot_two_phases.json")


def _box(i: int) -> M.Box:
    return M.Box(node_id=f"{i:02d}" * 28, host=f"host{i}")


def test_the_merged_snapshot_names_each_phase_and_its_box(tmp_path: Path) -> None:
    base = _base()
    a, b = base.phases[0], base.phases[1]
    from msgspec.structs import replace
    phases = [replace(a, box=_box(1)), replace(b, box=_box(2)), replace(a, box=_box(2)),
              merge.lost(Step(a.mode), 2, _box(3), "ActorDiedError: the node died")]
    snap = merge.merged(base.scenario, phases, "2026-11-29T12:00:00Z")
    names = [p.name for p in snap.phases]
    assert len(set(names)) == 4 and [p.index for p in snap.phases] == [0, 1, 2, 3]
    lost = snap.phases[3]
    assert lost.status == "failed" and "host3" in (lost.error or "") and \
        _box(3).node_id in (lost.error or "")
    assert merge.export(snap, str(tmp_path), lambda _: None, lambda _: None)
    doc = json.loads((tmp_path / "snapshot.json").read_text())
    assert [p["box"]["host"] for p in doc["phases"]] == ["host1", "host2", "host2", "host3"]
    back = load_snapshot(tmp_path / "snapshot.json")
    assert [p.box for p in back.phases] == [p.box for p in snap.phases]


def test_an_old_snapshot_without_boxes_loads() -> None:
    snap = load_snapshot(ROOT / "tests" / "data" / "snapshot_two_phases.json")
    assert all(p.box is None for p in snap.phases)


def test_a_box_is_called_slower_only_when_every_run_is() -> None:
    base = _base()
    from msgspec.structs import replace
    p = base.phases[0]
    top = max(p.workloads, key=lambda w: w.priority)
    p99 = float(top.phase.p99 or 1.0)

    def run(box: int, scale: float) -> object:
        w = replace(top, phase=replace(top.phase, p99=p99 * scale))
        return replace(p, box=_box(box), step="native", workloads=(w,))

    same = [run(1, 1.0), run(1, 1.02), run(2, 1.01), run(2, 0.99)]
    assert merge.box_findings(same) == []  # type: ignore[arg-type]
    slow = [run(1, 1.0), run(1, 1.02), run(2, 1.5), run(2, 1.6)]
    found = merge.box_findings(slow)  # type: ignore[arg-type]
    assert len(found) == 1 and "host2" in found[0] and "slower" in found[0]


def test_boxes_of_different_gpu_models_are_named() -> None:
    base = _base()
    from msgspec.structs import replace
    p = base.phases[0]

    def on(box: int, model: str) -> object:
        ws = tuple(replace(w, hello={**w.hello, "device_name": model}) for w in p.workloads)
        return replace(p, box=_box(box), workloads=ws)

    assert merge.box_findings([on(1, "H100"), on(2, "H100")]) == []  # type: ignore[list-item]
    (line,) = merge.box_findings([on(1, "H100"), on(2, "A100")])  # type: ignore[list-item]
    assert "GPU models differ" in line and "host1/010101: H100" in line and "A100" in line


def test_ray_with_amdsmi_missing_its_library_is_a_titled_error(tmp_path: Path) -> None:
    """amdsmi installed without libamd_smi.so raises KeyError at import; Ray's probe
    lets it through. Planted here as a package that raises as amdsmi does."""
    fake = tmp_path / "amdsmi"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise KeyError('libamd_smi.so')\n")
    code = ("from xwatch.core.fleet.connect import import_ray, RayError\n"
            "try:\n    import_ray()\nexcept RayError as e:\n"
            "    print('TITLE', e.title); print('TEXT', e)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=env, timeout=120)
    if "No module named 'ray'" in r.stderr or "Ray not installed" in r.stdout:
        pytest.skip("the ray extra is not installed")
    assert "TITLE Ray cannot import: amdsmi without its library" in r.stdout, \
        r.stdout + r.stderr
    assert "pip uninstall amdsmi" in r.stdout and "ROCM_PATH" in r.stdout


def test_the_guard_stops_what_its_agent_left_when_the_agent_is_killed() -> None:
    """The agent's child in a session of its own outlives a SIGKILLed agent unless the
    guard stops it."""
    agent = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, time\n"
         "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
         " start_new_session=True)\nprint(c.pid, flush=True)\ntime.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True)
    assert agent.stdout is not None
    child = int(agent.stdout.readline())
    g = guard.start(agent.pid, say=True)
    try:
        assert g.said is not None and g.pid != agent.pid
        assert g.said.readline().decode().split() == ["seen", str(child)]
        os.kill(agent.pid, signal.SIGKILL)
        agent.wait()
        assert g.wait(timeout=guard.GRACE_S + 10)
        assert not pid_alive(child, zombie=False)
    finally:
        if pid_alive(child):
            os.kill(child, signal.SIGKILL)
        if pid_alive(g.pid):
            os.kill(g.pid, signal.SIGKILL)
