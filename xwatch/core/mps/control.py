"""Talking to ``nvidia-cuda-mps-control``: where it is, one command at a time over
its stdin (as its man page documents), and what must hold before a phase may start.

A control daemon is reached through ``CUDA_MPS_PIPE_DIRECTORY``; xwatch passes its
own private folder, so it never talks to a system-wide daemon, unless it joins one
that another session runs (``[mps] join``): then that daemon's folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from xwatch.core.mps import MpsError
from xwatch.core.mps.neighbours import MpsDaemon, find_mps_daemons
from xwatch.core.procs import own_pids, process, user_name
from xwatch.core.schedulers import MPS_TOOL
from xwatch.scenario import Scenario

#: the control tool, and the server it starts for a client's GPU
TOOL, SERVER = MPS_TOOL, "nvidia-cuda-mps-server"
#: where NVIDIA's packages and containers put the tool when it is not on PATH
EXTRA_DIRS = ("/usr/local/nvidia/bin", "/usr/bin", "/usr/local/cuda/bin")
NO_DAEMON = "Cannot find MPS control daemon process"
TIMEOUT_S = 10.0


def find_tool(explicit: str | None = None) -> str | None:
    """The control tool: ``XWATCH_MPS_CONTROL`` (tests, odd installs), PATH, then the
    usual driver folders."""
    cand = explicit or os.environ.get("XWATCH_MPS_CONTROL")
    if cand:
        return cand if os.access(cand, os.X_OK) else None
    found = shutil.which(TOOL)
    if found:
        return found
    for d in EXTRA_DIRS:
        p = Path(d) / TOOL
        if os.access(p, os.X_OK):
            return str(p)
    return None


def command(tool: str, pipe_dir: str, line: str, timeout_s: float = TIMEOUT_S) -> str:
    """Send one command to the daemon behind ``pipe_dir``; its answer (stripped).
    Raises MpsError when no daemon answers."""
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": pipe_dir}
    try:
        out = subprocess.run([tool], input=line + "\n", capture_output=True, text=True,
                             env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise MpsError(f"{tool}: no answer to {line!r} within {timeout_s:g} s "
                       f"(pipe directory {pipe_dir})")
    except OSError as e:
        raise MpsError(f"cannot run {tool}: {e}")
    text = (out.stdout + out.stderr).strip()
    if NO_DAEMON in text or out.returncode != 0:
        raise MpsError(f"{tool} {line!r}: {text or f'exit {out.returncode}'} (pipe directory "
                       f"{pipe_dir})")
    return out.stdout.strip()


def pids(answer: str) -> list[int]:
    """PIDs in a ``get_server_list`` / ``get_client_list`` answer (one per line)."""
    return [int(x) for x in answer.split() if x.strip().isdigit()]


def foreign_servers(own: set[int] = frozenset()) -> list[tuple[int, str]]:  # type: ignore[assignment]
    """MPS servers on this host that are not ours: (pid, command line)."""
    try:
        import psutil
    except ImportError:
        return []
    out = []
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            name = p.info.get("name") or ""
            if name.startswith(SERVER) and p.pid not in own:
                out.append((p.pid, " ".join(p.info.get("cmdline") or [name])))
        except Exception:
            continue
    return out


def other_daemon(tool: str, scen: Scenario) -> MpsDaemon | None:
    """The MPS control daemon another session runs on this machine (any user's) that
    serves a GPU ``scen`` uses, to join; an MpsError saying what to do unless the
    scenario joins one (or it cannot be joined: its pipe directory unknown)."""
    gpus = scen.gpu_indices()
    found = [d for d in find_mps_daemons(tool, own_pids()) if d.serves(gpus)]
    if not found:
        return None
    d = found[0]
    on = ", ".join(map(str, sorted(gpus)))
    if not scen.mps.join:
        raise MpsError(
            f"{d.describe()}. It serves GPU {on}, which this session uses: a private daemon "
            "beside it would start a second MPS server on the same GPU, and neither "
            "session's numbers would be those of one MPS. Stop it (`echo quit | "
            f"CUDA_MPS_PIPE_DIRECTORY={d.pipe_dir or '<its folder>'} {TOOL}` as "
            f"{d.proc.user}), or join it: --join-mps (or [mps] join = true in {scen.source}) "
            "makes the workloads its clients and never stops it",
            title="MPS control daemon already running")
    if d.pipe_dir is None:
        raise MpsError(f"cannot join {d.describe()}: its pipe directory is unknown (its "
                       f"environment is {d.proc.user}'s, and no {TOOL}.pid of it is in the "
                       "default folder); run as that user, or stop it",
                       title="MPS daemon cannot be joined")
    return d


def check_joinable(tool: str, daemon: MpsDaemon) -> list[int]:
    """The servers of a daemon to join (it must answer); an MpsError when one runs as
    another user: the daemon serves one user at a time, so this session's clients would
    wait until that user's clients are done (NVIDIA's man page)."""
    assert daemon.pipe_dir is not None
    servers = pids(command(tool, daemon.pipe_dir, "get_server_list"))
    for s in servers:
        p = process(s)
        if p is not None and p.uid != os.getuid():
            raise MpsError(f"cannot join {daemon.describe()}: its MPS server (pid {s}) runs "
                           f"as {user_name(p.uid)}, and the daemon serves one user at a time: "
                           f"this session's clients would wait until {user_name(p.uid)}'s "
                           "are done", title="MPS daemon serves another user")
    return servers


def check_can_run(tool: str | None, compute_modes: dict[int, str] | None,
                  join: bool = False) -> None:
    """Titled errors for what stops MPS before anything starts: no tool, no NVIDIA
    GPU, a GPU whose compute mode refuses MPS, an MPS server already serving (but one
    of a daemon this session ``join``s)."""
    if tool is None:
        raise MpsError(f"MPS mode needs {TOOL}, which was found neither on PATH nor in "
                       f"{', '.join(EXTRA_DIRS)}. Install NVIDIA's driver utilities (MPS ships "
                       "with the driver), or set XWATCH_MPS_CONTROL=/path/to/" + TOOL,
                       title="MPS control tool missing")
    if compute_modes is not None:
        if not compute_modes:
            raise MpsError("MPS mode needs an NVIDIA GPU, and NVML lists none here. MPS does "
                           "not exist on AMD GPUs (the nearest knob there is HSA_CU_MASK) or "
                           "on a CPU", title="No NVIDIA GPU for MPS")
        bad = {i: m for i, m in compute_modes.items() if m == "prohibited"}
        if bad:
            raise MpsError("GPU " + ", ".join(map(str, bad)) + " is in compute mode "
                           "PROHIBITED, which refuses every CUDA context, MPS included. "
                           "Set it back with `nvidia-smi -i N -c DEFAULT` (or "
                           "EXCLUSIVE_PROCESS, which MPS supports)",
                           title="GPU compute mode refuses MPS")
    other = foreign_servers() if not join else []
    if other:
        pid, cmd = other[0]
        raise MpsError(f"an MPS server is already running (pid {pid}: {cmd}); its clients "
                       "and xwatch's would share the GPU under two schedulers and the "
                       "numbers would be neither. Stop it first (`echo quit | "
                       f"{TOOL}` with its CUDA_MPS_PIPE_DIRECTORY), or run where none is",
                       title="MPS server already running")


def nvml_compute_modes() -> dict[int, str] | None:
    """{GPU index: compute mode} from NVML; None when NVML cannot be asked (then the
    daemon itself is the test)."""
    try:
        import pynvml
    except ImportError:
        return None
    names = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}
    try:
        pynvml.nvmlInit()
    except Exception:
        return {}
    try:
        out = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            try:
                out[i] = names.get(int(pynvml.nvmlDeviceGetComputeMode(h)), "unknown")
            except Exception:
                out[i] = "unknown"
        return out
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
