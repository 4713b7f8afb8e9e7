"""The manual and the front page: what the code knows is generated into the pages
(``python -m tools.docs``) and a page that differs from the code fails here; the README
stays a front page (short, no results, dates or commit hashes, its two commands the ones
CI runs); every manual page is in the site's navigation; the manual's pages carry no
dated lab notes (those live in docs/results)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from tools import docs

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_every_generated_page_is_current() -> None:
    assert docs.stale() == [], "stale pages: run python -m tools.docs"


def test_a_page_that_differs_from_the_code_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    page, make = docs.BLOCKS["cli"]
    monkeypatch.setitem(docs.BLOCKS, "cli", (page, lambda: make().replace("--headless", "--hedless")))
    assert docs.stale() == [docs.DOCS / page]
    monkeypatch.setitem(docs.BLOCKS, "cli", (page, make))
    monkeypatch.setitem(docs.PAGES, "reliability.md", lambda: "# another page\n")
    assert docs.stale() == [docs.DOCS / "reliability.md"]


def test_the_cli_reference_names_every_command_and_argument() -> None:
    from xwatch.cli import build_parser

    text = docs.cli_reference()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        assert f"### `xwatch {name}`" in text
        for a in p._actions:
            for flag in a.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in text or f", {flag}" in text, (name, flag)


def test_every_schema_struct_and_field_is_listed() -> None:
    import json

    schema = json.loads((ROOT / "xwatch/core/export/snapshot.schema.json").read_text())
    text = docs.snapshot_fields()
    for name, d in schema["$defs"].items():
        assert f"#### {name}" in text
        for field in d.get("properties", {}):
            assert f"| `{field}` |" in text, (name, field)


def test_every_results_page_is_indexed_newest_first() -> None:
    pages = docs.results_pages()
    assert len(pages) >= 20
    dates = [(m["date"], int(m["sitting"])) for _, m in pages]
    assert dates == sorted(dates, reverse=True)
    index = (docs.DOCS / "results" / "README.md").read_text()
    for p, m in pages:
        assert f"]({p.name})" in index and m["machine"] and m["xsched"] and m["measured"]


def test_a_results_page_without_its_front_matter_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "run.md"
    p.write_text("# a run\n")
    with pytest.raises(ValueError, match="no front matter"):
        docs.front_matter(p)
    p.write_text("---\ndate: 2026-01-01\nmachine: x\n---\n# a run\n")
    with pytest.raises(ValueError, match="lacks measured, sitting, xsched"):
        docs.front_matter(p)


def test_the_readme_is_a_front_page() -> None:
    lines = README.splitlines()
    assert len(lines) <= 250
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", README), "no dates in the README"
    hexes = [w for w in re.findall(r"\b[0-9a-f]{7,40}\b", README)
             if re.search(r"[a-f]", w) and re.search(r"\d", w)]
    assert hexes == [], "no commit hashes in the README"
    assert "docs/results/" not in README.replace("docs/results/README.md", ""), \
        "the README links the results index, not single results"
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target


def test_the_readmes_two_commands_are_the_ones_ci_runs() -> None:
    blocks = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert blocks[:2] == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/xwatch",
        "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    for step in ("python3 -m venv .venv", ".venv/bin/pip install -q -e '.[test]'",
                 ".venv/bin/python -m pytest", "mkdocs build --strict",
                 ".venv/bin/pip install -q -r docs/requirements.txt"):
        assert step in ci, step


def _nav_pages() -> set[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:"):]
    return set(re.findall(r":\s*([\w./-]+\.md)\s*$", nav, re.M))


def test_every_manual_page_is_in_the_navigation_and_every_entry_exists() -> None:
    nav = _nav_pages()
    for page in nav:
        assert (docs.DOCS / page).is_file(), page
    top = {p.name for p in docs.DOCS.glob("*.md")}
    assert top - nav == set(), "add these pages to mkdocs.yml's nav"


def test_the_manuals_pages_carry_no_dated_lab_notes() -> None:
    for page in sorted(_nav_pages()):
        if page.startswith("results/") or page in ("benchmarks.md", "reliability.md"):
            continue  # the results and the benchmarks' figures carry their dates
        text = (docs.DOCS / page).read_text()
        text = re.sub(r"```.*?```", "", text, flags=re.S)      # examples
        text = re.sub(r"<!--.*?-->", "", text, flags=re.S)     # marks name their pages
        text = re.sub(r"\[[^\]]*\]\([^)]*\)", "", text)        # links name their pages
        assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), page
        hexes = [w for w in re.findall(r"\b[0-9a-f]{7,40}\b", text)
                 if re.search(r"[a-f]", w) and re.search(r"\d", w)]
        assert hexes == [], (page, hexes)


def test_the_manual_builds_from_its_own_requirements_the_docs_extras_pins() -> None:
    from xwatch.scenario.load import tomllib

    reqs = [ln.strip() for ln in (docs.DOCS / "requirements.txt").read_text().splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["docs"]
    assert sorted(reqs) == sorted(extra)
    assert all("==" in r for r in reqs) and not any("torch" in r for r in reqs)
    assert "-r docs/requirements.txt" in README


def test_results_keep_snapshots_packed_and_every_folder_has_its_page() -> None:
    from tools import pack_results

    assert pack_results.unpacked() == [], "python -m tools.pack_results"
    owned = [d for p, m in docs.results_pages() for d in docs.page_folders(p, m)]
    assert len(owned) == len(set(owned)), "a folder claimed by two results pages"
    folders = {d for d in (docs.DOCS / "results").iterdir() if d.is_dir()}
    assert folders - set(owned) == set(), "a results folder no page links (front matter data:)"
    raw = {docs.DOCS / "results" / d.name for d in docs.RAW.iterdir() if d.is_dir()}
    assert raw - set(owned) == set(), "raw data under data/results that no page owns"


def test_a_plain_snapshot_in_the_results_is_found_and_packed(tmp_path: Path) -> None:
    import gzip

    from tools import pack_results

    raw = (ROOT / "tests" / "data" / "snapshot_two_gpus.json").read_bytes()
    base, data = tmp_path / "results", tmp_path / "data"
    (base / "run").mkdir(parents=True)
    (base / "run" / "snapshot.json").write_bytes(raw)
    (base / "run" / "table.json").write_text('{"rows": []}')
    (base / "run" / "report.html").write_text("<html></html>")
    assert pack_results.unpacked(base, data) == [base / "run" / "snapshot.json"]
    assert pack_results.main(["--check", str(base), str(data)]) == 1
    assert pack_results.main([str(base), str(data)]) == 0
    assert pack_results.unpacked(base, data) == [] and pack_results.misplaced(base) == []
    assert pack_results.main(["--check", str(base), str(data)]) == 0
    # packed, and moved with the HTML report to the raw tree at the same path
    assert sorted(p.name for p in (base / "run").iterdir()) == ["table.json"]
    assert sorted(p.name for p in (data / "run").iterdir()) == ["report.html",
                                                                "snapshot.json.gz"]
    packed = (data / "run" / "snapshot.json.gz").read_bytes()
    assert gzip.decompress(packed) == raw
    (tmp_path / "snapshot.json").write_bytes(raw)  # packing twice: the same bytes
    assert pack_results.pack(tmp_path / "snapshot.json").read_bytes() == packed


def test_each_results_page_links_every_file_it_kept() -> None:
    for page, meta in docs.results_pages():
        text = page.read_text()
        for folder in docs.page_folders(page, meta):
            for f in folder.rglob("*"):
                if f.is_file():
                    assert f"]({f.relative_to(page.parent).as_posix()})" in text, (page.name, f)
            for f in (docs.RAW / folder.relative_to(page.parent)).rglob("*"):
                if f.is_file():  # its raw data: named in its folder's row
                    row = f"| `data/results/{f.parent.relative_to(docs.RAW).as_posix()}/` |"
                    line = next((ln for ln in text.splitlines() if ln.startswith(row)), "")
                    assert f"`{f.name}`" in line, (page.name, f)


def test_kept_reports_are_published_as_written_not_as_pages() -> None:
    pytest.importorskip("mkdocs")
    from mkdocs.structure.files import File

    from tools.mkdocs_hooks import as_kept, kept_file, published

    assert kept_file("results/h100-2026-11-24-xsched12/llm/report.md")
    assert not kept_file("results/h100-2026-11-24-xsched12.md")
    assert not kept_file("results/README.md") and not kept_file("commands.md")
    report = as_kept(File("results/x/llm/report.md", "docs", "site", True))
    assert not report.is_documentation_page() and report.dest_uri == "results/x/llm/report.md"
    page = as_kept(File("results/x.md", "docs", "site", True))
    assert page.is_documentation_page() and page.dest_uri == "results/x/index.html"
    assert not published(File("assets/javascripts/bundle.a5f9d56c.min.js.map", "t", "site",
                              True))
    assert published(File("assets/javascripts/bundle.a5f9d56c.min.js", "t", "site", True))
