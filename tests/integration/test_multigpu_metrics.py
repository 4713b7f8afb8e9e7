"""Several GPUs and the Prometheus endpoint, with real processes: a scenario
replicated onto two (fake NVML) GPUs whose workers report PCI addresses in the
opposite order of NVML's indices, scraped live and parsed with prometheus_client."""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_xwatch
from tests.helpers.metrics import parse_samples, with_labels
from xwatch.core.engine.stats import LATENCY_BUCKETS_MS, exact_percentile

FAKE_NVML = str(ROOT / "tests" / "data" / "fake_nvml")
N = 60  # events per workload before it goes quiet


def _scenario(scenario_file, extra: str = ""):  # type: ignore[no-untyped-def]
    return scenario_file(f"""
        name = "mg"
        duration_s = 600
        gpus = [0, 1]
        {extra}
        [[workload]]
        name = "high"
        priority = "high"
        command = ["@PY@", "@W@/pipe_producer.py", "100", "--hang-after", "{N}",
                   "--pci-by-visible", "3b,19"]
        [[workload]]
        name = "low"
        priority = "low"
        command = ["@PY@", "@W@/pipe_producer.py", "200", "--hang-after", "{N}",
                   "--pci-by-visible", "3b,19"]
    """)


def _scrape(url: str) -> dict[str, list]:  # type: ignore[type-arg]
    return parse_samples(urllib.request.urlopen(url, timeout=5).read().decode())


@pytest.mark.slow
def test_two_gpus_scraped_live_equal_the_snapshot(scenario_file, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = _scenario(scenario_file)
    env = {**os.environ, "PYTHONPATH": FAKE_NVML + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "xwatch", "run", str(f), "--headless",
                          "--duration", "0", "--telemetry", "nvml", "--metrics-port", "0",
                          "--export", str(out)], cwd=ROOT, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = None
        deadline = time.monotonic() + 30
        assert p.stderr is not None
        while url is None and time.monotonic() < deadline:
            m = re.search(r"metrics at (http://\S+)", p.stderr.readline())
            url = m.group(1) if m else None
        assert url, "no metrics URL printed"
        names = ["high@0", "low@0", "high@1", "low@1"]
        while time.monotonic() < deadline:  # every copy has sent its N events
            m = _scrape(url)
            counts = {s.labels["workload"]: s.value for s in m.get("xwatch_requests_total", [])}
            if all(counts.get(n) == N for n in names):
                break
            time.sleep(0.3)
        assert all(counts.get(n) == N for n in names), counts
        m = _scrape(url)
    finally:
        p.send_signal(signal.SIGTERM)
        stdout, stderr = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM, stdout + stderr
    assert "until stopped" in stdout and "on GPUs 0,1" in stdout
    doc = json.loads((out / "snapshot.json").read_text())
    ph = doc["phases"][0]
    rows = list(csv.DictReader(gzip.open(out / "events.csv.gz", "rt")))
    for name in names:
        w = ph["workloads"][name]
        lab = {"workload": name, "phase": ph["name"], "mode": "native"}
        gpu = name.split("@")[1]
        # labels: the copy's GPU and priority
        (req,) = with_labels(m["xwatch_requests_total"], **lab)
        assert req.labels["gpu"] == gpu and req.labels["priority"] == w["priority_label"]
        assert req.value == w["count"] == N
        # the histogram equals the snapshot's buckets, count and exact sum
        for le, n in w["latency_buckets_ms"]:
            (b,) = with_labels(m["xwatch_request_latency_seconds_bucket"], le=f"{le / 1000:g}", **lab)
            assert b.value == n
        (s,) = with_labels(m["xwatch_request_latency_seconds_sum"], **lab)
        assert s.value * 1000 == pytest.approx(w["latency_sum_ms"], rel=1e-6)
        # the quantiles equal the snapshot's and the exact nearest-rank percentiles
        lat = [float(r["latency_ms"]) for r in rows if r["workload"] == name]
        assert len(lat) == N
        for key, q in (("p50", 50.0), ("p99", 99.0)):
            (v,) = with_labels(m["xwatch_request_latency_percentile_seconds"], quantile=f"{q / 100:g}",
                       **lab)
            assert v.value * 1000 == pytest.approx(w["latency_ms"][key], rel=1e-6)
            assert v.value * 1000 == pytest.approx(exact_percentile(lat, q), rel=0.0025)
        assert sum(1 for x in lat if x <= LATENCY_BUCKETS_MS[3]) == w["latency_buckets_ms"][3][1]
    # per GPU: matched by PCI address, not by index (GPU 0's workers sit at bus 0x3b = NVML 1)
    groups = {g["gpu"]: g for g in ph["gpus"]["groups"]}
    assert groups[0]["telemetry_device"] == "gpu1" and groups[0]["matched_by"] == "pci"
    assert groups[0]["util_pct"] == pytest.approx(90) and groups[1]["util_pct"] == pytest.approx(10)
    assert groups[1]["high_p50_ms"] > groups[0]["high_p50_ms"] + 2  # GPU 1's copies are slower
    assert ph["gpus"]["rollup"]["worst_gpu"] == 1
    util = {s.labels["gpu"]: s.value for s in m["xwatch_gpu_utilization_ratio"]}
    assert util == {"0": pytest.approx(0.1), "1": pytest.approx(0.9)}
    assert m["process_cpu_seconds_total"][0].value > 0
    report = (out / "report.md").read_text()
    assert "## Per GPU" in report and "| native-1 | 0 | 0000:3b:00.0 |" in report


def test_port_in_use_fails_before_anything_starts(scenario_file) -> None:  # type: ignore[no-untyped-def]
    f = _scenario(scenario_file)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run_xwatch("run", str(f), "--headless", "--metrics-port", str(port), timeout=60,
                       env={"PYTHONPATH": FAKE_NVML})  # a machine with the two GPUs asked for
    assert r.returncode == 2, r.stdout + r.stderr
    assert "METRICS PORT UNAVAILABLE" in r.stderr and "in use" in r.stderr
    assert "phase" not in r.stdout  # nothing ran
    r = run_xwatch("compare", str(f), "--duration", "0", timeout=60)
    assert r.returncode == 2 and "xwatch run" in r.stderr
