"""Checks of xwatch's statistics against a planted truth or an A/A (docs/benchmarks.md#layout)."""
