"""Issue 64's CPU case, with real processes: two programs of one's own (an inference
loop writing JSON lines to the event fd, a training script whose lines a ``regex``
parses) compared natively and under an XSched install (tests/helpers/fake_xsched.py)
whose xserver lists no XQueue: the CUDA platform's shim is on the library path only,
and neither program loads libcuda, so both are ``shim-not-loaded``. The answer gives
no verdict on XSched and says who and why, ``--fail-if slower`` exits 3 (not judged),
the snapshot's answer records carry the reason, and the report says it at the top."""

from __future__ import annotations

import json
import socket
import textwrap
from pathlib import Path

import pytest

from tests.conftest import PY, run_xwatch
from tests.helpers.fake_xsched import have_cc, make_install

pytestmark = pytest.mark.skipif(not have_cc(), reason="needs a C compiler for the fake shim")

INFER = '''
import json, os, time
fd = int(os.environ["XWATCH_EVENT_FD"])
def emit(o): os.write(fd, (json.dumps(o) + "\\n").encode())
emit({"type": "hello", "pid": os.getpid(), "model": "my-infer"})
t0 = time.monotonic()
emit({"type": "ready", "t0": t0})
i = 0
while True:
    i += 1
    time.sleep(max(0.0, t0 + i / 50 - time.monotonic()))
    emit({"seq": i, "t": time.monotonic(), "latency_ms": 2.0 + (i % 7) / 10})
'''
TRAIN = '''
import time
step = 0
while True:
    step += 1
    time.sleep(0.02)
    print(f"step {step} took {20 + step % 3} ms, 8 samples", flush=True)
'''


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _user(tmp_path: Path) -> Path:
    """The two programs and their scenario under XSched's CUDA platform."""
    (tmp_path / "infer.py").write_text(INFER)
    (tmp_path / "train.py").write_text(TRAIN)
    f = tmp_path / "user.toml"
    f.write_text(textwrap.dedent(f"""
        name = "user"
        duration_s = 2
        [xsched]
        platform = "cuda"
        port = {_port()}
        [[workload]]
        name = "infer"
        priority = "high"
        command = ["{PY}", "{tmp_path}/infer.py"]
        [[workload]]
        name = "train"
        priority = "low"
        command = ["{PY}", "{tmp_path}/train.py"]
        regex = 'took (?P<latency_ms>[0-9.]+) ms, (?P<samples>[0-9]+) samples'
    """))
    return f


def test_xsched_took_no_part_no_verdict_exit_3_records_and_report(tmp_path: Path) -> None:
    install = make_install(tmp_path / "xsched")
    f = _user(tmp_path)
    out = tmp_path / "o"
    r = run_xwatch("compare", str(f), "--xsched", str(install), "--modes", "native,xsched",
                   "--repeat", "2", "--fail-if", "slower", "--export", str(out),
                   "--telemetry", "off", timeout=180)
    assert r.returncode == 3, r.stdout + r.stderr
    doc = json.loads((out / "snapshot.json").read_text())
    xs = [p for p in doc["phases"] if p["mode"] == "xsched"]
    assert len(xs) == 2 and all(p["status"] == "done" for p in xs)
    for p in xs:
        assert {n: w["status"] for n, w in p["xsched"]["workloads"].items()} == \
            {"infer": "shim-not-loaded", "train": "shim-not-loaded"}
    # the console's answer: no effect verdict, who and why
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("XSched vs native"))
    assert "no verdict: XSched took no part: infer shim not loaded" in line, line
    assert "train shim not loaded" in line
    assert "within noise" not in line and "slower" not in line and "faster" not in line
    # the gate: not judged, exit 3, saying why
    assert "GATE slower: XSched: not judged: XSched took no part" in r.stderr, \
        r.stderr
    # the records a CI reads
    recs = doc["answer"]
    assert recs and all(a["took_part"] is False and a["way"] == "within" for a in recs)
    assert {(n["workload"], n["verdict"]) for n in recs[0]["no_part"]} == \
        {("infer", "shim-not-loaded"), ("train", "shim-not-loaded")}
    assert all("shim not loaded" in n["reason"] for n in recs[0]["no_part"])
    # the report: said in the answer, at the top
    report = (out / "report.md").read_text().splitlines()
    at = next(i for i, ln in enumerate(report) if "XSched took no part" in ln)
    assert at < 20, report[:25]
    assert "within noise" not in report[at]


def test_noise_records_no_floor_of_a_mode_that_took_no_part(tmp_path: Path) -> None:
    install = make_install(tmp_path / "xsched")
    r = run_xwatch("noise", str(_user(tmp_path)), "--mode", "xsched", "--xsched",
                   str(install), "--repeat", "2", "--telemetry", "off", timeout=120,
                   env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "xwatch: noise: no verdict: XSched took no part: infer shim not loaded" in r.stdout
    assert "a floor of these runs is not XSched's: nothing recorded" in r.stdout
    assert not list((tmp_path / "state").rglob("xsched-*.json"))
