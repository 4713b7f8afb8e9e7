"""Requests that cannot be honoured are refused before anything starts: a titled
error, exit 2, no workload started, nothing written."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from tests.conftest import run_xwatch
from tests.helpers.fake_xsched import have_cc, make_install
from tests.helpers.scenarios import two


def scen(tmp_path: Path) -> Path:
    return two(tmp_path)


def flat(text: str) -> str:
    """The error box as one line (its lines wrap at word boundaries)."""
    return " ".join(text.replace("│", " ").split())


def refused(r, title: str) -> None:  # type: ignore[no-untyped-def]
    assert r.returncode == 2, r.stdout + r.stderr
    assert title.upper() in r.stderr, r.stderr
    assert "phase native-1" not in r.stdout  # nothing ran


def test_export_folder_that_cannot_be_made(tmp_path: Path) -> None:
    r = run_xwatch("run", str(scen(tmp_path)), "--headless", "--export", "/proc/xw/out")
    refused(r, "Export folder unusable")
    assert "/proc/xw/out" in r.stderr and "nothing was started" in flat(r.stderr)


def test_export_path_that_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    r = run_xwatch("run", str(scen(tmp_path)), "--headless", "--export", str(f))
    refused(r, "Export folder unusable")
    assert "a file, not a folder" in flat(r.stderr)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permissions")
def test_export_folder_without_write_permission(tmp_path: Path) -> None:
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(stat.S_IRUSR | stat.S_IXUSR)
    r = run_xwatch("run", str(scen(tmp_path)), "--headless", "--export", str(d / "x"))
    refused(r, "Export folder unusable")


def test_gpus_on_a_machine_without_them(tmp_path: Path) -> None:
    # an empty PYTHONPATH entry first: no fake NVML; this machine has no GPU
    r = run_xwatch("run", str(scen(tmp_path)), "--headless", "--gpus", "0,1",
                   env={"PYTHONPATH": ""})
    if "NO SUCH GPU" not in r.stderr and r.returncode == 0:
        pytest.skip("this machine has GPUs")
    refused(r, "No such GPU")
    assert "--gpus 0,1" in r.stderr


def test_gpus_beyond_what_the_machine_has(tmp_path: Path) -> None:
    fake_nvml = str(Path(__file__).resolve().parents[1] / "data" / "fake_nvml")  # 2 GPUs
    r = run_xwatch("run", str(scen(tmp_path)), "--headless", "--gpus", "0,3",
                   env={"PYTHONPATH": fake_nvml})
    refused(r, "No such GPU")
    assert "GPU 3 does not exist; this machine has 2 (0-1; NVML)" in flat(r.stderr)


def test_a_cuda_device_that_does_not_exist(tmp_path: Path) -> None:
    r = run_xwatch("run", "demo", "--headless", "--device", "cuda:7", env={"PYTHONPATH": ""})
    if r.returncode != 2 and "NO SUCH GPU" not in r.stderr:
        pytest.skip("this machine has 8 GPUs")
    refused(r, "No such GPU")
    assert "cuda:7" in r.stderr


def test_metrics_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run_xwatch("run", str(scen(tmp_path)), "--headless", "--metrics-port", str(port))
    assert r.returncode == 2 and str(port) in r.stderr


def test_explicit_telemetry_backend_that_cannot_start(tmp_path: Path) -> None:
    r = run_xwatch("run", str(scen(tmp_path)), "--headless", "--telemetry", "nvml",
                   env={"PYTHONPATH": ""})
    if r.returncode == 0:
        pytest.skip("NVML works here")
    refused(r, "Telemetry nvml unavailable")
    assert "--telemetry nvml cannot start" in flat(r.stderr)


@pytest.mark.skipif(not have_cc(), reason="needs a C compiler for the fake shim")
def test_xsched_install_of_the_wrong_platform(tmp_path: Path) -> None:
    inst = make_install(tmp_path / "cudaonly", platforms=("cuda",))
    f = two(tmp_path, top='[xsched]\nplatform = "hip"')
    r = run_xwatch("run", str(f), "--headless", "--mode", "xsched", "--xsched", str(inst))
    refused(r, "XSched shim missing")
    assert "found libshimcuda.so (built for another platform?)" in flat(r.stderr)


def test_mps_where_it_cannot_run(tmp_path: Path) -> None:
    r = run_xwatch("run", str(scen(tmp_path)), "--headless", "--mode", "mps",
                   env={"XWATCH_MPS_CONTROL": str(tmp_path / "none"), "PATH": "/usr/bin:/bin"})
    refused(r, "MPS control tool missing")


def test_bad_scenario_key_names_file_key_and_allowed_values(tmp_path: Path) -> None:
    f = scen(tmp_path)
    f.write_text(f.read_text().replace('priority = "low"', 'priority = "low"\nstream = "fast"'))
    r = run_xwatch("run", str(f), "--headless")
    assert r.returncode == 2 and str(f) in r.stderr and "stream" in r.stderr


@pytest.mark.parametrize("content, words", [
    ("{not json", "snapshot"),
    ('{"schema": "xwatch.snapshot/99", "scenario": {}, "phases": []}', "unknown snapshot schema"),
    ('{"schema": "xwatch.snapshot/1"}', "missing"),
])
@pytest.mark.parametrize("cmd", ["replay", "report"])
def test_corrupt_truncated_or_future_snapshots(tmp_path: Path, content: str, words: str,
                                              cmd: str) -> None:
    f = tmp_path / "snapshot.json"
    f.write_text(content)
    r = run_xwatch(cmd, str(f))
    assert r.returncode == 2, r.stdout + r.stderr
    assert words in r.stderr.lower() and "Traceback" not in r.stderr


def test_truncated_real_snapshot(tmp_path: Path) -> None:
    good = (Path(__file__).resolve().parents[1] / "data" / "snapshot_two_phases.json").read_text()
    f = tmp_path / "snapshot.json"
    f.write_text(good[: len(good) // 2])
    r = run_xwatch("report", str(f))
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_a_servers_taken_fixed_port_is_named_before_anything_starts(tmp_path: Path) -> None:
    """No generator, no server, no mode started: the port and who holds it, exit 2."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        f = tmp_path / "taken.toml"
        f.write_text("duration_s = 2\n[[workload]]\nname = \"chat\"\npriority = \"high\"\n"
                     f"server = [\"no-such-server\", \"--port\", \"{{port}}\"]\nport = {port}\n"
                     "rate = 2\n")
        r = run_xwatch("run", str(f), "--headless", "--telemetry", "off")
    refused(r, "Server port taken")
    assert f"workload chat: port {port} is already taken by pid {os.getpid()} (" in \
        flat(r.stderr) and "nothing was started" in flat(r.stderr)
