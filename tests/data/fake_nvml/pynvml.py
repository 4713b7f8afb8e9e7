"""A fake ``pynvml`` (nvidia-ml-py) for subprocess tests and benchmarks: the calls
xwatch makes, with the real names, argument order and return shapes.

Two GPUs unless ``FAKE_NVML_GPUS`` says how many (1-16): device 0 is at PCI bus
0x19 (util 10%), device 1 at 0x3b (util 90%), device k > 1 at bus 0x3b + 0x0c (k - 1)
(util (10 + 37 k) mod 100): buses in index order, as NVML numbers them."""

import os
from collections import namedtuple

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1


class NVMLError(Exception):
    pass


_Util = namedtuple("_Util", "gpu memory")
_Mem = namedtuple("_Mem", "total free used")
_Pci = namedtuple("_Pci", "busId")
_N = max(1, min(16, int(os.environ.get("FAKE_NVML_GPUS", "2") or 2)))
_BUS = {0: b"00000000:19:00.0", 1: b"00000000:3B:00.0"}
_UTIL = {0: 10, 1: 90}
for _k in range(2, _N):
    _BUS[_k] = b"00000000:%02X:00.0" % (0x3B + 0x0C * (_k - 1))
    _UTIL[_k] = (10 + 37 * _k) % 100
_BUS = {k: v for k, v in _BUS.items() if k < _N}


def nvmlInit():
    pass


def nvmlShutdown():
    pass


def nvmlDeviceGetCount():
    return _N


def nvmlDeviceGetHandleByIndex(i):
    if i not in _BUS:
        raise NVMLError("Invalid Argument")
    return i


def nvmlSystemGetDriverVersion():
    return "580.95.05"


def nvmlDeviceGetName(h):
    return b"Fake H200"


def nvmlDeviceGetPciInfo(h):
    return _Pci(_BUS[h])


def nvmlDeviceGetUtilizationRates(h):
    return _Util(_UTIL[h], 5)


def nvmlDeviceGetMemoryInfo(h):
    return _Mem(141 * 2**30, 140 * 2**30, (1 + h) * 2**30)


def nvmlDeviceGetPowerUsage(h):
    return 300000 + 1000 * h


def nvmlDeviceGetTemperature(h, sensor):
    return 40 + h


def nvmlDeviceGetClockInfo(h, clock):
    return 1980


def nvmlDeviceGetComputeRunningProcesses(h):
    return []


def nvmlDeviceGetProcessUtilization(h, last_seen):
    raise NVMLError("Not Found")
