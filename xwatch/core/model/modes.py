"""What the scheduling modes record in a phase of the snapshot document: XSched's
install, xserver, queues and preflight verdicts; MPS's daemon, clients and proof;
each mode's environment isolation and ``/proc/PID/maps`` proof."""

from __future__ import annotations

from msgspec import UNSET, UnsetType

from xwatch.core.model.base import Annotation, Doc, Num


# ------------------------------------------------------------------ XSched
class XschedPolicy(Doc, frozen=True, kw_only=True):
    name: str
    number: int
    creatable: bool


class QueueParams(Doc, frozen=True, kw_only=True):
    priority: int | None = None
    level: int | None = None
    threshold: int | None = None
    batch_size: int | None = None


class QueueRow(Doc, frozen=True, kw_only=True):
    """One XQueue as ``/xqueues`` showed it last."""

    handle: int
    level: int | None = None
    threshold: int | None = None
    batch_size: int | None = None
    ready: bool = False
    suspended: bool = False
    device: int | UnsetType | None = UNSET
    pid: int | UnsetType = UNSET


class QueueStats(Doc, frozen=True, kw_only=True):
    """What ``/xqueues`` showed for one workload over the phase."""

    samples: int = 0
    active_polls: int = 0
    polls: int = 0
    ready: int = 0
    suspended: int = 0
    queues: int = 0
    max_queues: int = 0
    handles: list[int] = []


class XschedWorkload(Doc, frozen=True, kw_only=True):
    """XSched's evidence about one workload: the shim's scheduler line, the engagement
    verdict and its warnings, its queues, the lane (``[t, states]``)."""

    scheduler: str | None = None
    scheduler_line: str | None = None
    status: str = "pending"
    warnings: list[str] = []
    stats: QueueStats = QueueStats()
    queues: list[QueueRow] = []
    lane: list[tuple[float, str]] = []
    shim_mapped: bool | UnsetType | None = UNSET
    libraries: list[str] | UnsetType = UNSET


class QueueCounts(Doc, frozen=True, kw_only=True):
    queues: int = 0
    ready: int = 0
    suspended: int = 0


class XschedSample(Doc, frozen=True, kw_only=True):
    t: float
    workloads: dict[str, QueueCounts] = {}


class XserverExit(Doc, frozen=True, kw_only=True):
    t: float
    returncode: int | None = None
    reason: str = ""


class Joined(Doc, frozen=True, kw_only=True):
    """A daemon another session started, which this phase used instead of its own
    (``[xsched] join``, ``[mps] join``): it was neither started nor stopped here."""

    pid: int | None  # None: only its channel's holder was seen
    user: str
    command: str
    port: int | None = None  # xserver's HTTP port
    pipe_dir: str | None = None  # the MPS control daemon's folder
    policy_change: str | None = None  # the policy this session set on it, said in the log


class Shared(Doc, frozen=True, kw_only=True):
    """Processes that were not this session's, served by the phase's daemon beside its
    workloads (another session that joined it, or any other program), first seen ``t``
    seconds after the phase's start: from then on the phase's numbers are not a clean
    measurement of the mode (on two H200s a joiner on the other GPU took the first
    session's HIGH P50 under XSched from 4 to 19 ms)."""

    t: float
    t_measured: float | None = None  # seconds into the measurement (None: before it)
    pids: list[int] = []  # every such process seen in the phase
    users: list[str] = []  # their owners
    queues: int = 0  # XSched: the most of their XQueues one poll listed
    devices: list[int] = []  # XSched: the devices of their XQueues
    servers: list[int] = []  # MPS: the servers they were clients of

    def when(self) -> str:
        """``t=37.2 s (28.3 s measured)``: seconds into the phase and its measurement."""
        return f"t={self.t:.1f} s" + (f" ({self.t_measured:.1f} s measured)"
                                     if self.t_measured is not None
                                     else " (before the measurement)")

    def who(self) -> str:
        """``pids 1234, 1240, 4 XQueue(s) on device 0x200000038, user root``."""
        what = (f"pid{'s' if len(self.pids) > 1 else ''} " + ", ".join(map(str, self.pids[:8]))
                + (" ..." if len(self.pids) > 8 else ""))
        if self.queues:
            what += f", {self.queues} XQueue(s) on device " + ", ".join(
                f"0x{d:x}" for d in self.devices)
        if self.servers:
            what += ", clients of MPS server " + ", ".join(map(str, self.servers))
        return what + f", user {', '.join(self.users) or 'unknown'}"

    def describe(self, daemon: str) -> str:
        """``shared its xserver from t=37.2 s (...) on with processes not of this
        session (pids ...): its numbers from then on are not a clean XSched
        measurement``."""
        mode = "XSched" if daemon == "xserver" else "MPS"
        return (f"shared its {daemon} from {self.when()} on with processes not of this "
                f"session ({self.who()}): its numbers from then on are not a clean {mode} "
                "measurement")


class Xsched(Doc, frozen=True, kw_only=True):
    """The XSched phase: the install, its version and policies, each workload's
    environment and queue settings, the xserver and what ``/xqueues`` showed."""

    root: str
    source: str = ""
    policy: str = ""
    platforms: dict[str, str] = {}
    env: dict[str, dict[str, str]] = {}
    version: str | UnsetType | None = UNSET
    version_source: str | UnsetType = UNSET
    policy_number: int | UnsetType | None = UNSET
    policies: list[XschedPolicy] | UnsetType = UNSET
    policy_source: str | UnsetType = UNSET
    install_notes: list[str] | UnsetType = UNSET
    params: dict[str, QueueParams] = {}
    xserver_cmd: list[str] | None = None
    port: int | None = None
    log_tail: list[str] = []
    samples: list[XschedSample] = []
    workloads: dict[str, XschedWorkload] = {}
    changes: list[Annotation] = []
    poll_ms: int | UnsetType = UNSET
    settled_poll_ms: int | UnsetType = UNSET  # the pace once the verdicts settled
    listen: str | UnsetType = UNSET
    xserver_exit: XserverExit | UnsetType | None = UNSET
    policy_running: int | UnsetType | None = UNSET
    joined: Joined | UnsetType = UNSET  # another session's xserver, used as it ran
    shared: Shared | UnsetType = UNSET  # processes not of this session it also served


class Verdict(Doc, frozen=True, kw_only=True):
    """One XSched preflight probe under the shim and its verdict."""

    status: str
    detail: str = ""
    python: str = ""
    platform: str = ""
    device: str = ""
    stream: str = ""
    workloads: list[str] = []
    returncode: int | None = None
    cause: str = ""
    scheduler: str | None = None
    queues_max: int = 0
    ready_polls: int = 0
    polls: int = 0
    iters: int = 0
    median_ms: Num = None
    seconds: float = 0.0
    torch: str | None = None
    device_name: str | None = None
    stderr_tail: list[str] = []
    cached: bool = False
    poll_errors: int | UnsetType = UNSET
    poll_error: str | UnsetType = UNSET
    finished: bool | UnsetType = UNSET
    #: how the probe was started, as a workload's ``launch.start``: "fork (fork server
    #: pid N)", "exec" or "exec (why it was not forked)" (absent in older snapshots)
    start: str | UnsetType = UNSET
    pid: int | UnsetType | None = UNSET


class ProbeLeave(Doc, frozen=True, kw_only=True):
    """How the preflight's probes left XSched (issue 64 goal 4): held after their work,
    let go one at a time once nothing else was talking to xserver, then the phase waited
    until xserver listed none of their pids (``docs/gpus-start.md``). Unset in snapshots
    from before it (their probes left as they ended)."""

    #: the wait was on (``XWATCH_XSCHED_PROBE_WAIT`` not ``0``); off: the old exits
    wait: bool = True
    #: seconds the probes waited, after their work, for the workloads to be quiet
    quiet_s: float | None = None
    #: what the workloads were doing when the probes left (held at the start gate, ...)
    quiet: str = ""
    #: seconds from the first probe's release to xserver listing none of their pids
    left_s: float | None = None
    #: probe pids xserver still listed at the time limit (empty: it listed none)
    listed: list[int] = []
    note: str = ""

    def line(self) -> str:
        """How the probes left XSched, in words (the console's and the report's)."""
        if not self.wait:
            return "each as its work ended (XWATCH_XSCHED_PROBE_WAIT=0: the old way, which " \
                "can race xserver)"
        if self.left_s is None:
            return self.quiet or "let go at once"
        said = f"held after their work, let go one at a time ({self.quiet})"
        if not self.listed:
            said += (f"; xserver listed none of their pids {self.left_s:.2f} s after the "
                     "first went")
        return f"{said}; {self.note}" if self.note else said


class Preflight(Doc, frozen=True, kw_only=True):
    """The XSched preflight: each probe's verdict, how long it took, why it failed
    the phase (null: it did not), how its probes left."""

    verdicts: list[Verdict] = []
    seconds: float | UnsetType = UNSET
    failure: str | UnsetType | None = UNSET
    note: str | UnsetType = UNSET
    leave: ProbeLeave | UnsetType = UNSET


# ------------------------------------------------------------------ MPS
class MpsParams(Doc, frozen=True, kw_only=True):
    priority: int | None = None
    active_thread_percentage: int | None = None
    pinned_mem_limit: str | None = None


class MpsWorkload(Doc, frozen=True, kw_only=True):
    status: str = "pending"
    server: int | None = None
    client_pids: list[int] = []
    warnings: list[str] = []


class MpsPreflight(Doc, frozen=True, kw_only=True):
    verdict: str
    detail: str = ""
    workload: str | UnsetType = UNSET
    device: str | UnsetType = UNSET
    seconds: float | UnsetType = UNSET


class DaemonExit(Doc, frozen=True, kw_only=True):
    t: float
    returncode: int | None = None


class MpsServerExit(Doc, frozen=True, kw_only=True):
    t: float
    servers: list[int] = []


class Mps(Doc, frozen=True, kw_only=True):
    """The MPS phase: the private control daemon, each client's environment and
    settings, the servers, the client-list proof per workload, the logs."""

    tool: str
    pipe_dir: str
    log_dir: str
    daemon_cmd: list[str] = []
    daemon_pid: int | None = None
    servers: list[int] = []
    env: dict[str, dict[str, str]] = {}
    params: dict[str, MpsParams] = {}
    workloads: dict[str, MpsWorkload] = {}
    preflight: MpsPreflight | None = None
    control_log: list[str] = []
    server_log: list[str] = []
    daemon_exit: DaemonExit | None = None
    server_exit: MpsServerExit | UnsetType = UNSET
    changes: list[Annotation] = []
    topology: str | UnsetType = UNSET
    joined: Joined | UnsetType = UNSET  # another session's control daemon, used as it ran
    shared: Shared | UnsetType = UNSET  # clients not of this session it also served


# ------------------------------------------------------------------ isolation
class Removed(Doc, frozen=True, kw_only=True):
    name: str
    value: str = ""
    why: str = ""


class Proof(Doc, frozen=True, kw_only=True):
    """Which scheduler libraries a running workload had mapped (``/proc/PID/maps``)."""

    pid: int
    verdict: str
    libraries: list[str] = []
    t: float = 0.0
    #: where a shim mapped against the mode came from (``modes.isolation.shim_origin``)
    origin: str | UnsetType = UNSET


class Isolation(Doc, frozen=True, kw_only=True):
    """What was removed from the environment for this mode, and the maps proof."""

    mode: str
    removed: list[Removed] = []
    mps_pipe: str | None = None
    workloads: dict[str, Proof] = {}

