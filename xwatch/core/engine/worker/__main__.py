"""Entry point: ``python -m xwatch.core.engine.worker`` (started by the supervisor)."""

import time

#: the interpreter is up: the first stage of the worker's start (``docs/protocol.md``)
STARTED = time.monotonic()

import sys  # noqa: E402

from xwatch.core.engine.worker.loop import main  # noqa: E402

sys.exit(main(STARTED))
