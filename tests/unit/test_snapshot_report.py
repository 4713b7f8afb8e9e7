"""Snapshot schema, loading errors, atomic writes; report goldens and HTML checks."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import msgspec
import pytest

from xwatch.core.engine.live.session import Session
from xwatch.core.export.document.schema import SCHEMA_PATH
from xwatch.core.export.document.upgrade import upgrade
from xwatch.core.export.render.charts import build_charts
from xwatch.core.export.render.html import render_html
from xwatch.core.export.render.markdown import render_markdown
from xwatch.core.export.report import build_report, write_reports
from xwatch.core.export.snapshot import (
    encode_document,
    load_snapshot,
    load_snapshot_dict,
    snapshot_document,
    write_snapshot,
)
from xwatch.core.model.events import events_of
from xwatch.errors import SnapshotError
from xwatch.scenario import load_scenario

DATA = Path(__file__).resolve().parent.parent / "data"
FIXTURE = DATA / "snapshot_two_phases.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text())


def test_fixture_and_fresh_snapshots_validate(tmp_path: Path) -> None:
    # the fixture is of the first era (a workload's ``service_ms``): valid once upgraded
    with pytest.raises(jsonschema.ValidationError, match="service_ms"):
        jsonschema.validate(json.loads(FIXTURE.read_text()), SCHEMA)
    jsonschema.validate(upgrade(json.loads(FIXTURE.read_text())), SCHEMA)
    s = Session(load_scenario("demo"))
    ph = s.new_phase("native")
    ph.runs["high"].on_events(events_of([{"type": "ready", "t0": ph.t_start},
                               {"latency_ms": 3.0, "t": ph.t_start + 0.5, "seq": 1}]))
    ph.finish()
    path = write_snapshot(s, tmp_path / "out")
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["phases"][0]["workloads"]["high"]["count"] == 1
    import gzip

    events = gzip.open(tmp_path / "out" / "events.csv.gz", "rt").read().splitlines()
    assert events[0].startswith("phase,workload,seq") and len(events) == 2
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["events.csv.gz",
                                                                     "snapshot.json"]
    assert doc["events_kept"] == 1 and doc["events_dropped"] == 0
    s.close()


def test_named_metrics_keep_their_first_order_and_a_read_snapshot_writes_as_read(
        tmp_path: Path) -> None:
    # the order a workload first sent its metrics in, whatever PYTHONHASHSEED
    s = Session(load_scenario("demo"))
    ph = s.new_phase("native")
    run = ph.runs["high"]
    run.on_events(events_of([{"type": "ready", "t0": ph.t_start}]))
    run.on_events(events_of([{"seq": k + 1, "t": ph.t_start + 0.01 * k, "latency_ms": 5.0 + k % 3,
                    "zeta_ms": 1.0 + k, "alpha_ms": [2.0, 3.0], "tpot_ms": 4.0}
                   for k in range(50)]))
    ph.finish()
    order = ["zeta_ms", "alpha_ms", "tpot_ms"]
    live = s.snapshot().phases[0].workload("high")
    assert live is not None and list(live.metrics) == order
    path = write_snapshot(s, tmp_path / "out")
    s.close()
    snap = load_snapshot(path)
    back = snap.phases[0].workload("high")
    assert back is not None and list(back.metrics) == order
    assert back.phase == live.phase and back.latency_hist == live.latency_hist
    assert list(back.latency_buckets_ms) == list(live.latency_buckets_ms)
    # a read snapshot is the document it was read from
    assert encode_document(snapshot_document(snap)) == path.read_bytes()


def test_spool_is_compressed_capped_and_stats_stay_exact(tmp_path: Path) -> None:
    """Past --spool-max-mb raw rows are dropped and counted, a warning is logged once,
    the file stays a valid .csv.gz, and the statistics still count every event."""
    import gzip

    scen = load_scenario("demo")
    s = Session(scen, spool_dir=str(tmp_path / "spool"), spool_max_mb=0.05)  # ~52 KB
    s.spool.BUFFER_BYTES = 4096  # small members so the cap is reached within the test
    ph = s.new_phase("native")
    run = ph.runs["high"]
    run.on_events(events_of([{"type": "ready", "t0": ph.t_start}]))
    n = 60000
    for i in range(0, n, 500):
        run.on_events(events_of([{"seq": k + 1, "t": ph.t_start + k * 1e-4,
                        "latency_ms": 1.0 + (k % 97) / 10, "service_ms": 1.0}
                       for k in range(i, i + 500)]))
    s.spool.flush()
    assert run.rec.count == n  # statistics never depend on the spool
    assert s.spool.dropped > 0 and s.spool.rows + s.spool.dropped == n
    rows = gzip.open(s.spool.path, "rt").read().splitlines()
    assert len(rows) == s.spool.rows + 1  # header + kept rows, readable while capped
    assert s.spool.bytes_written < 0.05 * 2**20 + 8192
    warnings = [m for m in s.logs if "spool reached" in m.text]
    assert len(warnings) == 1
    snap = s.snapshot()
    assert snap.spool is not None and snap.spool.rows_dropped == s.spool.dropped
    s.close()


def test_round_trip_and_errors(tmp_path: Path) -> None:
    snap = load_snapshot(FIXTURE)
    assert [p.name for p in snap.phases] == ["native-1", "xsched-1"]
    assert snap.phases[1].workload("low").exit.code == 1  # type: ignore[union-attr]
    bad = tmp_path / "corrupt.json"
    bad.write_text('{"schema": "xwatch.snapshot/1", "phases": [')
    with pytest.raises(SnapshotError, match="not valid JSON"):
        load_snapshot(bad)
    unknown = tmp_path / "future.json"
    unknown.write_text(json.dumps({"schema": "xwatch.snapshot/9", "phases": []}))
    with pytest.raises(SnapshotError, match=r"unknown snapshot schema 'xwatch\.snapshot/9'"):
        load_snapshot(unknown)
    with pytest.raises(SnapshotError, match="cannot read"):
        load_snapshot(tmp_path / "missing.json")
    nope = tmp_path / "other.json"
    nope.write_text("[1]")
    with pytest.raises(SnapshotError, match="not an xwatch snapshot"):
        load_snapshot_dict(nope)


def _md_row(md: str, section: str, label: str) -> list[str]:
    part = md.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    for line in part.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == label:
            return cells
    raise AssertionError(f"no row {label!r} in {section!r}")


def test_markdown_golden_and_deltas() -> None:
    md = render_markdown(build_report(load_snapshot(FIXTURE)))
    golden = (DATA / "report_two_phases.md").read_text()
    assert md == golden, "report changed: review, then regenerate tests/data/report_two_phases.md"
    # the deltas are arithmetic on the two phase columns, checked independently
    doc = json.loads(FIXTURE.read_text())
    hi = [p["workloads"]["high"]["latency_ms"] for p in doc["phases"]]
    row = _md_row(md, "Workload high", "P99 (ms)")
    a, b = hi[0]["p99"], hi[1]["p99"]
    assert row[1] == f"{a:,.2f}" and row[2] == f"{b:,.2f}"
    assert row[3] == f"{b - a:+,.2f} ({(b - a) / a * 100:+.1f}%)"
    assert _md_row(md, "Objective", "native-1")[2] == "FAIL"
    assert _md_row(md, "Objective", "xsched-1")[2] == "pass"
    assert "miopenStatusUnknownError" in md.split("## Failures", 1)[1]
    assert "LD_PRELOAD=/opt/xsched/lib/libshimhip.so" in md
    assert "xwatch compare tests/data/scenarios/fixture.toml --xsched /opt/xsched" in md


class _Checker(HTMLParser):
    VOID = {"meta", "br", "img", "link", "input", "hr", "rect", "line", "circle", "polyline",
            "text"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for k, v in attrs:
            if k in ("src", "href") and v and re.match(r"https?:", v):
                self.errors.append(f"external {k}: {v}")
        if tag not in self.VOID or tag == "text":
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID and tag != "text":
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unbalanced </{tag}> (open: {self.stack[-3:]})")
        else:
            self.stack.pop()


def test_html_is_self_contained_and_has_the_charts(tmp_path: Path) -> None:
    snap = load_snapshot(FIXTURE)
    page = render_html(build_report(snap), build_charts(snap))
    c = _Checker()
    c.feed(page)
    assert c.errors == [] and c.stack == []
    assert "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    assert page.count("<svg") == 4
    for title in ("Latency per second", "latency distribution per phase (CDF)",
                  "Low-priority throughput", "GPU activity"):
        assert title in page
    assert "SLO high P99" in page  # the SLO line
    # written next to the snapshot
    (tmp_path / "snapshot.json").write_text(FIXTURE.read_text())
    md, html_path = write_reports(tmp_path / "snapshot.json")
    assert md.read_text().startswith("# xwatch report: fixture")
    assert html_path.read_text().startswith("<!DOCTYPE html>")


def test_sweep_report_names_the_frontier(tmp_path: Path) -> None:
    """A fixed sweep snapshot: native + three settings, one of them crashed."""
    doc = upgrade(json.loads(FIXTURE.read_text()))
    native, xs = doc["phases"]
    xs["workloads"]["low"] = json.loads(json.dumps(native["workloads"]["low"]))
    xs["status"] = "done"

    def setting(name: str, label: str, hi_p99: float, low_sps: float, status: str = "done"
                ) -> dict:  # type: ignore[type-arg]
        p = json.loads(json.dumps(xs))
        p["name"], p["setting"], p["status"] = name, label, status
        p["workloads"]["high"]["latency_ms"]["p99"] = hi_p99
        p["workloads"]["low"]["throughput"]["samples_per_s"] = low_sps
        return p

    native["workloads"]["high"]["latency_ms"]["p99"] = 6.5
    native["workloads"]["low"]["throughput"]["samples_per_s"] = 6223.0
    doc["phases"] = [native,
                     setting("xsched-1", "low.threshold=4, low.batch_size=2", 13.0, 6091.0),
                     setting("xsched-2", "low.threshold=1, low.batch_size=1", 3.45, 5373.0),
                     setting("xsched-3", "low.threshold=2, low.batch_size=1", 99.0, 9999.0,
                             status="failed")]
    doc["phases"][3]["workloads"]["low"]["exit"] = {"code": 139, "signal": None,
                                                    "reason": "failed", "ran_to_end": False,
                                                    "message": "Segmentation fault"}
    jsonschema.validate(doc, SCHEMA)
    f = tmp_path / "snapshot.json"
    f.write_text(json.dumps(doc))
    snap = load_snapshot(f)
    md = render_markdown(build_report(snap))
    sweep = md.split("## Sweep: XSched settings against native", 1)[1].split("\n## ", 1)[0]
    assert "On the frontier: low.threshold=1, low.batch_size=1." in sweep
    rows = {r[1]: r for r in ([c.strip() for c in ln.strip("|").split("|")]
                              for ln in sweep.splitlines() if ln.startswith("| xsched")
                              or ln.startswith("| native"))}
    assert rows["native"][-1] == "yes"  # native is not dominated either
    assert rows["low.threshold=4, low.batch_size=2"][-1] == ""  # worse tail, less throughput
    # one run per setting, no floor: the change is shown, and never judged
    assert rows["low.threshold=4, low.batch_size=2"][6].startswith("+6.50 ms (+100.0%)")
    assert rows["low.threshold=4, low.batch_size=2"][6].endswith("run-to-run noise unmeasured")
    assert rows["low.threshold=1, low.batch_size=1"][-1] == "yes"
    assert rows["low.threshold=1, low.batch_size=1"][7] == "-850.0 (-13.7%)"
    assert rows["low.threshold=2, low.batch_size=1"][2].startswith("FAILED")
    page = render_html(build_report(snap), build_charts(snap))
    assert "Sweep: high P99 vs low-priority throughput" in page


def test_spool_rows_fast_path_equals_row_by_row() -> None:
    """The spool's batched row formatting (msgspec) writes the same values as formatting
    each row, and an event with an absent value takes the other path, which writes
    them as empty cells."""
    import csv
    import io
    import random

    from xwatch.core.engine import spool as sm
    from xwatch.core.model.events import Request

    rng = random.Random(5)
    evs = [Request(seq=i, t=30000.0 + rng.random() * 1e3, latency_ms=rng.choice(
               [rng.lognormvariate(1, 2), 1e-5, 2.5e-7, 1e16, 0.1, 3.0, 7]),
               service_ms=rng.random(), sched_delay_ms=rng.random() / 1e3,
               late=rng.random() < 0.3, batch=rng.choice([1, 1024]), ok=rng.random() < 0.9)
           for i in range(2000)]

    def rows(text: bytes) -> list[list[str]]:
        return list(csv.reader(io.StringIO(text.decode())))

    def each(prefix: str, events: list[Request]) -> bytes:  # one row at a time
        def cell(v: object) -> str:
            return "" if v is None else str(v)
        return "".join(f"{prefix}{cell(e.seq)},{cell(e.t)},{e.latency_ms},"
                       f"{cell(e.service_ms)},{cell(e.sched_delay_ms)},{1 if e.late else 0},"
                       f"{1 if e.batch is None else e.batch},{1 if e.ok else 0}\n"
                       for e in events).encode()

    def same(a: bytes, b: bytes) -> bool:  # msgspec writes 1e16 where str() has 1e+16
        return [[float(x) if x else None for x in r[2:]] for r in rows(a)] == \
            [[float(x) if x else None for x in r[2:]] for r in rows(b)]

    fast = sm._rows_fast("3,low@1,", evs)
    assert fast is not None and same(fast, each("3,low@1,", evs))
    got = rows(fast)
    assert len(got) == len(evs) and got[0][:3] == ["3", "low@1", "0"]
    assert {r[-1] for r in got} == {"0", "1"} and "7" in {r[4] for r in got}
    for odd in ({"service_ms": None}, {"late": None}, {"batch": None}, {"seq": None}):
        e = msgspec.structs.replace(evs[1], **odd)
        assert sm._rows_fast("1,w,", [evs[0], e]) is None, odd
    # a command workload's own events (any subset of the fields): the batched path
    # writes what row by row writes
    keys = ("seq", "t", "service_ms", "sched_delay_ms", "late", "batch", "ok")
    some = [Request(latency_ms=rng.choice([2, 0.5, 1e-7, 123456.789]),
                    **{k: v for k, v in {"seq": i, "t": 1e3 + rng.random(), "service_ms": 0.25,
                                         "sched_delay_ms": 1e-4, "late": rng.random() < 0.5,
                                         "batch": 64, "ok": rng.random() < 0.8}.items()
                       if k in rng.sample(keys, rng.randint(0, len(keys)))})
            for i in range(500)]
    assert same(sm._rows_any("2,cmd,", some), each("2,cmd,", some))
    partial = [Request(latency_ms=2.0, ok=False), Request(latency_ms=1.5)]
    spool = sm.EventSpool()
    spool.write_many(1, "w", partial)
    spool.write_many(1, "w", evs[:3])
    spool.flush()
    import gzip

    out = list(csv.DictReader(gzip.open(spool.path, "rt")))
    assert [(r["latency_ms"], r["service_ms"], r["ok"]) for r in out[:2]] == [
        ("2.0", "", "0"), ("1.5", "", "1")]
    assert [float(r["t"]) for r in out[2:]] == [e.t for e in evs[:3]]
    spool.close()
