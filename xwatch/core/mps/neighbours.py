"""This box's other MPS sessions (read through ``core/procs``): the control daemons that
this session's own would collide with, found before one is started.

MPS: a control daemon (``nvidia-cuda-mps-control -d`` or ``-f``) of the same driver's
tool serves the GPUs its ``CUDA_VISIBLE_DEVICES`` lists (all when unset); it is
reached through its ``CUDA_MPS_PIPE_DIRECTORY`` (default ``/tmp/nvidia-mps``, where
it writes ``nvidia-cuda-mps-control.pid``). Another user's environment cannot be
read: such a daemon is taken to serve every GPU, through the default folder if its
pid file is there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xwatch.core.procs import (
    PROC,
    BoxProcess,
    environ,
    processes,
    program_index,
    program_path,
    read_bytes,
)
from xwatch.core.schedulers import MPS_DEFAULT_PIPE, MPS_PID_FILE, MPS_TOOL


@dataclass(frozen=True)
class MpsDaemon:
    """An MPS control daemon already running on this box."""

    proc: BoxProcess
    pipe_dir: str | None  # None: unknown (another user's environment, no pid file)
    visible: str | None  # its CUDA_VISIBLE_DEVICES; None: unset (every GPU)
    env_read: bool  # whether its environment could be read

    def serves(self, gpus: set[int]) -> bool:
        """Whether it serves any of ``gpus`` (unknown: assumed so)."""
        if self.visible is None:
            return True
        items = [x.strip() for x in self.visible.split(",") if x.strip()]
        if not all(x.isdigit() for x in items):
            return True  # UUIDs or MIG names: not mapped to indices here
        return bool({int(x) for x in items} & gpus)

    def describe(self) -> str:
        gpus = ("every GPU (its environment is not readable)" if not self.env_read else
                "every GPU" if self.visible is None else f"CUDA_VISIBLE_DEVICES={self.visible}")
        return (f"MPS control daemon pid {self.proc.pid}, user {self.proc.user}, pipe "
                f"directory {self.pipe_dir or 'unknown'}, serving {gpus}; command line: "
                f"{self.proc.cmdline}")


def _file_id(*paths: str) -> tuple[int, int] | None:
    """(device, inode) of the first of ``paths`` that can be looked at, else None."""
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        return st.st_dev, st.st_ino
    return None


def find_mps_daemons(tool: str, own: set[int] = frozenset(),  # type: ignore[assignment]
                     proc: str = PROC) -> list[MpsDaemon]:
    """MPS control daemons of the same control tool (the same file: one driver) that
    run on this box, but for ``own``."""
    out = []
    mine = _file_id(tool)
    for p in processes(proc):
        i = program_index(p.argv, MPS_TOOL)
        if i is None or p.pid in own or not ({"-d", "-f"} & set(p.argv[i + 1:])):
            continue  # the tool run as a client: a command, not a daemon
        path = program_path(p, i, proc)  # as its own root sees it (a container's), else ours
        theirs = _file_id(f"{proc}/{p.pid}/root{path}", path) if os.path.isabs(path) else None
        if mine is not None and theirs is not None and theirs != mine:
            continue  # another driver's tool
        env = environ(p.pid, proc)
        if env is not None:
            pipe: str | None = env.get("CUDA_MPS_PIPE_DIRECTORY") or MPS_DEFAULT_PIPE
            visible = env.get("CUDA_VISIBLE_DEVICES")
        else:
            pidf = read_bytes(str(Path(MPS_DEFAULT_PIPE) / MPS_PID_FILE))
            pipe = MPS_DEFAULT_PIPE if pidf and pidf.strip() == str(p.pid).encode() else None
            visible = None
        out.append(MpsDaemon(p, pipe, visible, env is not None))
    return out
