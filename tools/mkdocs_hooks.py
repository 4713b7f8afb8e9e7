"""mkdocs hooks for the manual (``hooks:`` in mkdocs.yml; mkdocs and the standard
library only, so the site builds without xwatch or torch installed).

The files a results page keeps (``docs/results/PAGE/**``: the reports xwatch wrote then,
the logs, the tables) are published beside their page and linked from its "Files"
section. A report xwatch wrote as Markdown is published as it was written, a plain
file, not rendered into a page of the manual: it is xwatch's output, not a page a reader
navigates or searches, and a rendered copy with the manual's navigation weighed about
three times the file (tools/pack_results.py keeps the site within its budget). The raw
data (snapshots, events, HTML reports) is not under docs/ at all: it is in
``data/results/PAGE/``, named by the page. The theme's source maps (``*.map``, 1.3 MB:
for debugging its minified scripts, never fetched by a reader's browser) are left out of
the site."""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files


def kept_file(src_uri: str) -> bool:
    """A file of a results page's folder, not a page of the manual."""
    parts = src_uri.split("/")
    return len(parts) > 2 and parts[0] == "results"


class KeptMarkdown(File):
    """A results folder's Markdown file, copied as it is (a static file, not a page)."""

    def is_documentation_page(self) -> bool:
        return False

    def is_media_file(self) -> bool:
        return True


def as_kept(f: File) -> File:
    """``f`` as a plain copied file when it is a results folder's Markdown file."""
    if not (kept_file(f.src_uri) and f.src_uri.endswith(".md")):
        return f
    out = KeptMarkdown(f.src_uri, f.src_dir, f.dest_dir, f.use_directory_urls,
                       dest_uri=f.src_uri, inclusion=f.inclusion)
    return out


def published(f: File) -> bool:
    """Whether ``f`` goes into the site: all but the theme's source maps."""
    return not f.src_uri.endswith(".map")


def on_files(files: Files, config: Any) -> Files:
    """Every results folder's Markdown file published as it was written; no source map."""
    return Files([as_kept(f) for f in files if published(f)])
