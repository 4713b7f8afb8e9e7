"""Whether XSched really schedules a workload, decided from evidence: the scheduler
line the shim logs, the XQueues xserver lists for the workload's pid, and whether
they are ever seen ready/suspended while requests complete. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SCHED_LINE = re.compile(r"using (global scheduler|local scheduler with policy (\w+)|"
                        r"app-managed scheduler)")


@dataclass
class QueueStats:
    """What /xqueues showed for one workload over a phase."""

    samples: int = 0  # polls in which the workload had at least one queue
    polls: int = 0  # polls since the workload started
    ready: int = 0  # polls with >= 1 queue ready
    suspended: int = 0  # polls with >= 1 queue suspended
    queues: int = 0  # queues in the latest poll
    handles: tuple[int, ...] = ()
    latest: tuple[dict[str, Any], ...] = ()


def engagement(mode_on: bool, scheduler: str | None, q: QueueStats, count: int,
               running: bool) -> tuple[str, list[str]]:
    """(status, warnings) for one workload in one XSched phase.

    status: engaged | not-scheduled | no-xqueue | app-managed | local |
    shim-not-loaded | pending.
    """
    if not mode_on:
        return "native", []
    warn: list[str] = []
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
        if q.polls >= 3:
            warn.append("XSched mode is on but xserver lists no XQueue for this process")
            return "no-xqueue", warn
        return "pending", warn
    if count > 0 and q.ready == 0 and q.polls >= 3:
        warn.append("not scheduled by XSched: requests completed but its XQueues were never "
                    "seen ready. Likely causes: work on the default stream (set stream = "
                    "\"created\"), the shim not intercepting this library, or an app-managed "
                    "scheduler")
        return "not-scheduled", warn
    return "engaged", warn
