"""``compare --layout split`` by simulation with a known truth
(``benchmarks/stats/split_width_sim.py``): the 95% interval over runs that pair the modes
inside each phase covers the truth (run-to-run and GPU effects included) at its rate,
and at equal wall time it is narrower than today's layout where the runs share noise."""

from __future__ import annotations

import pytest

from xwatch.core.plans.box import split_gpus
from xwatch.testing.split_width import STRUCTURES, width_and_coverage


@pytest.mark.parametrize("metric", sorted(STRUCTURES))
@pytest.mark.parametrize("gpus", [2, 4])
def test_the_split_interval_covers_the_truth(metric: str, gpus: int) -> None:
    """400 simulated sessions of 2 rounds' wall time (4 split phases): the share of 95%
    intervals holding the truth stays within binomial noise of 95% (SD 1.1%)."""
    _, cover = width_and_coverage("split", STRUCTURES[metric], gpus, 2, 400, seed=gpus)
    assert 0.92 <= cover <= 0.985, cover


def test_split_is_narrower_than_replicate_at_equal_wall_time_on_four_gpus() -> None:
    """HIGH P50 (2.5% shared by a run): at most 0.6x today's width (the target); HIGH P99
    (nothing shared by a run) gains only the degrees of freedom of more runs."""
    p50 = [width_and_coverage(d, STRUCTURES["HIGH P50"], 4, 3, 300, seed=7)[0]
           for d in ("replicate", "split")]
    assert p50[1] / p50[0] <= 0.6, p50
    p99 = [width_and_coverage(d, STRUCTURES["HIGH P99"], 4, 3, 300, seed=7)[0]
           for d in ("replicate", "split")]
    assert 0.5 <= p99[1] / p99[0] <= 0.8, p99


def test_the_split_layout_is_a_latin_square() -> None:
    """Over m repeats each mode runs on every GPU once, each phase holds every mode."""
    modes, gpus = ("native", "mps", "xsched"), (0, 1, 2, 3, 4, 5)
    rows = [split_gpus(modes, gpus, r) for r in range(3)]
    for row in rows:
        assert sorted(row) == list(gpus) and set(row.values()) == set(modes)
        assert all(list(row.values()).count(m) == 2 for m in modes)
    for g in gpus:
        assert sorted(row[g] for row in rows) == sorted(modes)
    assert split_gpus(("native", "xsched"), (0, 1, 2, 3), 1) == {
        0: "xsched", 1: "native", 2: "xsched", 3: "native"}
    with pytest.raises(ValueError, match="one GPU per mode"):
        split_gpus(modes, (0, 1), 0)
