"""A server's answer (issue 64 goal 5): it leads with its SLO metric, then TTFT and TPOT
at P50 and P99 (vLLM's order), then the whole request; a named metric's one-run
interval comes from its own values, not the whole request's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import msgspec

from xwatch.core.analysis.answer.stored import session_answer
from xwatch.core.analysis.stats.intervals import diff_interval, hist_of
from xwatch.core.analysis.verdict import answer
from xwatch.core.export.snapshot import load_snapshot
from xwatch.scenario.model import Slo

ROOT = Path(__file__).resolve().parents[2]
LLM = ROOT / "data" / "results" / "h100-2026-11-24-xsched12" / "llm"  # chat: a served LLM


def test_the_slo_metric_first_then_ttft_tpot_then_the_request() -> None:
    snap = load_snapshot(LLM)
    assert snap.scenario.slo is not None and snap.scenario.slo.named == "tpot_ms"
    for a in answer(snap):
        chat = [str(c.metric) for c in a.changes if c.workload == "chat"]
        assert chat == ["tpot_ms:P99", "ttft_ms:P50", "ttft_ms:P99", "tpot_ms:P50", "P50",
                        "P99"], chat
        assert a.sentence().split(": ", 1)[1].startswith("chat TPOT P99 ")
        assert "; chat TTFT P50 " in a.sentence() and "; chat request P50 " in a.sentence()
    # an SLO on TTFT leads with TTFT P99; one on the whole request: tokens, then it
    ttft = dataclasses.replace(snap.scenario, slo=Slo(workload="chat", percentile=99.0,
                                                      latency_ms=200.0, metric="ttft_ms"))
    a = answer(msgspec.structs.replace(snap, scenario=ttft))[0]
    assert [str(c.metric) for c in a.changes if c.workload == "chat"][:3] == [
        "ttft_ms:P99", "ttft_ms:P50", "tpot_ms:P50"]
    whole = dataclasses.replace(snap.scenario, slo=Slo(workload="chat", percentile=99.0,
                                                       latency_ms=2000.0))
    a = answer(msgspec.structs.replace(snap, scenario=whole))[0]
    assert [str(c.metric) for c in a.changes if c.workload == "chat"] == [
        "ttft_ms:P50", "ttft_ms:P99", "tpot_ms:P50", "tpot_ms:P99", "P50", "P99"]


def test_a_named_metrics_one_run_interval_is_its_own() -> None:
    """On the H100 the TPOT P99 change read "-3.61 ms within-run [-1289.56, -3.53]": the
    whole request's interval beside TPOT's estimate."""
    snap = load_snapshot(LLM)
    rec = next(r for r in session_answer(snap).records if r.step == "mps" and r.metric == "tpot_ms:P99")
    native, mps = snap.phases[0], snap.phases[1]
    nw, mw = native.workload("chat"), mps.workload("chat")
    assert nw is not None and mw is not None
    want = diff_interval(hist_of(nw.metrics["tpot_ms"]), hist_of(mw.metrics["tpot_ms"]), 99.0)
    assert rec.lo is not None and rec.hi is not None and want.lo is not None
    assert rec.lo <= rec.estimate <= rec.hi  # type: ignore[operator]
    assert abs(rec.lo) < 20 and abs(rec.hi) < 20, (rec.lo, rec.hi)  # ms of TPOT, not seconds
