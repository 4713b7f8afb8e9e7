"""``xwatch doctor``'s closing line counts every status: a WARN or a SKIP is not a pass
(issue 64: "8 passed, 0 failed" printed under 2 WARN and 1 SKIP)."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping

import pytest

from xwatch.cli.doctor import Check, mode_checks, summary


def test_the_summary_counts_warnings_and_skips_apart_from_passes() -> None:
    rs = [Check("PASS", "python", "")] * 5 + [Check("WARN", "devices", ""),
                                             Check("WARN", "telemetry", ""),
                                             Check("SKIP", "xsched install", "")]
    assert summary(rs) == "5 passed, 2 warned, 1 skipped, 0 failed"
    assert summary([*rs, Check("FAIL", "torch", "")]) == "5 passed, 2 warned, 1 skipped, 1 failed"
    assert summary([]) == "0 passed, 0 warned, 0 skipped, 0 failed"


def _planted_checks(args: argparse.Namespace,
                    info: Mapping[str, object]) -> list[tuple[str, str, str]]:
    return [("WARN", "planted", f"{args.planted} {info['hip']}")]


def test_each_mode_adds_its_own_checks_and_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    """doctor asks every registered mode (``Mode.doctor``, ``Mode.add_arguments``), in
    the registry's order, and names none: a planted mode's checks and argument appear."""
    from xwatch.cli import parser as cli_parser
    from xwatch.core.modes import registry

    @dataclasses.dataclass(frozen=True)
    class Planted:
        name: str = "planted"
        doctor: str | None = f"{__name__}:_planted_checks"

        def add_arguments(self, p: argparse.ArgumentParser, place: str) -> None:
            if place == "doctor":
                p.add_argument("--planted", metavar="X")

    real = registry.modes()
    monkeypatch.setattr(registry, "modes", lambda: (*real, Planted()))
    args = cli_parser.build_parser().parse_args(["doctor", "--planted", "here"])
    assert args.planted == "here" and args.xsched is None
    monkeypatch.delenv("XSCHED_HOME", raising=False)
    got = mode_checks(args, {"hip": "6.2"})
    assert got[-1] == Check("WARN", "planted", "here 6.2")
    assert [c.name for c in got[:-1]] == ["xsched install"]  # XSched's, first: no install
