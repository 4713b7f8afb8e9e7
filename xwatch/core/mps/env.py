"""The environment MPS mode gives each workload: the private daemon's pipe and log
folders, and its client settings (scenario overrides, else by priority)."""

from __future__ import annotations

from xwatch.scenario import Workload

#: CUDA_MPS_CLIENT_PRIORITY by priority: 0 normal, 1 below normal
DEFAULT_PRIORITY = {"high": 0, "low": 1}


def client_params(w: Workload, top: bool) -> dict[str, int | str | None]:
    """Client priority (highest-priority workloads 0, the rest 1 unless set), SM
    share and pinned memory limit."""
    m = w.mps
    return {"priority": m.priority if m.priority is not None else (0 if top else 1),
            "active_thread_percentage": m.active_thread_percentage,
            "pinned_mem_limit": m.pinned_mem_limit}


def mps_env(w: Workload, pipe_dir: str, log_dir: str, top: bool) -> dict[str, str]:
    p = client_params(w, top)
    env = {"CUDA_MPS_PIPE_DIRECTORY": pipe_dir, "CUDA_MPS_LOG_DIRECTORY": log_dir,
           "CUDA_MPS_CLIENT_PRIORITY": str(p["priority"])}
    if p["active_thread_percentage"] is not None:
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(p["active_thread_percentage"])
    if p["pinned_mem_limit"] is not None:
        env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = str(p["pinned_mem_limit"])
    env.update(w.mps.env)
    return env
