"""The box agent as a Ray actor: ``BoxAgent`` (a ``BoxSession`` and its guard in the
actor's process) and ``spawn``, one agent a box, pinned to its node (a hard
``NodeAffinitySchedulingStrategy``) and holding all its GPUs (Ray's ``GPU`` resource)
or its ``xwatch_box`` resource.

Ownership: each agent is an ordinary (not detached) actor of the command's process,
so Ray ends it when that process ends, however it ends (SIGKILL included: Ray's
owner fate-sharing). Whatever the agent started then lives on; its guard
(``fleet.guard``) stops it. A normal end is ``close``: the phase stopped, the session
closed, the guard let go.
"""

from __future__ import annotations

import argparse
import os
import socket
from typing import Any

from xwatch.core import model as M
from xwatch.core.fleet import guard
from xwatch.core.fleet.agent import BoxResult, BoxSession, BoxWork, Progress
from xwatch.core.fleet.connect import BOX_RESOURCE, Box
from xwatch.core.plans.options import Options
from xwatch.scenario import Scenario


class BoxAgent:
    """What runs in the actor's process: this box's session and its guard."""

    def __init__(self, scen: Scenario, opts: Options, args: argparse.Namespace | None,
                 modes: list[str], node_id: str) -> None:
        self.guard = guard.start(os.getpid())
        self.box = M.Box(node_id=node_id, host=socket.gethostname())
        self.session = BoxSession(scen, opts, args, modes, self.box)

    def where(self) -> tuple[str, str, int]:
        """(node id, host, pid): where the agent runs."""
        return self.box.node_id, self.box.host, os.getpid()

    def preflight(self) -> dict[str, str]:
        return self.session.preflight()

    def progress(self) -> Progress | None:
        return self.session.progress()

    async def run(self, work: BoxWork) -> BoxResult:
        return await self.session.run(work)

    async def close(self) -> None:
        try:
            await self.session.close()
        finally:
            self.guard.stop()


def spawn(ray: Any, boxes: list[Box], scen: Scenario, opts: Options,
          args: argparse.Namespace | None, modes: list[str]) -> list[Any]:
    """One agent a box (handles in ``boxes``' order), each pinned to its node."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    cls = ray.remote(BoxAgent)
    out = []
    for b in boxes:
        opts_kw: dict[str, Any] = {
            "scheduling_strategy": NodeAffinitySchedulingStrategy(b.node_id, soft=False),
            "num_cpus": 0, "num_gpus": b.gpus, "max_restarts": 0,
            "max_concurrency": 4,  # run, and the progress polls beside it
        }
        if b.gpus == 0:
            opts_kw["resources"] = {BOX_RESOURCE: 1}
        out.append(cls.options(**opts_kw).remote(scen, opts, args, modes, b.node_id))
    return out
