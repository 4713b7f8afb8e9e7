"""A failure repeated N times is one line with its count (the same stderr line from 16
requests, the same reason from every copy of a workload over the GPUs), and a server
that was not ready when its phase ended says so."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from xwatch.core import model as M
from xwatch.core.engine.causes import collapse, collapse_named
from xwatch.core.plans.console import failure_reasons

BOOM = "RuntimeError: Expected all tensors to be on the same device"


def test_collapse_says_each_line_once_with_its_count() -> None:
    lines = ["loading", BOOM, BOOM, "", "x", BOOM + "  ", ""]
    assert collapse(lines) == ["loading", f"{BOOM} (3 times)", "", "x"]
    assert collapse([]) == [] and collapse(["a"]) == ["a"]
    # an independent count: every distinct line once, in first-seen order, counts summed
    assert sum(int(ln.rsplit("(", 1)[1].split()[0]) if ln.endswith("times)") else 1
               for ln in collapse(lines) if ln) == sum(1 for ln in lines if ln.strip())


def test_collapse_named_groups_the_names_that_failed_alike() -> None:
    pairs = [(f"chat@{g}", "failed (exit code 4): " + BOOM) for g in range(4)]
    pairs.insert(2, ("trainer@0", "stalled"))
    assert collapse_named(pairs) == [
        f"4 workloads (chat@0, chat@1, chat@2, chat@3): failed (exit code 4): {BOOM}",
        "trainer@0: stalled"]
    assert collapse_named([("a", "x")]) == ["a: x"]


def _w(name: str, **kw: Any) -> SimpleNamespace:
    base: dict[str, Any] = {"name": name, "exit": None, "state": "running", "count": 0,
                            "errors": 0, "error": None, "pipe_closed_at": None}
    base.update(kw)
    return SimpleNamespace(**base)


def test_the_console_names_copies_that_failed_alike_once() -> None:
    ex = M.Exit(code=4, reason="failed", message=BOOM)
    p = SimpleNamespace(workloads=[_w(f"chat@{g}", exit=ex, state="failed") for g in range(4)]
                        + [_w("trainer@0", count=9, state="stopped",
                              exit=M.Exit(code=0, reason="stopped", ran_to_end=True))])
    assert failure_reasons(p) == [  # type: ignore[arg-type]
        f"4 workloads (chat@0, chat@1, chat@2, chat@3): failed (exit code 4): {BOOM}"]


def test_a_server_not_ready_at_the_phases_end_says_so() -> None:
    """The generator's own word (its error event) instead of 'no event arrived'."""
    end = M.Exit(code=0, reason="stopped", ran_to_end=True)
    said = "not ready after 42 s (GET /health: HTTP 503: 'loading')"
    p = SimpleNamespace(workloads=[
        _w("chat", exit=end, state="stopped", error=said),
        _w("quiet", exit=end, state="stopped"),
        _w("trainer", exit=end, state="stopped", count=50)])
    assert failure_reasons(p) == [  # type: ignore[arg-type]
        f"chat: {said}", "quiet: measured nothing while the others ran (no event arrived)"]


def test_the_servers_stderr_tail_counts_a_repeated_line() -> None:
    """16 requests' identical error: one line with its count in the failure message."""
    from xwatch.core.engine.serve.config import ServeConfig
    from xwatch.core.engine.serve.server import TAIL_LINES, Server

    srv = Server(ServeConfig(name="chat", server=("srv",), rate=1.0, port=9))
    srv._keep("loading")
    for _ in range(16):
        srv._keep(BOOM)
    srv._keep("retrying")
    srv._keep(BOOM)
    assert srv.last_lines() == f"; its last stderr lines:\n  loading\n  {BOOM} (16 times)\n" \
                               f"  retrying\n  {BOOM}"
    for i in range(TAIL_LINES + 3):
        srv._keep(f"line {i}")
    assert len(srv.tail) == TAIL_LINES and srv.tail[-1] == [f"line {TAIL_LINES + 2}", 1]
