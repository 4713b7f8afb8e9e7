"""The box agent's phase path on this machine, without Ray (issue 68: Ray's wheel is too
large to carry to the GPU machine): the same ``BoxSession.run`` the Ray actor calls
(``xwatch.core.fleet.agent.run_local``), one phase a run of ``compare``'s plan, the
phases merged as the fleet merges them (``fleet.merge``: named by a box, answer,
snapshot and reports). Prints each phase's status, the answer and, with ``--export``,
writes the snapshot.

    python benchmarks/measure/fleet_agent.py SCENARIO --modes native,mps --repeat 2 \\
        --duration 10 --export DIR [any other compare argument: --gpus, --xsched, ...]
"""

from __future__ import annotations

import asyncio
import socket
import sys

from xwatch.cli.checks import modes_of, scenario_of
from xwatch.cli.parser import build_parser, options_of
from xwatch.core import model as M
from xwatch.core.analysis.answer.stored import answer_lines
from xwatch.core.fleet import merge
from xwatch.core.fleet.agent import BoxWork, run_local
from xwatch.core.plans.driver import Step, interleave


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(["compare", *argv])
    scen, opts, modes = scenario_of(args), options_of(args), modes_of(args)
    box = M.Box(node_id="local-" + socket.gethostname(), host=socket.gethostname())
    works = [BoxWork(step, rnd, opts.phase_s(scen))
             for rnd, step in interleave([Step(m) for m in modes], opts.repeat)]
    results = asyncio.run(run_local(scen, opts, args, works, box))
    phases = []
    for w, res in zip(works, results, strict=True):
        for line in res.lines:
            print(f"    {line}")
        ph = res.phase or merge.failed(w.step, w.rnd, box, "its phase could not start: "
                                       + ("; ".join(res.lines) or "no reason given"))
        print(f"phase {w.step.mode} round {w.rnd}: {ph.status} on box {ph.box.short if ph.box else '-'}"
              + (f" ({ph.error})" if ph.error else ""))
        phases.append(ph)
    snap = merge.merged(scen, phases, phases[0].started_at if phases else "")
    for line in answer_lines(snap):
        print(line)
    ok = all(p.status == "done" for p in snap.phases)
    if opts.export:
        ok = merge.export(snap, opts.export, print, print) and ok
    print("agent path: " + ("PASS every phase done" if ok else "FAIL a phase did not end done"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
