"""vLLM's goodput for a server workload (``vllm bench serve --goodput``): a request is
good when it completed and met every named SLO, ``ttft`` (``ttft_ms``), ``tpot``
(``tpot_ms``; a request of one token has none and meets it, as vLLM counts it as 0) and
``e2el`` (``latency_ms``, the end to end); goodput is the good requests per measured
second, beside their share of every request due (completed, failed or unfinished: a
failure and an unfinished request are misses)."""

from __future__ import annotations

from operator import attrgetter

from xwatch.core import model as M
from xwatch.core.model.events import Request

#: an SLO's name (the scenario's ``goodput`` key, as vLLM's ``--goodput``) -> the
#: request event's metric
SLO_METRICS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "e2el": "latency_ms"}


def parse_slos(items: tuple[str, ...]) -> dict[str, float]:
    """``("ttft:200", "e2el:2000")`` -> ``{"ttft": 200.0, "e2el": 2000.0}`` (the scenario
    checked them)."""
    out: dict[str, float] = {}
    for x in items:
        name, _, ms = x.partition(":")
        out[name.strip()] = float(ms)
    return out


class SloCounter:
    """The good requests of one workload in one phase."""

    def __init__(self, items: tuple[str, ...]) -> None:
        self.slos = parse_slos(items)
        #: (the request's field, its bound, whether absent means 0)
        self._checks = [(attrgetter(SLO_METRICS[k]), v, k == "tpot")
                        for k, v in self.slos.items()]
        self.good = 0

    def add(self, e: Request) -> None:
        """One counted request event."""
        if not e.ok:
            return
        for field, bound, zero in self._checks:
            v = field(e)
            if v is None and zero:
                v = 0.0  # one token: vLLM's TPOT 0
            if v is None or not v <= bound:
                return
        self.good += 1

    def snapshot(self, completed: int, failed: int, unfinished: int,
                 measured_s: float) -> M.Goodput:
        due = completed + failed + unfinished
        return M.Goodput(
            slos_ms=dict(self.slos), good=self.good, requests=due,
            requests_per_s=round(self.good / measured_s, 6) if measured_s > 0 else None,
            share=round(self.good / due, 6) if due else None)
