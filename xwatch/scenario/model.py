"""The scenario's frozen objects: ``Scenario``, ``Workload`` and their settings
(``Slo``, ``XschedSettings``, ``MpsSettings``, per-workload XSched and MPS), with
the copies the command line makes (overrides, GPUs, a server) and ``to_dict``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from xwatch.core.schedulers import XSERVER_DEFAULT_POLICY, XSERVER_DEFAULT_PORT
from xwatch.errors import UsageError
from xwatch.scenario.values import (
    PORT_AUTO,
    PORT_PLACEHOLDER,
    PRIORITY_NUMBERS,
    SERVER_FROM_CLI,
    SETTLED_POLL_MS,
    check_device,
)


def pin_env(gpu: int | str) -> dict[str, str]:
    """The environment that pins a process tree to one GPU: it sees only ``gpu`` (an
    index in PCI bus order, or an entry of a CUDA_VISIBLE_DEVICES list), as its
    ``cuda:0``."""
    return {"CUDA_VISIBLE_DEVICES": str(gpu), "HIP_VISIBLE_DEVICES": str(gpu),
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


# --------------------------------------------------------------------------- models
@dataclass(frozen=True)
class WorkloadXsched:
    """Per-workload XSched settings; None means "derive from priority"."""

    priority: int | None = None
    level: int | None = None
    threshold: int | None = None
    batch_size: int | None = None
    lv3_impl: str | None = None  # XSCHED_CUDA_LV3_IMPL
    single_stream: bool | None = None  # XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS
    suspend_sync_hwq: bool | None = None  # XSCHED_SCHEDULER_SUSPEND_*
    suspend_wait_all: bool | None = None
    suspend_wait_idle: bool | None = None
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class WorkloadMps:
    """Per-workload MPS client settings; None means "derive from priority" / unset."""

    priority: int | None = None
    active_thread_percentage: int | None = None
    pinned_mem_limit: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Workload:
    """One workload process. Exactly one of ``model``, ``command`` or ``server`` is set
    (a server workload is two processes: xwatch's load generator and the server it
    starts)."""

    name: str
    priority: int | str
    start_delay_s: float = 0.0
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    batch: int = 1
    stall_s: float | bool | None = None  # None: automatic; False: never stalled
    # built-in model
    model: str | None = None
    input: tuple[int, ...] = (3, 224, 224)
    seq_len: int = 128
    task: str = "qa"
    dtype: str = "fp32"
    device: str = "auto"
    rate: float | None = None
    arrival: str = "fixed"
    burstiness: float = 1.0  # arrival "gamma": the gaps' shape (vLLM's --burstiness)
    requests: int | None = None
    warmup: int = 10
    python: str | None = None
    threads: int | None = None
    stream: str = "created"
    seed: int = 0
    stream_priority: str | None = None  # None: high for the highest-priority workloads
    prompt_len: int = 128  # LLM decoders
    new_tokens: int = 32
    decode: str = "eager"  # LLM decoders: eager | graphed
    train: bool = False  # one training iteration per request
    amp: str = "off"  # autocast: off | bf16 | fp16
    # inference server (with the load generator's settings above and below)
    server: tuple[str, ...] | None = None
    port: int | str = 8000  # or "auto": a free port for each copy (``{port}``)
    ready: str = "/health"
    ready_timeout_s: float = 300.0
    api: str = "openai-chat"
    served_model: str | None = None
    range_ratio: float = 0.0
    dataset: str | None = None
    ignore_eos: bool = False
    drain_s: float = 0.0  # a server's drain at the planned end (vLLM waits for all)
    goodput: tuple[str, ...] = ()  # vLLM's --goodput: "ttft:MS", "tpot:MS", "e2el:MS"
    # external command
    command: tuple[str, ...] | None = None
    cwd: str | None = None
    regex: str | None = None
    stdout: str | None = None  # None: pty when regex is set, else pipe
    platform: str | None = None
    honours_rate: bool = False  # a command that sends at XWATCH_RATE (``xwatch capacity``)
    xsched: WorkloadXsched = field(default_factory=WorkloadXsched)
    mps: WorkloadMps = field(default_factory=WorkloadMps)
    #: the GPU this copy is pinned to (multi-GPU runs); None: the workload's own device
    gpu: int | None = None

    @property
    def base_name(self) -> str:
        """The scenario's name for this workload (``high`` for the copy ``high@1``)."""
        return self.name.partition("@")[0]

    @property
    def kind(self) -> str:
        return "model" if self.model is not None else \
            "server" if self.server is not None else "command"

    @property
    def priority_value(self) -> int:
        """Numeric priority: high=1, low=0, integers as given."""
        p = self.priority
        return PRIORITY_NUMBERS[p] if isinstance(p, str) else p

    @property
    def stdout_mode(self) -> str:
        """'pty' or 'pipe': how a command's stdout is connected (built-in workers: pipe)."""
        if self.command is None:  # built-in workers and the load generator: pipe
            return "pipe"
        return self.stdout or ("pty" if self.regex else "pipe")

    @property
    def port_auto(self) -> bool:
        """``port = "auto"``: the server's port is chosen free when it starts."""
        return self.port == PORT_AUTO

    @property
    def is_bert(self) -> bool:
        return self.model is not None and self.model.startswith("bert")

    @property
    def closed_loop(self) -> bool:
        return self.rate is None

    def describe(self) -> str:
        """Short human description: 'resnet18 b1 @20/s' or the command."""
        if self.model is not None:
            load = f"@{self.rate:g}/s" if self.rate else "closed"
            return f"{self.model} b{self.batch}{' train' if self.train else ''} {load}"
        if self.server is not None:  # the program, or the module of `python -m M`
            argv = self.server
            prog = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else argv[0]
            return f"{prog.rsplit('/', 1)[-1].rsplit('.', 1)[-1]} server @{self.rate:g}/s"
        assert self.command is not None
        words = list(self.command)
        if len(words) > 1 and (words[0] == "{python}"  # the program, not its interpreter
                               or words[0].rsplit("/", 1)[-1].startswith("python")):
            words = words[1:]
        return " ".join(words)[:40]


@dataclass(frozen=True)
class Slo:
    workload: str
    percentile: float
    latency_ms: float
    metric: str = "latency_ms"  # or a named per-request metric ("tpot_ms")

    @property
    def named(self) -> str | None:
        """The named metric the objective is about; None: the request latency."""
        return None if self.metric == "latency_ms" else self.metric


@dataclass(frozen=True)
class XschedSettings:
    root: str | None = None
    policy: str = XSERVER_DEFAULT_POLICY
    port: int = XSERVER_DEFAULT_PORT
    platform: str | None = None
    poll_ms: int = 100
    settled_poll_ms: int | None = None  # None: max(poll_ms, SETTLED_POLL_MS)
    join: str = "no"  # an xserver already running: JOIN_XSERVER

    @property
    def settled_ms(self) -> int:
        """The settled pace (see ``settled_poll_ms``)."""
        return self.settled_poll_ms if self.settled_poll_ms is not None else \
            max(self.poll_ms, SETTLED_POLL_MS)


@dataclass(frozen=True)
class MpsSettings:
    join: bool = False  # use an MPS control daemon already running (``[mps] join``)


@dataclass(frozen=True)
class Scenario:
    """A validated scenario. ``source`` is the file it came from."""

    name: str
    description: str
    duration_s: float
    device: str
    window_s: float
    workloads: tuple[Workload, ...]
    slo: Slo | None = None
    xsched: XschedSettings = field(default_factory=XschedSettings)
    source: str = "<memory>"
    gpus: tuple[int, ...] = ()  # replicated onto these GPUs (workloads already expanded)
    #: the workloads as written, before replication onto ``gpus`` (empty: not replicated)
    single: tuple[Workload, ...] = ()
    start_together: bool = True  # built-in workloads start measuring at once (start gate)
    mps: MpsSettings = field(default_factory=MpsSettings)

    def gpu_indices(self) -> set[int]:
        """The GPUs the workloads use, in PCI bus order (a copy's ``gpus`` index, else its
        ``cuda:N``; 'auto' and a bare 'cuda': 0)."""
        out = set()
        for w in self.workloads:
            dev = w.device if w.device != "auto" else self.device
            if w.gpu is not None:
                out.add(w.gpu)
            elif dev.startswith("cuda") or dev == "auto":
                out.add(int(dev.partition(":")[2] or 0))
        return out

    def workload(self, name: str) -> Workload:
        for w in self.workloads:
            if w.name == name:
                return w
        raise KeyError(name)

    def with_overrides(self, duration_s: float | None = None, device: str | None = None,
                       gpus: tuple[int, ...] | None = None) -> Scenario:
        """A copy with CLI overrides applied (``--duration``, ``--device``, ``--gpus``)."""
        import dataclasses

        keep_gpus = self.gpus if gpus is None else gpus
        s = self.unreplicated()
        if duration_s is not None:
            s = dataclasses.replace(s, duration_s=duration_s)
        if device is not None:
            try:
                check_device(device)
            except ValueError as e:
                raise UsageError(f"--device {device!r} {e}")
            s = dataclasses.replace(
                s, device=device,
                workloads=tuple(dataclasses.replace(w, device=device)
                                if w.model or w.server else w for w in s.workloads))
        return s.on_gpus(keep_gpus)

    def on_gpus(self, gpus: tuple[int, ...]) -> Scenario:
        """A copy with every workload replicated onto each GPU of ``gpus``: names
        ``NAME@GPU``, built-in models on ``cuda:0`` of a process that sees only that
        GPU (``CUDA_VISIBLE_DEVICES`` and ``HIP_VISIBLE_DEVICES`` = the index, indices
        in PCI bus order), commands and servers (their whole process tree) with the same
        variables, each server copy with a port of its own (``port = "auto"``; a fixed
        port cannot be copied). ``()`` undoes nothing: the scenario as it is."""
        import dataclasses

        if not gpus:
            return self
        if self.gpus:
            raise UsageError(f"scenario {self.name} is already replicated onto GPUs "
                             f"{list(self.gpus)}")
        fixed = [w for w in self.workloads if w.server is not None and not w.port_auto]
        if fixed and len(gpus) > 1:
            raise UsageError(f"scenario {self.name}: the server workload {fixed[0].name} "
                             f"listens on the fixed port {fixed[0].port}, so its copies on GPUs "
                             f"{', '.join(map(str, gpus))} would collide: set port = "
                             f'"{PORT_AUTO}" and put {PORT_PLACEHOLDER} where its command '
                             "takes the port (each copy then gets a free port of its own)")
        wls = []
        for g in gpus:
            for w in self.workloads:
                on_gpu = w.device.startswith("cuda") or (w.server is not None
                                                         and w.device == "auto")
                wls.append(dataclasses.replace(
                    w, name=f"{w.name}@{g}", gpu=g,
                    env=MappingProxyType({**w.env, **pin_env(g)}),
                    device="cuda:0" if on_gpu else w.device))
        return dataclasses.replace(self, workloads=tuple(wls), gpus=tuple(gpus),
                                   single=self.workloads)

    def with_server(self, command: str | None, served_model: str | None) -> Scenario:
        """Every server workload with the command line's server command and ``model``
        field; a scenario whose server is ``["{server}"]`` (serve-own) needs them."""
        import dataclasses
        import shlex

        servers = [w for w in self.workloads if w.server is not None]
        if (command or served_model) and not servers:
            raise UsageError(f"--server/--served-model: scenario {self.name} has no server "
                             "workload (serve-train and serve-own have)")
        argv = tuple(shlex.split(command)) if command else None
        if command is not None and not argv:
            raise UsageError("--server: an empty command")
        if argv is None and any(w.server == (SERVER_FROM_CLI,) for w in servers):
            raise UsageError(f"scenario {self.name} serves the command given on the command "
                             "line: add --server 'CMD' (e.g. --server 'vllm serve MODEL --port "
                             "{port}') and, if the server needs it, --served-model NAME")
        if argv is not None and not any(PORT_PLACEHOLDER in a for a in argv):
            auto = [w.name for w in servers if w.port_auto]
            if auto:
                raise UsageError(f"--server {command!r}: the workload {auto[0]} of scenario "
                                 f"{self.name} takes a free port (port = \"{PORT_AUTO}\"), so "
                                 f"the command must say {PORT_PLACEHOLDER} where the port goes, "
                                 "e.g. --server 'vllm serve MODEL --port {port}'",
                                 title="Server command without {port}")
        return dataclasses.replace(self, workloads=tuple(
            dataclasses.replace(w, server=argv or w.server,
                                served_model=served_model or w.served_model)
            if w.server is not None else w for w in self.workloads))

    def unreplicated(self) -> Scenario:
        """The scenario as written, one copy of each workload."""
        import dataclasses

        if not self.gpus:
            return self
        return dataclasses.replace(self, workloads=self.single, gpus=(), single=())

    def to_dict(self) -> dict[str, Any]:
        """The resolved scenario as plain data (for snapshots)."""
        import dataclasses

        def conv(v: Any) -> Any:
            if isinstance(v, Mapping):
                return {k: conv(x) for k, x in v.items()}
            if isinstance(v, tuple):
                return [conv(x) for x in v]
            if dataclasses.is_dataclass(v) and not isinstance(v, type):
                return {f.name: conv(getattr(v, f.name)) for f in dataclasses.fields(v)}
            return v

        d: dict[str, Any] = conv(self)
        d.pop("single", None)
        if self.gpus:  # recorded as written; loading replicates again
            d["workloads"] = conv(self.single)
        for w in d["workloads"]:
            w.pop("gpu", None)
        return d
