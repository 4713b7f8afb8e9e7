"""Live XSched controls against a running xserver, through xwatch's own core (what
the dashboard's `k` screen calls): priority hint, XQueue threshold/batch size
(/config), policy. Reads /xqueues and /policy back to show each took effect.

    python3 benchmarks/measure/live_controls.py SCENARIO --xsched ROOT [--device cuda:0]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from xwatch.core.engine.live.session import Session
from xwatch.core.plans.console import ms
from xwatch.core.plans.runner import Runner
from xwatch.core.xsched.controller import XschedController
from xwatch.core.xsched.install import find_install
from xwatch.errors import XwatchError
from xwatch.scenario import load_scenario


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--xsched", required=True)
    ap.add_argument("--device")
    ap.add_argument("--seconds", type=float, default=8.0)
    a = ap.parse_args()
    scen = load_scenario(a.scenario).with_overrides(duration_s=60, device=a.device)
    inst = find_install(a.xsched, scen)
    assert inst is not None
    ctl = XschedController(inst, scen)
    session = Session(scen)
    runner = Runner(scen, session, xsched=ctl)
    phase = await runner.start_phase("xsched")
    hi, lo = scen.workloads[0].name, scen.workloads[-1].name
    ok = True
    try:
        end = time.monotonic() + 600
        while time.monotonic() < end and not (ctl._handles(hi) and ctl._handles(lo) and all(
                r.rec.count > 0 for r in phase.runs.values())):
            await asyncio.sleep(0.2)
        assert ctl.client is not None

        ctl.client.timeout = 10.0  # a real xserver with ~100 queues a process answers slowly

        async def queues(name: str) -> list[dict[str, object]]:
            pid = phase.runs[name].pid
            data = await asyncio.to_thread(ctl.client.xqueues)  # type: ignore[union-attr]
            return [q for q in data.get("xqueues", []) if q.get("pid") == pid]

        for n_ in (hi, lo):
            qs = await queues(n_)
            print(f"before: {n_} has {len(qs)} XQueue(s), (threshold, batch_size) "
                  f"{sorted({(q['threshold'], q['batch_size']) for q in qs})}", flush=True)
        n = await ctl.configure(lo, threshold=2, batch_size=1)
        await asyncio.sleep(0.5)
        got = {(q["threshold"], q["batch_size"]) for q in await queues(lo)}
        print(f"config {lo} threshold=2 batch_size=1 on {n} queue(s) -> /xqueues shows {got}")
        ok &= got == {(2, 1)}
        n = await ctl.set_priority(lo, 3)
        print(f"hint {lo} priority 3 on {n} queue(s): accepted")
        await asyncio.sleep(a.seconds / 2)
        n = await ctl.set_priority(lo, 0)
        print(f"hint {lo} priority 0 on {n} queue(s): accepted")
        await ctl.set_policy("CFS")
        pol = await asyncio.to_thread(ctl.client.get_policy)
        print(f"policy CFS -> GET /policy = {pol}")
        ok &= pol == 9
        await ctl.set_policy("HPF")
        pol = await asyncio.to_thread(ctl.client.get_policy)
        print(f"policy HPF -> GET /policy = {pol}")
        ok &= pol == 1
        try:
            await ctl.configure(lo, threshold=1, batch_size=4)
            print("refused before sending: NO (bad)")
            ok = False
        except XwatchError as e:
            print(f"refused before sending: {e}")
        await asyncio.sleep(a.seconds / 2)
    finally:
        await runner.stop_phase()
        runner.kill_now()
    snap = phase.snapshot(time.monotonic())
    for note in snap.annotations:
        print(f"annotation t={note.t:.2f}s {note.text}")
    for w in snap.workloads:
        print(f"{w.name}: n={w.count} p50={ms(w.phase.p50)} p99={ms(w.phase.p99)} ms "
              f"{w.throughput.samples_per_s or 0:.0f} samples/s")
    session.close()
    print("live controls:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
