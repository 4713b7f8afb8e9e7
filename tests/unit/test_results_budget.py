"""Results stay light as they grow (issue 66 goal 6): docs/results within its budget, each
sitting's page and folders within theirs, each sitting's raw data (data/results) within
its own, and nothing raw left where mkdocs would publish it. The budgets live in
tools/pack_results.py; each check is tested on a planted tree first."""

from __future__ import annotations

from pathlib import Path

from tools import pack_results

PAGE = """---
date: 2026-11-30
sitting: 1
machine: 1x H200
xsched: none
measured: "a planted sitting"
---

# A planted sitting
"""


def _tree(tmp_path: Path, light: int, heavy: int) -> tuple[Path, Path]:
    base, raw = tmp_path / "results", tmp_path / "data"
    (base / "s1").mkdir(parents=True)
    (base / "s1.md").write_text(PAGE)
    (base / "s1" / "run.log").write_bytes(b"x" * light)
    (raw / "s1" / "run").mkdir(parents=True)
    (raw / "s1" / "run" / "snapshot.json.gz").write_bytes(b"x" * heavy)
    return base, raw


def test_the_results_are_within_their_budgets() -> None:
    assert pack_results.unpacked() == [], "python -m tools.pack_results"
    assert pack_results.misplaced() == [], "python -m tools.pack_results"
    assert pack_results.over_budget() == []


def test_a_sitting_over_its_budget_is_named(tmp_path: Path) -> None:
    base, raw = _tree(tmp_path, 10_000, 10_000)
    assert pack_results.over_budget(base, raw) == []
    assert pack_results.sittings(base, raw) == {"s1": (4096 + 12288, 12288)}
    base, raw = _tree(tmp_path / "big", pack_results.BUDGET_SITTING,
                      pack_results.BUDGET_RAW + 1)
    bad = pack_results.over_budget(base, raw)
    assert len(bad) == 2
    assert bad[0].startswith("docs/results/s1.md and its folders: 2.01 MB, budget 2.00 MB")
    assert bad[1].startswith("data/results/s1: 3.00 MB, budget 3.00 MB")


def test_the_whole_is_counted_as_a_disk_holds_it(tmp_path: Path) -> None:
    files = []
    for k in range(3):
        f = tmp_path / f"f{k}"
        f.write_bytes(b"x" * (1 + 4096 * k))
        files.append(f)
    assert pack_results.weight(files) == 4096 + 8192 + 12288


def test_a_site_over_its_budget_is_named(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_bytes(b"x" * 1000)
    assert pack_results.site_over_budget(tmp_path) == []
    assert pack_results.main(["--site", str(tmp_path)]) == 0
    with (tmp_path / "big.bin").open("wb") as f:
        f.truncate(pack_results.BUDGET_SITE)  # sparse: no disk used, its size counted
    assert pack_results.site_over_budget(tmp_path)[0].endswith("budget 20.0 MB")
    assert pack_results.main(["--site", str(tmp_path)]) == 1


def test_a_sitting_that_kept_only_raw_data_owns_it(tmp_path: Path) -> None:
    from tools import docs

    base, raw = _tree(tmp_path, 10, 10)
    (base / "s1" / "run.log").unlink()
    (base / "s1").rmdir()
    page = base / "s1.md"
    old = docs.RAW
    docs.RAW = raw
    try:
        assert docs.page_folders(page, docs.front_matter(page)) == [base / "s1"]
        files = docs.results_files(page)
    finally:
        docs.RAW = old
    assert "| `data/results/s1/run/` | `snapshot.json.gz` |" in files
    assert pack_results.sittings(base, raw) == {"s1": (4096, 4096)}
