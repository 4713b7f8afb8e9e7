"""Servers over the box, end to end on two (fake NVML) GPUs: ``compare --gpus 0,1`` on a
server scenario with ``port = "auto"`` runs one server per GPU (``chat@0``, ``chat@1``),
each with a free port of its own put where its command says ``{port}`` and its whole
process tree pinned to its GPU; both copies enter the answer ("1 runs x 2 GPUs"), and
the MPS client proof and XSched's engagement (by its process tree) are made for each
copy, from its own server."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from tests.conftest import DATA, PY, run_xwatch
from tests.helpers.fake_mps import make_tool
from tests.helpers.fake_xsched import have_cc, make_install
from tests.helpers.serving import gone

FAKE_NVML = str(DATA / "fake_nvml")


def test_one_server_per_gpu_each_with_its_own_port_and_gpu(tmp_path: Path) -> None:
    tool = make_tool(tmp_path / "bin")
    modes, xs = "native,mps", []
    if have_cc():  # the fake shim is built with the C compiler
        modes = "native,mps,xsched"
        xs = ["--xsched", str(make_install(tmp_path / "xsched", platforms=("hip",)))]
    env = {"XWATCH_MPS_CONTROL": str(tool), "XDG_STATE_HOME": str(tmp_path / "state"),
           "FAKE_NVML_GPUS": "2",
           "PYTHONPATH": FAKE_NVML + os.pathsep + os.environ.get("PYTHONPATH", "")}
    f = tmp_path / "box.toml"
    f.write_text(f"""
duration_s = 2
[xsched]
platform = "hip"
[[workload]]
name = "chat"
priority = "high"
server = ["{PY}", "-m", "xwatch.testing.fake_openai", "{{port}}", "--first-ms", "5"]
port = "auto"
rate = 10
warmup = 1
new_tokens = 4
prompt_len = 8
ready_timeout_s = 30
""")
    out = tmp_path / "out"
    r = run_xwatch("compare", str(f), "--gpus", "0,1", "--modes", modes, *xs,
                   "--repeat", "1", "--telemetry", "off", "--export", str(out), env=env,
                   timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("MPS vs native"))
    assert "x 2 GPUs" in line and "chat" in line and "chat@" not in line, line
    assert len(doc_phases := json.loads((out / "snapshot.json").read_text())["phases"]) == \
        len(modes.split(",")), doc_phases
    doc = json.loads((out / "snapshot.json").read_text())
    ports: set[int] = set()
    for p in doc["phases"]:
        assert sorted(p["workloads"]) == ["chat@0", "chat@1"], p["name"]
        for g in (0, 1):
            w = p["workloads"][f"chat@{g}"]
            assert w["count"] >= 5 and w["errors"] == 0, (p["name"], w)
            port = int(re.search(r":(\d+)/", w["hello"]["url"]).group(1))  # type: ignore[union-attr]
            assert str(port) in w["hello"]["server"]  # {port} filled in
            assert w["launch"]["env"]["CUDA_VISIBLE_DEVICES"] == str(g)
            # the server itself saw only its GPU (its first stderr line: kept in the head
            # when the requests cut at the phase's end leave more tracebacks than the
            # tail holds, as a busy machine does)
            said = [*w["stderr_head"], *w["stderr_tail"]]
            assert f"fake_openai: serving on {port} (CUDA_VISIBLE_DEVICES={g})" in said, said
            ports.add(port)
        if p["mode"] == "mps":  # the client proof, per copy (the server's process tree)
            verdicts = {n: v["status"] for n, v in p["mps"]["workloads"].items()}
            assert set(verdicts) == {"chat@0", "chat@1"} and \
                all(v == "in-mps" for v in verdicts.values()), verdicts
            for n, v in p["mps"]["workloads"].items():  # clients of its own tree alone (the
                hello = p["workloads"][n]["hello"]  # fake counts the generator too: its env)
                assert v["client_pids"] and \
                    set(v["client_pids"]) <= {hello["pid"], hello["server_pid"]}, (n, v)
        if p["mode"] == "xsched":  # engaged by its own server's queues, not the other's
            for n, v in p["xsched"]["workloads"].items():
                assert v["status"] == "engaged", (n, v)
                assert {q["pid"] for q in v["queues"]} == \
                    {p["workloads"][n]["hello"]["server_pid"]}, (n, v)
    assert len(ports) == 2 * len(doc["phases"])  # every copy of every phase its own
    chat = [a for a in doc["answer"] if a["workload"] == "chat"]
    assert chat and all(a["gpus"] == 2 for a in chat), doc["answer"]
    assert all(gone(pt) for pt in ports)

