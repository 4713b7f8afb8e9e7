"""Does a change leave the snapshot files and reports as they were? This checkout
against another (``git archive <commit> | tar -x -C /tmp/old``), each in a fresh
interpreter:

    python benchmarks/measure/snapshot_bytes.py --against /tmp/old

Each tree writes a 4- and a 16-workload synthetic session (``snapshot_cost``'s, 300 s,
plus a named metric and log tails, two GPUs' telemetry) on a fixed clock, so the files
must be byte-identical; and reads every recorded snapshot under ``data/results`` and
``tests/data``, re-encoding its document and rendering its reports (Markdown, HTML,
through each named metric) and its Prometheus scrape. Prints the artefacts whose
digests differ (none: "identical") and leaves the written files under ``--out``.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STAMP = "2026-11-25T00:00:00.000+00:00"


def _digest(data: str | bytes) -> str:
    return hashlib.sha256(data if isinstance(data, bytes) else data.encode()).hexdigest()[:16]


def measure(tree: str, out: str) -> None:
    """In a fresh interpreter: one line per artefact, ``name digest``."""
    sys.argv = [sys.argv[0], "--tree", tree]  # snapshot_cost imports xwatch from ``tree``
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # snapshot_cost, beside
    import snapshot_cost as sc

    sys.argv = [sys.argv[0]]  # the environment's argv: the same in both trees
    import xwatch

    assert xwatch.__file__ and xwatch.__file__.startswith(tree), xwatch.__file__
    time.monotonic = lambda: 20000.0  # a fixed clock: the same files from both trees
    time.time = lambda: 1.8e9
    for m in list(sys.modules.values()):
        if getattr(m, "__name__", "").startswith("xwatch") and hasattr(m, "utc_now"):
            m.utc_now = lambda: STAMP  # type: ignore[union-attr]
    from xwatch.core.analysis.metric_view import metric_names, metric_view
    try:  # a view's answer is its own (trees before the stored answer computed it anyway)
        from xwatch.core.analysis.answer.stored import with_answer
    except ImportError:
        def with_answer(snap: Any) -> Any:
            return snap
    from xwatch.core.export.prometheus import families
    from xwatch.core.export.render.charts import build_charts
    from xwatch.core.export.render.html import render_html
    from xwatch.core.export.render.markdown import render_markdown
    from xwatch.core.export.report import build_report
    from xwatch.core.export.snapshot import (
        encode_document,
        load_snapshot,
        snapshot_document,
        write_snapshot,
    )

    for n in (4, 16):
        s, t0 = sc.build(n)
        sc.feed(s, t0, t0 + 300, random.Random(7))
        p = s.current
        assert p is not None
        for i, run in enumerate(p.runs.values()):
            run.on_events(sc.typed([{"seq": 10_000 + k, "t": t0 + 300 + k * 0.01,
                                     "latency_ms": 3.0 + k % 7, "ttft_ms": 20.0 + (k * 13) % 17}
                                    for k in range(200)]))
            for k in range(30):
                run.stderr.append(f"err {i} {k}")
                run.stdout.append(f"out {i} {k}")
        p.finish()
        s.telemetry = sc.FakeTelemetry(t0, 300)
        d = os.path.join(out, f"synthetic{n}")
        path = write_snapshot(s, d, s.snapshot(now=t0 + 310.0, telemetry_last=None))
        s.close()
        for f in ("snapshot.json", "events.csv.gz"):
            with open(os.path.join(d, f), "rb") as fh:
                print(f"synthetic{n}/{f} {_digest(fh.read())}")
        assert path.name == "snapshot.json"
    # the results' snapshots: data/results, or docs/results in a tree from before they
    # moved (named by their path today, so that the two trees' artefacts pair up)
    files = sorted(set(glob.glob(os.path.join(tree, "data/results/**/snapshot*.json*"),
                                 recursive=True)
                       + glob.glob(os.path.join(tree, "docs/results/**/snapshot*.json*"),
                                   recursive=True)
                       + glob.glob(os.path.join(tree, "tests/data/**/snapshot*.json"),
                                   recursive=True)))
    for f in files:
        rel = os.path.relpath(f, tree).replace("docs/results/", "data/results/", 1)
        snap = load_snapshot(f)
        rep = build_report(snap)
        views = "".join(render_markdown(build_report(with_answer(metric_view(snap, m))))
                        for m in metric_names(snap)[1:])
        prom = "\n".join(f"{m.name} {sorted((x.name, sorted(x.labels.items()), x.value) for x in m.samples)}"
                         for m in families(snap, "h"))
        print(f"{rel}:document {_digest(encode_document(snapshot_document(snap)))}")
        print(f"{rel}:md {_digest(render_markdown(rep))}")
        print(f"{rel}:html {_digest(render_html(rep, build_charts(snap)))}")
        print(f"{rel}:metrics {_digest(views)}")
        print(f"{rel}:prometheus {_digest(prom)}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", metavar="DIR", help="the other checkout of xwatch")
    ap.add_argument("--out", help="where the synthetic snapshots go (default: a temporary "
                                  "folder)")
    ap.add_argument("--tree", help=argparse.SUPPRESS)  # internal: measure this checkout
    a = ap.parse_args()
    if a.tree:
        measure(os.path.abspath(a.tree), a.out)
        return 0
    if not a.against:
        ap.error("--against DIR is needed")
    out = a.out or tempfile.mkdtemp(prefix="snapshot_bytes.")
    got = {}
    for name, tree in (("old", os.path.abspath(a.against)), ("new", HERE)):
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        r = subprocess.run([sys.executable, __file__, "--tree", tree, "--out", d],
                           capture_output=True, text=True, check=True)
        got[name] = dict(ln.rsplit(" ", 1) for ln in r.stdout.splitlines())
    differ = sorted(k for k in got["old"].keys() | got["new"].keys()
                    if got["old"].get(k) != got["new"].get(k))
    print(f"{len(got['new'])} artefacts; files under {out}")
    print("\n".join(f"differs: {k}" for k in differ) or "identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
