"""PCI addresses of GPUs: parse the forms NVML, amdsmi and torch give, so that a
workload's device and a telemetry sample can be matched by bus id (never by index
order). Pure; shared by telemetry and the per-GPU analysis."""

from __future__ import annotations

import re
from typing import Any

_BDF = re.compile(r"(?:([0-9a-fA-F]+):)?([0-9a-fA-F]+):([0-9a-fA-F]+)\.([0-9a-fA-F])")


def parse_bus_id(s: str | bytes | None) -> tuple[int, int, int] | None:
    """'00000000:19:00.0' / '0000:19:00.0' -> (domain, bus, device)."""
    if s is None:
        return None
    if isinstance(s, bytes):
        s = s.decode(errors="replace")
    m = _BDF.search(s)
    if not m:
        return None
    return (int(m.group(1) or "0", 16), int(m.group(2), 16), int(m.group(3), 16))


def bus_from_hello(hello: dict[str, Any]) -> tuple[int, int, int] | None:
    pci = hello.get("pci")
    if not isinstance(pci, dict):
        return None
    try:
        return (int(pci.get("domain", 0)), int(pci["bus"]), int(pci.get("device", 0)))
    except (KeyError, TypeError, ValueError):
        return None


def format_bus(b: tuple[int, int, int] | None) -> str:
    """(0, 0x1b, 0) -> '0000:1b:00.0'."""
    return "" if b is None else f"{b[0]:04x}:{b[1]:02x}:{b[2]:02x}.0"
