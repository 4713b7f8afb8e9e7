"""Entry point: ``python -m xwatch.core.engine.serve`` (started by the supervisor)."""

import sys

from xwatch.core.engine.serve.loadgen import main

sys.exit(main())
