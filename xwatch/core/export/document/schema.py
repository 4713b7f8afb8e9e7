"""``snapshot.schema.json``, generated from the document's structs: the JSON Schema
that every snapshot xwatch writes validates against (a test fails when the
committed file differs from what the structs generate).

Regenerate after changing a struct of ``core.model``::

    python -m xwatch.core.export.document.schema
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec

from xwatch.core.model.base import SCHEMA_ID
from xwatch.core.model.session import Snapshot

#: where the schema lives (beside the snapshot module that writes and reads it)
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "snapshot.schema.json"


def schema_text() -> str:
    """The schema as committed: msgspec's, with its draft, id and title."""
    body = msgspec.json.schema(Snapshot)
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
