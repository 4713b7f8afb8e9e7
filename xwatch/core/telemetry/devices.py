"""How many GPUs this machine has, without torch: NVML, then amdsmi, then the
device files the drivers make. Used to refuse ``--gpus`` and ``cuda:N`` that cannot
be honoured before anything starts."""

from __future__ import annotations

import glob
import os
import re


def _nvml() -> int | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _amdsmi() -> int | None:
    from xwatch.core.telemetry.amd import import_amdsmi

    try:
        amdsmi = import_amdsmi()
    except BaseException:  # its import raises KeyError without libamd_smi.so
        return None
    try:
        amdsmi.amdsmi_init()
        return len(amdsmi.amdsmi_get_processor_handles())
    except Exception:
        return None
    finally:
        try:
            amdsmi.amdsmi_shut_down()
        except Exception:
            pass


def _device_files() -> int:
    nv = [p for p in glob.glob("/dev/nvidia*") if re.fullmatch(r"/dev/nvidia\d+", p)]
    kfd = 0
    for node in glob.glob("/sys/class/kfd/kfd/topology/nodes/*/gpu_id"):
        try:
            with open(node) as f:
                kfd += f.read().strip() not in ("", "0")
        except OSError:
            continue
    return len(nv) + kfd


def gpu_count() -> tuple[int | None, str]:
    """(number of GPUs or None when it cannot be told, how it was counted)."""
    n = _nvml()
    if n:
        return n, "NVML"
    a = _amdsmi()
    if a:
        return a, "amdsmi"
    files = _device_files()
    if files:
        return files, "device files /dev/nvidiaN, /sys/class/kfd"
    if n == 0 or a == 0 or (not os.path.exists("/dev/nvidiactl") and not os.path.exists("/dev/kfd")):
        return 0, "no NVIDIA or AMD GPU found: NVML and amdsmi see none, no /dev/nvidia* or /dev/kfd"
    return None, "unknown"
