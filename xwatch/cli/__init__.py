"""Command line: parse arguments, load the scenario, run the app or a headless
command. Errors are printed as a titled panel on stderr with exit status 2.

Textual is imported only for the commands that open the dashboard.

The package owns nothing itself: ``parser`` is the grammar (``build_parser``),
``checks`` reads and checks what a command asks for before anything starts, and
``main`` is the entry point (``xwatch = "xwatch.cli:main"``) and the dispatch.
"""

from __future__ import annotations

from xwatch.cli.main import EXIT_FAILED, EXIT_USAGE, main, print_error
from xwatch.cli.parser import build_parser

__all__ = ["EXIT_FAILED", "EXIT_USAGE", "build_parser", "main", "print_error"]
