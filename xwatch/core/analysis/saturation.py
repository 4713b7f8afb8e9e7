"""Whether an inference server kept up with the load offered to it: the saturation rule
that the phase's annotation, the console's table and the report share. Pure.

An open-loop load generator sends at its rate whatever the server does, so a server
slower than the offered rate builds a queue: its requests complete at the rate it can
serve, the backlog grows through the phase, and its latency (TTFT first) is mostly the
time spent in that queue. The rule: over a phase of ``T`` measured seconds at an offered
rate ``r``, the requests sent are about ``r T`` (Poisson: standard deviation
``sqrt(r T)``); the server is saturated when the requests it answered (completed or
failed: a failure is an answer, not a queue) fall short of them by more than three
standard deviations and two requests, and at least three were still unfinished at the
end (or the phase drained them: ``drain_s``, its measured time then holds the backlog's
service). Failures are named as failures beside it, never read as saturation. A server
that keeps up completes all but the few in flight: with ``r T = 48`` it is called
saturated only below 25 answered, far below what its requests in flight (``r`` x
its unqueued latency) take unless that latency is several seconds, which is then
itself mostly queueing.
"""

from __future__ import annotations

import math

from xwatch.core import model as M

#: the shortfall is judged beyond this many standard deviations of the offered count
SIGMAS = 3.0
#: and beyond this many requests (edges of the measured window)
SLACK = 2
#: the backlog at the end must hold at least this many requests
MIN_UNFINISHED = 3
#: a phase shorter than this is not judged
MIN_MEASURED_S = 2.0


def saturated(offered: float | None, answered: int, measured_s: float | None,
              unfinished: int | None) -> bool:
    """The rule (module docstring) on plain numbers: ``answered``, the requests that
    completed or failed."""
    if not offered or not measured_s or measured_s < MIN_MEASURED_S or unfinished is None:
        return False
    expected = offered * measured_s
    return (answered < expected - SIGMAS * math.sqrt(expected) - SLACK
            and unfinished >= MIN_UNFINISHED)


def failures(w: M.Workload) -> str:
    """The failed requests named by cause (``HTTP 500 (12), stream cut short (3)``), or
    an empty string."""
    if not w.errors:
        return ""
    causes = sorted(w.error_causes.items(), key=lambda kv: -kv[1])
    return f"{w.errors} failed" + (": " + ", ".join(f"{k} ({n})" for k, n in causes)
                                    if causes else "")


def saturation(w: M.Workload) -> str | None:
    """The warning for a server workload (its hello names its ``server``) that did not
    keep up with its offered rate, else None."""
    if not w.hello.get("server"):
        return None
    unf = w.unfinished.count if w.unfinished is not None else None
    measured = w.measured_s if isinstance(w.measured_s, (int, float)) else None
    answered = w.count + w.errors
    drained = w.unfinished is not None and w.unfinished.drained  # its backlog awaited
    if not saturated(w.target_rate, answered, measured,
                     max(unf or 0, MIN_UNFINISHED) if drained else unf):
        return None
    assert w.target_rate is not None and measured is not None
    failed = failures(w)
    return (f"the server is saturated: offered {w.target_rate:.1f} req/s, answered "
            f"{answered / measured:.1f} req/s ({w.count} requests completed"
            + (f", {failed}," if failed else "") + f" in {measured:.1f} s, "
            + ("the backlog drained" if drained else f"{unf} unfinished at the end")
            + "); its latency is mostly queueing")
