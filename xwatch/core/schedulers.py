"""The names and defaults XSched and NVIDIA MPS fix about themselves that the stages
below the mode packages read: the scenario's checks and defaults, and the search for
other sessions' daemons (``modes.neighbours``). A leaf below every stage: it imports
nothing of xwatch. What only a mode's own package reads lives there (XSched's channel
key in ``xsched.meta``, MPS's server in ``mps.control``).

XSched: its policies' short names, its server's program name, and the server's default
policy and port (``protocol/names.cpp``, ``service/server/src/main.cpp``). MPS: its
control tool, the default pipe folder and the pid file the control daemon writes there.
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
#: XSched's defaults (service/server/src/main.cpp)
XSERVER_DEFAULT_PORT = 50000
XSERVER_DEFAULT_POLICY = "HPF"

MPS_TOOL = "nvidia-cuda-mps-control"
MPS_DEFAULT_PIPE = "/tmp/nvidia-mps"
MPS_PID_FILE = "nvidia-cuda-mps-control.pid"
