"""The typed metric (``model.metric``): every string xwatch has written for a metric
reads back into a ``Metric`` and writes out unchanged (snapshots and reports keep their
strings), the user's spellings read as the same metric, its attributes (unit, direction,
scale) say what the analyses used to branch on, and anything else is refused with a
titled error naming the forms allowed."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from xwatch.core.analysis.phases import metric_words
from xwatch.core.analysis.stats.noise import FLOOR_METRICS
from xwatch.core.model.metric import P50, P99, THROUGHPUT, Metric, MetricError
from xwatch.errors import XwatchError

ROOT = Path(__file__).resolve().parents[2]

#: every metric string the code writes: the answer's numbers, the floors' metrics, the
#: token metrics at their percentiles, SLOs at other percentiles
WRITTEN = ["P50", "P90", "P95", "P99", "P99.9", "samples/s", "ttft_ms:P50", "ttft_ms:P99",
           "tpot_ms:P50", "tpot_ms:P99", "tpot_ms:P99.9", "itl_ms:P99", "queue_ms:P95"]


@pytest.mark.parametrize("text", WRITTEN)
def test_every_string_reads_and_writes_back_unchanged(text: str) -> None:
    m = Metric.parse(text)
    assert str(m) == text and f"{m}" == text
    assert Metric.parse(str(m)) == m and hash(Metric.parse(text)) == hash(m)


def _metric_strings(o: Any, path: tuple[str, ...] = ()) -> Iterator[str]:
    """Every metric string a snapshot document stores: an answer's, a GPU finding's,
    a capacity record's, advise's and capacity's SLO (``slo.metric``; the scenario's
    ``[slo] metric`` is a named metric's name, not one of these), the floors' keys."""
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "metric" and (path[-1:] in (("answer",), ("gpu_findings",), ("records",))
                                  or path[-2:] in (("advice", "slo"), ("capacity", "slo"))):
                yield v
            if k == "splits" and isinstance(v, dict):
                yield from (key.partition("/")[2] for key in v)
            yield from _metric_strings(v, (*path, k))
    elif isinstance(o, list):
        for v in o:
            yield from _metric_strings(v, path)


def test_every_recorded_snapshots_metrics_round_trip() -> None:
    """The recorded snapshots (data/results, the fixtures) hold metric strings: each
    reads as a Metric and writes back as it was."""
    seen: set[str] = set()
    for p in sorted([*ROOT.glob("data/results/**/snapshot.json*"),
                     *ROOT.glob("tests/**/snapshot.json*")]):
        raw = gzip.open(p).read() if p.suffix == ".gz" else p.read_bytes()
        seen |= set(_metric_strings(json.loads(raw)))
    assert {"P50", "P99", "samples/s", "tpot_ms:P99"} <= seen  # the search found them
    for text in seen:
        assert str(Metric.parse(text)) == text


def test_the_users_spellings_read_as_the_same_metric() -> None:
    assert Metric.parse("p99") == P99 == Metric.latency(99) == Metric.of(None, 99.0)
    assert Metric.parse("latency_ms:P99") == P99 == Metric.of("latency_ms", 99)
    assert Metric.parse("P99.90") == Metric.latency(99.9) and str(Metric.parse("P99.90")) == "P99.9"
    assert Metric.parse("tpot_ms:p99") == Metric.of("tpot_ms", 99) == Metric("named", 99.0, "tpot_ms")


def test_kinds_and_their_attributes() -> None:
    lat, named = Metric.parse("P99"), Metric.parse("ttft_ms:P99")
    assert (lat.kind, lat.percentile, lat.name) == ("latency", 99.0, "")
    assert (named.kind, named.percentile, named.name) == ("named", 99.0, "ttft_ms")
    assert (THROUGHPUT.kind, THROUGHPUT.percentile, THROUGHPUT.name) == ("throughput", None, "")
    for m in (lat, named, P50):  # a percentile of a time: better lower, averaged on logs
        assert (m.unit, m.change_unit, m.direction, m.scale) == ("ms", "ms", "lower", "log")
    assert (THROUGHPUT.unit, THROUGHPUT.change_unit, THROUGHPUT.direction, THROUGHPUT.scale) == \
        ("samples/s", "/s", "higher", "linear")
    assert lat.q == 99.0 and named.pq == "P99" and Metric.latency(99.9).pq == "P99.9"
    with pytest.raises(ValueError, match="no percentile"):
        _ = THROUGHPUT.q


def test_the_floor_metrics_and_the_answers_words_are_todays() -> None:
    assert [str(m) for m in FLOOR_METRICS] == ["P50", "P95", "P99", "samples/s"]
    assert metric_words(Metric.parse("ttft_ms:P99")) == "TTFT P99"
    assert metric_words(Metric.parse("queue_ms:P50")) == "queue_ms P50"
    assert metric_words(P99, tokens=True) == "request P99" and metric_words(P99) == "P99"
    assert metric_words(THROUGHPUT, tokens=True) == "samples/s"


@pytest.mark.parametrize("text", ["", "P", "P0", "P100", "P-1", "Pabc", "99", "x99",
                                  ":P99", "tpot-ms:P99", "a:b:P99", "samples", "samples/s:P99",
                                  "P99:", "requests/s"])
def test_anything_else_is_a_titled_error_naming_the_forms(text: str) -> None:
    with pytest.raises(MetricError) as e:
        Metric.parse(text)
    assert isinstance(e.value, XwatchError) and isinstance(e.value, ValueError)
    assert e.value.title == "Unknown metric" and repr(text) in str(e.value)
    assert "P99" in str(e.value) and "ttft_ms:P99" in str(e.value) and "samples/s" in str(e.value)


@pytest.mark.parametrize(("kind", "q", "name"), [
    ("throughput", 99.0, ""), ("throughput", None, "x_ms"), ("latency", None, ""),
    ("latency", 99.0, "ttft_ms"), ("named", 99.0, ""), ("named", 99.0, "latency_ms"),
    ("named", 100.0, "ttft_ms"), ("latency", 0.0, "")])
def test_an_inconsistent_metric_cannot_be_made(kind: Any, q: float | None, name: str) -> None:
    with pytest.raises(ValueError, match="not a metric"):
        Metric(kind, q, name)
