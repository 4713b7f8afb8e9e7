"""The byte-identity check of reports: renders the Markdown and HTML report of every
snapshot recorded under ``data/results`` (the results' raw data) and ``tests/``' fixtures
and writes, or checks against, one SHA-256 per report.

A refactor that must not change what a user reads (issue 66: "reports stay byte-identical
on every recorded snapshot") records the hashes before and checks them after::

    python -m tools.report_hashes write /tmp/before.json
    ... change the code ...
    python -m tools.report_hashes check /tmp/before.json

``check`` prints each report that differs and exits 1; a snapshot that no longer loads
is a difference too. A file written before the results' snapshots moved from
``docs/results`` to ``data/results`` (same paths below) is read under the new names
(``MOVED``).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOTS = ("data/results", "tests")
#: old key prefix -> new: where recorded snapshots moved (issue 66 goal 6)
MOVED = {"docs/results/": "data/results/"}
NAMES = ("snapshot.json", "snapshot.json.gz")


def snapshots(root: Path) -> list[Path]:
    """Every recorded snapshot under the roots, sorted (a stable order for the file)."""
    found: list[Path] = []
    for r in ROOTS:
        for name in NAMES:
            found.extend((root / r).rglob(name))
    return sorted(found)


def hashes(root: Path) -> dict[str, str]:
    """``{path#md|html: sha256}`` for every recorded snapshot's two reports."""
    from xwatch.core.export.render.charts import build_charts
    from xwatch.core.export.render.html import render_html
    from xwatch.core.export.render.markdown import render_markdown
    from xwatch.core.export.report import build_report
    from xwatch.core.export.snapshot import load_snapshot

    out: dict[str, str] = {}
    for p in snapshots(root):
        key = str(p.relative_to(root))
        try:
            snap = load_snapshot(p)
            rep = build_report(snap)
            md = render_markdown(rep)
            html = render_html(rep, build_charts(snap))
        except Exception as e:  # a snapshot that fails to load or render is a difference
            out[key + "#error"] = f"{type(e).__name__}: {e}"
            continue
        out[key + "#md"] = hashlib.sha256(md.encode()).hexdigest()
        out[key + "#html"] = hashlib.sha256(html.encode()).hexdigest()
    return out


def renamed(key: str) -> str:
    """A key of an older hashes file under the snapshot's path today."""
    for old, new in MOVED.items():
        if key.startswith(old):
            return new + key[len(old):]
    return key


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("write", "check"):
        print(__doc__)
        return 2
    root = Path(__file__).resolve().parent.parent
    now = hashes(root)
    path = Path(argv[1])
    if argv[0] == "write":
        path.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{len(now)} reports -> {path}")
        return 0
    before: dict[str, str] = {renamed(k): v for k, v in
                              json.loads(path.read_text(encoding="utf-8")).items()}
    bad = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    for k in bad:
        print(f"differs: {k}  before={before.get(k, '-')[:16]}  now={now.get(k, '-')[:16]}")
    print(f"{len(now)} reports, {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
