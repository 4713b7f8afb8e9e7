"""A real local Ray cluster of CPU boxes for the fleet's tests and benchmark, in a
network namespace that has only loopback (so Ray binds 127.0.0.1 and nothing leaves
the machine): ``python -m xwatch.testing.fleet.cluster N`` starts N nodes (each with the
``xwatch_box`` resource), prints one JSON line (the address, its pid, each node's
raylet pid), then obeys stdin: ``kill I`` removes node I at once (a lost box);
end of input or SIGTERM stops the cluster (``ray.cluster_utils.Cluster.shutdown``).

``Holder`` starts one under ``unshare -n`` (then ``ip link set lo up``) and runs
commands in its namespace (``nsenter --net``); ``netns_refusal`` says why that cannot
work here (not root, no unshare), for a test's skip.

Ray's processes of this machine import amdsmi through Ray's AMD probe; where amdsmi is
installed without its library (the test extra on a machine without ROCm) Ray cannot
import (``core/fleet/connect.FIX_AMDSMI``). The cluster's processes then run with
``tests``-only ``NO_AMDSMI`` first on their path: a package named amdsmi that raises
ImportError, as if it were not installed, the fix the error message gives a user.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from xwatch.core.fleet.connect import BOX_RESOURCE

ROOT = Path(__file__).resolve().parents[3]
NO_AMDSMI = ROOT / "tests" / "data" / "no_amdsmi"
FAKE_NVML = ROOT / "tests" / "data" / "fake_nvml"
#: Ray's health checks, fast: a killed node is declared dead within about 2 s
SYSTEM = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500,
          "health_check_timeout_ms": 500, "health_check_failure_threshold": 3}


def netns_refusal() -> str | None:
    """Why a loopback-only network namespace cannot be made here (None: it can)."""
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        return "unshare/nsenter not installed"
    r = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return f"unshare -n is not permitted here: {r.stderr.strip() or r.returncode}"
    return None


def cluster_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the cluster and of every command run against it."""
    path = [str(NO_AMDSMI), str(FAKE_NVML), str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p),
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_DEDUP_LOGS": "0"}
    return {**env, **(extra or {})}


class Holder:
    """A cluster of ``n`` boxes in a namespace of its own (see the module)."""

    def __init__(self, n: int, env: dict[str, str] | None = None, timeout: float = 90) -> None:
        self.env = cluster_env(env)
        self.proc = subprocess.Popen(
            ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" -m '
             'xwatch.testing.fleet.cluster "$1"', sys.executable, str(n)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=self.env,
            start_new_session=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=timeout)
            raise RuntimeError(f"the cluster did not start (exit {self.proc.returncode})")
        info: dict[str, Any] = json.loads(line)
        self.address: str = info["address"]
        self.raylets: list[int] = info["raylets"]
        self.nodes: list[str] = info["nodes"]  # each node's Ray node id

    def run(self, argv: list[str], timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
        """``argv`` in the cluster's namespace, to its end."""
        return subprocess.run(self.argv(argv), env=self.env, capture_output=True, text=True,
                              timeout=timeout, **kw)

    def holds(self, pid: int) -> bool:
        """Whether process ``pid`` runs in this cluster's network namespace (another
        cluster's processes on the same machine, another test run's, are not its)."""
        try:
            return os.readlink(f"/proc/{pid}/ns/net") == os.readlink(
                f"/proc/{self.proc.pid}/ns/net")
        except OSError:
            return False

    def popen(self, argv: list[str], **kw: Any) -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(argv), env=self.env, text=True, **kw)

    def argv(self, argv: list[str]) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.proc.pid}/ns/net", *argv]

    def kill(self, i: int) -> None:
        """Node ``i`` removed at once (its raylet and its workers killed)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"kill {i}\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == f"killed {i}"

    def stop(self) -> None:
        """The cluster shut down (its processes gone), the holder ended."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _serve(n: int) -> None:
    from ray.cluster_utils import Cluster

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    box = {"num_cpus": 2, "num_gpus": 0, "resources": {BOX_RESOURCE: 1},
           "include_dashboard": False, "node_ip_address": "127.0.0.1"}
    t0 = time.monotonic()
    cluster: Any = Cluster(initialize_head=True, head_node_args={**box, "_system_config": SYSTEM})
    nodes = [cluster.head_node] + [cluster.add_node(wait=False, **{
        k: v for k, v in box.items() if k != "include_dashboard"}) for _ in range(n - 1)]
    cluster.wait_for_nodes()

    def stop(*_: object) -> None:
        cluster.shutdown()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    raylets = [nd.all_processes["raylet"][0].process.pid for nd in nodes]
    print(json.dumps({"address": cluster.address, "pid": os.getpid(), "raylets": raylets,
                      "nodes": [nd.node_id for nd in nodes],
                      "seconds": round(time.monotonic() - t0, 1)}), flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "kill":
            cluster.remove_node(nodes[int(arg)], allow_graceful=False)
            print(f"killed {arg}", flush=True)
    stop()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
