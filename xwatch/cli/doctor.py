"""``xwatch doctor``: one line per check, PASS/FAIL/WARN/SKIP with the reason.

torch is probed in a subprocess with the workloads' interpreter (xwatch itself
never imports torch), so a broken or ROCm-only environment is diagnosed as it
will be used.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from xwatch.errors import XwatchError

PROBE = r"""
import json, sys
out = {"python": sys.version.split()[0]}
try:
    import torch
    out["torch"] = torch.__version__
    out["hip"] = getattr(torch.version, "hip", None)
    out["cuda"] = getattr(torch.version, "cuda", None)
    out["available"] = torch.cuda.is_available()
    devs = []
    for i in range(torch.cuda.device_count() if out["available"] else 0):
        p = torch.cuda.get_device_properties(i)
        devs.append({"name": p.name, "memory_gib": round(p.total_memory / 2**30, 1)})
    out["devices"] = devs
except Exception as e:
    out["torch_error"] = f"{type(e).__name__}: {e}"
for mod in ("torchvision", "transformers"):
    try:
        m = __import__(mod)
        out[mod] = m.__version__
    except Exception as e:
        out[mod + "_error"] = f"{type(e).__name__}: {e}"[:200]
print(json.dumps(out))
"""


@dataclass
class Check:
    status: str  # PASS | FAIL | WARN | SKIP
    name: str
    detail: str

    def line(self) -> str:
        return f"{self.status:<4}  {self.name:<22} {self.detail}"


def probe_python(python: str) -> dict[str, object]:
    try:
        r = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"probe_error": str(e)}
    if r.returncode != 0 or not r.stdout.strip():
        return {"probe_error": (r.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(r.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def checks(xsched_root: str | None, python: str | None) -> list[Check]:
    out: list[Check] = []
    py = python or sys.executable
    ok_py = sys.version_info >= (3, 10)
    out.append(Check("PASS" if ok_py else "FAIL", "python (xwatch)",
                     f"{sys.version.split()[0]} at {sys.executable}"))
    info = probe_python(py)
    info["python_exe"] = py
    if "probe_error" in info:
        out.append(Check("FAIL", "workload python", f"{py}: {info['probe_error']}"))
    else:
        out.append(Check("PASS", "workload python", f"{info.get('python')} at {py}"))
        for mod in ("torch", "torchvision", "transformers"):
            if mod in info:
                out.append(Check("PASS", mod, str(info[mod])))
            else:
                out.append(Check("FAIL", mod, str(info.get(mod + "_error", "not importable"))))
        devs: list[dict[str, Any]] = info.get("devices") or []  # type: ignore[assignment]
        if info.get("available") and devs:
            build = f"ROCm/HIP {info['hip']}" if info.get("hip") else f"CUDA {info.get('cuda')}"
            names = ", ".join(f"{d['name']} ({d['memory_gib']} GiB)" for d in devs)
            out.append(Check("PASS", "devices", f"{len(devs)} GPU(s) via {build}: {names}"))
        else:
            out.append(Check("WARN", "devices", "torch sees no GPU: built-in workloads run on "
                             "the CPU (device = 'auto')"))
    from xwatch.core.telemetry import select_backend

    backend, why, rejected = select_backend("auto")
    detail = f"{backend.name if backend else 'none'} ({why})"
    if rejected:
        detail += "; not used: " + "; ".join(f"{k}: {v[:80]}" for k, v in rejected.items())
    out.append(Check("PASS" if backend and backend.name != "host" else "WARN", "telemetry",
                     detail))
    if backend:
        backend.close()
    out += xsched_checks(xsched_root, info)
    return out


def xsched_checks(root: str | None, info: dict[str, object]) -> list[Check]:
    from xwatch.core.xsched.controller import XschedController
    from xwatch.core.xsched.engagement import EXIT_CRASH
    from xwatch.core.xsched.install import SHIMS, find_install
    from xwatch.core.xsched.meta import read_meta
    from xwatch.scenario import Scenario, Workload

    inst = find_install(root, None)
    if inst is None:
        return [Check("SKIP", "xsched install", "no --xsched ROOT and no XSCHED_HOME")]
    out = []
    plat = "hip" if info.get("hip") else "cuda"
    try:
        inst.check(set())
        out.append(Check("PASS", "xsched install", f"{inst.root} (from {inst.source})"))
    except XwatchError as e:
        return [Check("FAIL", "xsched install", str(e))]
    out += version_checks(inst.root)
    present = [p for p, f in SHIMS.items() if (inst.lib / f).is_file()]
    if plat in present:
        out.append(Check("PASS", "shim platform", f"{SHIMS[plat]} matches torch's {plat} build"))
    else:
        out.append(Check("FAIL", "shim platform", f"torch is a {plat} build but {inst.lib} has "
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
        out.append(Check("WARN", "xserver", f"not started, so the running one is left "
                         f"alone: {e}"))
        return out

    try:
        line, verdicts = asyncio.run(start_probe_stop())
        if not gpu:
            out.append(Check("SKIP", "preflight", "torch sees no GPU: the shim cannot be "
                             "exercised (it needs the real driver library under it)"))
        out.append(Check("PASS", "xserver", line))
        out.append(Check("WARN", "xserver network", "listens on all interfaces (0.0.0.0) "
                         "without authentication: anyone who can reach this host's port can "
                         "change priorities and policy; firewall it on shared machines"))
        for v in verdicts:
            if v.stream == "n/a" and plat == "cuda" and v.status == "shim-not-loaded":
                out.append(Check("SKIP", "preflight", "no GPU: torch on the CPU never loads "
                                 "the CUDA driver library, so the shim cannot be exercised"))
                continue
            created = v.stream in ("created", "n/a")
            status = "PASS" if v.status == "engaged" else "WARN" \
                if v.status == EXIT_CRASH or not created else "FAIL"
            note = "" if created or v.status == "engaged" else \
                " (workloads with decode = \"graphed\" would fail their preflight)" \
                if v.stream == "graph" else \
                " (workloads with stream = \"default\" would not be scheduled)"
            out.append(Check(status, "preflight", verdict_line(v) + note))
    except XwatchError as e:
        out.append(Check("FAIL", "xserver", str(e)))
    return out


def version_checks(root: Any) -> list[Check]:
    """What the install says about itself: its version and what that version supports,
    its policies in its own numbering (and which its build cannot create), and
    whatever had to be assumed."""
    from xwatch.core.xsched.meta import read_meta

    meta = read_meta(root)
    out = [Check("PASS" if meta.version else "WARN", "xsched version",
                 f"{meta.version or 'unknown'} ({meta.version_source}); "
                 + "; ".join(meta.features()))]
    pol = meta.policies
    blocked = [p.name for p in pol.policies if p.creatable is False]
    detail = f"{pol.describe()} (numbers from {pol.source})"
    if blocked:
        detail += (f"; {', '.join(blocked)} listed but not compiled in: xwatch refuses "
                   "them (xserver would abort)")
    out.append(Check("WARN" if pol.assumed else "PASS", "xsched policies", detail))
    out += [Check("WARN", "xsched install", n) for n in meta.notes]
    return out


def summary(results: list[Check]) -> str:
    """The closing line: every status counted (a WARN or SKIP is not a pass)."""
    n = {s: sum(c.status == s for c in results) for s in ("PASS", "WARN", "SKIP", "FAIL")}
    return (f"{n['PASS']} passed, {n['WARN']} warned, {n['SKIP']} skipped, "
            f"{n['FAIL']} failed")


def run_doctor(args: argparse.Namespace) -> int:
    """``xwatch doctor``: a line each, the summary, 1 when a check failed."""
    results = checks(args.xsched, args.python)
    for c in results:
        print(c.line(), flush=True)
    print(summary(results))
    return 1 if any(c.status == "FAIL" for c in results) else 0
