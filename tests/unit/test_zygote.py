"""The fork server's rules (``worker.zygote``): which launches may be forked, and
when the server refuses to fork at all."""

from __future__ import annotations

import subprocess
import sys

from xwatch.core.engine.worker.zygote import LAZY_ENV, WORKER_MODULE, ForkServer, fixed_env

ARGV = (sys.executable, "-u", "-m", WORKER_MODULE)
BASE = {"PATH": "/usr/bin", "PYTHONPATH": "/x", "OMP_NUM_THREADS": "4"}


def test_only_variables_read_after_the_imports_may_differ() -> None:
    env = {**BASE, "XWATCH_WORKER_CONFIG": "{}", "CUDA_MPS_PIPE_DIRECTORY": "/p",
           "CUDA_VISIBLE_DEVICES": "1", "XWATCH_OWNER": "1"}
    assert fixed_env(env) == BASE
    assert {"LD_PRELOAD", "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "PYTHONPATH"}.isdisjoint(LAZY_ENV)
    fs = ForkServer(["resnet18"], {**BASE, "CUDA_MPS_PIPE_DIRECTORY": "/q"}, "/dev/null")
    assert fs.why_not(ARGV, env) is None
    # XSched's shim is preloaded at exec: never forked
    why = fs.why_not(ARGV, {**env, "LD_PRELOAD": "/xsched/lib/libshimcuda.so"})
    assert why is not None and "LD_PRELOAD" in why
    why = fs.why_not(ARGV, {**env, "OMP_NUM_THREADS": "1"})
    assert why is not None and "OMP_NUM_THREADS" in why
    # another interpreter, or a command workload
    assert fs.why_not(("/opt/rocm/python", *ARGV[1:]), env) is not None
    assert fs.why_not(("sh", "-c", "x"), env) is not None


def _hazard(code: str) -> str:
    prog = f"{code}\nfrom xwatch.core.engine.worker.zygote import fork_hazard\nprint(fork_hazard())"
    return subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()


def test_the_server_refuses_to_fork_with_a_python_thread_but_not_for_native_pools() -> None:
    # numpy's OpenBLAS pool (native threads, shut down around a fork) is no hazard
    assert _hazard("import numpy") == "None"
    got = _hazard("import threading, time\n"
                  "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()")
    assert "2 Python threads" in got


FAKE_CUDA = r"""
#include <stdlib.h>
static int inited = 0;
int cuInit(unsigned flags) { inited = 1; return 0; }
int cuDeviceGetCount(int *n) { if (!inited) return 3; *n = 1; return 0; }
"""


def test_a_loaded_but_uninitialized_cuda_driver_is_no_hazard(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """What a CUDA build of torch does at import (seen on the H100: libcuda mapped, no
    cuInit): a fork is safe until cuInit; after it, never."""
    import shutil

    import pytest

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "cuda.c"
    src.write_text(FAKE_CUDA)
    lib = tmp_path / "libcuda.so.1"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    load = f"import ctypes\nlib = ctypes.CDLL({str(lib)!r})"
    assert _hazard(load) == "None"
    got = _hazard(load + "\nlib.cuInit(0)")
    assert got.startswith("the CUDA driver was initialized during the imports") and \
        str(lib) in got
