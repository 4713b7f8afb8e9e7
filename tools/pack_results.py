"""Results kept light: what a sitting keeps is split between what a reader opens on the
site and the raw data, and each part has a budget that CI checks.

- ``docs/results/PAGE.md`` and ``docs/results/PAGE/``: the page, and the files a browser
  reads (logs, tables, the reports xwatch wrote as Markdown, screenshots). mkdocs
  publishes all of it.
- ``data/results/PAGE/``: the raw data, at the same paths below the sitting's folder:
  every gzipped file (snapshots, the raw events, kernel traces) and the HTML reports (each
  the ``report.md`` beside it with its charts; ``xwatch report DIR --html`` redraws one from
  the snapshot). Nothing there is published; a page's "Files" section names it.

Every xwatch snapshot is stored gzipped (about tenfold smaller; xwatch reads
``snapshot.json.gz`` wherever it reads ``snapshot.json``), written without a timestamp
so that packing the same file twice gives the same bytes.

    python -m tools.pack_results            # pack plain snapshots, move raw files to data/
    python -m tools.pack_results --check    # exit 1 naming each unpacked or misplaced
                                            # file and each budget exceeded
    python -m tools.pack_results --site DIR # exit 1 when a built site is over its budget

Sizes are counted as a disk holds them (``du``): each file rounded up to 4 KiB.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
RAW = ROOT / "data" / "results"
MARK = b"xwatch.snapshot/"

MB = 1_000_000
#: docs/results as a whole (pages and what they publish)
BUDGET_RESULTS = 15 * MB
#: one sitting under docs/results: its page and its folders there
BUDGET_SITTING = 2 * MB
#: one sitting's raw data under data/results
BUDGET_RAW = 3 * MB
#: the built manual (``mkdocs build``), checked by .ci/run after the build
BUDGET_SITE = 20 * MB
BLOCK = 4096


def is_snapshot(path: Path) -> bool:
    """A plain ``.json`` file whose head names the xwatch snapshot schema."""
    with path.open("rb") as f:
        head = f.read(200)
    return b'"schema"' in head and MARK in head


def is_raw(path: Path) -> bool:
    """A file that belongs under data/results: gzipped, or an HTML report."""
    return path.name.endswith(".gz") or path.name == "report.html"


def unpacked(*bases: Path) -> list[Path]:
    """Every snapshot under ``bases`` (default: both trees) still stored as plain JSON."""
    return sorted(p for base in (bases or (RESULTS, RAW)) if base.is_dir()
                  for p in base.rglob("*.json") if is_snapshot(p))


def misplaced(base: Path = RESULTS) -> list[Path]:
    """Raw files still under docs/results."""
    return sorted(p for p in base.rglob("*") if p.is_file() and is_raw(p))


def pack(path: Path) -> Path:
    """``X.json`` -> ``X.json.gz`` (atomic: a temporary file, then a rename), the plain
    file removed; the decompressed bytes are checked to be the original's first."""
    data = path.read_bytes()
    packed = gzip.compress(data, compresslevel=9, mtime=0)
    if gzip.decompress(packed) != data:  # pragma: no cover - zlib does not lie
        raise RuntimeError(f"{path}: gzip round trip differs")
    out = path.with_name(path.name + ".gz")
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(packed)
    os.replace(tmp, out)
    path.unlink()
    return out


def move(path: Path, base: Path = RESULTS, raw: Path = RAW) -> Path:
    """``base/X`` -> ``raw/X`` (a file already there with other bytes is an error)."""
    out = raw / path.relative_to(base)
    if out.exists() and out.read_bytes() != path.read_bytes():
        raise FileExistsError(f"{out} exists with other bytes than {path}")
    out.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, out)
    d = path.parent
    while d != base and not any(d.iterdir()):  # an emptied folder goes too
        d.rmdir()
        d = d.parent
    return out


def weight(paths: list[Path]) -> int:
    """Bytes on disk: each file's size rounded up to a 4 KiB block."""
    return sum(-(-p.stat().st_size // BLOCK) * BLOCK for p in paths if p.is_file())


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


def sittings(base: Path = RESULTS, raw: Path = RAW) -> dict[str, tuple[int, int]]:
    """Each results page's weight: (its page and folders under docs/results, its raw
    data under data/results). The folders are the page's own and those its front
    matter's ``data:`` names (tools/docs.py)."""
    from tools import docs

    out = {}
    for page, meta in docs.results_pages(base):
        folders = docs.page_folders(page, meta, raw)
        light = weight([page, *(f for d in folders for f in files_under(d))])
        heavy = weight([f for d in folders for f in files_under(raw / d.relative_to(base))])
        out[page.stem] = (light, heavy)
    return out


def over_budget(base: Path = RESULTS, raw: Path = RAW) -> list[str]:
    """Every budget exceeded, as a line that says by how much."""
    out = []
    total = weight(files_under(base))
    if total > BUDGET_RESULTS:
        out.append(f"docs/results: {total / MB:.1f} MB, budget {BUDGET_RESULTS / MB:.1f} MB")
    for name, (light, heavy) in sittings(base, raw).items():
        if light > BUDGET_SITTING:
            out.append(f"docs/results/{name}.md and its folders: {light / MB:.2f} MB, budget "
                       f"{BUDGET_SITTING / MB:.2f} MB (keep less, or move raw files to "
                       f"data/results)")
        if heavy > BUDGET_RAW:
            out.append(f"data/results/{name}: {heavy / MB:.2f} MB, budget "
                       f"{BUDGET_RAW / MB:.2f} MB (keep fewer snapshots)")
    return out


def site_over_budget(site: Path) -> list[str]:
    total = weight(files_under(site))
    return [f"{site}: {total / MB:.1f} MB, budget {BUDGET_SITE / MB:.1f} MB"] \
        if total > BUDGET_SITE else []


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.pack_results",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="only name what is unpacked, misplaced or over budget (exit 1)")
    ap.add_argument("--site", type=Path, help="check a built site's size against its budget")
    ap.add_argument("base", nargs="?", type=Path, default=RESULTS)
    ap.add_argument("raw", nargs="?", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.site:
        bad = site_over_budget(args.site)
        for line in bad:
            print(f"over budget: {line}", file=sys.stderr)
        print(f"site: {weight(files_under(args.site)) / MB:.1f} MB "
              f"(budget {BUDGET_SITE / MB:.0f} MB)")
        return 1 if bad else 0
    base = args.base
    raw = args.raw or (RAW if base == RESULTS else base.parent / "raw")

    def rel(p: Path) -> Path:
        return p.relative_to(ROOT) if p.is_relative_to(ROOT) else p

    todo = unpacked(base, raw)
    astray = misplaced(base)
    if args.check:
        for p in todo:
            print(f"unpacked: {rel(p)} (python -m tools.pack_results packs it)",
                  file=sys.stderr)
        for p in astray:
            print(f"raw file under docs/results: {rel(p)} (python -m tools.pack_results "
                  f"moves it to {rel(raw)})", file=sys.stderr)
        bad = over_budget(base, raw) if base == RESULTS else []
        for line in bad:
            print(f"over budget: {line}", file=sys.stderr)
        return 1 if todo or astray or bad else 0
    for p in todo:
        before = p.stat().st_size
        out = pack(p)
        print(f"{rel(p)}: {before} -> {out.stat().st_size} bytes")
    for p in misplaced(base):
        print(f"{rel(p)} -> {rel(move(p, base, raw))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
