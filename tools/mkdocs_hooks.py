"""mkdocs hooks for the manual (``hooks:`` in mkdocs.yml; mkdocs and the standard
library only, so the site builds without xwatch or torch installed).

The files a results page keeps (``docs/results/PAGE/**``: the reports xwatch wrote then,
the logs, the gzipped snapshots) are published beside their page and linked from its
"Files" section, but only the pages a reader navigates are searched: a generated report
under a results folder is left out of the search index."""

from __future__ import annotations

from typing import Any


def kept_file(src_uri: str) -> bool:
    """A page that is one of a results page's kept files, not a page of the manual."""
    parts = src_uri.split("/")
    return len(parts) > 2 and parts[0] == "results"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Leave a results folder's generated reports out of the search index."""
    if kept_file(page.file.src_uri):
        page.meta["search"] = {"exclude": True}
    return markdown
