"""Entry point: ``python -m xwatch.core.engine.worker`` (started by the supervisor)."""

import sys

from xwatch.core.engine.worker.loop import main

sys.exit(main())
