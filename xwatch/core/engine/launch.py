"""How each workload process is started: argv, environment and cwd.

A pure function of the workload, the scenario and the mode's extra
environment (XSched's variables come from ``xwatch.core.xsched.env``), so the exact
environment is testable and recorded in the snapshot for every phase.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import xwatch
from xwatch.core import model as M
from xwatch.core.engine.protocol import EVENT_FD_ENV, GATE_ENV
from xwatch.core.engine.serve import CONFIG_ENV as SERVE_CONFIG_ENV
from xwatch.core.engine.serve.config import ServeConfig
from xwatch.core.engine.worker import CONFIG_ENV
from xwatch.core.engine.worker.config import WorkerConfig
from xwatch.scenario import DEVICE_PLACEHOLDER, PORT_PLACEHOLDER, Workload, pin_env

#: Set in every workload's environment to xwatch's pid: processes a workload leaves
#: behind (a daemonized child that left its process group) are found by it at stop.
OWNER_ENV = "XWATCH_OWNER"
#: a command workload's request rate (requests/s), from its ``rate`` key
RATE_ENV = "XWATCH_RATE"

#: Where ``import xwatch`` resolves from: put first on the worker's PYTHONPATH
#: so that another interpreter (``python = ...``) finds the worker code.
PACKAGE_PARENT = str(Path(xwatch.__file__).resolve().parent.parent)


@dataclass(frozen=True)
class LaunchSpec:
    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str]  # the full environment of the child (event fd added at spawn)
    env_added: Mapping[str, str]  # what xwatch set or changed, for the snapshot
    cwd: str | None
    regex: str | None
    delay_s: float
    stdout: str = "pipe"  # "pty": stdout is a pseudo-terminal (C stdio line-buffers)

    def as_record(self) -> M.Launch:
        """How the process is started, as the snapshot records it (``start``: added
        once it started)."""
        return M.Launch(argv=list(self.argv), cwd=self.cwd, env=dict(self.env_added),
                        start_delay_s=self.delay_s, stdout=self.stdout)


def worker_config(w: Workload, top: bool = False) -> WorkerConfig:
    """The built-in worker's settings; ``top``: ``w`` is among the highest-priority
    workloads (its stream priority defaults to high)."""
    assert w.model is not None
    return WorkerConfig(
        stream_priority=w.stream_priority or ("high" if top else "normal"),
        name=w.name, model=w.model, batch=w.batch, input=w.input, seq_len=w.seq_len, task=w.task,
        dtype=w.dtype, device=w.device, rate=w.rate, arrival=w.arrival, burstiness=w.burstiness,
        requests=w.requests, warmup=w.warmup, threads=w.threads, stream=w.stream, seed=w.seed, train=w.train,
        amp=w.amp, prompt_len=w.prompt_len, new_tokens=w.new_tokens,
        decode=w.decode)


def server_pin(w: Workload, base_env: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """How server workload ``w``'s whole process tree is pinned: the environment to add
    and what ``{device}`` in its command becomes (the device as the server sees it).

    A copy (``--gpus``) is pinned by its own environment already (``Scenario.on_gpus``):
    ``cuda:0``. ``cuda:N``: GPU N in PCI bus order, seen as ``cuda:0``. ``auto``: the
    first GPU of xwatch's own CUDA_VISIBLE_DEVICES (HIP_VISIBLE_DEVICES) if set, else GPU
    0; ``{device}`` stays ``auto`` (a CPU-only machine serves on its CPU). ``cpu``: no GPU
    visible."""
    if w.gpu is not None:
        return {}, "cpu" if w.device == "cpu" else "cuda:0"
    if w.device == "cpu":
        return {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}, "cpu"
    if w.device == "auto":
        for var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
            first = base_env.get(var, "").split(",")[0].strip()
            if first:  # the user's own choice of GPUs: its first one, in its own order
                return {"CUDA_VISIBLE_DEVICES": first, "HIP_VISIBLE_DEVICES": first}, "auto"
        return pin_env(0), "auto"
    return pin_env(int(w.device.partition(":")[2] or 0)), "cuda:0"


def server_argv(w: Workload, device: str) -> tuple[str, ...]:
    """The server's command with its placeholders filled: ``{python}`` (a whole argument:
    xwatch's own interpreter), ``{device}`` and a fixed ``{port}`` anywhere in an argument;
    ``port = "auto"`` leaves ``{port}`` to the generator, which chooses it at the start."""
    assert w.server is not None
    out = []
    for a in w.server:
        if a == "{python}":  # the built-in scenarios' model maker
            out.append(sys.executable)
            continue
        a = a.replace(DEVICE_PLACEHOLDER, device)
        if not w.port_auto:
            a = a.replace(PORT_PLACEHOLDER, str(w.port))
        out.append(a)
    return tuple(out)


def serve_config(w: Workload, preload: str | None = None, device: str = "auto") -> ServeConfig:
    """The load generator's settings for server workload ``w`` (``preload``: the mode's
    LD_PRELOAD, given to the server alone; ``device``: what ``{device}`` becomes). Port
    0: "auto", chosen by the generator."""
    assert w.server is not None and w.rate is not None
    dataset = w.dataset
    if dataset is not None and w.cwd is not None:
        dataset = os.path.join(w.cwd, dataset)
    return ServeConfig(
        name=w.name, server=server_argv(w, device), rate=w.rate, cwd=w.cwd,
        port=0 if w.port_auto else int(w.port), ready=w.ready,
        ready_timeout_s=w.ready_timeout_s, api=w.api, served_model=w.served_model,
        arrival=w.arrival, burstiness=w.burstiness, requests=w.requests, warmup=w.warmup,
        seed=w.seed,
        prompt_len=w.prompt_len, new_tokens=w.new_tokens, range_ratio=w.range_ratio,
        dataset=dataset, ignore_eos=w.ignore_eos, preload=preload, drain_s=w.drain_s)


def build_launch(w: Workload, mode_env: Mapping[str, str] | None = None,
                 base_env: Mapping[str, str] | None = None, top: bool = False,
                 gate: bool = False) -> LaunchSpec:
    """The command line and environment for workload ``w``.

    ``mode_env`` (XSched's variables) is applied last, except that
    ``LD_LIBRARY_PATH``/``LD_PRELOAD`` in it are prepended to what is there.
    """
    env = dict(os.environ if base_env is None else base_env)
    added: dict[str, str] = {}

    def put(k: str, v: str) -> None:
        env[k] = v
        added[k] = v

    if w.model is not None:
        argv: tuple[str, ...] = (w.python or sys.executable, "-u", "-m", "xwatch.core.engine.worker")
        pp = env.get("PYTHONPATH")
        put("PYTHONPATH", PACKAGE_PARENT + (os.pathsep + pp if pp else ""))
        put(CONFIG_ENV, worker_config(w, top).to_json())
        if gate:  # warm, it waits for the others (protocol.GATE_ENV)
            put(GATE_ENV, "1")
        cwd = None
    elif w.server is not None:
        # the load generator (no GPU), which starts the server with this environment
        argv = (sys.executable, "-u", "-m", "xwatch.core.engine.serve")
        pp = env.get("PYTHONPATH")
        put("PYTHONPATH", PACKAGE_PARENT + (os.pathsep + pp if pp else ""))
        if gate:
            put(GATE_ENV, "1")
        cwd = w.cwd
    else:
        assert w.command is not None
        # "{python}" (a whole argument): xwatch's own interpreter, which has torch
        argv = tuple(sys.executable if a == "{python}" else a for a in w.command)
        cwd = w.cwd
        if w.rate:  # its open-loop rate (``honours_rate``: capacity varies it)
            put(RATE_ENV, f"{w.rate:.10g}")
    device = "auto"
    if w.server is not None:  # the server's whole tree, as --gpus pins a copy's
        pin, device = server_pin(w, env)
        for k, v in pin.items():
            put(k, v)
    put("PYTHONUNBUFFERED", "1")
    put(OWNER_ENV, str(os.getpid()))  # marks every descendant: none may outlive the phase
    for k, v in w.env.items():
        put(k, v)
    for k, v in (mode_env or {}).items():
        if k in ("LD_LIBRARY_PATH", "LD_PRELOAD") and env.get(k):
            sep = ":" if k == "LD_LIBRARY_PATH" else " "
            put(k, v + sep + env[k])
        else:
            put(k, v)
    env.pop(EVENT_FD_ENV, None)
    if w.server is not None:
        # an LD_PRELOAD of the mode (XSched on HIP) reaches the server alone, never the
        # generator's own Python; the rest of the environment is the server's as it is
        preload = env.pop("LD_PRELOAD", None) if "LD_PRELOAD" in (mode_env or {}) else None
        put(SERVE_CONFIG_ENV, serve_config(w, preload, device).to_json())
    return LaunchSpec(name=w.name, argv=argv, env=MappingProxyType(env),
                      env_added=MappingProxyType(added), cwd=cwd, regex=w.regex,
                      delay_s=w.start_delay_s, stdout=w.stdout_mode)
