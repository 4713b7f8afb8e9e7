"""The footer: the shown keys (``ui.keys``); under ``NARROW`` columns only the ones a
newcomer needs first, so that ``? Help`` and ``q Quit`` stay on an 80x24 terminal (the
others stay bound, and the help lists them all)."""

from __future__ import annotations

from collections.abc import Iterator

from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

#: columns: below, the footer leaves out the keys of ``SPARE`` (class ``-spare``)
NARROW = 100
#: the actions whose keys give way first: XSched control, the Logs tab (its tab is on
#: screen), pause
SPARE = frozenset({"control", "tab('logs')", "pause"})


class KeysFooter(Footer):
    """Textual's footer, with the spare keys marked so that the narrow layout can hide
    them (``.narrow FooterKey.-spare`` in ``xwatch.tcss``)."""

    def compose(self) -> Iterator[Widget]:  # type: ignore[override]
        for w in super().compose():
            if isinstance(w, FooterKey) and w.action in SPARE:
                w.add_class("-spare")
            yield w
