"""The ``/xqueues`` poll's data: one answer, its queues by process, each process's
counts worked out once per distinct answer, and when the next poll is due.

The poll runs ten times a second over XSched's whole queue table (about 150 XQueues
per PyTorch process under the shim). On the H100 three polls in four answered
exactly what the one before had (the same queues, none changed state), and decoding
was 60% of a poll's CPU (``benchmarks/poll_costs.py``): an answer whose bytes equal
the last one's is not decoded again (``AnswerCache``), and the controller's fold
reuses the counts of an answer it has already counted (``Answer.counts``). Every
poll still counts as a poll of its own: the evidence is unchanged.
"""

from __future__ import annotations

import dataclasses
import random
from itertools import groupby
from operator import attrgetter

from xwatch.core import model as M
from xwatch.core.xsched.client import XQueueRow, decode_xqueues

_pid = attrgetter("pid")
_ready = attrgetter("ready")
_suspended = attrgetter("suspended")
_handle = attrgetter("handle")
#: the per-queue table a workload's evidence keeps (the last poll's first queues)
LATEST_KEPT = 64


def by_pid(rows: list[XQueueRow]) -> dict[int, list[XQueueRow]]:
    """``/xqueues`` rows grouped by process (one C-level sort, no lookup per queue)."""
    return {pid: list(grp) for pid, grp in groupby(sorted(rows, key=_pid), key=_pid)}


def queue_row(q: XQueueRow) -> M.QueueRow:
    """One ``/xqueues`` row as the snapshot keeps it."""
    return M.QueueRow(handle=q.handle, level=q.level, threshold=q.threshold,
                      batch_size=q.batch_size, ready=q.ready, suspended=q.suspended,
                      device=q.device, pid=q.pid)


def next_poll_wait(poll_s: float, spent_s: float, rng: random.Random) -> float:
    """Seconds until the next ``/xqueues`` poll: ``poll_s`` on average, each interval
    drawn from 0.5-1.5x ``poll_s``. A fixed interval samples a periodic workload at
    the same point of its cycle every time: on the H100, HIGH at 20 req/s (4 ms of
    GPU work every 50 ms) and a 100 ms poll met HIGH idle in all of 161 polls, and
    its XQueues were called never ready while XSched was scheduling them."""
    return max(0.02, poll_s * rng.uniform(0.5, 1.5) - spent_s)


@dataclasses.dataclass(frozen=True, slots=True)
class Counts:
    """One process's queues in one answer."""

    queues: int
    ready: int  # queues with work ready
    suspended: int  # queues XSched holds suspended
    handles: tuple[int, ...]
    latest: tuple[XQueueRow, ...]  # the first ``LATEST_KEPT``, for the queue table


_NONE = Counts(0, 0, 0, (), ())


class Answer:
    """One ``/xqueues`` answer by process; ``counts`` works each process out once."""

    __slots__ = ("_memo", "rows")

    def __init__(self, rows: dict[int, list[XQueueRow]]) -> None:
        self.rows = rows
        self._memo: dict[int, Counts] = {}

    @classmethod
    def of(cls, rows: list[XQueueRow]) -> Answer:
        return cls(by_pid(rows))

    def counts(self, pid: int) -> Counts:
        c = self._memo.get(pid)
        if c is None:
            mine = self.rows.get(pid)
            c = _NONE if not mine else Counts(
                len(mine), sum(map(_ready, mine)), sum(map(_suspended, mine)),
                tuple(map(_handle, mine)), tuple(mine[:LATEST_KEPT]))
            self._memo[pid] = c
        return c


class AnswerCache:
    """The last answer's bytes and what they decoded to: the same bytes again are the
    same ``Answer`` (owned by the poll thread; the loop only reads answers)."""

    __slots__ = ("_answer", "_raw", "hits", "misses")

    def __init__(self) -> None:
        self._raw: bytes | None = None
        self._answer: Answer | None = None
        self.hits = self.misses = 0

    def answer(self, raw: bytes) -> Answer:
        """``raw`` decoded (a ValueError if it is not an ``/xqueues`` answer)."""
        if raw == self._raw and self._answer is not None:
            self.hits += 1
            return self._answer
        self.misses += 1
        ans = Answer.of(decode_xqueues(raw) if raw else [])
        self._raw, self._answer = raw, ans
        return ans
