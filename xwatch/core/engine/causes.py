"""Why a process failed, in one line: the most informative line of its stderr.

A crashed workload's last stderr line is often noise (an INFO line of the XSched
shim, a blank line, the tail of a traceback frame). ``best_cause`` prefers, in
this order: an XSched ``[ERRO ...]`` line, a CUDA/HIP/driver error or a fatal
signal message, a Python exception line, any line saying error/fatal/abort, an
XSched ``[WARN ...]`` line, then any other line that is not INFO/DEBUG. Among
equals the last one wins. XSched's ``[LEVEL @ Tn @ hh:mm:ss.us]`` prefix (1.2: ``[XSCHED LEVEL @
T n @ ...]``; any upper-case tag, ``LOG_PREFIX``) is stripped; the message itself is never cut.

A failure repeated N times (the same line from 16 requests, or from every copy of a
workload over the GPUs) is said once with its count: ``collapse`` for lines,
``collapse_named`` for ``NAME: message`` pairs. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

#: a scheduler library's log line, its tag optional: XSched 49079bc logs ``[ERRO @ T123 @
#: hh:mm:ss.us]``, 1.2 ``[XSCHED ERRO @ T 123 @ hh:mm:ss.us]``
LOG_PREFIX = re.compile(
    r"^\s*\[(?:[A-Z]+ )?(?P<level>INFO|WARN|ERRO|DEBG) @ T ?\d+ @ [\d:.]+\]\s*")
_DEVICE_ERROR = re.compile(
    r"(cuda|hip|cudnn|miopen|cublas|hipblas|rocblas|nccl|rccl|nvrtc)\w*[ _]?(error|status|"
    r"exception)|invalid device|illegal (memory|address|instruction)|device-side assert(ion)? triggered|"
    r"out of memory|Segmentation fault|core dumped|Aborted|Bus error|Floating point exception",
    re.IGNORECASE)
_PY_EXCEPTION = re.compile(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(Error|Exception|Interrupt|Exit)(:|$)")
_ERRORISH = re.compile(r"\b(error|fatal|abort(ed)?|panic|failed|failure)\b", re.IGNORECASE)
_NOISE = re.compile(r"^\s*(INFO|DEBUG|DEBG|TRACE)\b|^\s*File \"|^\s*Traceback \(most recent",
                    re.IGNORECASE)


def strip_prefix(line: str) -> str:
    """A line without XSched's ``[LEVEL @ Tn @ time]`` prefix."""
    return LOG_PREFIX.sub("", line, count=1).strip()


def score(line: str) -> int:
    """How much a line says about a failure (0: nothing)."""
    if not line.strip():
        return 0
    m = LOG_PREFIX.match(line)
    level = m.group("level") if m else None
    body = strip_prefix(line)
    if level == "ERRO":
        return 6
    if level in ("INFO", "DEBG"):
        return 0
    if _DEVICE_ERROR.search(body):
        return 5
    if _PY_EXCEPTION.match(body):
        return 4
    if _ERRORISH.search(body):
        return 3
    if level == "WARN":
        return 2
    if _NOISE.match(body):
        return 0
    return 1


def best_cause(lines: Iterable[str]) -> str:
    """The most informative line (prefix stripped), or '' if none says anything."""
    best, best_score = "", 0
    for line in lines:
        s = score(line)
        if s and s >= best_score:
            best, best_score = strip_prefix(line), s
    return best


def clip(text: str, width: int) -> str:
    """``text`` cut at a word boundary to at most ``width`` characters, with '…'."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: max(1, width - 1)]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def times(n: int) -> str:
    """`` (16 times)`` for a repeat, else ''."""
    return f" ({n} times)" if n > 1 else ""


def collapse(lines: Iterable[str]) -> list[str]:
    """Each distinct line once, where it first came, with `` (N times)`` if it came
    N > 1 times; blank lines are kept once each (they separate nothing repeated)."""
    order: list[str] = []
    count: dict[str, int] = {}
    for ln in lines:
        key = ln.rstrip()
        if key not in count:
            order.append(key)
            count[key] = 0
        count[key] += 1
    return [ln + times(count[ln]) if ln.strip() else ln for ln in order]


def collapse_named(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """``NAME: message`` lines, a message shared by several names said once:
    ``4 workloads (chat@0, chat@1, chat@2, chat@3): failed ...``, in first-seen order."""
    names: dict[str, list[str]] = {}
    for name, msg in pairs:
        names.setdefault(msg, []).append(name)
    return [f"{who[0]}: {msg}" if len(who) == 1 else
            f"{len(who)} workloads ({', '.join(who)}): {msg}" for msg, who in names.items()]
