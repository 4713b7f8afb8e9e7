"""An inference server's own view beside the client's: the sentence that the console's
final lines and the report share. Pure.

The server's TTFT (vLLM, SGLang) starts when its front end received the request and
ends at its first token; the client's (xwatch's ``ttft_ms``) starts at the request's
scheduled send and ends when the first text chunk arrived. The difference is the time
spent outside the engine's measurement: the generator's lateness, the network, the
HTTP front end and the stream's way back. The engine's queue (``waiting``) says whether
requests waited inside it. Both are percentiles of different clocks over nearly the
same requests (the server's histogram counts from the phase's first scrape to its
last, a second apart at most from the measured window), and the server's are
interpolated within its histogram's buckets: the difference is a reading, not a
measurement with an interval.
"""

from __future__ import annotations

from xwatch.core import model as M


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"


def server_line(v: M.ServerView | None, client_ttft: M.Summary | None) -> str | None:
    """One line on the server's own metrics over the phase (None: not a server that was
    scraped); ``client_ttft``: the client-side ``ttft_ms`` of the same phase."""
    if v is None:
        return None
    if not v.exported:
        return f"the server's own metrics: not exported ({v.note or 'no answer'})"
    parts = []
    if v.ttft is not None and v.ttft.count:
        t = f"TTFT P50 {_ms(v.ttft.p50_ms)} / P99 {_ms(v.ttft.p99_ms)} ms over {v.ttft.count}"
        if client_ttft is not None and client_ttft.p50 is not None:
            t += f" (client: {_ms(client_ttft.p50)} / {_ms(client_ttft.p99)} ms"
            if v.ttft.p50_ms is not None:
                t += f"; {client_ttft.p50 - v.ttft.p50_ms:+.1f} ms at P50 outside the engine"
            t += ")"
        parts.append(t)
    elif v.ttft is None:
        parts.append("TTFT not exported")
    if v.queue_time is not None and v.queue_time.count:
        parts.append(f"queue time P50 {_ms(v.queue_time.p50_ms)} / P99 "
                     f"{_ms(v.queue_time.p99_ms)} ms")
    for label, g in (("waiting", v.waiting), ("running", v.running)):
        if g is not None:
            parts.append(f"{label} mean {_num(g.mean)}, max {_num(g.max)}")
    if v.generation_tokens_per_s is not None:
        parts.append(f"{v.generation_tokens_per_s:.1f} tokens/s generated")
    failed = f", {v.failed_scrapes} failed" if v.failed_scrapes else ""
    return (f"the server's own metrics ({v.engine} {v.path}, {v.scrapes} scrapes{failed}): "
            + "; ".join(parts))
