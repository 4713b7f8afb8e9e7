"""Process helpers for orphan checks."""

from __future__ import annotations

import os
import time
from typing import Any

import psutil


def descendants(pid: int | None = None) -> list[psutil.Process]:
    try:
        return psutil.Process(pid or os.getpid()).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    """Pids still alive (not zombies) after ``timeout``."""
    end = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < end:
        alive = [p for p in alive if _alive(p)]
        if alive:
            time.sleep(0.1)
    return alive


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def read_until(stream: Any, needle: str, timeout: float = 120.0) -> list[str]:
    """The lines of ``stream`` (a process's text stdout) up to and including the first
    that holds ``needle`` (a progress line such as ``high running n=``: the phase
    measures), or to the stream's end or ``timeout`` (checked as lines come): a test
    waits on what the program says, not a sleep a busy machine outlasts."""
    lines: list[str] = []
    end = time.monotonic() + timeout
    for line in stream:
        lines.append(line)
        if needle in line or time.monotonic() > end:
            break
    return lines
