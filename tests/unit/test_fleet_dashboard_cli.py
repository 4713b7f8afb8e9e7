"""``xwatch run --ray``'s refusals, each a titled error before Ray is joined (the
dashboard over the boxes: ``cli.fleet.fleet_dashboard``)."""

from __future__ import annotations

import pytest

from xwatch.cli.main import EXIT_USAGE, main


@pytest.mark.parametrize(("extra", "title"), [
    (["--headless"], "HEADLESS RUN WITH --RAY"),
    (["--duration", "0"], "ENDLESS PHASES WITH --RAY"),
    (["--metrics-port", "0"], "METRICS ENDPOINT WITH --RAY"),
])
def test_what_the_dashboard_over_the_boxes_refuses(extra: list[str], title: str,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from xwatch.core.fleet import connect

    def no_ray(address: str) -> None:
        raise AssertionError("Ray joined before the arguments were checked")

    monkeypatch.setattr(connect, "connect", no_ray)
    assert main(["run", "demo", "--ray", "127.0.0.1:1", "--telemetry", "off", *extra]) \
        == EXIT_USAGE
    assert title in capsys.readouterr().err
