"""``xwatch doctor``: one line per check, PASS/FAIL/WARN/SKIP with the reason.

torch is probed in a subprocess with the workloads' interpreter (xwatch itself
never imports torch), so a broken or ROCm-only environment is diagnosed as it
will be used.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

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


def checks(args: argparse.Namespace) -> list[Check]:
    """python, the workloads' interpreter and torch, the GPUs, telemetry, then each
    mode's own checks."""
    out: list[Check] = []
    py = args.python or sys.executable
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
    out += mode_checks(args, info)
    return out


def mode_checks(args: argparse.Namespace, info: dict[str, object]) -> list[Check]:
    """Each registered mode's own checks (``Mode.doctor``), in the registry's order."""
    from xwatch.core.modes import registry
    from xwatch.core.modes.contract import DoctorChecks

    out = []
    for mode in registry.modes():
        if mode.doctor is not None:
            run: DoctorChecks = registry.load_ref(mode.doctor)
            out += [Check(*c) for c in run(args, info)]
    return out


def summary(results: list[Check]) -> str:
    """The closing line: every status counted (a WARN or SKIP is not a pass)."""
    n = {s: sum(c.status == s for c in results) for s in ("PASS", "WARN", "SKIP", "FAIL")}
    return (f"{n['PASS']} passed, {n['WARN']} warned, {n['SKIP']} skipped, "
            f"{n['FAIL']} failed")


def run_doctor(args: argparse.Namespace) -> int:
    """``xwatch doctor``: a line each, the summary, 1 when a check failed."""
    results = checks(args)
    for c in results:
        print(c.line(), flush=True)
    print(summary(results))
    return 1 if any(c.status == "FAIL" for c in results) else 0
