"""What the manual shows a command printing is what it prints.

Every output block of ``docs/`` (a fence whose info string is ``text``, ``{.text ...}``
or empty) says where it comes from, in an HTML comment on the last non-blank line
before it (docs/development.md, "Outputs in the manual"):

- ``<!-- output: CMD -->``: this test runs CMD on the CPU and compares, numbers
  masked; ``<!-- output slow: CMD -->`` the same in the slow tests (it starts torch
  workers). CMD ``above`` is the nearest ``sh`` block above, run as it is written;
  ``transcript`` runs each ``$ CMD`` line of the block and compares its output.
- ``<!-- output from: results/PAGE.md -->``: quoted from a dated results page; the
  page must have its date, and the block's first line must be in that page or a text
  file of its folders.
- ``<!-- output by test: tests/PATH.py -->``: an example that test asserts (the block's
  first line must be in the test's source).
- ``<!-- not output: WHY -->``: a sketch or a schema, not something a command printed.

A file the commands need is a fenced block preceded by ``<!-- file: NAME -->``, written
into the folder the commands run in (which links the repository's top-level entries).

Comparing: every run of digits (with its decimals and thousands commas), and an
interval's ``open`` side, becomes ``N``,
runs of spaces one space, runs of box lines one, a ``host`` label any host, a progress
line's ``late=N`` and ``err=N`` (printed only when not 0) nothing; a block
line ``...`` stands for any lines, ``...`` inside a line for any text. The commands run
as a plain install would: without the optional amdsmi and nvidia-ml-py modules, no
XSched install named, a fixed terminal width. One run serves every block that shows the same command.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^( *)```(.*)$")
MARK = re.compile(r"^<!-- (output(?: slow)?|output from|output by test|not output|file):"
                  r"\s*(.*?)\s*-->$")
OUTPUT_INFO = ("", "text", "{.text .wrap}", "{.text}")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    info: str
    text: str
    mark: str  # output | output slow | output from | output by test | not output | ""
    arg: str
    above: str  # the nearest sh block above (its text)
    files: tuple[tuple[str, str], ...]  # (name, text) of the page's file blocks before it

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "results" not in p.relative_to(DOCS).parts)


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a page, with the mark before it."""
    lines = path.read_text().splitlines()
    out: list[Block] = []
    sh = ""
    files: list[tuple[str, str]] = []
    generated = False
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("<!-- generated: "):
            generated = True
        elif ln.startswith("<!-- end: "):
            generated = False
        m = FENCE.match(ln)
        if not m:
            i += 1
            continue
        indent, info = len(m.group(1)), m.group(2).strip()
        j = i + 1
        while j < len(lines) and not lines[j].startswith(" " * indent + "```"):
            j += 1
        text = "\n".join(x[indent:] for x in lines[i + 1:j])
        prev = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        mk = MARK.match(prev)
        mark, arg = (mk.group(1), mk.group(2)) if mk else ("", "")
        if mark == "file":
            files.append((arg, text + "\n"))
        elif info in ("sh", "{.sh .wrap}", "bash"):
            sh = text
        elif info in OUTPUT_INFO and not generated:
            out.append(Block(str(path.relative_to(DOCS)), i + 1, info, text, mark, arg, sh,
                             tuple(files)))
        i = j + 1
    return out


ALL = [b for p in _pages() for b in blocks(p)]


def mask(line: str) -> str:
    line = re.sub(r"[─━]+", "─", line)
    line = re.sub(r'host="[^"]*"', 'host="H"', line)  # the machine's name
    line = re.sub(r" (late|err)=\d+", "", line)  # progress fields shown only when not 0
    # a thousands comma only between digits: "[256, 1267]" is two numbers, "1,267" one
    line = re.sub(r"\d+(?:,\d{3})*(?:\.\d+)?|\bopen\b", "N", line)
    return " ".join(line.split())


#: a progress line (``[  3.2s native-1] ...``), printed on a 1 Hz timer: it may land
#: between two lines of the final table, so it may stand between any two shown lines
PROGRESS = r"(?:\[[^\n]*\n)*?"


def _pattern(text: str) -> re.Pattern[str]:
    parts = []
    for ln in text.splitlines():
        m = mask(ln)
        if m == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            if parts:
                parts.append(PROGRESS)
            parts.append(r"[^\n]*".join(re.escape(p) for p in m.split("...")) + r"\n")
    return re.compile(r"(?m)^" + "".join(parts))


def matches(shown: str, printed: str) -> bool:
    """Whether ``shown`` (a block, with its ``...``) is in ``printed``, numbers masked."""
    text = "".join(mask(ln) + "\n" for ln in printed.splitlines())
    return _pattern(shown).search(text) is not None


def first_mismatch(shown: str, printed: str) -> str:
    """The first line of ``shown`` from which on it is no longer in ``printed``."""
    lines = shown.splitlines()
    for k in range(1, len(lines) + 1):
        if not matches("\n".join(lines[:k]), printed):
            return lines[k - 1]
    return ""


@functools.cache
def _workdir(files: tuple[tuple[str, str], ...]) -> Path:
    import atexit
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="xwatch-docs-"))
    atexit.register(shutil.rmtree, d, True)
    for entry in ROOT.iterdir():
        if entry.name != ".git":
            (d / entry.name).symlink_to(entry)
    for name, text in files:
        (d / name).write_text(text)
    return d


def _env(work: Path) -> dict[str, str]:
    site = work / ".plain-install"
    site.mkdir(exist_ok=True)
    # a plain `pip install -e .` has neither optional telemetry module
    (site / "sitecustomize.py").write_text(
        "import sys\nsys.modules.update(amdsmi=None, pynvml=None)\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XSCHED", "XWATCH", "PYTEST", "COV_"))}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=f"{site}{os.pathsep}{ROOT}", COLUMNS="110", LINES="40",
               XDG_STATE_HOME=str(work / ".state"), NO_COLOR="1", TERM="dumb")
    return env


@functools.cache
def run(script: str, files: tuple[tuple[str, str], ...] = ()) -> str:
    """stdout and stderr of ``script`` (bash) in the work folder; cached."""
    work = _workdir(files)
    r = subprocess.run(["bash", "-c", script], cwd=work, env=_env(work), text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    return r.stdout


def printed(b: Block) -> str:
    if b.arg == "transcript":
        out = []
        for ln in b.text.splitlines():
            if ln.startswith("$ "):
                out.append(ln + "\n" + run(ln[2:], b.files))
        return "".join(out)
    return run(b.above if b.arg == "above" else b.arg, b.files)


def _check_runs(b: Block) -> None:
    got = printed(b)
    assert matches(b.text, got), (
        f"docs/{b.id}: the block is not what `{b.arg}` prints (numbers masked), from "
        f"{first_mismatch(b.text, got)!r} on.\n"
        f"--- shown\n{b.text}\n--- printed\n{got}")


def test_every_output_block_says_where_it_comes_from() -> None:
    bad = [f"docs/{b.id}" for b in ALL if not b.mark]
    assert bad == [], ("output blocks with no <!-- output...: --> or <!-- not output: --> "
                       f"mark (docs/development.md, Outputs in the manual): {bad}")
    assert len([b for b in ALL if b.mark.startswith("output")]) >= 15


def _evidence(b: Block) -> str:
    first = next(ln for ln in b.text.splitlines()
                 if re.search(r"[A-Za-z]", ln) and ln.strip() != "...")
    return first.split("...")[0].strip().strip("│").strip()


@pytest.mark.parametrize("b", [b for b in ALL if b.mark == "output from"], ids=lambda b: b.id)
def test_a_quoted_output_names_a_dated_results_page_that_holds_it(b: Block) -> None:
    from tools import docs

    page = DOCS / b.arg.split("#")[0]
    assert page.parent.name == "results" and page.is_file(), f"docs/{b.id}: {b.arg}"
    meta = docs.front_matter(page)
    assert re.fullmatch(r"20\d\d-\d\d-\d\d", str(meta["date"])), b.id
    texts = [page.read_text()]
    for folder in docs.page_folders(page, meta):
        texts += [f.read_text(errors="replace") for f in folder.rglob("*")
                  if f.is_file() and f.suffix in (".log", ".txt", ".md")]
    want = _evidence(b)
    assert any(want in t for t in texts), f"docs/{b.id}: {want!r} is not in {b.arg}'s files"


@pytest.mark.parametrize("b", [b for b in ALL if b.mark == "output by test"],
                         ids=lambda b: b.id)
def test_an_example_a_test_asserts_is_in_that_test(b: Block) -> None:
    src = (ROOT / b.arg).read_text()
    assert _evidence(b) in src, f"docs/{b.id}: {_evidence(b)!r} not asserted in {b.arg}"


@pytest.mark.parametrize("b", [b for b in ALL if b.mark == "output"], ids=lambda b: b.id)
def test_a_shown_output_is_what_the_command_prints(b: Block) -> None:
    _check_runs(b)


def test_the_mask_reads_a_list_of_numbers_as_numbers() -> None:
    """A busy machine's "[256, 1267]" masks as a quiet one's "[19.40, 19.89]" (a comma
    after a number is not a thousands separator unless three digits follow)."""
    assert mask("P50 1170 [256, 1267]") == mask("P50 19.59 [19.40, 19.89]") == "PN N [N, N]"
    assert mask("6,348 [6,278, 6,418]/s") == "N [N, N]/s"


@pytest.mark.slow
@pytest.mark.parametrize("b", [b for b in ALL if b.mark == "output slow"], ids=lambda b: b.id)
def test_a_shown_output_of_a_run_is_what_it_prints(b: Block) -> None:
    _check_runs(b)


def test_masking_and_ellipses_compare_what_they_should() -> None:
    printed = ("telemetry: skipped amdsmi: module missing: the amdsmi backend needs it\n"
               "[   1.2s native-1] high running n=22 p50=104.2ms\n"
               "[   2.2s native-1] high running n=41 p50=119.8ms\n"
               "workload  state    count\nhigh      stopped    1,200\n")
    assert matches("telemetry: skipped amdsmi: module missing: ...\n...\n"
                   "workload state count\nhigh stopped 70", printed)
    assert matches("[ 9.9s native-1] high running n=1 p50=3221ms", printed)
    assert not matches("telemetry: skipped amdsmi: library missing: ...", printed)
    assert not matches("workload state count\nlow stopped 70", printed)
    assert not matches("high running n=22 p50=104.2ms late=3 err=1 x", printed)
    # a progress line between two lines of the table is allowed, any other line not
    table = "workload state count\n[ 9.9s native-1] high running\nhigh stopped 1\n"
    assert matches("workload state count\nhigh stopped 70", table)
    assert not matches("workload state count\nhigh stopped 70", table.replace("[", "x"))


def test_the_own_program_howto_shows_the_shipped_scenario() -> None:
    page = (DOCS / "howto" / "own-program.md").read_text()
    shown = re.search(r"```toml\n(.*?)```", page, re.S)
    assert shown is not None
    shipped = "".join(ln for ln in (ROOT / "examples/own/own.toml").read_text()
                      .splitlines(keepends=True) if not ln.startswith("#"))
    assert shown.group(1) == shipped
