"""Process helpers for orphan checks."""

from __future__ import annotations

import os
import time

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
