"""The ``/xqueues`` poll's data: one answer, its queues by process, each process's
counts worked out once per distinct answer, and when the next poll is due.

The poll runs ten times a second over XSched's whole queue table (about 150 XQueues
per PyTorch process under the shim). On the H100 three polls in four answered
exactly what the one before had (the same queues, none changed state), and decoding
was 60% of a poll's CPU (``benchmarks/measure/poll_costs.py``): an answer whose bytes equal
the last one's is not decoded again (``AnswerCache``), and the evidence's fold
reuses the counts of an answer it has already counted (``Answer.counts``). Every
poll still counts as a poll of its own: the evidence is unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from itertools import groupby
from operator import attrgetter
from typing import Any

from msgspec.structs import replace

from xwatch.core import model as M
from xwatch.core.engine.live.phase import Phase
from xwatch.core.modes.neighbours import Strangers
from xwatch.core.procs import descendants
from xwatch.core.xsched.client import XQueueRow, XserverClient, decode_xqueues

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


    def counts_of(self, pids: tuple[int, ...]) -> Counts:
        """The queues of several processes together (a server and the workers it
        spawned); one process: ``counts``."""
        if len(pids) == 1:
            return self.counts(pids[0])
        parts = [c for c in map(self.counts, pids) if c.queues]
        if len(parts) <= 1:
            return parts[0] if parts else _NONE
        return Counts(sum(c.queues for c in parts), sum(c.ready for c in parts),
                      sum(c.suspended for c in parts),
                      tuple(h for c in parts for h in c.handles),
                      tuple(r for c in parts for r in c.latest)[:LATEST_KEPT])


class ProcessTrees:
    """The processes whose queues are a workload's: its own pid, and for a server
    workload every process below it (the server and the workers it spawns), matched by
    the process tree (``procs.descendants``), never by name; re-read at most every ``every_s``."""

    def __init__(self, every_s: float = 1.0) -> None:
        self.every_s = every_s
        self._cache: dict[int, tuple[float, tuple[int, ...]]] = {}

    def of(self, run: Any) -> tuple[int, ...]:
        pid = run.pid
        if pid is None:
            return ()
        if getattr(run.spec, "server", None) is None:
            return (pid,)
        now = time.monotonic()
        hit = self._cache.get(pid)
        if hit is None or now - hit[0] >= self.every_s:
            below = descendants(pid)
            # gone, or unreadable: keep what was last seen
            kids = tuple(below) if below is not None else hit[1][1:] if hit else ()
            hit = self._cache[pid] = (now, (pid, *kids))
        return hit[1]


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


class Pace:
    """The polls' mean interval now: ``fast_s`` (``[xsched] poll_ms``) while a running
    workload's verdict is pending, for the measurement's first ``FAST_FIRST_S``,
    ``CHANGE_FAST_S`` after a live change and while polls fail; ``settled_s``
    (``settled_poll_ms``) otherwise. No verdict waits on the slower pace; the lane and the
    tail attribution sample less often (``benchmarks/stats/attribution_pace.py``: at 5 Hz, 90%
    of slow requests keep the category 10 Hz gave them). ``now_s`` is set on the loop and
    read by the poll thread (one attribute: atomic)."""

    FAST_FIRST_S = 20.0
    CHANGE_FAST_S = 10.0

    __slots__ = ("_fast_until", "failing", "fast_s", "now_s", "settled_s")

    def __init__(self, fast_s: float, settled_s: float) -> None:
        self.fast_s = fast_s
        self.settled_s = max(fast_s, settled_s)  # never faster than the fast pace
        self.reset()

    def reset(self) -> None:
        """A new phase: fast."""
        self.now_s = self.fast_s
        self.failing = False  # the last poll failed: fast until one answers
        self._fast_until = 0.0  # monotonic: a live change keeps the fast pace until then

    def changed(self, now: float) -> None:
        """A live change: the user watches the lane answer it, at the fast pace."""
        self._fast_until = now + self.CHANGE_FAST_S
        self.now_s = self.fast_s

    def judge(self, settled: bool, measuring_since: float | None, now: float) -> None:
        """``settled``: every running workload has a verdict."""
        fast = (not settled or self.failing or now < self._fast_until
                or measuring_since is None or now - measuring_since < self.FAST_FIRST_S)
        self.now_s = self.fast_s if fast else self.settled_s


@dataclasses.dataclass(slots=True)
class Poll:
    """One ``/xqueues`` poll, as the poll thread hands it to the loop."""

    t: float  # monotonic, when the poll started
    rc: int | None  # xserver's exit status if it had exited by then
    res: Answer | Exception  # the queues by process, or what failed
    runs: list[tuple[str, tuple[int, ...], str, int]]  # (name, pids, state, requests) then


@dataclasses.dataclass(slots=True)
class Fails:
    count: int = 0  # consecutive failed polls
    first: float = 0.0  # when the first of them started


def poll_thread(client: XserverClient, proc: subprocess.Popen[bytes] | None,
                runs_now: Mapping[str, Any], pace: Pace, cache: AnswerCache,
                inbox: deque[Poll], wake: Callable[[], None], stop: threading.Event,
                handoff_s: float, hush: threading.Lock | None = None) -> None:
    """The poll thread: ``/xqueues`` at the pace's interval into ``inbox``, with who ran
    then; ``wake`` the loop every ``handoff_s``, and at once on a failure or an exited
    xserver (``proc``: ours; None for a joined one), until ``stop``. Each request holds
    ``hush`` (the preflight's probes leave while it is taken: ``quiet``)."""
    rng, trees = random.Random(), ProcessTrees()  # a server's queues: its whole tree
    handed = 0.0
    while not stop.is_set():
        res: Answer | Exception
        with hush or contextlib.nullcontext():
            t0 = time.monotonic()
            rc = proc.poll() if proc is not None else None
            try:
                res = cache.answer(client.xqueues_raw())
            except Exception as e:
                res = e
        # who ran at poll time (a dict copy is one step under the GIL)
        runs = [(n, trees.of(r), r.state, r.rec.count) for n, r in list(runs_now.items())]
        inbox.append(Poll(t0, rc, res, runs))
        if rc is not None or isinstance(res, Exception) or t0 - handed >= handoff_s:
            handed = t0
            wake()
        if rc is not None:
            return
        stop.wait(next_poll_wait(pace.now_s, time.monotonic() - t0, rng))


def strangers(box: Strangers, answer: Answer, t: float, phase: Phase,
              runs: list[tuple[str, tuple[int, ...], str, int]], joined: bool) -> str | None:
    """Fold the XQueues of processes that are not this session's (another session that
    joined this xserver, any other program; ``runs``' pids are the workloads') into the
    phase's ``xsched.shared``; the line to log the first time, else None."""
    ours = {pid for _, pids, _, _ in runs for pid in pids}
    theirs = box.foreign(pid for pid in answer.rows if pid not in ours)
    rows = [q for pid in theirs for q in answer.rows[pid]]
    first = box.record is None
    if not box.seen(theirs, t - phase.t_start, None if phase.t_measure is None or
                    t < phase.t_measure else t - phase.t_measure, len(rows),
                    {q.device for q in rows if q.device is not None}):
        return None
    if phase.xsched is not None:
        phase.xsched = replace(phase.xsched, shared=box.record)
    if not first:
        return None
    assert box.record is not None
    phase.annotations.append(M.Annotation(t=box.record.t, kind="shared",
                                          text=f"xserver shared: {box.record.who()}"))
    return box.line("xserver", joined)


PF_EXITING = 0x4  # /proc/PID/stat flags: the process is tearing down


def leaving(pid: int, proc: str = "/proc") -> bool:
    """Whether process ``pid`` has left or is leaving: gone, a zombie, or exiting
    (``PF_EXITING``: its threads are gone while the kernel closes its files, a GPU
    context among them, which can take seconds)."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as f:
            rest = f.read().rsplit(b")", 1)[1].split()
        return rest[0] in (b"Z", b"X") or bool(int(rest[6]) & PF_EXITING)
    except (OSError, IndexError, ValueError):
        return True


class Stalls:
    """``/xqueues`` outages of an xserver that lives, and the processes that were
    leaving when one began (issue 58 goal 5: after a neighbour's copies left, the
    H200s' xserver did not answer for 8.1 s). XSched 1.2 sends every process an
    operation after every scheduling round, and answers ``/xqueues`` on the scheduler's
    own thread (``sched/src/scheduler/local.cpp``, ``service/server/src/server.cpp``);
    a process that left without saying so keeps its XQueues listed until xserver's
    pidfd sees it gone, its message queue undrained. An outage that began while such a
    process was listed may last ``LIMIT_S`` before xserver is called hung; when it ends
    it is named: "xserver stalled 8.1 s after pid 1234 (high's copy, 144 XQueues)
    left"."""

    LIMIT_S = 30.0

    def __init__(self) -> None:
        self.listed: dict[int, int] = {}  # pid -> its XQueues, in the last answer
        self.since: float | None = None  # the outage's start (monotonic)
        self.left: dict[int, int] = {}  # those listed that were leaving when it began
        self.names: dict[int, str] = {}

    def answered(self, answer: Answer, t: float) -> str | None:
        """A poll answered: the stall's line if one just ended."""
        self.listed = {pid: len(rows) for pid, rows in answer.rows.items()}
        if self.since is None:
            return None
        line = self.line(t) if self.left else None
        self.since, self.left = None, {}
        return line

    def began(self, t: float, runs: list[tuple[str, tuple[int, ...], str, int]],
              err: Exception) -> str:
        """The first failed poll of an outage: which listed processes were leaving;
        the line to log."""
        self.since = t
        self.left = {pid: n for pid, n in self.listed.items() if leaving(pid)}
        self.names = {pid: name for name, pids, _, _ in runs for pid in pids}
        left = f"; {self.who()} left just before it" if self.left else ""
        return f"/xqueues poll failed: {err}{left}"

    def limit(self, usual_s: float, alive: bool) -> float:
        """How long this outage may last before xserver is called hung (``alive``:
        its process still runs)."""
        return self.LIMIT_S if self.left and alive else usual_s

    def after(self) -> str:
        """For the failure's text: who left before the outage, if anyone."""
        return f", since {self.who()} left" if self.left else ""

    def who(self) -> str:
        parts = []
        for pid, n in sorted(self.left.items()):
            name = self.names.get(pid)
            whose = f"{name}'s copy" if name else "not this session's"
            parts.append(f"pid {pid} ({whose}, {n} XQueue{'s' if n != 1 else ''})")
        return ", ".join(parts)

    def line(self, t: float) -> str:
        assert self.since is not None
        return f"xserver stalled {t - self.since:.1f} s after {self.who()} left"
