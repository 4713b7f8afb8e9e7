"""Where XSched is installed (``--xsched``, ``XSCHED_HOME``, ``[xsched] root``), what
an install must contain, and which platform (CUDA or HIP) a workload's torch is; and
``XschedError``, the mode's titled error (a leaf of the package: every module raises
it)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from xwatch.errors import ModeError
from xwatch.scenario import Scenario, Workload


class XschedError(ModeError):
    """An XSched install is missing files, or xserver would not start (XSched's titled
    error: every module of the mode raises it)."""

    title = "XSched problem"


SHIMS = {"cuda": "libshimcuda.so", "hip": "libshimhip.so"}


@dataclass(frozen=True)
class XschedInstall:
    root: Path
    source: str  # "--xsched", "XSCHED_HOME", "scenario [xsched] root"

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    @property
    def xserver(self) -> Path:
        return self.root / "bin" / "xserver"

    def shim(self, platform: str) -> Path:
        return self.lib / SHIMS[platform]

    def check(self, platforms: set[str]) -> None:
        """Raise XschedError naming the first missing file."""
        looked = f"(XSched root {self.root}, from {self.source})"
        if not self.root.is_dir():
            raise XschedError(f"XSched root {self.root} is not a folder {looked}",
                              title="XSched install not found")
        if not self.lib.is_dir():
            raise XschedError(f"missing {self.lib}/ : an install made with `make cuda|hip "
                              f"INSTALL_PATH=...` has lib/ and bin/ {looked}",
                              title="XSched install incomplete")
        for p in sorted(platforms):
            if not self.shim(p).is_file():
                others = [x for x in SHIMS.values() if (self.lib / x).is_file()]
                hint = f"; found {', '.join(others)} (built for another platform?)" if others \
                    else ""
                raise XschedError(f"missing {self.shim(p)}: the {p.upper()} shim {looked}{hint}",
                                  title="XSched shim missing")
        if not os.access(self.xserver, os.X_OK):
            raise XschedError(f"missing or not executable: {self.xserver} {looked}",
                              title="xserver missing")


def find_install(cli_root: str | None, scen: Scenario | None) -> XschedInstall | None:
    if cli_root:
        return XschedInstall(Path(cli_root).expanduser().resolve(), "--xsched")
    env = os.environ.get("XSCHED_HOME")
    if env:
        return XschedInstall(Path(env).expanduser().resolve(), "XSCHED_HOME")
    if scen is not None and scen.xsched.root:
        base = Path(scen.source).parent if not scen.source.startswith("<") else Path.cwd()
        return XschedInstall((base / scen.xsched.root).expanduser().resolve(),
                             "scenario [xsched] root")
    return None


_PLATFORM_CACHE: dict[str, str] = {}


#: which build that interpreter's torch is, read from its ``torch/version.py`` without
#: importing torch (an import under the shim's cost, seconds, before an XSched phase's
#: xserver could start: issue 58 goal 4); torch imported only if that file says nothing
_PLATFORM_SCRIPT = """
import importlib.util, os, re
spec = importlib.util.find_spec("torch")
m = None
try:
    with open(os.path.join(os.path.dirname(spec.origin), "version.py")) as f:
        m = re.search(r"^hip\\s*(?::[^=\\n]*)?=\\s*(\\S.*)$", f.read(), re.M)
except (AttributeError, TypeError, OSError):
    pass
if m is not None:
    print("cuda" if m.group(1).strip() == "None" else "hip")
else:
    import torch
    print("hip" if getattr(torch.version, "hip", None) else "cuda")
"""


def detect_platform(python: str) -> str:
    """'hip' when that interpreter's torch is a ROCm build, else 'cuda'."""
    if python in _PLATFORM_CACHE:
        return _PLATFORM_CACHE[python]
    try:
        out = subprocess.run([python, "-c", _PLATFORM_SCRIPT], capture_output=True, text=True,
                             timeout=120)
        plat = out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout.strip() \
            else "cuda"
    except (OSError, subprocess.TimeoutExpired):
        plat = "cuda"
    _PLATFORM_CACHE[python] = plat if plat in SHIMS else "cuda"
    return _PLATFORM_CACHE[python]


def workload_platform(w: Workload, scen: Scenario) -> str:
    if scen.xsched.platform:
        return w.platform or scen.xsched.platform
    if w.platform:
        return w.platform
    import sys
    return detect_platform(w.python or sys.executable)
