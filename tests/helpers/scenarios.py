"""The scenarios most process tests need: a HIGH and a LOW external workload speaking
the event protocol (``tests/data/workloads/pipe_producer.py``), written to a file; and
two tiny built-in models on the CPU (``tiny_models``)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import PY, WORKLOADS


def producer(rate: float, *extra: str) -> str:
    """A ``command`` list (TOML) for pipe_producer.py at ``rate`` requests/s."""
    args = ", ".join(f'"{a}"' for a in (PY, f"{WORKLOADS}/pipe_producer.py", f"{rate:g}", *extra))
    return f"[{args}]"


def two(tmp_path: Path, duration: float = 2, hi: str = "", lo: str = "", hi_extra: str = "",
        lo_extra: str = "", top: str = "") -> Path:
    """``s.toml`` with ``high`` (40/s) and ``low`` (20/s, 20 ms service) workloads;
    ``hi``/``lo`` replace their command, ``*_extra`` add lines to their tables, ``top``
    adds top-level tables (e.g. ``[xsched]``)."""
    f = tmp_path / "s.toml"
    f.write_text(f"""
duration_s = {duration}
{top}
[[workload]]
name = "high"
priority = "high"
command = {hi or producer(40)}
{hi_extra}
[[workload]]
name = "low"
priority = "low"
command = {lo or producer(20, "--service-ms", "20")}
{lo_extra}
""")
    return f


def one(tmp_path: Path, name: str, command: str, extra: str = "", duration: float = 3) -> Path:
    """``s.toml`` with a single high-priority workload ``name`` running ``command`` (a
    TOML list); ``extra`` adds lines to its table (``regex = ...``, ``stall_s = ...``)."""
    f = tmp_path / "s.toml"
    f.write_text(f"""
duration_s = {duration}
[[workload]]
name = "{name}"
priority = "high"
command = {command}
{extra}
""")
    return f


def tiny_models(name: str, duration: float, top: str = "", low: str = "") -> str:
    """Scenario text: HIGH a ResNet-18 on 32x32 images at 20 req/s and LOW the same model
    back to back, both real torch workers on one CPU thread; ``top`` adds top-level
    lines (``start_together = false``), ``low`` lines to LOW's table (its batch,
    ``start_delay_s``, ``warmup``, ``requests``)."""
    return f"""name = "{name}"
duration_s = {duration}
device = "cpu"
{top}
[[workload]]
name = "high"
priority = "high"
model = "resnet18"
input = [3, 32, 32]
rate = 20
warmup = 2
threads = 1

[[workload]]
name = "low"
priority = "low"
model = "resnet18"
input = [3, 32, 32]
threads = 1
{low}
"""
