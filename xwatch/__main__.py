"""``python -m xwatch`` = the ``xwatch`` command."""

from xwatch.cli import main

raise SystemExit(main())
