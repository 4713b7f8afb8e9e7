"""The report model (sections of paragraphs, tables, code and charts) that the
Markdown and HTML renderers share, and the number formats both use."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


def num(v: float | None, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:,.{digits}f}"


def change(a: float | None, b: float | None, digits: int = 2) -> str:
    """'b - a (relative %)' with signs, '-' where undefined."""
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return "-"
    d = b - a
    rel = f" ({d / a * 100:+.1f}%)" if a != 0 else ""
    return f"{d:+,.{digits}f}{rel}"


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[tuple[str, Table]] = field(default_factory=list)
    code: str | None = None
    charts: list[str] = field(default_factory=list)  # SVG, HTML only


@dataclass
class Report:
    title: str
    sections: list[Section]
