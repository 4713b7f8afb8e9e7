"""``procs``, the one module that walks the process tree: ``is_below`` up a made-up
``/proc`` (a parent loop ends the walk), ``tree`` and ``signal_each`` on real processes
(a child and its own child, both killed)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from xwatch.core.procs import is_below, pid_alive, signal_each, tree


def _stat(root: Path, pid: int, parent: int) -> None:
    (root / str(pid)).mkdir()
    (root / str(pid) / "stat").write_text(f"{pid} (python3 (x)) S {parent} 0 0\n")


def test_is_below_walks_up_to_init_and_stops_at_a_loop(tmp_path: Path) -> None:
    for pid, parent in {10: 1, 11: 10, 12: 11, 20: 21, 21: 20, 30: 99}.items():
        _stat(tmp_path, pid, parent)
    p = str(tmp_path)
    assert is_below(12, 10, p) and is_below(11, 10, p) and is_below(12, 11, p)
    assert not is_below(10, 12, p) and not is_below(10, 10, p)
    assert not is_below(20, 10, p)  # 20 <-> 21: the loop ends the walk
    assert not is_below(30, 10, p) and not is_below(404, 10, p)  # 99 unreadable; gone


def test_tree_finds_a_grandchild_and_signal_each_kills_them_all() -> None:
    code = ("import subprocess, sys, time; "
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            "print(c.pid, flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        grandchild = int(child.stdout.readline())
        pids = tree(child.pid)
        assert pids[0] == child.pid and grandchild in pids and os.getpid() not in pids
        assert is_below(grandchild, child.pid) and is_below(grandchild, os.getpid())
        signal_each(pids)
        assert child.wait(10) == -9
        end = time.monotonic() + 10
        while pid_alive(grandchild, zombie=False) and time.monotonic() < end:
            time.sleep(0.02)
        assert not pid_alive(grandchild, zombie=False)
        signal_each([child.pid, grandchild])  # gone (or a zombie): passed over
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert tree(child.pid) == [child.pid]  # gone: just itself
