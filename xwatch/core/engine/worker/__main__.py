"""Entry point: ``python -m xwatch.core.engine.worker`` (started by the supervisor).

After ``main`` returns (its ``bye`` sent and every trace written) the process ends with
``os._exit``, as a forked worker does (``zygote``): the interpreter's finalisation
(torch's modules and CUDA context torn down, a scheduler shim's static destructors) took
about 3 s on the H100 and measured nothing; the driver frees the context as the
process ends either way."""

import time

#: the interpreter is up: the first stage of the worker's start (``docs/protocol.md``)
STARTED = time.monotonic()

import contextlib  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from xwatch.core.engine.worker.loop import main  # noqa: E402

try:
    rc = main(STARTED)
finally:
    for _stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            _stream.flush()
from xwatch.core.engine.worker.support import before_exit  # noqa: E402

before_exit()  # its mode's scheduler (XSched's global one) is told first
os._exit(rc)
