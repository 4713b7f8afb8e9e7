"""Whether XSched really schedules a workload, decided from evidence: the scheduler
line the shim logs, the XQueues xserver lists for the workload's pid, and whether
they are ever seen ready/suspended while requests complete. Pure."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xwatch.core.xsched.fork import LEAVE_MARK
from xwatch.core.xsched.rules.participation import SO_FAR

if TYPE_CHECKING:
    from xwatch.core.xsched.client import XQueueRow

SCHED_LINE = re.compile(r"using (global scheduler|local scheduler with policy (\w+)|"
                        r"app-managed scheduler)")


@dataclass
class QueueStats:
    """What /xqueues showed for one workload over a phase."""

    samples: int = 0  # polls in which the workload had at least one queue
    active_polls: int = 0  # polls while alive with requests already counted
    polls: int = 0  # polls since the workload started
    ready: int = 0  # polls with >= 1 queue ready
    suspended: int = 0  # polls with >= 1 queue suspended
    queues: int = 0  # queues in the latest poll while the workload was alive
    max_queues: int = 0  # most queues seen in one poll during the phase
    handles: tuple[int, ...] = ()
    latest: tuple[XQueueRow, ...] = ()  # its queues in the latest poll (the first 64)
    active_first: float | None = None  # monotonic time of the first active poll
    active_last: float = 0.0  # and of the latest
    #: every pid its queues were looked up for (a server: its whole tree, as it grew)
    pids: set[int] = field(default_factory=set)

    def mean_gap(self, default_s: float) -> float:
        """The mean interval between the active polls (the pace changes over a phase);
        ``default_s`` before there are two."""
        if self.active_first is None or self.active_polls < 2:
            return default_s
        return (self.active_last - self.active_first) / (self.active_polls - 1) or default_s


#: xserver's lines about one XQueue's life (XSched 1.2: "XQueue (0x...) from process
#: 2877 created", "... destroyed")
QUEUE_LINE = re.compile(r"XQueue \((0x[0-9a-fA-F]+)\) from process (\d+) (created|destroyed)")


CLOSED_LINE = re.compile(r"client process (\d+) closed")


class XserverLog(deque[str]):
    """xserver's log lines (the last ``maxlen``), counting as they come every XQueue
    that each process created and destroyed (the evidence a verdict names after the
    lines themselves rolled off), and the pids it logged "client process N closed"."""

    def __init__(self, maxlen: int) -> None:
        super().__init__(maxlen=maxlen)
        self.created: dict[int, int] = {}
        self.destroyed: dict[int, int] = {}
        self.closed: set[int] = set()

    def append(self, line: str) -> None:
        super().append(line)
        if " closed" in line and (c := CLOSED_LINE.search(line)):
            self.closed.add(int(c.group(1)))
        if "XQueue (" in line and (m := QUEUE_LINE.search(line)):
            book = self.created if m.group(3) == "created" else self.destroyed
            pid = int(m.group(2))
            book[pid] = book.get(pid, 0) + 1

    def clear(self) -> None:
        super().clear()
        self.created.clear()
        self.destroyed.clear()
        self.closed.clear()

    def of(self, pids: set[int]) -> tuple[int, int] | None:
        """(created, destroyed) by ``pids``; None when the log named no XQueue at all
        (another session's xserver, whose log is not ours to read)."""
        if not self.created and not self.destroyed:
            return None
        return (sum(self.created.get(p, 0) for p in pids),
                sum(self.destroyed.get(p, 0) for p in pids))


def bypass_warning(count: int, polls: int, shim_mapped: bool | None,
                   logged: tuple[int, int] | None) -> str:
    """The plain verdict for a server that served requests while xserver never listed
    an XQueue of its process tree, with its evidence and likely cause."""
    proof = [f"it served {count} request(s) while xserver listed no XQueue of its process "
             f"tree in {polls} poll(s)"]
    if shim_mapped:
        proof.append("the shim is mapped in its processes (/proc/PID/maps)")
    if logged is not None:
        made, gone = logged
        proof.append(f"xserver's log shows its processes created {made} XQueue(s) and "
                     f"destroyed {gone}" if made else
                     "xserver's log shows no XQueue created by its processes")
    return ("not scheduled by XSched: its GPU work bypassed the shim (" + "; ".join(proof)
            + "). Likely cause: its kernels went to a stream the shim does not intercept, "
            "e.g. the default stream through libcudart, as vLLM's do")


#: a workload is called not-scheduled only once this many polls would have seen its
#: queues ready had XSched scheduled its work (a Poisson miss of all of them: < 0.01%;
#: at half the expected rate, as measured for a 10%-busy HIGH on the H100: 0.7%)
EXPECTED_READY_MIN = 10.0
#: from this many expected ready polls on, a pending verdict whose queues were never seen
#: ready says so ("not seen scheduled so far", ``participation.SO_FAR``): provisional,
#: shown live so that a workload XSched does not schedule is named within seconds of its
#: first requests; a workload XSched schedules is missed by all of them with a chance of
#: e^-5 (0.7%; at half the expected rate, 8%), and the warning goes at its first ready poll
PROVISIONAL_READY_MIN = 5.0


def expected_ready_polls(count: int, service_ms: float, poll_s: float,
                         active_polls: int) -> float:
    """Polls in which a workload's queues should have been seen ready: its GPU-busy
    time (requests x mean service time) over the (mean) poll interval, at most one per
    poll since its first request. A 20 req/s, 5 ms workload is busy 10% of the time: ~10
    polls at 10 Hz take ~10 s, not the first three."""
    if not (service_ms > 0) or poll_s <= 0:
        return float(active_polls)
    return min(float(active_polls), count * service_ms / 1000.0 / poll_s)


def engagement(mode_on: bool, scheduler: str | None, q: QueueStats, count: int,
               running: bool, expected_ready: float | None = None,
               final: bool = False, shim_mapped: bool | None = None,
               server: bool = False, logged: tuple[int, int] | None = None
               ) -> tuple[str, list[str]]:
    """(status, warnings) for one workload in one XSched phase.

    status: engaged | not-scheduled | no-xqueue | app-managed | local |
    shim-not-loaded | pending. ``expected_ready`` (``expected_ready_polls``): without
    it, three polls with requests completing and no ready queue are enough to say
    not-scheduled; with it, that verdict waits until ``EXPECTED_READY_MIN`` ready polls
    were expected (``final``: the phase ended before that: pending, saying why; not
    final, from ``PROVISIONAL_READY_MIN`` on: pending, with a warning that starts with
    ``participation.SO_FAR``, shown live as provisional).
    ``shim_mapped``: whether the workload's processes have the shim mapped
    (``/proc/PID/maps``; None: not read yet or unreadable); False is proof enough
    for shim-not-loaded. ``server``: the workload is an inference server, whose
    evidence is its whole process tree (the causes named are a server's): a server
    that served requests with the shim loaded (``shim_mapped``, or the shim's scheduler
    line) while xserver never listed an XQueue of its tree is not-scheduled, naming
    ``logged`` (the XQueues its processes created and destroyed, per xserver's log:
    ``XserverLog.of``) and the likely cause; another workload in that case is no-xqueue.
    """
    if not mode_on:
        return "native", []
    warn: list[str] = []
    if shim_mapped is False:
        warn.append("the shim is not loaded: no XSched shim in the process's memory map "
                    "(/proc/PID/maps), so XSched cannot see its work (LD_PRELOAD / "
                    "LD_LIBRARY_PATH overridden by the workload, or a static CUDA runtime)")
        return "shim-not-loaded", warn
    if scheduler == "app-managed":
        warn.append("shim reports 'using app-managed scheduler': no cross-process priority "
                    "(XSCHED_SCHEDULER is not GLB)")
        return "app-managed", warn
    if scheduler and scheduler.startswith("local"):
        warn.append(f"shim reports 'using {scheduler}': priorities apply only inside this "
                    "process (XSCHED_POLICY set?)")
        return "local", warn
    if q.samples == 0:
        if not running and count == 0:
            return "pending", warn
        if scheduler is None and q.polls >= 3:
            warn.append("the shim never loaded: no scheduler line in the log and no XQueue "
                        "(LD_PRELOAD/LD_LIBRARY_PATH wrong, or the real driver library found "
                        "first; in containers set XSCHED_CUDA_LIB)")
            return "shim-not-loaded", warn
        if q.polls >= 3 and server and count > 0 and (shim_mapped or scheduler):
            warn.append(bypass_warning(count, q.polls, shim_mapped, logged))
            return "not-scheduled", warn
        if q.polls >= 3:
            warn.append("XSched mode is on but xserver lists no XQueue for the server or "
                        "any process it started (its process tree)" if server else
                        "XSched mode is on but xserver lists no XQueue for this process")
            return "no-xqueue", warn
        return "pending", warn
    if count > 0 and q.ready == 0 and q.polls >= 3:
        if expected_ready is not None and expected_ready < EXPECTED_READY_MIN:
            if final:
                warn.append(f"not enough evidence: its XQueues were never seen ready, but at "
                            f"its GPU duty cycle only {expected_ready:.1f} ready poll(s) were "
                            "expected (a longer phase or a shorter [xsched] poll_ms decides)")
            elif expected_ready >= PROVISIONAL_READY_MIN:
                warn.append(f"{SO_FAR}: its XQueues were never seen ready in {q.polls} polls "
                            f"while {count} requests completed, {expected_ready:.1f} ready "
                            f"polls expected; the verdict waits for {EXPECTED_READY_MIN:g}")
            return "pending", warn
        warn.append("not scheduled by XSched: requests were served but the XQueues of the "
                    "server's process tree were never seen ready: its GPU work bypasses the "
                    "shim. Likely cause: the server launches on the default stream through "
                    "libcudart (vLLM does), which XSched's automatic XQueues do not intercept"
                    if server else
                    "not scheduled by XSched: requests completed but its XQueues were never "
                    "seen ready. Likely causes: work on the default stream (set stream = "
                    "\"created\"), the shim not intercepting this library, or an app-managed "
                    "scheduler")
        return "not-scheduled", warn
    return "engaged", warn


# ------------------------------------------------------------------ preflight verdicts
#: probe verdicts that stop a phase from starting
FAILING_VERDICTS = frozenset({"crashed", "hung", "not-scheduled"})


def _describe_rc(rc: int | None) -> str:
    if rc is None:
        return "did not start"
    if rc < 0:
        import signal as _s
        try:
            return f"killed by {_s.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"


#: a probe is engaged only if its queues were ready in at least this many polls and
#: this share of them (one stray "ready" of an idle internal stream is not evidence)
PROBE_READY_MIN = 3
PROBE_READY_SHARE = 0.02


#: a probe that ran engaged to its end, said so, and only then died: XSched 1.2's shim
#: was seen to SIGSEGV while a process exits. Not failing: the phase goes on, warned.
EXIT_CRASH = "crashed-at-exit"


def probe_verdict(rc: int | None, stderr: list[str], queues_max: int, ready_polls: int,
                  timed_out: bool, iters: int, polls: int = 0, finished: bool = False,
                  limit: str = "after the time limit") -> tuple[str, str, str, str | None]:
    """(verdict, detail, cause line, scheduler) for one preflight probe. ``finished``:
    the probe printed its ``done`` line (all its work done and synchronized) before it
    exited; a crash after that is a crash at exit, judged apart from the run.
    ``timed_out``: it was killed, ``limit`` says what it outlasted."""
    if finished and not timed_out and rc not in (0, None):
        status, detail, cause, sched = probe_verdict(rc=0, stderr=stderr,
                                                     queues_max=queues_max,
                                                     ready_polls=ready_polls, timed_out=False,
                                                     iters=iters, polls=polls)
        how = f"{_describe_rc(rc)} while exiting" + (f": {cause}" if cause else "")
        if status == "engaged":
            return EXIT_CRASH, f"{detail}; then {how}", cause, sched
        return status, f"{detail}; and {how}", cause, sched
    from xwatch.core.engine.causes import best_cause

    sched = None
    for line in stderr:
        if LEAVE_MARK in line:  # the shim's lines after it are its leave (app-managed)
            break
        m = SCHED_LINE.search(line)
        if m:
            what = m.group(1)
            sched = "global" if what.startswith("global") else \
                f"local {m.group(2)}" if what.startswith("local") else "app-managed"
    cause = best_cause(stderr)
    if timed_out:
        return ("hung", f"no result {limit} ({iters} iterations seen); killed"
                + (f"; last cause line: {cause}" if cause else ""), cause, sched)
    if rc != 0:
        return "crashed", f"{_describe_rc(rc)}" + (f": {cause}" if cause else ""), cause, sched
    if sched == "app-managed":
        return ("app-managed", "shim reports 'using app-managed scheduler': no cross-process "
                "priority (XSCHED_SCHEDULER is not GLB)", cause, sched)
    if sched and sched.startswith("local"):
        return "local", f"shim reports 'using {sched}': priorities only inside the process", \
            cause, sched
    if sched is None and queues_max == 0:
        return ("shim-not-loaded", "no scheduler line from the shim and no XQueue: the shim "
                "did not load (library path, or the real driver library found first)", cause,
                sched)
    if queues_max == 0:
        return ("not-scheduled", f"{iters} iterations ran but xserver listed no XQueue for the "
                "process (the shim does not create XQueues for this stream, e.g. the default "
                "stream)" + (f"; shim said: {cause}" if cause else ""), cause, sched)
    if ready_polls == 0:
        return ("not-scheduled", f"{iters} iterations ran but its {queues_max} XQueue(s) were "
                "never seen ready: the work bypassed XSched", cause, sched)
    if ready_polls < max(PROBE_READY_MIN, PROBE_READY_SHARE * polls):
        return ("not-scheduled", f"{iters} iterations ran but its {queues_max} XQueue(s) were "
                f"ready in only {ready_polls} of {polls} polls: the work bypassed XSched",
                cause, sched)
    return ("engaged", f"{iters} iterations, {queues_max} XQueue(s), ready in {ready_polls} "
            "polls", cause, sched)
