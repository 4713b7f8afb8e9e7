"""Memory and disk over a long run at a high event rate: xwatch headless with a
synthetic producer (default 20,000 events/s for 600 s), sampling xwatch's RSS and
the spool's size every 10 s.

    python benchmarks/measure/soak.py [--rate 20000] [--seconds 600] [--spool-max-mb 64] [--out F.csv]

Prints one line per sample and a summary (RSS first/last/max; events counted; raw
events kept/dropped from the snapshot).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--spool-max-mb", type=float, default=64)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="xwatch-soak-"))
    scen = d / "soak.toml"
    scen.write_text(f"""
name = "soak"
duration_s = {a.seconds}
[[workload]]
name = "fast"
priority = "high"
rate = {a.rate}
command = ["{sys.executable}", "{ROOT}/tests/data/workloads/pipe_producer.py", "{a.rate}"]
""")
    p = subprocess.Popen([sys.executable, "-m", "xwatch", "run", str(scen), "--headless",
                          "--telemetry", "off", "--spool-max-mb", str(a.spool_max_mb),
                          "--export", str(d / "out")], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    me = psutil.Process(p.pid)
    rows = []
    t0 = time.monotonic()
    while p.poll() is None:
        time.sleep(10)
        try:
            rss = me.memory_info().rss / 2**20
            cpu = me.cpu_percent(None)
        except psutil.Error:
            break
        if p.poll() is not None:  # exited while we slept: no sample of a dead process
            break
        spool = sum(f.stat().st_size for f in Path("/tmp").glob("xwatch-*/events.csv.gz")
                    if f.exists())
        rows.append((round(time.monotonic() - t0), round(rss, 1), round(spool / 2**20, 1),
                     cpu))
        print(f"t={rows[-1][0]:>4}s rss={rows[-1][1]:7.1f} MiB spool~{rows[-1][2]:6.1f} MiB "
              f"cpu={cpu:5.1f}%", flush=True)
    p.wait()
    doc = json.loads((d / "out" / "snapshot.json").read_text())
    w = doc["phases"][0]["workloads"]["fast"]
    rss = [r[1] for r in rows]
    print(f"RSS first {rss[0]} MiB, last {rss[-1]} MiB, max {max(rss)} MiB; counted "
          f"{w['count']} events ({w['throughput']['requests_per_s']:.0f}/s); raw events kept "
          f"{doc['events_kept']}, dropped {doc['events_dropped']}; "
          f"events.csv.gz {(d / 'out' / 'events.csv.gz').stat().st_size / 2**20:.1f} MiB")
    if a.out:
        Path(a.out).write_text("t_s,rss_mib,spool_mib,cpu_pct\n" +
                               "".join(f"{r[0]},{r[1]},{r[2]},{r[3]}\n" for r in rows))


if __name__ == "__main__":
    main()
