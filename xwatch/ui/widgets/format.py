"""Number formatting shared by the widgets."""

from __future__ import annotations

import math


def ms(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.2f}" if v < 100 else f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def rate(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.1f}" if v < 1000 else f"{v:,.0f}"


def pct(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v:.0f}%"


def delta(a: float | None, b: float | None) -> str:
    if a is None or b is None or math.isnan(a) or math.isnan(b) or a == 0:
        return "-"
    return f"{(b - a) / a * 100:+.1f}%"


def text_key(t: object) -> object:
    """What identifies a rendered Text for 'did it change?' (plain text + styles)."""
    plain = getattr(t, "plain", None)
    if plain is None:
        return repr(t)
    return plain, tuple(getattr(t, "spans", ()))
