"""``snapshot.schema.json``, generated from the document's structs: the JSON Schema
that every snapshot xwatch writes validates against (a test fails when the
committed file differs from what the structs generate).

Regenerate after changing a struct of ``core.model``::

    python -m xwatch.core.export.document.schema
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import msgspec

from xwatch.core.model.base import SCHEMA_ID
from xwatch.core.model.session import Snapshot

#: where the schema lives (beside the snapshot module that writes and reads it)
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "snapshot.schema.json"


def _clean_docs(node: object) -> object:
    """Every ``description`` as :func:`inspect.cleandoc` makes it: msgspec builds them
    from the structs' docstrings, and whether those arrive dedented depends on the
    interpreter and build (Python 3.13 strips docstring indentation at compile time),
    so the committed file must not depend on it."""
    if isinstance(node, dict):
        return {k: inspect.cleandoc(v) if k == "description" and isinstance(v, str)
                else _clean_docs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_clean_docs(v) for v in node]
    return node


def schema_text() -> str:
    """The schema as committed: msgspec's, with its draft, id and title, and every
    description cleaned the same way whatever dedented it before."""
    body = _clean_docs(msgspec.json.schema(Snapshot))
    assert isinstance(body, dict)
    doc = {"$schema": "https://json-schema.org/draft/2020-12/schema",
           "$id": SCHEMA_ID, "title": f"xwatch snapshot, schema {SCHEMA_ID} (see docs/snapshot.md)",
           **body}
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


def main() -> int:
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    print(SCHEMA_PATH)
    return 0


if __name__ == "__main__":
    sys.exit(main())
