"""Reading Prometheus text the way a scraper does (prometheus_client's own parser)."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def parse_samples(text: str) -> dict[str, list[Any]]:
    """Sample name -> its samples (``_bucket``, ``_count``, ... separately)."""
    out: dict[str, list[Any]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append(s)
    return out


def with_labels(samples: list[Any], **labels: str) -> list[Any]:
    return [s for s in samples if all(s.labels.get(k) == v for k, v in labels.items())]
