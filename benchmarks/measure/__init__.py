"""Measurements of xwatch itself (docs/benchmarks.md#layout)."""
