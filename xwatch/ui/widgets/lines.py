"""Panels drawn through Textual's line API from lines cut into styled segments beforehand.

A ``Static`` turns its content into a ``Content``, wraps it and re-styles every span on
every repaint: 4 ms for the four-line scheduler lane on the development machine, whose
spans change every poll. A ``LinePanel`` is handed its lines as rich ``Text`` (one per
line) or as ``Segment`` lists, keeps them as ``Strip``s and hands out one per
``render_line``: a repaint is a crop and a background fill per line, cached per width.

Lines are not wrapped; a line wider than the panel is cropped. Like ``QuietStatic``, a
panel does nothing when the key of its new content equals the last one, and asks for a
layout pass only when its number of lines changed. ``ScrollLinePanel`` is the same on
a ``ScrollView``, for content that may be taller than its room (the workload table
with eight GPUs expanded).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

_UNSET = object()


class _Lines:
    """What both panels share: lines kept as strips, served cropped to the width.

    The widget's style (``rich_style`` walks every ancestor's styles: about 0.1 ms) is
    looked up once per repaint in ``render_lines``, not once per line."""

    updates: int  # how often the content really changed (tests, benchmarks)
    _strips: list[Strip]
    _key: Any
    _cache: dict[int, Strip]
    _cache_for: tuple[int, Style] | None
    plain: str  # what the panel says, for tests and screen readers

    def _init_lines(self) -> None:
        self.updates = 0
        self._strips = []
        self._key = _UNSET
        self._cache = {}
        self._cache_for = None
        self.plain = ""

    def set_lines(self, lines: Sequence[Text | Sequence[Segment]], key: Any) -> bool:
        """Show ``lines`` unless ``key`` equals the last one; True if it changed."""
        if key == self._key:
            return False
        console = self.app.console  # type: ignore[attr-defined]
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
        self._lines_changed(resized)
        return True

    def _lines_changed(self, resized: bool) -> None:
        """Repaint; a layout pass only when the number of lines changed (height:
        auto follows it)."""
        self.refresh(layout=resized)  # type: ignore[attr-defined]

    _style_now: Style | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        self._style_now = self.rich_style  # type: ignore[attr-defined]
        try:
            return super().render_lines(crop)  # type: ignore[misc, no-any-return]
        finally:
            self._style_now = None

    def _style(self) -> Style:
        return self._style_now if self._style_now is not None \
            else self.rich_style  # type: ignore[attr-defined]

    def _line(self, y: int, width: int, style: Style) -> Strip:
        """Line ``y`` of the content, cropped or padded to ``width``."""
        if self._cache_for != (width, style):
            self._cache.clear()
            self._cache_for = (width, style)
        strip = self._cache.get(y)
        if strip is None:
            src = self._strips[y] if 0 <= y < len(self._strips) else Strip([])
            strip = src.crop_extend(0, width, style).apply_style(style)
            self._cache[y] = strip
        return strip


class LinePanel(_Lines, Widget):
    DEFAULT_CSS = "LinePanel { height: auto; }"

    def __init__(self, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._init_lines()

    def set_display(self, show: bool) -> None:
        if bool(self.display) != show:
            self.display = show

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._strips)

    def render_line(self, y: int) -> Strip:
        return self._line(y, self.size.width, self._style())


class ScrollLinePanel(_Lines, ScrollView):
    """A ``LinePanel`` that scrolls (mouse wheel, or ``scroll_to_line``) when its lines
    do not fit its height (``max-height``); the scroll position stays where it is
    when the lines change. It never takes the keyboard focus: the app's keys stay
    the app's."""

    DEFAULT_CSS = """
    ScrollLinePanel { height: auto; overflow-x: hidden; overflow-y: auto;
                      scrollbar-size-vertical: 1; }
    """
    can_focus = False

    def __init__(self, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._init_lines()

    def _lines_changed(self, resized: bool) -> None:
        self.virtual_size = Size(self.size.width, len(self._strips))
        super()._lines_changed(resized)

    def scroll_to_line(self, y: int, rows: int = 1) -> None:
        """Bring lines ``y`` .. ``y + rows - 1`` into view (the first where they do
        not all fit)."""
        top, h = int(self.scroll_offset.y), self.scrollable_content_region.height
        if h <= 0:
            return
        if y < top:
            self.scroll_to(y=y, animate=False)
        elif y + rows > top + h:
            self.scroll_to(y=y if rows > h else y + rows - h, animate=False)

    def render_line(self, y: int) -> Strip:
        return self._line(int(self.scroll_offset.y) + y, self.scrollable_content_region.width,
                          self._style())
