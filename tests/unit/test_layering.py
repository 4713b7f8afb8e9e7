"""The core never imports textual; the dashboard process never imports torch."""

from __future__ import annotations

import subprocess
import sys

CORE = ["xwatch.cli", "xwatch.scenario", "xwatch.core.protocol", "xwatch.core.stats",
        "xwatch.core.session", "xwatch.core.supervisor", "xwatch.core.runner",
        "xwatch.core.headless", "xwatch.core.snapshot", "xwatch.core.report",
        "xwatch.core.xsched", "xwatch.core.telemetry", "xwatch.core.telemetry.nvml",
        "xwatch.core.telemetry.amd", "xwatch.core.telemetry.host", "xwatch.core.sweep",
        "xwatch.core.doctor", "xwatch.core.console", "xwatch.core.launch"]


def _loaded(modules: list[str]) -> set[str]:
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules)
            + "print(' '.join(sorted(m for m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return set(out.stdout.split())


def test_core_never_imports_textual_or_torch() -> None:
    loaded = _loaded(CORE)
    assert "textual" not in loaded
    assert "torch" not in loaded and "torchvision" not in loaded


def test_ui_does_not_import_torch() -> None:
    loaded = _loaded(["xwatch.ui.app"])
    assert "textual" in loaded and "torch" not in loaded
