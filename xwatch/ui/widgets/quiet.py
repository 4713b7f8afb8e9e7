"""Widgets that redraw only when what they show changed.

Every ``Static.update`` asks Textual for a repaint *and* a layout pass of the screen;
at 2 Hz, with half a dozen panels, that was most of the dashboard's CPU. A
``QuietStatic`` compares a key of its new content with the last one and does nothing
when it is the same; when it changed, it asks for a layout pass only if the number of
lines it needs changed too (``grow_only``: only if it grew; a panel whose line count
flickers, such as the GPU panel's, then costs no layout pass of the whole screen).
"""

from __future__ import annotations

import math
from typing import Any

from textual.widgets import Static


class QuietStatic(Static):
    _quiet_key: Any = None
    _quiet_lines: int = -1
    updates: int = 0  # how often the content really changed (tests, benchmarks)
    grow_only = False  # keep the tallest height seen: shrinking asks for no layout pass

    def set_content(self, renderable: Any, key: Any, text: str | None = None) -> bool:
        """Show ``renderable`` unless ``key`` equals the last one; True if it changed."""
        if key == self._quiet_key:
            return False
        width = max(1, self.size.width or 80)
        lines = -1 if text is None else sum(
            max(1, math.ceil(len(line) / width)) for line in text.split("\n"))
        if self.grow_only and 0 <= lines <= self._quiet_lines:
            layout, lines = False, self._quiet_lines
        else:
            layout = lines != self._quiet_lines or lines < 0
        self._quiet_key, self._quiet_lines = key, lines
        self.updates += 1
        self.update(renderable, layout=layout)
        return True

    def set_display(self, show: bool) -> None:
        if bool(self.display) != show:
            self.display = show
