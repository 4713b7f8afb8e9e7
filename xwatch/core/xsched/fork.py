"""XSched's fork support (the mode contract's "fork support for its workloads"; issue 58
goal 4), loaded by the fork server (``engine.worker.zygote``) and the worker through
``SUPPORT`` (``engine.worker.support``: its workloads' environment names it, ``REF``):
whether a server's imports loaded XSched so that each forked child can switch to its own
scheduler (``xsched_switch``, after the imports; ``switchable``, from the install's files
before a server is started for it), the switch in the child (``switch_scheduler``, before
its first GPU call), the leave before ``os._exit`` (``leave_xsched``) and the variables
read after the fork (``LAZY_PREFIXES``, ``LAZY_XSCHED``). XSched is never loaded into
xwatch itself: only into a server or a worker, through the shim.

XSched's CUDA copies fork from a server of their own, started with the phase's shim
environment less the ``XSCHED_*`` settings read after the fork. The shim is the
``libcuda.so.1`` of the install's ``lib/`` on ``LD_LIBRARY_PATH`` (read by the dynamic
loader once, at the server's start: it must equal the server's), and ``import torch``
loads it (cuBLASLt's initializer opens ``libcuda.so.1``). With ``XSCHED_SCHEDULER`` and
``XSCHED_POLICY`` unset, XSched 1.2's ``SchedAgent`` static constructor
(``preempt/src/sched/agent.cpp``) takes the app-managed scheduler: no thread, no channel,
nothing sent to xserver, and ``GetProcessId`` is not cached ("for forked processes",
``utils/include/xsched/utils/common.h``). Each child then calls ``XHintSetScheduler``
(XSched's own API) for the scheduler its ``XSCHED_SCHEDULER`` names, before its first GPU
call: the global scheduler opens the client channel keyed by the child's pid and
registers it with xserver (``sched/src/scheduler/global.cpp``), as an exec'd copy's would
at load. Each XQueue reads ``XSCHED_AUTO_XQUEUE_*`` when it is created
(``XQueueManager::AutoCreate``), the suspend flags and CUDA options are read at first
use: all after the fork, so they may differ per copy. A server whose imports loaded
XSched otherwise (``XSCHED_POLICY``, no ``XHintSetScheduler``, no ``types.h``
numbering) does not fork (``xsched_switch``). On HIP the shim is ``LD_PRELOAD``: exec'd.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from pathlib import Path
from typing import Any

from xwatch.core.engine.worker.support import SUPPORT_ENV

#: XSCHED_SCHEDULER's names and the members of XSched's XSchedulerType they name
XSCHED_SCHEDULERS = {"APP": "kSchedulerAppManaged", "LCL": "kSchedulerLocal",
                     "GLB": "kSchedulerGlobal"}
XSCHED_AGENT_LIB = "libpreempt.so"  # exports XHintSetScheduler (include/xsched/hint.h)


def xsched_mapped() -> str | None:
    """The path of XSched's scheduling agent this process has mapped, else None."""
    with contextlib.suppress(OSError), open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if os.path.basename(path) == XSCHED_AGENT_LIB:
                return path
    return None


def scheduler_numbers(lib: str) -> dict[str, int]:
    """XSCHED_SCHEDULER's names -> the install's ``XSchedulerType`` numbers (types.h)."""
    import re

    text = (Path(lib).parent.parent / "include" / "xsched" / "types.h").read_text()
    return {name: int(m.group(1)) for name, member in XSCHED_SCHEDULERS.items()
            if (m := re.search(rf"\b{member}\s*=\s*(\d+)", text))}


def set_scheduler(lib: str, number: int) -> int:
    """``XHintSetScheduler(number, kPolicyUnknown)`` of the mapped ``lib``: 0 if done."""
    fn = ctypes.CDLL(lib, mode=os.RTLD_NOLOAD | os.RTLD_LAZY).XHintSetScheduler
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return int(fn(number, 0))


def switchable(lib_dir: str | os.PathLike[str]) -> str | None:
    """Why a fork server under the XSched install whose ``lib/`` is ``lib_dir`` could not
    switch its children's scheduler (``xsched_switch`` would say so after its imports),
    else None: read from the files, without loading XSched into xwatch."""
    lib = Path(lib_dir) / XSCHED_AGENT_LIB
    try:
        numbers = scheduler_numbers(str(lib))
        with open(lib, "rb") as f:
            exported = b"XHintSetScheduler" in f.read()
    except OSError as e:
        return f"cannot read the install: {e}"
    if not {"APP", "GLB"} <= numbers.keys():
        return f"its types.h beside {lib} does not number the schedulers"
    return None if exported else f"{lib} has no XHintSetScheduler"


def xsched_switch() -> tuple[tuple[str, dict[str, int]] | None, str | None]:
    """After the imports: ((agent path, scheduler numbers), None) when XSched was loaded
    with the app-managed scheduler (``XSCHED_SCHEDULER``, ``XSCHED_POLICY`` unset), so
    each child can switch to its own; (None, why not) when XSched is loaded otherwise;
    (None, None) without XSched."""
    lib = xsched_mapped()
    if lib is None:
        return None, None
    own = sorted(k for k in ("XSCHED_SCHEDULER", "XSCHED_POLICY") if os.environ.get(k))
    if own:
        return None, (f"XSched was loaded during the imports with {', '.join(own)} set: "
                      "its scheduler would be the server's, not each child's")
    try:
        numbers = scheduler_numbers(lib)
        ctypes.CDLL(lib, mode=os.RTLD_NOLOAD | os.RTLD_LAZY).XHintSetScheduler  # noqa: B018
    except (OSError, AttributeError) as e:
        return None, f"XSched was loaded during the imports, and cannot be switched: {e}"
    if not {"APP", "GLB"} <= numbers.keys():
        return None, (f"XSched was loaded during the imports; its types.h beside {lib} does "
                      "not number the schedulers")
    return (lib, numbers), None


def switch_scheduler(xs: tuple[str, dict[str, int]]) -> None:
    """In the child, before its first GPU call: the scheduler its XSCHED_SCHEDULER names."""
    lib, numbers = xs
    want = os.environ.get("XSCHED_SCHEDULER")
    if not want:
        return
    if want not in numbers:
        raise SystemExit(f"XSCHED_SCHEDULER={want}: not one of {', '.join(numbers)}")
    rc = set_scheduler(lib, numbers[want])
    if rc != 0:
        raise SystemExit(f"XHintSetScheduler({want} = {numbers[want]}) failed: XResult {rc}")


#: "0": a worker under XSched's global scheduler ends with ``os._exit`` without leaving
LEAVE_ENV = "XWATCH_XSCHED_LEAVE"
#: the worker's stderr line before it leaves: the shim's "using app-managed scheduler"
#: that follows says it left, not that it was never scheduled (``xsched/controller.py``)
LEAVE_MARK = "xwatch: leaving XSched's global scheduler before exit"


def leave_xsched() -> bool:
    """Tell xserver this process leaves, as XSched's own exit does (app-managed again:
    ``ProcessDestroyEvent`` sent, the process's channel removed) and ``os._exit`` skips.

    Without it xserver kept scheduling the gone process's ~144 XQueues: its scheduler
    thread blocked on the undrained queue or, once the queue was removed, failed its
    assertion (``server.cpp:200``) and stopped scheduling, so a LOW that finished
    mid-phase or a joiner's exit stalled the xserver for 30 s and failed the phase. On
    4x H100 (docs/results/h100x4-2026-11-27b.md) leaving first removed both stalls.
    ``XWATCH_XSCHED_LEAVE=0`` restores the old exit (to reproduce the stall).
    Whether it left (False: not under XSched, told not to, or this install cannot be
    switched, e.g. 49079bc without ``XHintSetScheduler``: it leaves at its exit then)."""
    if os.environ.get(LEAVE_ENV) == "0" or not os.environ.get("XSCHED_SCHEDULER"):
        return False
    lib = xsched_mapped()
    if lib is not None:
        with contextlib.suppress(Exception):
            app = scheduler_numbers(lib)["APP"]
            print(LEAVE_MARK, file=sys.stderr, flush=True)
            return set_scheduler(lib, app) == 0
    return False


#: XSched 1.2's settings read after the fork (see the module): the scheduler (switched
#: to in the child), each XQueue's (at its creation), the others at first use
LAZY_PREFIXES = ("XSCHED_AUTO_XQUEUE", "XSCHED_SCHEDULER")
LAZY_XSCHED = frozenset({"XSCHED_CUDA_LV3_IMPL", "XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS"})


class XschedSupport:
    """XSched's ``engine.worker.support.ForkSupport``."""

    def lazy(self, name: str) -> bool:
        return name in LAZY_XSCHED or name.startswith(LAZY_PREFIXES)

    def after_imports(self) -> tuple[Any, str | None]:
        return xsched_switch()

    def in_child(self, state: Any) -> None:
        if state is not None:
            switch_scheduler(state)

    def before_exit(self) -> bool:
        return leave_xsched()


SUPPORT = XschedSupport()
#: how an XSched workload's environment names it (``SUPPORT_ENV``)
REF = f"{__name__}:SUPPORT"
SUPPORT_VARS = {SUPPORT_ENV: REF}
