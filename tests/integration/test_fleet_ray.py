"""The fleet over a real local Ray cluster (``ray.cluster_utils.Cluster``: 3 CPU boxes
with the ``xwatch_box`` resource and the fake NVML's 2 GPUs), in a network namespace
that has only loopback (``unshare -n``, ``ip link set lo up``; ``xwatch.testing.fleet.
cluster``), started once for the module: a race over every box, each named in the
snapshot; a mode no box can run refused, each box named; a node lost mid-phase (its run
failed and named, the plan finishing on the others); the command SIGKILLed, and nothing
of it left running on any node; SIGTERM, every box stopped before the command ends.
Where the namespace cannot be made, the module skips and says why."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PY, WORKLOADS
from tests.helpers.fake_mps import make_tool
from xwatch.core.procs import pid_alive, processes
from xwatch.testing.fleet.cluster import Holder, netns_refusal

REFUSAL = "the ray extra is not installed" if importlib.util.find_spec("ray") is None \
    else netns_refusal()
pytestmark = [pytest.mark.skipif(REFUSAL is not None, reason=str(REFUSAL)),
              pytest.mark.timeout(180), pytest.mark.cluster]
Fleet = tuple[Holder, Path]
#: what names this run's processes (its workloads' programs), apart from any other's
TAG = f"xwfleet{os.getpid()}"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    base = tmp_path_factory.mktemp("fleet")
    tool = make_tool(base / "bin")
    h = Holder(3, env={"XWATCH_MPS_CONTROL": str(tool),
                                   "XDG_STATE_HOME": str(base / "state")})
    try:
        yield h, base
    finally:
        h.stop()
        assert not [p for p in h.raylets if pid_alive(p, zombie=False)], "raylets left"


def _scenario(d: Path, marker: str, duration: float = 2, rate: int = 60) -> Path:
    """``high`` and ``low`` pipe producers, run from a copy named ``marker`` (every
    process of this test found by it); ``low`` starts a helper of its own first, a
    process that outlives its pipe (as a server's children may): only its owner's
    cleanup ends it."""
    marker = f"{TAG}-{marker}"
    prog = d / f"{marker}.py"
    shutil.copy(WORKLOADS / "pipe_producer.py", prog)
    helper = f"'{PY}' -c 'import time; time.sleep(600)' {marker}-helper &"
    f = d / f"{marker}.toml"  # the scenario's name: {TAG}-{marker}
    f.write_text(f"""
duration_s = {duration}
[[workload]]
name = "high"
priority = "high"
command = ["{PY}", "{prog}", "{rate}"]
[[workload]]
name = "low"
priority = "low"
command = ["sh", "-c", "{helper} exec '{PY}' '{prog}' 20 --service-ms 20"]
""")
    return f


def _gone(marker: str, within: float = 10) -> bool:
    """Whether every process of ``marker`` is gone, waiting ``within`` seconds at most
    (a phase's stop signals its processes; they end a moment later)."""
    deadline = time.monotonic() + within
    while _ours(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not _ours(marker)


def _left(marker: str) -> list[tuple[int, int | None, tuple[str, ...]]]:
    """What is left of ``marker``: (pid, parent, command line) each."""
    from xwatch.core.procs import parent

    return [(p.pid, parent(p.pid), p.argv) for p in processes()
            if any(marker in a for a in p.argv)]


def _ours(marker: str) -> list[int]:
    return [p.pid for p in processes() if any(marker in a for a in p.argv)]


def _xwatch(*args: str) -> list[str]:
    return [PY, "-m", "xwatch", *args, "--telemetry", "off"]


def _short(node_id: str) -> str:
    return node_id[:6]


def test_a_race_over_three_boxes_names_every_box(fleet: Fleet) -> None:
    h, base = fleet
    f = _scenario(base, "race")
    out = base / "race-out"
    r = h.run(_xwatch("advise", str(f), "--ray", h.address, "--modes", "native,mps",
                      "--set", "low.mps.active_thread_percentage=50,25", "--slo",
                      "high.P90=50", "--budget", "0.2", "--export", str(out)), timeout=150)
    assert r.returncode in (0, 3), r.stdout + r.stderr
    assert "xwatch: 3 boxes:" in r.stdout
    assert "boxes | " in r.stdout  # the progress line of every box
    doc = json.loads((out / "snapshot.json").read_text())
    boxes = {p["box"]["node_id"] for p in doc["phases"]}
    assert boxes == set(h.nodes), (boxes, h.nodes)
    # every phase names its box's host; on a busy machine a phase may fail (its start
    # late), which the race counts as no run: at least two of the three boxes ran theirs
    assert all(p["box"]["host"] for p in doc["phases"])
    ran = [p for p in doc["phases"] if p["status"] == "done"]
    assert doc["advice"]["runs"] >= 2 and len(ran) >= 2, (
        [(p["status"], p.get("error")) for p in doc["phases"]], r.stdout[-3000:])
    assert _gone(f"{TAG}-race"), _left(f"{TAG}-race")


def test_a_compare_over_three_boxes_blocks_them(fleet: Fleet) -> None:
    h, base = fleet
    f = _scenario(base, "blocks")
    r = h.run(_xwatch("compare", str(f), "--ray", h.address, "--modes", "native,mps",
                      "--repeat", "3"), timeout=120, cwd=base)
    # The three boxes share this machine's processes, which real boxes never do: when two
    # boxes run an MPS phase at once, one may see the other's control daemon serving its
    # GPU and refuse to start a second (a failed phase, said, the plan going on). That
    # refusal is the only failure allowed here.
    failed = [x for x in r.stderr.splitlines() if x.startswith("FAILED ")]
    crowded = any("MPS control daemon pid" in x for x in failed) and all(
        "MPS control daemon pid" in x or "never ran (pending)" in x for x in failed)
    assert r.returncode in (0, 3) or (r.returncode == 1 and failed and crowded), \
        r.stdout + r.stderr
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("Intervals:")]
    if not failed:
        assert "Box is a block: 3 boxes;" in line, r.stdout
    else:  # a refused MPS phase can leave no box with both modes: the runs are paired
        assert "Box is a block: 3 boxes;" in line or "runs paired" in line, r.stdout
        assert re.search(r"box \S+: .*failed", r.stdout), r.stdout  # the failure is said
    assert _gone(f"{TAG}-blocks"), _left(f"{TAG}-blocks")


def test_noise_over_the_boxes_prints_the_floor_and_records_none(fleet: Fleet) -> None:
    h, base = fleet
    f = _scenario(base, "noise")
    out = base / "noise-out"
    r = h.run(_xwatch("noise", str(f), "--ray", h.address, "--repeat", "3", "--export",
                      str(out)), timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"=== noise floor: {TAG}-noise, native, 3 runs of" in r.stdout
    assert "its runs were spread over 3 boxes: not recorded as this machine's floor" \
        in r.stdout
    assert not list((base / "state").rglob("native-*.json"))  # no floor file written
    doc = json.loads((out / "snapshot.json").read_text())
    assert {p["box"]["node_id"] for p in doc["phases"]} == set(h.nodes)
    assert doc["extra"]["noise_floor"]["runs"] == 3


def test_a_mode_no_box_can_run_is_refused_on_each_box(fleet: Fleet) -> None:
    h, base = fleet
    f = _scenario(base, "refused")
    r = h.run(_xwatch("compare", str(f), "--ray", h.address,
                      "--modes", "native,xsched"),
              timeout=60, cwd=base)
    assert r.returncode == 2, r.stdout + r.stderr
    for node in h.nodes:
        assert f"/{_short(node)}: xsched refused here:" in r.stderr
    assert "MODE REFUSED ON EVERY BOX" in r.stderr
    assert "--- box" not in r.stdout


def test_a_node_lost_mid_phase_fails_its_run_and_the_plan_goes_on(
        fleet: Fleet) -> None:
    h, base = fleet
    f = _scenario(base, "lost", duration=5)
    out = base / "lost-out"
    victim = h.nodes[2]
    p = h.popen(_xwatch("compare", str(f), "--ray", h.address, "--modes",
                        "native,mps", "--repeat", "2", "--export", str(out)),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None
    seen = []
    for line in p.stdout:  # wait until the victim's phase measures
        seen.append(line)
        if line.startswith("boxes | ") and any(
                part.strip().split(":")[0].endswith(_short(victim))
                and (m := re.search(r" (\d+)s high n=", part)) and int(m.group(1)) < 3
                for part in line.split(" | ")[1:]):
            break
    else:
        pytest.fail("the victim box never ran a phase:\n" + "".join(seen))
    h.kill(2)
    rest, err = p.communicate(timeout=120)
    text = "".join(seen) + rest
    assert p.returncode == 1, text + err
    assert f"(Ray node {victim}, host " in err and "lost mid-phase" in err, err
    doc = json.loads((out / "snapshot.json").read_text())
    failed = [q for q in doc["phases"] if q["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["box"]["node_id"] == victim
    assert victim in failed[0]["error"] and "lost mid-phase" in failed[0]["error"]
    done = [q for q in doc["phases"] if q["status"] == "done"]
    after = doc["phases"][doc["phases"].index(failed[0]) + 1:]
    assert len(done) == 3 and after and all(q["box"]["node_id"] != victim for q in after)
    assert _gone(f"{TAG}-lost", within=20), _left(f"{TAG}-lost")  # the lost box's too


def test_the_command_sigkilled_leaves_nothing_on_any_node(fleet: Fleet) -> None:
    h, base = fleet
    f = _scenario(base, "killed", duration=60)
    p = h.popen(_xwatch("compare", str(f), "--ray", h.address, "--modes",
                        "native,mps"), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdout is not None
    for line in p.stdout:  # both runs measuring on their boxes
        if line.startswith("boxes | ") and line.count(" n=") >= 2:
            break
    assert len(_ours(f"{TAG}-killed")) >= 4
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    deadline = time.monotonic() + 30
    daemon = str(base / "bin")  # the fake MPS daemon of the MPS box
    killed = f"{TAG}-killed"
    while (_ours(killed) or _ours(daemon) or _agents(h)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _ours(killed), _left(killed)
    assert not _ours(daemon), "an MPS daemon left behind"
    assert not _agents(h), "box agents left behind"


def _agents(h: Holder) -> list[int]:
    """The box agents of this cluster (in its network namespace): another cluster's on
    this machine, another test run's, are not this test's to count."""
    return [p.pid for p in processes() if any("BoxAgent" in a for a in p.argv)
            and h.holds(p.pid)]


def test_sigterm_stops_every_box_and_says_so(fleet: Fleet) -> None:
    h, base = fleet
    f = _scenario(base, "termed", duration=60)
    p = h.popen(_xwatch("compare", str(f), "--ray", h.address, "--modes", "native,mps"),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None
    seen = []
    for line in p.stdout:  # both runs measuring on their boxes
        seen.append(line)
        if line.startswith("boxes | ") and line.count(" n=") >= 2:
            break
    p.send_signal(signal.SIGTERM)
    rest, err = p.communicate(timeout=60)
    out = "".join(seen) + rest
    assert p.returncode == 128 + signal.SIGTERM, out + err
    assert "interrupted by SIGTERM; every box's workloads stopped" in out
    assert _gone(f"{TAG}-termed", within=5), _left(f"{TAG}-termed")  # as the command ended
    deadline = time.monotonic() + 30  # the agents end as Ray reclaims their workers
    while _agents(h) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _agents(h), "box agents left behind"


def test_the_dashboard_shows_each_box_as_a_group_of_gpus(fleet: Fleet) -> None:
    """``run --ray`` (``cli.fleet.fleet_dashboard``) under Textual's pilot, in the
    cluster's namespace: while the phases run, each box says so and shows its progress
    line, and the charts say which box runs instead of empty axes; at the end, each box
    (host, node id) with its GPUs' numbers; what the command prints after: a line a box,
    the per-box findings, the snapshot's path."""
    h, base = fleet
    f = _scenario(base, "dash")
    out = base / "dash-out"
    r = h.run([PY, "-m", "tests.integration.fleet_dashboard_pilot", h.address, str(f),
               str(out)], timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["status"] == 0, got
    assert got["running"] is not None, got  # a phase was seen running, its progress live
    assert "results when it ends" in got["running"] and "so far:" in got["running"]
    final, boxes = got["final"], got["boxes"]  # the alive ones (a test may kill a node)
    assert len(boxes) >= 2 and set(boxes) <= set(h.nodes), boxes
    for node in boxes:  # each box a group: its title, one phase's line per GPU under it
        group = final.split(f"node {node[:12]}", 1)[1].split("▾", 1)[0]
        assert group.count("    GPU 0 ") == 1 and group.count("    GPU 1 ") == 1, group
    assert "running" not in final and "lost" not in final, final
    chart = got["chart"]  # the boxes running, none ended: said in the chart, no axes
    assert chart is not None and "┤" not in chart and "└" not in chart, chart
    assert "running on " in chart and "numbers arrive when the phase ends" in chart, chart
    doc = json.loads((out / "snapshot.json").read_text())
    assert {p["box"]["node_id"] for p in doc["phases"]} == set(boxes)
    printed = [line for line, warn in got["end"] if not warn]
    for p in doc["phases"]:  # a line a box: its phase and status
        assert f"box {p['box']['host']}/{_short(p['box']['node_id'])}: {p['name']} " \
            f"{p['status']}" in printed, printed
    assert any(ln.startswith("per box: ") for ln in printed), printed
    assert f"snapshot: {out / 'snapshot.json'}" in printed, printed
    assert _gone(f"{TAG}-dash"), _left(f"{TAG}-dash")


def test_quitting_the_dashboard_mid_phase_stops_every_box(fleet: Fleet) -> None:
    """``q`` while every box runs its phase: the plan stops (no answer, a failed exit
    status), every box's workloads gone before the dashboard leaves; then the command
    prints the stop and each box with its run stopped mid-phase."""
    h, base = fleet
    f = _scenario(base, "dashq", duration=30)
    r = h.run([PY, "-m", "tests.integration.fleet_dashboard_pilot", h.address, str(f),
               str(base / "dashq-out"), "quit"], timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["running"] is not None, got
    assert got["running"].count("so far: ") == len(got["boxes"]) >= 2, got
    assert got["status"] not in (None, 0), got  # stopped: not a finished plan
    printed = [line for line, warn in got["end"] if not warn]
    assert printed[0] == "xwatch: stopped; every box's workloads stopped", printed
    for node in got["boxes"]:
        assert any(ln.startswith("box ") and f"/{_short(node)}: " in ln and
                   "stopped mid-phase" in ln for ln in printed), printed
    assert _gone(f"{TAG}-dashq", within=2), _left(f"{TAG}-dashq")
