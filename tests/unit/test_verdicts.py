"""One definition of every participation verdict (``xwatch.core.modes.verdicts``):
every status the code can print is in the table, and the glossary, the dashboard's
help screen and the report's legends print the table's text, not a paraphrase."""

from __future__ import annotations

import re
from pathlib import Path

from xwatch.core.modes import verdicts

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {
    # the statuses each module can return or record, as string literals
    "xwatch/core/xsched/engagement.py": [r'return "([a-z-]+)", warn', r'return \("([a-z-]+)",',
                                         r'EXIT_CRASH = "([a-z-]+)"'],
    "xwatch/core/mps/controller.py": [r'status="([a-z-]+)"', r'verdict="([a-z-]+)"',
                                      r'verdict = "([a-z-]+)"',
                                      r'verdict, detail = "([a-z-]+)"'],
    "xwatch/core/modes/isolation.py": [r'return "([a-z-]+)" if .* else "([a-z-]+)"',
                                       r'return "(unverified)"'],
}


def _printed() -> set[str]:
    out: set[str] = set()
    for path, pats in SOURCES.items():
        text = (ROOT / path).read_text()
        for pat in pats:
            for m in re.finditer(pat, text):
                out |= set(m.groups())
    return out - {"native"}  # engagement's answer for a phase not under XSched


def test_every_status_the_code_prints_has_one_definition() -> None:
    printed = _printed()
    assert {"engaged", "not-scheduled", "no-xqueue", "shim-not-loaded", "in-mps",
            "not-in-mps", "clean", "shim-loaded", "unverified", "crashed-at-exit"} <= printed
    missing = printed - set(verdicts.BY_WORD)
    assert missing == set(), f"define these in their mode's words (Mode.verdicts): {missing}"
    assert len(verdicts.BY_WORD) == len(verdicts.WORDS), "a word defined twice"


def test_took_no_part_is_the_issues_list() -> None:
    assert {w.word for w in verdicts.WORDS if verdicts.took_no_part(w.word)} == {
        "not-scheduled", "no-xqueue", "shim-not-loaded", "app-managed", "not-in-mps"}
    assert not verdicts.took_no_part("engaged") and not verdicts.took_no_part("pending")


def test_the_glossary_and_the_help_screen_print_the_tables_text() -> None:
    from xwatch.ui.screens.help import HELP

    glossary = (ROOT / "docs" / "glossary.md").read_text()
    for w in verdicts.WORDS:
        assert f'<span id="{w.word}"></span>`{w.word}`' in glossary, w.word
        assert " ".join(w.means.split()) in glossary, w.word
        assert f"**`{w.word}`**" in HELP and w.means in HELP, w.word
    assert verdicts.TOOK_NO_PART in glossary and verdicts.TOOK_NO_PART in HELP
    # the old paraphrases are gone
    assert "only when xserver lists XQueues for its pid" not in HELP


def test_the_reports_legend_defines_the_verdicts_it_shows() -> None:
    from xwatch.core.export.render.markdown import render_markdown
    from xwatch.core.export.report import build_report
    from xwatch.core.export.snapshot import load_snapshot

    snap = load_snapshot(ROOT / "data/results/h100-2026-11-24-xsched12/llm")
    md = render_markdown(build_report(snap))
    shown = set(re.findall(r"\| (engaged|not-scheduled|no-xqueue|shim-not-loaded|clean"
                           r"|shim-loaded|in-mps) \|", md))
    assert "engaged" in shown, shown
    for word in shown:
        assert f"'{word}': {verdicts.meaning(word)}" in md, word
    assert verdicts.legend(["engaged", "nonsense"]) == f"'engaged': {verdicts.meaning('engaged')}"
