"""XSched's part of the command line beyond its arguments (``XschedMode.add_arguments``):
its ``xwatch doctor`` checks (``XschedMode.doctor``): the install and its version and
policies, the shim for torch's platform, and an xserver started, asked its policy and
stopped, with the preflight's probes run against it where torch sees a GPU."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping
from typing import Any

from xwatch.errors import XwatchError

#: one check: (PASS, WARN, SKIP or FAIL; what was checked; the finding)
Check = tuple[str, str, str]


def doctor_checks(args: argparse.Namespace, info: Mapping[str, object]) -> list[Check]:
    """The install ``--xsched`` (else XSCHED_HOME) names, checked; ``info``: what the
    workloads' interpreter reported of torch."""
    from xwatch.core.xsched.controller import XschedController
    from xwatch.core.xsched.engagement import EXIT_CRASH
    from xwatch.core.xsched.install import SHIMS, find_install
    from xwatch.core.xsched.meta import read_meta
    from xwatch.scenario import Scenario, Workload

    inst = find_install(args.xsched, None)
    if inst is None:
        return [("SKIP", "xsched install", "no --xsched ROOT and no XSCHED_HOME")]
    out = []
    plat = "hip" if info.get("hip") else "cuda"
    try:
        inst.check(set())
        out.append(("PASS", "xsched install", f"{inst.root} (from {inst.source})"))
    except XwatchError as e:
        return [("FAIL", "xsched install", str(e))]
    out += version_checks(inst.root)
    present = [p for p, f in SHIMS.items() if (inst.lib / f).is_file()]
    if plat in present:
        out.append(("PASS", "shim platform", f"{SHIMS[plat]} matches torch's {plat} build"))
    else:
        out.append(("FAIL", "shim platform", f"torch is a {plat} build but {inst.lib} has "
                    f"{', '.join(SHIMS[p] for p in present) or 'no shim'}"))
    scen = Scenario("doctor", "", 1.0, "auto", 10.0,
                    (Workload(name="probe", priority="high", model="resnet18", platform=plat,
                              python=str(info.get("python_exe") or sys.executable)),))
    ctl = XschedController(inst, scen)
    meta = read_meta(inst.root)
    ctl.meta = meta

    async def start_probe_stop() -> tuple[str, list[Any]]:
        from xwatch.core.engine.live.session import Session
        from xwatch.core.xsched.env import xsched_env
        from xwatch.core.xsched.preflight import plan_probes, run_probes

        s = Session(scen)
        ph = s.new_phase("xsched")
        try:
            await ctl._start_xserver(ph)
            assert ctl.client is not None
            pol = await asyncio.to_thread(ctl.client.get_policy)
            pol_text = f"{pol}" if meta is None else meta.policies.label(pol)
            port = ctl.port
            w = scen.workloads[0]
            probes = plan_probes(scen, inst, {w.name: plat},
                                 {w.name: xsched_env(w, inst, plat)}, graphs=True)
            # without a GPU the shim has no driver under it: a real one dies looking for
            # cuGetProcAddress; nothing about XSched is learnt from that
            verdicts = await run_probes(probes, inst, ctl.client, use_cache=False) \
                if gpu else []
        finally:
            await ctl._stop_daemon()
            ph.finish()
            s.close()
        return f"started on port {port}, GET /policy -> {pol_text}, stopped", verdicts

    gpu = bool(info.get("available")) or "probe_error" in info
    from xwatch.core.xsched.preflight import verdict_line

    try:  # another session's xserver: starting one here would take its channel over
        ctl.other_xserver()
    except XwatchError as e:
        out.append(("WARN", "xserver", f"not started, so the running one is left "
                    f"alone: {e}"))
        return out

    try:
        line, verdicts = asyncio.run(start_probe_stop())
        if not gpu:
            out.append(("SKIP", "preflight", "torch sees no GPU: the shim cannot be "
                        "exercised (it needs the real driver library under it)"))
        out.append(("PASS", "xserver", line))
        out.append(("WARN", "xserver network", "listens on all interfaces (0.0.0.0) "
                    "without authentication: anyone who can reach this host's port can "
                    "change priorities and policy; firewall it on shared machines"))
        for v in verdicts:
            if v.stream == "n/a" and plat == "cuda" and v.status == "shim-not-loaded":
                out.append(("SKIP", "preflight", "no GPU: torch on the CPU never loads "
                            "the CUDA driver library, so the shim cannot be exercised"))
                continue
            created = v.stream in ("created", "n/a")
            status = "PASS" if v.status == "engaged" else "WARN" \
                if v.status == EXIT_CRASH or not created else "FAIL"
            note = "" if created or v.status == "engaged" else \
                " (workloads with decode = \"graphed\" would fail their preflight)" \
                if v.stream == "graph" else \
                " (workloads with stream = \"default\" would not be scheduled)"
            out.append((status, "preflight", verdict_line(v) + note))
    except XwatchError as e:
        out.append(("FAIL", "xserver", str(e)))
    return out


def version_checks(root: Any) -> list[Check]:
    """What the install says about itself: its version and what that version supports,
    its policies in its own numbering (and which its build cannot create), and
    whatever had to be assumed."""
    from xwatch.core.xsched.meta import read_meta

    meta = read_meta(root)
    out = [("PASS" if meta.version else "WARN", "xsched version",
            f"{meta.version or 'unknown'} ({meta.version_source}); "
            + "; ".join(meta.features()))]
    pol = meta.policies
    blocked = [p.name for p in pol.policies if p.creatable is False]
    detail = f"{pol.describe()} (numbers from {pol.source})"
    if blocked:
        detail += (f"; {', '.join(blocked)} listed but not compiled in: xwatch refuses "
                   "them (xserver would abort)")
    out.append(("WARN" if pol.assumed else "PASS", "xsched policies", detail))
    out += [("WARN", "xsched install", n) for n in meta.notes]
    return out
