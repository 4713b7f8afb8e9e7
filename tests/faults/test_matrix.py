"""The matrix, the page and the tests agree."""

from __future__ import annotations

from pathlib import Path

from tests.faults.matrix import ROWS, render

ROOT = Path(__file__).resolve().parents[2]


def test_every_row_names_a_test_that_exists() -> None:
    missing = []
    for r in ROWS:
        path, _, name = r.test.partition("::")
        src = (ROOT / path).read_text() if (ROOT / path).is_file() else ""
        if f"def {name}(" not in src:
            missing.append(r.test)
    assert not missing, missing


def test_every_fault_test_is_a_row() -> None:
    named = {r.test.partition("::")[2] for r in ROWS}
    for f in (ROOT / "tests" / "faults").glob("test_*.py"):
        if f.name == "test_matrix.py":
            continue
        for line in f.read_text().splitlines():
            if line.startswith("def test_"):
                name = line[4:].split("(")[0]
                assert name in named, f"{f.name}::{name} is not in the matrix"


def test_docs_page_is_rendered_from_the_rows() -> None:
    page = (ROOT / "docs" / "reliability.md").read_text()
    assert page == render(), "docs/reliability.md is stale: python -m tests.faults.matrix > " \
                             "docs/reliability.md"
