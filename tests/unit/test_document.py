"""The snapshot document's structs: the committed schema is theirs, every snapshot
xwatch ever wrote loads, a bad one says which file, which field and why, and the
upgrade of old snapshots is a pure function."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import jsonschema
import msgspec
import pytest

from xwatch.core.export import document as D
from xwatch.core.export.document.schema import SCHEMA_PATH, schema_text
from xwatch.core.export.document.upgrade import upgrade
from xwatch.core.export.snapshot import load_snapshot, load_snapshot_dict
from xwatch.errors import SnapshotError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def recorded() -> list[Path]:
    """Every snapshot file in the repository (the results' raw data, kept gzipped in
    data/results, and the test data)."""
    out = []
    results = ROOT / "data" / "results"
    for p in sorted([*results.rglob("*.json"), *results.rglob("*.json.gz"),
                     *DATA.rglob("*.json")]):
        with (gzip.open(p) if p.suffix == ".gz" else p.open("rb")) as f:
            head = f.read(200)
        if b'"schema"' in head and b"xwatch.snapshot/" in head:
            out.append(p)
    return out


def test_committed_schema_is_the_structs() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "snapshot.schema.json is stale: python -m xwatch.core.export.document.schema")


def test_every_recorded_snapshot_loads_and_fits_the_schema() -> None:
    files = recorded()
    assert len(files) >= 40  # data/results and the fixtures, from 2026-11-21 on
    for f in files:
        load_snapshot_dict(f)  # upgraded, then validated against the structs
        snap = load_snapshot(f)
        assert snap.phases and all(p.workloads for p in snap.phases), f
    # the generated schema says the same of them (jsonschema is slow: the small ones)
    schema = json.loads(SCHEMA_PATH.read_text())
    for f in sorted(files, key=lambda p: p.stat().st_size)[:6]:
        jsonschema.validate(load_snapshot_dict(f), schema)


def test_a_gzipped_snapshot_reads_as_the_file_and_a_broken_one_says_so(tmp_path: Path) -> None:
    raw = (DATA / "snapshot_two_gpus.json").read_bytes()
    (tmp_path / "snapshot.json.gz").write_bytes(gzip.compress(raw))
    assert load_snapshot(tmp_path / "snapshot.json.gz") == load_snapshot(DATA / "snapshot_two_gpus.json")
    (tmp_path / "packed").mkdir()  # a folder holding only the packed file reads it
    (tmp_path / "packed" / "snapshot.json.gz").write_bytes(gzip.compress(raw))
    assert load_snapshot(tmp_path / "packed") == load_snapshot(DATA / "snapshot_two_gpus.json")
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(raw)[:300])
    with pytest.raises(SnapshotError, match=r"cut\.json\.gz: a gzip file that does not decompress"):
        load_snapshot(tmp_path / "cut.json.gz")


def test_a_bad_field_names_the_file_the_field_and_why(tmp_path: Path) -> None:
    raw = json.loads((DATA / "snapshot_two_gpus.json").read_text())
    raw["phases"][0]["workloads"]["high@0"]["count"] = "many"
    f = tmp_path / "snapshot.json"
    f.write_text(json.dumps(raw))
    with pytest.raises(SnapshotError, match=r"snapshot\.json: snapshot is malformed: "
                       r"Expected `int`, got `str` - at `\$\.phases\[0\]\.workloads"
                       r"\[\.\.\.\]\.count`") as e:
        load_snapshot(tmp_path)
    assert e.value.title == "Snapshot not valid"
    raw["phases"][0]["workloads"]["high@0"]["count"] = 1
    raw["phases"][0]["surprise"] = True
    f.write_text(json.dumps(raw))
    with pytest.raises(SnapshotError, match=r"unknown field `surprise` - at `\$\.phases\[0\]`"):
        load_snapshot(f)


def test_upgrade_drops_what_no_version_reads_and_leaves_its_input_alone() -> None:
    raw = json.loads((DATA / "snapshot_two_phases.json").read_text())  # the first era
    before = copy.deepcopy(raw)
    up = upgrade(raw)
    assert raw == before
    assert all("service_ms" not in w for p in up["phases"] for w in p["workloads"].values())
    assert up["phases"][0]["workloads"]["high"]["count"] == raw["phases"][0]["workloads"][
        "high"]["count"]
    current = load_snapshot_dict(DATA / "snapshot_two_gpus.json")
    assert upgrade(current) is current  # nothing to do: the same object


def test_the_document_round_trips_through_its_encoding() -> None:
    raw = load_snapshot_dict(DATA / "golden" / "capture")
    doc = msgspec.convert(raw, D.Snapshot)
    again = msgspec.json.decode(msgspec.json.encode(doc), type=D.Snapshot)
    assert again == doc
    assert doc.phases[1].captures and doc.phases[1].captures[0].analysis is not None
