"""The manual's generated parts, from the code that knows them:

- ``docs/commands.md``: every command's arguments, from ``xwatch.cli.parser.build_parser``;
- ``docs/scenarios.md``: every scenario key, from ``xwatch.scenario``'s key tables;
- ``docs/snapshot.md``: every snapshot field, from the JSON Schema the structs generate;
- ``docs/reliability.md``: the whole page, from the fault matrix (``tests/faults/matrix.py``);
- ``docs/benchmarks.md``: the suite, from ``benchmarks/suite.py``;
- ``docs/results/README.md``: the index of results pages, from each page's front matter;
- ``docs/glossary.md``: every participation verdict and "took no part", from
  ``xwatch.core.modes.verdicts`` (the help screen and the report's legends print them);
- each results page's closing "Files" section: every file of its folder (``docs/results/
  PAGE/``, and the folders its front matter's ``data:`` adds), linked, with its size; and
  its raw data (``data/results/PAGE/``), named.

    python -m tools.docs            # rewrite what is stale
    python -m tools.docs --check    # exit 1 naming each stale page (tests/unit/test_docs.py)

A generated block sits between ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``;
everything around it is prose and left alone."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: a results page's raw data (snapshots, events, HTML reports), at the same paths as its
#: folders under docs/results: in the repository, not on the site (tools/pack_results.py)
RAW = ROOT / "data" / "results"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


# --- the commands, from argparse --------------------------------------------------------

def cli_reference() -> str:
    from xwatch.cli.parser import build_parser

    ap = build_parser()
    sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    out: list[str] = []
    for name, p in sub.choices.items():
        out.append(f"### `xwatch {name}`\n")
        out.append(_cell(helps.get(name, "")) + ".\n" if helps.get(name) else "")
        fmt = argparse.HelpFormatter(prog=p.prog, width=88)
        fmt.add_usage(p.usage, p._actions, p._mutually_exclusive_groups)
        out.append("```text\n" + fmt.format_help().strip() + "\n```\n")
        rows = []
        for a in p._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            if a.option_strings:
                flag = ", ".join(a.option_strings)
                if a.nargs != 0:
                    flag += " " + (a.metavar or (a.dest.upper() if not a.choices else
                                                 "{" + ",".join(map(str, a.choices)) + "}"))
            else:
                flag = str(a.metavar or a.dest)
            text = (a.help or "") % {"default": a.default, "prog": p.prog}
            if a.choices and a.option_strings and a.metavar:
                text += f" (one of: {', '.join(map(str, a.choices))})"
            rows.append(f"| `{_cell(flag)}` | {_cell(text)} |")
        if rows:
            out.append("| argument | meaning |\n|---|---|\n" + "\n".join(rows) + "\n")
    return "\n".join(x for x in out if x).strip()


# --- the scenario keys ------------------------------------------------------------------

def scenario_keys() -> str:
    from xwatch.scenario import keys_reference_markdown

    return keys_reference_markdown().strip()


# --- the snapshot's fields, from the schema ---------------------------------------------

def _type(s: dict | bool) -> str:  # type: ignore[type-arg]
    if not isinstance(s, dict):
        return "any"
    if "prefixItems" in s:
        return "[" + ", ".join(_type(x) for x in s["prefixItems"]) + "]"
    if "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "enum" in s:
        return " or ".join(json.dumps(v) for v in s["enum"])
    if "anyOf" in s:
        return " or ".join(_type(x) for x in s["anyOf"])
    t = s.get("type", "any")
    if t == "array":
        return f"list of {_type(s.get('items', {}))}"
    if t == "object" and isinstance(s.get("additionalProperties"), dict):
        return f"map to {_type(s['additionalProperties'])}"
    return str(t)


def snapshot_fields() -> str:
    schema = json.loads((ROOT / "xwatch/core/export/snapshot.schema.json").read_text())
    out = []
    for name, d in schema["$defs"].items():
        out.append(f"#### {name}\n")
        if d.get("description"):
            out.append(_cell(d["description"]) + "\n")
        req = set(d.get("required", ()))
        rows = [f"| `{k}` | {_cell(_type(v))} | {'yes' if k in req else ''} |"
                for k, v in d.get("properties", {}).items()]
        if rows:
            out.append("| field | type | required |\n|---|---|---|\n" + "\n".join(rows) + "\n")
        elif d.get("type") == "array":
            out.append(f"A row: {_cell(_type(d))}.\n")
    return "\n".join(out).strip()


# --- the benchmark suite ----------------------------------------------------------------

def benchmark_suite() -> str:
    from benchmarks.suite import markdown

    return markdown()


# --- the results index, from each page's front matter -----------------------------------

FRONT_KEYS = ("date", "sitting", "machine", "xsched", "measured")


def front_matter(path: Path) -> dict[str, str]:
    """A results page's ``---``-fenced header: one ``key: value`` a line (every key of
    FRONT_KEYS, values plain or in double quotes)."""
    text = path.read_text()
    if not text.startswith("---\n"):
        raise ValueError(f"{path}: no front matter (---, {', '.join(FRONT_KEYS)}, ---)")
    head = text[4:text.index("\n---\n", 4)]
    meta = {}
    for line in head.splitlines():
        key, sep, val = line.partition(": ")
        if not sep:
            raise ValueError(f"{path}: front matter line {line!r} is not 'key: value'")
        val = val.strip()
        meta[key] = val[1:-1] if len(val) >= 2 and val[0] == val[-1] == '"' else val
    missing = set(FRONT_KEYS) - meta.keys()
    if missing:
        raise ValueError(f"{path}: front matter lacks {', '.join(sorted(missing))}")
    return meta


def results_pages(base: Path | None = None) -> list[tuple[Path, dict[str, str]]]:
    """Every dated results page under ``base`` (docs/results), newest first."""
    pages = [(p, front_matter(p)) for p in sorted((base or DOCS / "results").glob("*.md"))
             if p.name not in ("README.md", "index.md", "benchmarks-history.md")]
    return sorted(pages, key=lambda pm: (pm[1]["date"], int(pm[1]["sitting"])), reverse=True)


def results_index() -> str:
    rows = ["| date | machine | XSched | page | what was measured |", "|---|---|---|---|---|"]
    for p, m in results_pages():
        rows.append(f"| {m['date']} | {m['machine']} | {m['xsched']} | [{p.stem}]({p.name}) "
                    f"| {_cell(m['measured'])} |")
    return "\n".join(rows)


# --- each results page's files ----------------------------------------------------------

def page_folders(page: Path, meta: dict[str, str], raw: Path | None = None) -> list[Path]:
    """The folders a results page owns: its namesake (under docs/results, or only its raw
    data under data/results), then those ``data:`` names (comma-separated), each
    required to exist."""
    own = page.with_suffix("")
    extra = [page.parent / x.strip() for x in meta.get("data", "").split(",") if x.strip()]
    for d in extra:
        if not d.is_dir():
            raise ValueError(f"{page}: front matter data: names {d.name}/, not a folder "
                             f"of docs/results")
    return ([own] if own.is_dir() or ((raw or RAW) / own.name).is_dir() else []) + extra


def _size(n: int) -> str:
    """A file's size as a reader weighs a download (10 kB and up are shown)."""
    return f"{n / 1000:.0f} kB" if n < 1_000_000 else f"{n / 1e6:.1f} MB"


def results_files(page: Path) -> str:
    """The "Files" section of one results page: a row per folder, each file linked."""
    folders = page_folders(page, front_matter(page))
    raws = [RAW / d.relative_to(page.parent) for d in folders]
    if not folders:
        return ("## Files { data-search-exclude }\n\nThis sitting kept no files beyond this "
                "page (its figures are quoted above)." + removed_scripts(page))
    out = ["## Files { data-search-exclude }\n",
           "Everything this sitting kept, as it was written: here what a browser reads "
           "(`report.md` is the report xwatch wrote then); the raw data in the repository's "
           "`data/results/`, at the same paths (snapshots gzipped: `xwatch report` and "
           "`xwatch replay` read a `snapshot.json.gz` or its folder as they are; `gzip -dk` "
           "gives the JSON; `report.html` is the report with its charts).\n",
           "| folder | files |", "|---|---|"]

    def cell(f: Path, link: str | None) -> str:
        size = f" ({_size(f.stat().st_size)})" if f.stat().st_size >= 10_000 else ""
        return (f"[{f.name}]({link})" if link else f"`{f.name}`") + size

    for top, base, linked in [*((d, page.parent, True) for d in folders),
                              *((d, RAW, False) for d in raws if d.is_dir())]:
        dirs = sorted({f.parent for f in top.rglob("*") if f.is_file()})
        for d in dirs:
            files = sorted(f for f in d.iterdir() if f.is_file())
            rel = d.relative_to(base).as_posix()
            cells = ", ".join(cell(f, f"{rel}/{f.name}" if linked else None) for f in files)
            out.append(f"| `{rel}/` | {cells} |" if linked else
                       f"| `data/results/{rel}/` | {cells} |")
    return "\n".join(out) + removed_scripts(page)


#: a script a page names: ``benchmarks/x.py``, ``tools/x.py``, ``.ci/run``, or
#: ``python -m tools.docs``
SCRIPT = re.compile(r"(?<![\w/.-])((?:benchmarks|tools|tests|\.ci)/[\w./-]*\.(?:py|sh)|"
                    r"\.ci/run)\b|python3? -m ((?:benchmarks|tools|tests)(?:\.\w+)+)")


def named_scripts(text: str) -> set[str]:
    """The repository paths of the scripts a text names, placeholders (``device_NAME.sh``,
    ``*``) left out."""
    out = set()
    for m in SCRIPT.finditer(text):
        path = m.group(1) or m.group(2).replace(".", "/") + ".py"
        if "*" not in path and not re.search(r"[A-Z]{3,}", path):
            out.add(path)
    return out


def script_exists(path: str) -> bool:
    p = ROOT / path
    return p.exists() or (p.suffix == ".py" and (p.with_suffix("") / "__init__.py").exists())


def removed_scripts(page: Path) -> str:
    """A results page's note on the scripts it names that are no longer in the tree."""
    text = page.read_text()
    text = text[:text.find("<!-- generated: files -->")] if "<!-- generated: files -->" in text \
        else text
    gone = sorted(s for s in named_scripts(text) if not script_exists(s))
    if not gone:
        return ""
    return ("\n\nScripts this page names that are no longer in the tree: "
            + ", ".join(f"`{s}`" for s in gone)
            + ". They were one-off scripts of that sitting, since replaced by the plans of "
            "`benchmarks/gpu/device.sh` (`python -m benchmarks list`); each is in git's history "
            "(`git log --all -- benchmarks/device_NAME.sh`).")


def _with_files_block(text: str) -> str:
    """A results page's text with its Files block markers (appended where missing)."""
    if "<!-- generated: files -->" in text:
        return text
    return text.rstrip("\n") + "\n\n<!-- generated: files -->\n<!-- end: files -->\n"


# --- the verdicts, from xwatch.core.modes.verdicts --------------------------------------

def verdict_table() -> str:
    """Every participation verdict, one definition each (the glossary's table; the help
    screen and the report's legends print the same text)."""
    from xwatch.core.modes import verdicts

    rows = ["| verdict | printed by | says | meaning |", "|---|---|---|---|"]
    for w in verdicts.WORDS:
        rows.append(f'| <span id="{w.word}"></span>`{w.word}` | {", ".join(w.sources)} | '
                    f"{w.kind} | {_cell(w.means)} |")
    return "\n".join(rows)


def took_no_part() -> str:
    from xwatch.core.modes import verdicts

    return verdicts.TOOK_NO_PART


# --- blocks and pages -------------------------------------------------------------------

BLOCKS: dict[str, tuple[str, Callable[[], str]]] = {
    "cli": ("commands.md", cli_reference),
    "scenario-keys": ("scenarios.md", scenario_keys),
    "snapshot-fields": ("snapshot.md", snapshot_fields),
    "benchmark-suite": ("benchmarks.md", benchmark_suite),
    "results-index": ("results/README.md", results_index),
    "verdicts": ("glossary.md", verdict_table),
    "took-no-part": ("glossary.md", took_no_part),
}


def _reliability() -> str:
    from tests.faults.matrix import render

    return render()


PAGES: dict[str, Callable[[], str]] = {"reliability.md": _reliability}


def fill(text: str, name: str, body: str, page: str) -> str:
    start, end = f"<!-- generated: {name} -->", f"<!-- end: {name} -->"
    pat = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pat.search(text):
        raise ValueError(f"docs/{page}: no {start} ... {end} block")
    return pat.sub(lambda _: f"{start}\n{body}\n{end}", text, count=1)


def expected() -> dict[Path, str]:
    """Every generated page as it should read."""
    want: dict[Path, str] = {}
    for name, (page, make) in BLOCKS.items():
        path = DOCS / page
        text = want.get(path) or path.read_text()
        want[path] = fill(text, name, make(), page)
    for page, make in PAGES.items():
        want[DOCS / page] = make()
    for path, _ in results_pages():
        text = _with_files_block(want.get(path) or path.read_text())
        want[path] = fill(text, "files", results_files(path), str(path.relative_to(DOCS)))
    return want


def stale() -> list[Path]:
    return [p for p, text in expected().items() if not p.exists() or p.read_text() != text]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.docs", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only say what is stale (exit 1)")
    args = ap.parse_args(argv)
    want = expected()
    bad = [p for p, text in want.items() if not p.exists() or p.read_text() != text]
    for p in bad:
        rel = p.relative_to(ROOT)
        if args.check:
            print(f"stale: {rel} (python -m tools.docs rewrites it)", file=sys.stderr)
        else:
            p.write_text(want[p])
            print(f"rewrote {rel}")
    return 1 if args.check and bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
