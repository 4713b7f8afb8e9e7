"""The names and defaults XSched and NVIDIA MPS fix about themselves, written once for
the scenario's checks, the search for other sessions' daemons and the mode backends.
A leaf below every stage: it imports nothing of xwatch.

XSched: its policies' short names, its server's program name, the System V message
queue key its shims and server meet on, and the server's default policy and port
(``protocol/include/xsched/protocol/def.h``, ``protocol/names.cpp``,
``service/server/src/main.cpp``). MPS: its control tool and server, the default pipe
folder and the pid file the control daemon writes there.
"""

from __future__ import annotations

from collections.abc import Mapping

#: XSched's short names for its policy types (the enum's name after ``kPolicy``), as its
#: ``protocol/names.cpp`` gives them; a type not listed here gets its capitals
SHORT_NAMES: Mapping[str, str] = {
    "HighestPriorityFirst": "HPF", "HeterogeneousHighestPriorityFirst": "HHPF",
    "CPUHighestPriorityFirst": "CHPF", "UtilizationPartition": "UP",
    "ProcessUtilizationPartition": "PUP", "StrictProcessUtilizationPartition": "SPUP",
    "KEarliestDeadlineFirst": "KEDF", "Laxity": "LAX", "ActiveWindowFirst": "AWF",
    "CompletelyFairScheduler": "CFS", "MultiLevelFeedbackQueue": "MLFQ",
}
#: every policy name any XSched release has had (what a scenario may name before the
#: install is known; the install then decides)
KNOWN_POLICIES: tuple[str, ...] = tuple(SHORT_NAMES.values())

XSERVER = "xserver"
#: XSched's defaults (protocol/def.h, service/server/src/main.cpp)
XSCHED_CHANNEL_KEY = 1
XSCHED_DEFAULT_PORT = 50000
XSCHED_DEFAULT_POLICY = "HPF"

MPS_TOOL = "nvidia-cuda-mps-control"
MPS_SERVER = "nvidia-cuda-mps-server"
MPS_DEFAULT_PIPE = "/tmp/nvidia-mps"
MPS_PID_FILE = "nvidia-cuda-mps-control.pid"
