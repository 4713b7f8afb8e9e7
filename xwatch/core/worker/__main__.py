"""Entry point: ``python -m xwatch.core.worker`` (started by the supervisor)."""

import sys

from xwatch.core.worker.loop import main

sys.exit(main())
