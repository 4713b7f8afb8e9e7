"""``python -m xwatch.cli`` = the ``xwatch`` command (as ``python -m xwatch``)."""

from xwatch.cli.main import main

raise SystemExit(main())
