"""Results kept light: every xwatch snapshot under ``docs/results`` is stored gzipped.

A snapshot compresses about tenfold and xwatch reads ``snapshot.json.gz`` wherever it
reads ``snapshot.json`` (a folder holding either, or the file named), so a sitting's
snapshots are packed before they are committed; the logs, reports and tables stay
plain text, readable in a browser. Gzip is written without a timestamp, so packing the
same file twice gives the same bytes.

    python -m tools.pack_results            # pack what is not packed yet
    python -m tools.pack_results --check    # exit 1 naming each unpacked snapshot
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
MARK = b"xwatch.snapshot/"


def is_snapshot(path: Path) -> bool:
    """A plain ``.json`` file whose head names the xwatch snapshot schema."""
    with path.open("rb") as f:
        head = f.read(200)
    return b'"schema"' in head and MARK in head


def unpacked(base: Path = RESULTS) -> list[Path]:
    """Every snapshot under ``base`` still stored as plain JSON."""
    return sorted(p for p in base.rglob("*.json") if is_snapshot(p))


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


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.pack_results",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only name what is unpacked (exit 1)")
    ap.add_argument("base", nargs="?", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    todo = unpacked(args.base)
    for p in todo:
        rel = p.relative_to(ROOT) if p.is_relative_to(ROOT) else p
        if args.check:
            print(f"unpacked: {rel} (python -m tools.pack_results packs it)", file=sys.stderr)
        else:
            before = p.stat().st_size
            out = pack(p)
            print(f"{rel}: {before} -> {out.stat().st_size} bytes")
    return 1 if args.check and todo else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
