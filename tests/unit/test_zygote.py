"""The fork server's rules (``worker.zygote``): which launches may be forked, and
when the server refuses to fork at all."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from xwatch.core.engine.worker import DEVICE_ENV, GPU_INIT_ENV, MPS_CLIENT_ENV
from xwatch.core.engine.worker.support import SUPPORT_ENV, named
from xwatch.core.engine.worker.zygote import (
    LAZY_ENV,
    WORKER_ENV,
    WORKER_MODULE,
    ForkServer,
    env_differences,
    fixed_env,
    is_lazy,
)
from xwatch.core.xsched.fork import SUPPORT, SUPPORT_VARS

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


def test_the_variables_that_may_differ_are_exactly_these() -> None:
    """The rule, spelled out: a change to this list is a decision (docs/gpus-start.md)."""
    device = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HIP_VISIBLE_DEVICES",
              "ROCR_VISIBLE_DEVICES"}
    mps = {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY", "CUDA_MPS_CLIENT_PRIORITY",
           "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"}
    assert set(DEVICE_ENV) == device
    assert set(MPS_CLIENT_ENV) == mps
    assert LAZY_ENV == WORKER_ENV | DEVICE_ENV | MPS_CLIENT_ENV
    # read at load or at import: never
    for k in ("LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
              "PYTORCH_CUDA_ALLOC_CONF", "GPU_DEVICE_ORDINAL", "HSA_CU_MASK", "CUDA_LAUNCH_BLOCKING",
              "XSCHED_POLICY", "XSCHED_CUDA_LIB", "XSCHED_HIP_LIB", "PATH"):
        assert not is_lazy(k), k
    # XSched 1.2's, read after the fork (its fork support: the scheduler switched to in
    # the child), where the environment names XSched's support, and there alone
    xsched = named(SUPPORT_VARS)
    assert xsched == (SUPPORT,) and named(BASE) == ()
    for k in ("XSCHED_SCHEDULER", "XSCHED_AUTO_XQUEUE", "XSCHED_AUTO_XQUEUE_PRIORITY",
              "XSCHED_AUTO_XQUEUE_LEVEL", "XSCHED_AUTO_XQUEUE_THRESHOLD",
              "XSCHED_AUTO_XQUEUE_BATCH_SIZE", "XSCHED_SCHEDULER_SUSPEND_SYNC_HWQ",
              "XSCHED_SCHEDULER_SUSPEND_WAIT_ALL", "XSCHED_SCHEDULER_SUSPEND_WAIT_IDLE",
              "XSCHED_CUDA_LV3_IMPL", "XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS"):
        assert is_lazy(k, xsched) and k not in LAZY_ENV and not is_lazy(k), k
    for k in ("XSCHED_POLICY", "XSCHED_CUDA_LIB", "LD_LIBRARY_PATH", SUPPORT_ENV):
        assert not is_lazy(k, xsched), k


def test_a_mode_whose_support_is_not_named_forks_only_alike() -> None:
    """Without its fork support named (a native server's environment), XSched's settings
    must equal the server's; the support named on one side only is a difference."""
    server = {**BASE, "XSCHED_AUTO_XQUEUE_PRIORITY": "0"}
    env = {**server, "XSCHED_AUTO_XQUEUE_PRIORITY": "1"}
    assert env_differences(server, env) == ["XSCHED_AUTO_XQUEUE_PRIORITY"]
    assert env_differences({**server, **SUPPORT_VARS}, {**env, **SUPPORT_VARS}) == []
    assert env_differences(server, {**env, **SUPPORT_VARS}) == [
        "XSCHED_AUTO_XQUEUE_PRIORITY", SUPPORT_ENV]


def test_every_mps_client_variable_xwatch_sets_may_differ() -> None:
    from xwatch.core.mps.env import mps_env
    from xwatch.scenario import parse_scenario

    s = parse_scenario({"workload": [{"name": "high", "priority": "high", "model": "resnet18",
                                      "mps": {"active_thread_percentage": 50,
                                              "pinned_mem_limit": "0=8G"}}]})
    env = mps_env(s.workloads[0], "/p", "/l", True)
    assert set(env) == MPS_CLIENT_ENV


@pytest.mark.parametrize(("differs", "forks"), [
    ({"CUDA_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "1"}, True),  # another GPU's copy
    ({"CUDA_DEVICE_ORDER": "FASTEST_FIRST"}, True),
    ({"ROCR_VISIBLE_DEVICES": "GPU-4b2c1a9f"}, True),
    ({"CUDA_MPS_CLIENT_PRIORITY": "1", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30"}, True),
    ({"XWATCH_WORKER_CONFIG": '{"name": "low@1"}'}, True),
    ({"LD_LIBRARY_PATH": "/xsched/lib"}, False),  # XSched's shim on CUDA
    ({"LD_PRELOAD": "/xsched/lib/libshimhip.so"}, False),  # ... and on HIP
    # XSched's settings read after the fork (the shim switched to per child, each XQueue
    # reading its own at creation: issue 58 goal 4); those read at load are not
    ({"XSCHED_AUTO_XQUEUE_PRIORITY": "1", "XSCHED_AUTO_XQUEUE_THRESHOLD": "2"}, True),
    ({"XSCHED_SCHEDULER": "GLB", "XSCHED_SCHEDULER_SUSPEND_WAIT_ALL": "ON"}, True),
    ({"XSCHED_CUDA_LV3_IMPL": "TSG", "XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS": "ON"}, True),
    ({"XSCHED_POLICY": "HPF"}, False),
    ({"XSCHED_CUDA_LIB": "/usr/lib/libcuda.so"}, False),
    ({"OMP_NUM_THREADS": "1"}, False),  # read at import
    ({"GPU_DEVICE_ORDINAL": "1"}, False),  # never set by xwatch: not allowed
    ({"CUDA_VISIBLE_DEVICES": "1", "PYTHONPATH": "/y"}, False),
])
def test_which_differences_allow_a_fork(differs: dict[str, str], forks: bool) -> None:
    """A server whose environment names XSched's fork support (XSched's own, or a native
    one: for the other rows it makes no difference)."""
    server = {**BASE, "CUDA_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "0",
              "CUDA_DEVICE_ORDER": "PCI_BUS_ID", **SUPPORT_VARS}
    env = {**server, **differs}
    fs = ForkServer(["resnet18"], server, "/dev/null")
    why = fs.why_not(ARGV, env)
    assert (why is None) == forks, why
    if not forks:  # the launch's 'exec (...)' names exactly what differs, nothing lazy
        wrong = sorted(k for k in differs if not is_lazy(k, named(env)))
        assert why == f"its environment differs from the fork server's in {', '.join(wrong)}"
        assert env_differences(server, env) == wrong


def test_a_variable_set_on_one_side_only_is_a_difference_too() -> None:
    assert env_differences({**BASE, "OMP_NUM_THREADS": "4"}, {"PATH": "/usr/bin",
                                                              "PYTHONPATH": "/x"}) == \
        ["OMP_NUM_THREADS"]
    assert env_differences(BASE, {**BASE, "MKL_NUM_THREADS": "1"}) == ["MKL_NUM_THREADS"]
    assert env_differences({**BASE, "CUDA_VISIBLE_DEVICES": "0"}, BASE) == []
    many = {f"V{i}": "1" for i in range(6)}
    why = ForkServer(["resnet18"], BASE, "/dev/null").why_not(ARGV, {**BASE, **many})
    assert why == "its environment differs from the fork server's in V0, V1, V2, V3 and 2 more"


def test_gpu_init_env_is_what_the_c_library_holds() -> None:
    """What the GPU runtime would read: a write that reached only Python's copy (a
    fork server's bug) is not seen."""
    prog = ("import os\nfrom xwatch.core.engine.worker.models import gpu_init_env\n"
            "os.environ['CUDA_VISIBLE_DEVICES'] = '3'\n"
            "os.environ._data[b'HIP_VISIBLE_DEVICES'] = b'5'\n"  # Python's copy alone
            "print(sorted(gpu_init_env().items()))")
    env = {k: v for k, v in __import__("os").environ.items() if k not in GPU_INIT_ENV}
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                         check=True, timeout=60, env=env).stdout.strip()
    assert out == "[('CUDA_VISIBLE_DEVICES', '3')]"


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


def _switch(env: dict[str, str], preload: str) -> str:
    prog = ("from xwatch.core.xsched.fork import xsched_switch\n"
            "xs, why = xsched_switch()\nprint(why if why else 'ok' if xs else 'none')")
    return subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                          check=True, timeout=60, env={**env, "LD_PRELOAD": preload}
                          ).stdout.strip()


def test_xsched_loaded_at_import_forks_only_with_the_app_managed_scheduler(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A server whose imports loaded XSched (torch's cuBLASLt opens the shim) forks only
    where XSched took the app-managed scheduler at load (no thread, no channel) and its
    children can switch to theirs (``XHintSetScheduler``, numbered by the install)."""
    from tests.helpers.fake_xsched import have_cc, make_install

    if not have_cc():
        pytest.skip("no C compiler")
    inst = make_install(tmp_path / "xs", platforms=("cuda",), xserver=False)
    agent = str(inst / "lib" / "libpreempt.so")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.getcwd()}
    assert _switch(env, agent) == "ok"
    assert _switch(env, "") == "none"
    got = _switch({**env, "XSCHED_POLICY": "HPF"}, agent)
    assert "XSCHED_POLICY set" in got
    (inst / "include" / "xsched" / "types.h").write_text("typedef int XPolicyType;\n")
    assert "does not number the schedulers" in _switch(env, agent)


@pytest.mark.parametrize("leave", ["", "1", "0"])
def test_a_worker_leaves_xsched_unless_told_not_to(tmp_path, leave: str) -> None:  # type: ignore[no-untyped-def]
    """Before ``os._exit`` a worker under the global scheduler leaves it (XSched's exit
    path: xserver drops its XQueues at once), by default; ``XWATCH_XSCHED_LEAVE=0``:
    nothing (the old exit, which stalled xserver)."""
    import json

    from tests.helpers.fake_xsched import have_cc, make_install

    if not have_cc():
        pytest.skip("no C compiler")
    inst = make_install(tmp_path / "xs", platforms=("cuda",), xserver=False)
    prog = ("import os\nfrom xwatch.core.xsched.fork import leave_xsched\n"
            "leave_xsched()\nprint(os.getpid())")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.getcwd(), "XSCHED_SCHEDULER": "GLB",
           "XSCHED_AUTO_XQUEUE": "ON", **({"XWATCH_XSCHED_LEAVE": leave} if leave else {}),
           "LD_PRELOAD": str(inst / "lib" / "libpreempt.so")}
    pid = int(subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                             check=True, timeout=60, env=env).stdout)
    calls = inst / "run" / "calls.jsonl"
    got = [json.loads(x) for x in calls.read_text().splitlines()] if calls.exists() else []
    left = [c for c in got if c["call"] == "leave"]  # ("exit": the fake's normal exit)
    assert (left == [{"call": "leave", "pid": pid}]) == (leave != "0"), got
    assert (inst / "run" / f"{pid}.json").exists() == (leave == "0")


def test_a_launch_waits_for_an_importing_server_then_forks_or_says_why(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``ready_for``: a launch that only XSched's server's imports keep from being forked
    waits for them (issue 58 goal 4: no interpreter exec'd beside the server), at most
    until ``IMPORT_WAIT_S`` after the server's start; a launch that could never be forked
    by it does not wait."""
    import asyncio
    import time

    from xwatch.core.engine.worker import zygote

    async def go() -> None:
        loop = asyncio.get_running_loop()
        native = ForkServer(["resnet18"], BASE, "/dev/null")  # its launches never wait
        native._ready, native._started = loop.create_future(), time.monotonic()
        assert await native.ready_for(ARGV, BASE) == zygote.IMPORTING
        fs = ForkServer(["resnet18"], BASE, "/dev/null", wait=True)  # XSched's
        fs._ready, fs._started = loop.create_future(), time.monotonic()
        assert fs.why_not(ARGV, BASE) == zygote.IMPORTING
        t0 = time.monotonic()  # another interpreter's launch: no wait
        assert fs.why_not(("/other/python", *ARGV[1:]), BASE) is not None
        assert "OMP_NUM_THREADS" in (await fs.ready_for(ARGV, {**BASE, "OMP_NUM_THREADS": "1"})
                                     or "")
        assert time.monotonic() - t0 < 0.5
        waiter = asyncio.ensure_future(fs.ready_for(ARGV, BASE))
        await asyncio.sleep(0.2)
        assert not waiter.done()  # waiting for the imports
        fs._ready.set_result(None)
        assert await waiter is None  # then forked
        # the smoke probe is judged as its own module
        smoke = (sys.executable, "-u", "-m", zygote.SMOKE_MODULE)
        assert fs.why_not(smoke, BASE, zygote.SMOKE_MODULE) is None
        assert fs.why_not(smoke, BASE) is not None
        # a server importing for longer than IMPORT_WAIT_S: exec'd, and said
        monkeypatch.setattr(zygote, "IMPORT_WAIT_S", 0.3)
        slow = ForkServer(["resnet18"], BASE, "/dev/null", wait=True)
        slow._ready, slow._started = loop.create_future(), time.monotonic()
        assert await slow.ready_for(ARGV, BASE) == f"{zygote.IMPORTING} after 0.3 s"

    asyncio.run(go())


def test_a_probe_without_a_fork_server_is_exec_d() -> None:
    """No fork server (``XWATCH_FORK_SERVER=0``): the preflight execs its probe, as
    before."""
    import asyncio

    from xwatch.core.engine.supervisor import Supervisor
    from xwatch.core.engine.worker.zygote import SMOKE_MODULE
    from xwatch.core.xsched.preflight import fork_from

    fs = Supervisor().server_for(BASE)
    assert fs is None
    got = asyncio.run(fork_from(fs, sys.executable, SMOKE_MODULE, ("cpu",), BASE))
    assert got == (None, "exec")


def test_an_install_whose_scheduler_cannot_be_switched_gets_no_xsched_fork_server(
        tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``switchable``, read from the install's files without loading XSched: 1.2's
    ``XHintSetScheduler`` and its numbered ``XSchedulerType``; else XSched's copies are
    exec'd, with no server started (and waited for) only to say it cannot fork."""
    from tests.helpers.fake_xsched import have_cc, make_install
    from xwatch.core.xsched.fork import switchable

    if not have_cc():
        pytest.skip("no C compiler")
    inst = make_install(tmp_path / "xs", platforms=("cuda",), xserver=False)
    assert switchable(inst / "lib") is None
    agent = inst / "lib" / "libpreempt.so"
    agent.write_bytes(agent.read_bytes().replace(b"XHintSetScheduler", b"XHintSetSchedulex"))
    assert "has no XHintSetScheduler" in (switchable(inst / "lib") or "")
    (inst / "include" / "xsched" / "types.h").write_text("typedef int XPolicyType;\n")
    assert "does not number the schedulers" in (switchable(inst / "lib") or "")
    assert "cannot read" in (switchable(tmp_path / "nowhere") or "")
