"""Panels drawn through Textual's line API from lines cut into styled segments beforehand.

A ``Static`` turns its content into a ``Content``, wraps it and re-styles every span on
every repaint: 4 ms for the four-line scheduler lane on the development machine, whose
spans change every poll. A ``LinePanel`` is handed its lines as rich ``Text`` (one per
line) or as ``Segment`` lists, keeps them as ``Strip``s and hands out one per
``render_line``: a repaint is a crop and a background fill per line, cached per width.

Lines are not wrapped; a line wider than the panel is cropped. Like ``QuietStatic``, a
panel does nothing when the key of its new content equals the last one, and asks for a
layout pass only when its number of lines changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

_UNSET = object()


class LinePanel(Widget):
    DEFAULT_CSS = "LinePanel { height: auto; }"

    #: how often the content really changed (tests, benchmarks)
    updates: int = 0

    def __init__(self, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._strips: list[Strip] = []
        self._key: Any = _UNSET
        self._cache: dict[int, Strip] = {}
        self._cache_for: tuple[int, Style] | None = None
        self.plain = ""  # what the panel says, for tests and screen readers

    def set_lines(self, lines: Sequence[Text | Sequence[Segment]], key: Any) -> bool:
        """Show ``lines`` unless ``key`` equals the last one; True if it changed."""
        if key == self._key:
            return False
        console = self.app.console
        strips: list[Strip] = []
        plain: list[str] = []
        for ln in lines:
            if isinstance(ln, Text):
                segs = list(ln.render(console, end=""))
                plain.append(ln.plain)
            else:
                segs = list(ln)
                plain.append("".join(s.text for s in segs))
            strips.append(Strip(segs))
        resized = len(strips) != len(self._strips)
        self._key, self._strips, self.plain = key, strips, "\n".join(plain)
        self._cache.clear()
        self.updates += 1
        self.refresh(layout=resized)  # height: auto follows the number of lines
        return True

    def set_display(self, show: bool) -> None:
        if bool(self.display) != show:
            self.display = show

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._strips)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        style = self.rich_style
        if self._cache_for != (width, style):
            self._cache.clear()
            self._cache_for = (width, style)
        strip = self._cache.get(y)
        if strip is None:
            src = self._strips[y] if 0 <= y < len(self._strips) else Strip([])
            strip = src.crop_extend(0, width, style).apply_style(style)
            self._cache[y] = strip
        return strip
