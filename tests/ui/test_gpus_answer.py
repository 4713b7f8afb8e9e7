"""The Compare tab on several GPUs: the answer says what stands behind each number
("3 runs x 3 GPUs") and names a GPU unlike the others (replay of a simulated
three-GPU compare, ``tests/unit/test_gpu_copies.py``)."""

from __future__ import annotations

from tests.unit.test_gpu_copies import _session
from xwatch.ui.app import make_app


async def test_compare_tab_counts_every_gpu_and_names_the_slow_one() -> None:
    from xwatch.ui.widgets.panels import AnswerPanel

    app = make_app(replay=_session(2, 1.5), replay_source="three gpus")
    async with app.run_test(size=(160, 44)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        panel = app.query_one(AnswerPanel)
        assert panel.display
        text = " ".join(panel.plain.split())
        assert "MPS vs native (3 runs x 3 GPUs each, paired)" in text
        assert "high@" not in text.split("Finding")[0]
        assert "Finding: GPU 2's high P50 is +" in text
        await app.action_quit()
