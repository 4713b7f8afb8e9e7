"""``xwatch doctor``'s closing line counts every status: a WARN or a SKIP is not a pass
(issue 64: "8 passed, 0 failed" printed under 2 WARN and 1 SKIP)."""

from __future__ import annotations

from xwatch.cli.doctor import Check, summary


def test_the_summary_counts_warnings_and_skips_apart_from_passes() -> None:
    rs = [Check("PASS", "python", "")] * 5 + [Check("WARN", "devices", ""),
                                             Check("WARN", "telemetry", ""),
                                             Check("SKIP", "xsched install", "")]
    assert summary(rs) == "5 passed, 2 warned, 1 skipped, 0 failed"
    assert summary([*rs, Check("FAIL", "torch", "")]) == "5 passed, 2 warned, 1 skipped, 1 failed"
    assert summary([]) == "0 passed, 0 warned, 0 skipped, 0 failed"
