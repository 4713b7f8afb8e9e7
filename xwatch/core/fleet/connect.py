"""Ray itself: its one import (``import_ray``, with the amdsmi trap turned into a titled
error), the connection to a cluster (``connect``) and its boxes (``discover``: the
alive nodes with GPUs or the custom resource ``xwatch_box``)."""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass
from typing import Any

from xwatch.errors import UsageError, XwatchError

#: the custom resource that makes a node without GPUs a box (the demo's CPU boxes)
BOX_RESOURCE = "xwatch_box"

FIX_AMDSMI = (
    "Ray probes the amdsmi package for AMD GPUs when it is imported, and it catches only "
    "ImportError; here amdsmi is installed but its library libamd_smi.so is not, so "
    "amdsmi raises KeyError('libamd_smi.so') and Ray cannot start, on this machine and "
    "in every Ray process of this node. Fix one of: install ROCm's amd-smi library "
    "(the amd-smi-lib package) or point ROCM_PATH at the ROCm folder that holds "
    "lib/libamd_smi.so; or, on a machine without AMD GPUs, remove the package from "
    "xwatch's environment (pip uninstall amdsmi: xwatch's AMD telemetry needs it only "
    "where ROCm is). Ray offers no switch that turns its AMD probe off (docs/fleet.md)")


class RayError(XwatchError):
    """Ray cannot be used here, or the cluster cannot serve the plan."""


def _amdsmi_broken(err: BaseException) -> bool:
    """Whether ``err`` (raised by ``import ray``) is amdsmi's missing library."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, KeyError) and "libamd_smi" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def import_ray() -> Any:
    """``import ray``, the one way xwatch imports it: a missing package and a broken
    amdsmi (its library absent: ``FIX_AMDSMI``) are titled errors that say what to do.
    amdsmi's own printout (where it looked for its library) stays out of the terminal."""
    if "ray" in sys.modules:
        return sys.modules["ray"]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            import ray
    except ImportError as e:
        if getattr(e, "name", None) == "ray":
            raise RayError("--ray needs Ray: pip install 'xwatch[ray]' (or pip install "
                           "'ray[default]>=2.60')", title="Ray not installed") from None
        raise
    except KeyError as e:
        if _amdsmi_broken(e):
            for name in [m for m in sys.modules if m == "ray" or m.startswith("ray.")]:
                del sys.modules[name]  # a half-imported Ray must not be found next time
            raise RayError(FIX_AMDSMI, title="Ray cannot import: amdsmi without its "
                                             "library") from None
        raise
    return ray


@dataclass(frozen=True)
class Box:
    """One box of the cluster: its Ray node, host, GPUs (Ray's ``GPU`` resource) and
    whether it is a box by the ``xwatch_box`` resource alone (a CPU box)."""

    node_id: str
    host: str
    address: str
    gpus: int

    @property
    def name(self) -> str:
        """``host/1a2b3c``: the host and the node id's first 6 characters."""
        return f"{self.host}/{self.node_id[:6]}"


def connect(address: str) -> Any:
    """Join the cluster at ``address`` (``auto``: the one ``ray start`` runs on this
    machine; ``ray://HOST:10001``: Ray Client), quietly; Ray's module."""
    ray = import_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR",
                     include_dashboard=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise RayError(f"--ray {address}: cannot join the cluster: {str(e).rstrip('.')}. Start one "
                           "with `ray start --head` (docs/fleet.md), or give its address "
                           "(HOST:6379)", title="No Ray cluster") from None
    return ray


def discover(ray: Any) -> list[Box]:
    """The cluster's boxes, alive nodes with GPUs or ``xwatch_box``, by host and node id."""
    boxes = []
    for n in ray.nodes():
        res = n.get("Resources", {})
        if not n.get("Alive") or not (res.get("GPU", 0) > 0 or res.get(BOX_RESOURCE, 0) > 0):
            continue
        boxes.append(Box(node_id=n["NodeID"], host=n.get("NodeManagerHostname") or
                         n.get("NodeManagerAddress", "?"),
                         address=n.get("NodeManagerAddress", "?"),
                         gpus=int(res.get("GPU", 0))))
    if not boxes:
        raise UsageError("the Ray cluster has no box: a box is a node with GPUs, or one "
                         f"started with the custom resource {BOX_RESOURCE} (ray start "
                         f"--resources '{{\"{BOX_RESOURCE}\": 1}}'; docs/fleet.md)",
                         title="No box in the cluster")
    return sorted(boxes, key=lambda b: (b.host, b.node_id))
