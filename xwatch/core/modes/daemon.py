"""What the mode backends share about the daemons they own (xserver, the MPS control
daemon): reading a daemon's output into the session log, and stopping its process
group with escalating signals."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import Callable
from typing import IO


async def read_lines(stream: IO[bytes], on_line: Callable[[str], None]) -> None:
    """Hand every line of a daemon's output to ``on_line`` until it closes (the
    blocking reads run on a thread)."""
    while True:
        raw = await asyncio.to_thread(stream.readline)
        if not raw:
            return
        on_line(raw.decode("utf-8", "replace").rstrip())


async def stop_group(proc: subprocess.Popen[bytes],
                     steps: tuple[tuple[int, float], ...]) -> None:
    """Signal the daemon's process group with each (signal, seconds to wait) in turn
    until it has exited."""
    for sig, wait in steps:
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        end = time.monotonic() + wait
        while proc.poll() is None and time.monotonic() < end:
            await asyncio.sleep(0.05)
