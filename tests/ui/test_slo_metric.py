"""A server's live view shows what its SLO judges (issue 64 goal 5): with the SLO on a
named metric (TTFT), the table and the charts show that metric first, labelled; ``M``
cycles through the rest; the SLO's line and share within are drawn only on the chart
of the metric it judges, labelled with it. Deterministic data (a built snapshot)."""

from __future__ import annotations

from typing import Any

from tests.helpers.slo_snapshot import slo_snapshot
from tests.ui.test_app import wait_for
from xwatch.ui.app import XwatchApp, make_app
from xwatch.ui.widgets.charts import CdfChart, LatencyChart
from xwatch.ui.widgets.status import StatusLine
from xwatch.ui.widgets.tables import WorkloadTable


def _app() -> XwatchApp:
    return make_app(replay=slo_snapshot(), replay_source="serve-slo/snapshot.json")


def _p50(app: XwatchApp, row: str) -> str:
    c = app.query_one(WorkloadTable).get_cell(row, "P50")
    return c if isinstance(c, str) else c.plain


def _slo_drawn(app: XwatchApp) -> tuple[bool, bool, str]:
    """(the SLO's line on the latency chart, on the CDF, the latency chart's title)."""
    chart, cdf = app.query_one(LatencyChart).plt, app.query_one(CdfChart).plt
    return ((200.0, "red") in chart.hlines, (200.0, "red") in cdf.vlines, chart.title_text)


async def test_the_slo_metric_first_labelled_and_m_cycles_through_the_rest() -> None:
    app = _app()
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.query_one(WorkloadTable)
        await wait_for(lambda: "TTFT P50" in table.plain, pilot)
        assert app.metric == "ttft_ms"
        status = app.query_one(StatusLine)
        await wait_for(lambda: "metric ttft_ms (the SLO's)" in status.plain, pilot)
        head = table.plain.splitlines()[0]
        assert "TTFT P50" in head and "TTFT P95" in head and "TTFT P99" in head
        # chat's TTFT (60-180 ms), not its whole request (~1.2 s); the trainer has none
        assert 60 <= float(_p50(app, "chat")) <= 180
        assert _p50(app, "trainer") == "-"
        line, cdf, title = _slo_drawn(app)
        assert line and cdf and title.startswith("TTFT ms, per second P50 · P99")
        assert "chat TTFT ≤200ms 100.0%" in title

        seen: dict[str, Any] = {}
        for _ in range(4):  # latency_ms, itl_ms, tpot_ms, then back to ttft_ms
            await pilot.press("M")
            await pilot.pause()
            seen[app.metric] = (table.plain.splitlines()[0], _p50(app, "chat"),
                                *_slo_drawn(app))
        assert list(seen) == ["latency_ms", "itl_ms", "tpot_ms", "ttft_ms"]
        assert "metric ttft_ms (the SLO's)" in status.plain
        head, p50, line, cdf, title = seen["latency_ms"]
        assert " P50 " in head and "TTFT" not in head and float(p50) > 1000  # the 1.2 s
        assert not line and not cdf and "≤200ms" not in title  # TTFT's SLO: not here
        for name, short in (("itl_ms", "ITL"), ("tpot_ms", "TPOT")):
            head, p50, line, cdf, title = seen[name]
            assert f"{short} P50" in head and 30 <= float(p50) <= 40
            assert not line and not cdf and "≤200ms" not in title and title.startswith(short)
        head, p50, line, cdf, title = seen["ttft_ms"]
        assert "TTFT P50" in head and line and cdf and "chat TTFT ≤200ms" in title


def test_the_slo_metric_main_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(_app(), terminal_size=(120, 34))
