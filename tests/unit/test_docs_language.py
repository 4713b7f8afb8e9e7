"""What the manual says holds together: a percentage is never given with an interval in
other units; every script a page names exists (a results page may name a script since
removed only where it says so, in its Files section); and the pages that teach (the tutorial,
the how-to guides, troubleshooting, getting started, the home page) link each term to the
glossary the first time they use it. Each check is a function that returns what it
found, tested on planted cases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import docs

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# --- a percentage with an interval in other units ----------------------------------------

#: "-55.7% [-284.69, -255.56] ms": a percentage straight followed by an interval whose
#: bounds are not percentages. xwatch's own form, "-270.13 ms (-55.7%) [-284.69,
#: -255.56]", puts the interval after the absolute change's unit and the percentage in
#: parentheses, and is not matched.
MINUS = "\u2212"  # the typographic minus the results pages write
PERCENT_INTERVAL = re.compile(r"(?<![\w(])[-+\u2212]?\d+(?:\.\d+)?%\s*\[([^\]\n]*)\]")


def percent_with_foreign_interval(text: str) -> list[str]:
    """Every ``X% [a, b]`` whose bounds carry no ``%``."""
    return [m.group(0) for m in PERCENT_INTERVAL.finditer(text) if "%" not in m.group(1)]


def manual_pages() -> list[Path]:
    """Every page of the manual and the results (not the reports xwatch wrote in the
    results' folders: those are its output, kept as it was)."""
    pages = [ROOT / "README.md", *DOCS.glob("*.md"), *DOCS.glob("howto/*.md"),
             *DOCS.glob("results/*.md")]
    return sorted(pages)


def test_a_percentage_with_an_interval_in_other_units_is_found() -> None:
    m = MINUS
    assert percent_with_foreign_interval(f"chat P50 {m}55.7% [{m}284.69, {m}255.56] ms") == [
        f"{m}55.7% [{m}284.69, {m}255.56]"]
    assert percent_with_foreign_interval("LOW -7.6% [-10.6, -4.5]") == ["-7.6% [-10.6, -4.5]"]
    assert percent_with_foreign_interval("chat P50 -270.13 ms (-55.7%) [-284.69, -255.56]") == []
    assert percent_with_foreign_interval("LOW -7.6% [-10.6%, -4.5%]") == []
    assert percent_with_foreign_interval("price 5,273/s [3,503, 7,937], -15% against") == []


def test_no_page_gives_a_percentage_with_an_interval_in_other_units() -> None:
    found = {p.relative_to(ROOT).as_posix(): hits for p in manual_pages()
             if (hits := percent_with_foreign_interval(p.read_text()))}
    assert found == {}, "write 'X ms (P%) [a, b]' or 'P% [a%, b%]'"


# --- scripts named in the docs ----------------------------------------------------------

named_scripts = docs.named_scripts


def missing_scripts(page: Path) -> list[str]:
    """Scripts a page names that are not in the tree. A results page may name one since
    removed if its Files section lists it as removed (``python -m tools.docs``)."""
    text = page.read_text()
    gone = sorted(s for s in named_scripts(text) if not docs.script_exists(s))
    if page.parent == DOCS / "results":
        mark = "Scripts this page names that are no longer in the tree:"
        note = text[text.find(mark):] if mark in text else ""
        gone = [s for s in gone if f"`{s}`" not in note]
    return gone


def test_a_script_that_is_not_there_is_found(tmp_path: Path) -> None:
    text = "run `python benchmarks/no_such_bench.py` then `python -m tools.docs` and `.ci/run`"
    assert named_scripts(text) == {"benchmarks/no_such_bench.py", "tools/docs.py", ".ci/run"}
    page = tmp_path / "page.md"
    page.write_text(text)
    assert missing_scripts(page) == ["benchmarks/no_such_bench.py"]
    assert named_scripts("bash benchmarks/device_NAME.sh and benchmarks/device_*.sh") == set()


def test_every_script_the_docs_name_exists() -> None:
    found = {p.relative_to(ROOT).as_posix(): gone for p in manual_pages()
             if (gone := missing_scripts(p))}
    assert found == {}


# --- terms linked to the glossary at their first use ------------------------------------

#: glossary anchor -> how the term is written on a page (case matters: "LOW" is the
#: role, "low" a word)
TERMS = {
    "high-low": r"\bHIGH\b|\bLOW\b",
    "p50-p99": r"\bP50\b|\bP99\b",
    "phase": r"\bphases?\b",
    "paired-runs": r"\bpaired\b",
    "interval": r"\b95% intervals?\b",
    "beyond-noise": r"\bbeyond noise\b|\bwithin noise\b",
    "preflight": r"\bpreflight\b",
    "shim": r"\bshim\b",
    "xqueue": r"\bXQueues?\b",
    "xserver": r"\bxserver\b",
    "mps": r"\bMPS\b",
    "xsched": r"\bXSched\b",
    "sm-share": r"\bSM share",
    "threshold-batch": r"\bthreshold/batch\b|\bthreshold 1\b",
    "cuda-graph": r"\bCUDA graphs?\b",
    "slo": r"\bSLO\b",
    "verdict": r"\bverdicts?\b",
    "noise-floor": r"\bnoise floor\b",
    "took-no-part": r"\btook no part\b",
}

TEACHING = ["index.md", "getting-started.md", "tutorial.md", "troubleshooting.md",
            *sorted(f"howto/{p.name}" for p in DOCS.glob("howto/*.md"))]


def _prose(text: str) -> tuple[str, list[tuple[int, int, str]]]:
    """The text with code, headings, link targets and HTML comments blanked (same
    length), and the spans of link texts with their targets."""
    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    text = re.sub(r"```.*?```|`[^`\n]*`|<!--.*?-->|^#+ [^\n]*$", blank, text, flags=re.S | re.M)
    links = []
    for m in re.finditer(r"\[([^\]]*)\]\(([^)\s]*)\)", text):
        links.append((m.start(1), m.end(1), m.group(2)))
    text = re.sub(r"\]\([^)\s]*\)", blank, text)
    return text, links


def unlinked_first_uses(text: str) -> list[str]:
    """Each term whose first use on the page is not a link to its glossary entry."""
    prose, links = _prose(text)
    out = []
    for anchor, pattern in TERMS.items():
        m = re.search(pattern, prose)
        if m is None:
            continue
        ok = any(a <= m.start() < b and target.endswith(f"glossary.md#{anchor}")
                 for a, b, target in links)
        if not ok:
            line = prose.count("\n", 0, m.start()) + 1
            out.append(f"{m.group(0)!r} (line {line}) -> glossary.md#{anchor}")
    return out


def test_a_term_used_before_the_glossary_link_is_found() -> None:
    planted = "Run it under MPS, then [MPS](glossary.md#mps) again."
    assert unlinked_first_uses(planted) == ["'MPS' (line 1) -> glossary.md#mps"]
    good = "The [HIGH](../glossary.md#high-low) workload; HIGH again; `LOW` in code."
    assert unlinked_first_uses(good) == []
    wrong = "The [P99](glossary.md#interval) of it."
    assert unlinked_first_uses(wrong) == ["'P99' (line 1) -> glossary.md#p50-p99"]


def test_every_glossary_anchor_exists() -> None:
    text = (DOCS / "glossary.md").read_text()
    for anchor in TERMS:
        assert f"{{ #{anchor} }}" in text, anchor


@pytest.mark.parametrize("page", TEACHING)
def test_the_teaching_pages_link_each_term_at_its_first_use(page: str) -> None:
    assert unlinked_first_uses((DOCS / page).read_text()) == []


def test_the_docs_never_point_at_the_shared_folder() -> None:
    for p in manual_pages():
        assert "../shared" not in p.read_text() and "/work/shared" not in p.read_text(), p
