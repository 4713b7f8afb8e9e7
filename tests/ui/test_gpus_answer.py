"""The Compare tab on several GPUs: the answer says what stands behind each number
("3 runs x 3 GPUs") and names a GPU unlike the others (replay of a simulated
three-GPU compare, ``tests/unit/test_gpu_copies.py``)."""

from __future__ import annotations

from tests.unit.test_gpu_copies import _session
from xwatch.core.analysis.answer.stored import with_answer
from xwatch.ui.app import make_app


async def test_compare_tab_counts_every_gpu_and_names_the_slow_one() -> None:
    from xwatch.ui.widgets.panels import AnswerPanel

    # a replay's snapshot is a file's, which carries its answer (loading computes it)
    app = make_app(replay=with_answer(_session(2, 1.5)), replay_source="three gpus")
    async with app.run_test(size=(160, 44)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        panel = app.query_one(AnswerPanel)
        assert panel.display
        text = " ".join(panel.plain.split())
        assert "MPS vs native (3 runs x 3 GPUs each, paired)" in text
        assert "high@" not in text.split("Finding")[0]
        assert "Finding: GPU 2's high P50 is +" in text
        # the table's rows are copies: each copy's change is its own (GPU 2's copy is
        # twice as slow, so MPS's x1.5 adds twice as many ms to it)
        from xwatch.ui.widgets.tables import CompareTable

        table = app.query_one(CompareTable)
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        d0, d2 = (float(str(next(r for r in rows if r[0] == f"high@{g}" and r[1] == "P50 ms")
                               [1 + 6 + 1]).split()[0]) for g in (0, 2))
        assert 1.7 < d2 / d0 < 2.3, (d0, d2)
        await app.action_quit()
