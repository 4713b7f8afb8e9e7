"""Box and GPU as blocks (analysis/stats/blocks.py) against computations made
independently: a two-way ANOVA without replication by hand, least squares by numpy on
an unbalanced table, and the paired t it must equal on a balanced two-setting one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xwatch.core.analysis.stats import race
from xwatch.core.analysis.stats import sequential as seq
from xwatch.core.analysis.stats.blocks import (
    additive,
    block_key,
    blocked_difference,
    blocked_runs,
    blocks_of,
)
from xwatch.core.analysis.stats.runs import paired_interval, t95

# a Latin square: three settings, each once in each of three blocks
TABLE = {"A": (10.0, 12.0, 17.0), "B": (11.0, 15.0, 16.0), "C": (9.0, 13.0, 14.0)}
ROWS = [(s, f"box{j}/", v) for s, vs in TABLE.items() for j, v in enumerate(vs)]


def test_two_way_anova_by_hand() -> None:
    # row means 13, 14, 12; column means 10, 40/3, 47/3; grand mean 13; the residuals
    # y - row - column + grand: A 0, -4/3, 4/3; B 0, 2/3, -2/3; C 0, 2/3, -2/3
    fit = additive(ROWS)
    assert fit is not None
    assert fit.resid_df == 9 - 3 - 3 + 1
    assert fit.resid_ss == pytest.approx(16.0 / 3.0)
    assert fit.ss["A"] == pytest.approx(32.0 / 9.0)
    assert fit.ss["B"] == pytest.approx(8.0 / 9.0)
    for s, mean in (("A", 13.0), ("B", 14.0), ("C", 12.0)):
        assert fit.level(s) == pytest.approx(mean)  # balanced: the row mean
        assert fit.var_factor(s) == pytest.approx(1.0 / 3.0)
        # h_ii = 1/3 + 1/3 - 1/9 on a balanced two-way table: 3 runs x 4/9
        assert fit.df[s] == pytest.approx(4.0 / 3.0)
    assert fit.diff("A", "B") == pytest.approx(1.0)
    assert fit.diff_factor("A", "B") == pytest.approx(2.0 / 3.0)


def test_unbalanced_against_least_squares() -> None:
    # a lost node: box2 ran no C, box0 ran A twice
    rows = [("A", "0", 10.0), ("A", "0", 11.0), ("A", "1", 12.5), ("A", "2", 17.0),
            ("B", "0", 11.0), ("B", "1", 15.5), ("B", "2", 16.0),
            ("C", "0", 9.0), ("C", "1", 13.0)]
    fit = additive(rows)
    assert fit is not None
    x = np.array([[s == "A", s == "B", s == "C", b == "1", b == "2"] for s, b, _ in rows],
                 dtype=float)
    y = np.array([v for _, _, v in rows])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ coef
    inv = np.linalg.inv(x.T @ x)
    hat = np.einsum("ij,jk,ik->i", x, inv, x)
    assert fit.resid_df == len(rows) - 5
    assert fit.resid_ss == pytest.approx(float(resid @ resid))
    for k, s in enumerate("ABC"):
        a = np.zeros(5)
        a[k], a[3], a[4] = 1.0, 1.0 / 3.0, 1.0 / 3.0
        assert fit.level(s) == pytest.approx(float(a @ coef))
        assert fit.var_factor(s) == pytest.approx(float(a @ inv @ a))
        mine = np.array([r[0] == s for r in rows])
        assert fit.df[s] == pytest.approx(float((1.0 - hat[mine]).sum()))
        assert fit.ss[s] == pytest.approx(float(resid[mine] @ resid[mine]))
    assert sum(fit.df.values()) == pytest.approx(fit.resid_df)


def test_one_block_or_disconnected_is_none() -> None:
    assert additive([(s, "only/", v) for s, _, v in ROWS]) is None
    # C ran only in box9, where nobody else ran: C cannot be told from box9
    assert additive([("A", "0", 1.0), ("B", "0", 2.0), ("A", "1", 1.5), ("B", "1", 2.6),
                     ("C", "9", 3.0), ("C", "9", 3.1)]) is None


def test_balanced_pairs_are_the_paired_t() -> None:
    a, b = [10.0, 12.0, 14.0], [11.0, 15.0, 16.0]
    blocked = blocked_difference(list(zip("xyz", a)), list(zip("xyz", b)))
    paired = paired_interval(a, b)
    assert blocked is not None
    assert (blocked.est, blocked.lo, blocked.hi) == pytest.approx(
        (paired.est, paired.lo, paired.hi))
    # by hand: d = 1, 3, 2; mean 2, SD 1, t(2) / sqrt(3)
    assert blocked.hi == pytest.approx(2.0 + t95(2) / math.sqrt(3.0))
    # with resolutions: the paired interval's grid too
    blocked = blocked_difference(list(zip("xyz", a)), list(zip("xyz", b)), 0.5, 1.0)
    paired = paired_interval(a, b, 0.5, 1.0)
    assert blocked is not None and blocked.lo == pytest.approx(paired.lo)


def test_box_levels_leave_the_difference() -> None:
    # B is A + 1 in every box; box1 is 5 ms slower, and the runs' pairs straddle boxes
    a = [("0", 10.0), ("1", 15.1), ("0", 9.9), ("1", 15.0)]
    b = [("1", 16.0), ("0", 11.0), ("1", 16.1), ("0", 10.9)]
    iv = blocked_difference(a, b)
    assert iv is not None and iv.lo is not None and iv.hi is not None
    assert 0.8 < iv.lo < 1.0 < iv.hi < 1.2
    unblocked = paired_interval([v for _, v in a], [v for _, v in b])
    assert unblocked.lo is not None and unblocked.lo < -1.0  # the boxes' 5 ms as noise


def test_race_fit_one_block_unchanged_many_blocks_narrower() -> None:
    def cands(blocks: bool) -> list[race.Candidate]:
        out = []
        for i, (s, vs) in enumerate(TABLE.items()):
            c = race.Candidate(s, "native", {}, slo_values=[v / 4 for v in vs],
                               prices=[1000.0 + 100 * i + 10 * j for j in range(3)])
            if blocks:
                c.blocks = [block_key(None, None)] * 3
            out.append(c)
        return out

    plain, one = cands(False), cands(True)
    race.fit(plain)
    race.fit(one)
    assert [(c.slo, c.price) for c in plain] == [(c.slo, c.price) for c in one]
    # three boxes, the third slower for every setting
    many = cands(False)
    for c in many:
        c.blocks = [block_key(f"box{j}", None) for j in range(3)]
    race.fit(many)
    for p, m in zip(plain, many):
        assert m.slo.est == pytest.approx(p.slo.est)  # balanced: the same geometric mean
    assert blocks_of(many[0].blocks) == (3, 3)


def test_blocked_runs_keep_floor_and_bounds() -> None:
    vals = {s: ([v for v in vs], [f"b{j}/" for j in range(3)]) for s, vs in TABLE.items()}
    runs = {s: seq.log_runs(vs, (), resolution=0.5) for s, (vs, _) in vals.items()}
    out = blocked_runs(runs, vals)
    for s, r in out.items():
        before = runs[s]
        assert r is not None and before is not None
        assert (r.floor, r.resolution, r.bounded, r.n) == (
            before.floor, before.resolution, before.bounded, before.n)
        assert r.dof is not None and r.n_eff == pytest.approx(3.0)
    # runs without their blocks: unchanged
    assert blocked_runs(runs, {s: (vs, []) for s, (vs, _) in vals.items()}) is runs


def test_a_fleets_answer_says_its_boxes_are_blocks() -> None:
    from msgspec.structs import replace

    from tests.conftest import ROOT
    from xwatch.core import model as M
    from xwatch.core.analysis.answer.stored import stored
    from xwatch.core.export.snapshot import load_snapshot
    from xwatch.core.fleet import merge

    base = load_snapshot(ROOT / "tests" / "data" / "snapshot_calibrate_h100.json")
    a, b = base.phases[2], base.phases[3]  # native and XSched, HIGH beside LOW

    def box(i: int) -> M.Box:
        return M.Box(node_id=f"{i:02d}" * 28, host=f"host{i}")

    # 3 runs each, interleaved, rotated over 3 boxes
    phases = [replace(p, repeat=r, box=box((2 * r + j) % 3))
              for r in range(3) for j, p in enumerate((a, b))]
    notes = stored(merge.merged(base.scenario, phases, "2026-11-29T12:00:00Z")).box.notes
    (line,) = [n for n in notes if n.startswith("Intervals:")]
    assert line.endswith("Box is a block: 3 boxes; each run's block's level is removed "
                         "before comparing (an additive model, step + block, t on its "
                         "residual degrees of freedom).")
    # one box: the line as before
    one = [replace(p, box=box(0)) for p in phases]
    notes = stored(merge.merged(base.scenario, one, "2026-11-29T12:00:00Z")).box.notes
    (line,) = [n for n in notes if n.startswith("Intervals:")]
    assert "block" not in line


def test_a_race_over_boxes_says_so() -> None:
    from xwatch.core.analysis.stats.blocks import race_note

    runs = [(s, [v for v in vs], [f"box{j}/" for j in range(3)]) for s, vs in TABLE.items()]
    assert race_note(runs).startswith("; box is a block: 3 boxes, each block's level")
    assert race_note([(s, vs, ["one/"] * 3) for s, vs, _ in runs]) == ""
    assert race_note([(s, vs, []) for s, vs, _ in runs]) == ""


def test_a_slower_box_by_hand() -> None:
    from xwatch.core.analysis.stats.blocks import slower_blocks
    from xwatch.core.analysis.stats.runs import t_ppf

    table = {"s1": (10.0, 10.2, 12.1), "s2": (20.4, 20.0, 24.2)}
    rows = [(s, "abc"[j], v) for s, vs in table.items() for j, v in enumerate(vs)]
    (found,) = slower_blocks(rows)
    assert found[0] == "c"
    # by hand, on the log scale: a balanced 2 x 3 table
    y = {s: [math.log(v) for v in vs] for s, vs in table.items()}
    row = {s: sum(v) / 3 for s, v in y.items()}
    col = [sum(y[s][j] for s in y) / 2 for j in range(3)]
    grand = sum(row.values()) / 2
    ss = sum((y[s][j] - row[s] - col[j] + grand) ** 2 for s in y for j in range(3))
    var = ss / 2  # 6 - 2 - 3 + 1 degrees of freedom
    est = col[2] - (col[0] + col[1]) / 2
    half = t_ppf(1 - 0.05 / 6, 2) * math.sqrt(var * (1 / 2 + 1 / 4 * (1 / 2 + 1 / 2)))
    iv = found[1]
    assert (iv.est, iv.lo, iv.hi) == pytest.approx(
        (math.exp(est), math.exp(est - half), math.exp(est + half)))
    # equal boxes: none
    even = {"s1": (10.0, 10.2, 9.9), "s2": (20.4, 20.0, 20.1)}
    assert slower_blocks([(s, "abc"[j], v) for s, vs in even.items()
                          for j, v in enumerate(vs)]) == []


def test_the_fleet_names_a_box_slower_over_every_step() -> None:
    from msgspec.structs import replace

    from tests.conftest import ROOT
    from xwatch.core import model as M
    from xwatch.core.export.snapshot import load_snapshot
    from xwatch.core.fleet import merge

    base = load_snapshot(ROOT / "tests" / "data" / "snapshot_two_phases.json")
    p = base.phases[0]
    top = max(p.workloads, key=lambda w: w.priority)
    p99 = float(top.phase.p99 or 1.0)

    def run(box: int, step: str, scale: float) -> object:
        w = replace(top, phase=replace(top.phase, p99=p99 * scale))
        return replace(p, box=M.Box(node_id=f"{box:02d}" * 28, host=f"host{box}"),
                       step=step, workloads=(w,))

    # box 2 is 20% slower for both steps, but not every run of one step is above every
    # other box's: only the model over both steps tells it
    phases = [run(b, s, m * (1.2 if b == 2 else 1.0) * j)
              for s, m in (("native", 1.0), ("mps", 1.5))
              for b in (1, 2, 3) for j in (1.0, 1.02)]
    phases += [run(1, "native", 1.23), run(3, "mps", 1.5 * 1.23)]
    found = merge.box_findings(phases)  # type: ignore[arg-type]
    assert len(found) == 1 and found[0].startswith("box host2/") and \
        "is slower: its high P99 is 1" in found[0], found


def test_a_fleets_noise_floor_leaves_the_boxes_out() -> None:
    from msgspec.structs import replace

    from tests.conftest import ROOT
    from xwatch.core import model as M
    from xwatch.core.analysis.stats.noise import floor_of
    from xwatch.core.export.snapshot import load_snapshot
    from xwatch.core.model.metric import THROUGHPUT

    base = load_snapshot(ROOT / "tests" / "data" / "snapshot_calibrate_h100.json")
    p = base.phases[2]  # HIGH beside LOW, natively
    low = next(w for w in p.workloads if w.name == "low")

    def run(box: int | None, rate: float) -> object:
        w = replace(low, throughput=replace(low.throughput, samples_per_s=rate))
        b = None if box is None else M.Box(node_id=f"{box:02d}" * 28, host=f"host{box}")
        return replace(p, box=b, workloads=tuple(w if x.name == "low" else x
                                                 for x in p.workloads))

    rates = [(1, 100.0), (1, 102.0), (2, 120.0), (2, 121.0)]
    fl = floor_of([run(b, r) for b, r in rates], "native", "2026-11-29", "s", "d", {})  # type: ignore[misc]
    s = fl.get("low", THROUGHPUT)
    assert s is not None and fl.boxes == 2
    # by hand: box 1's runs 1 from their mean each (2), box 2's 0.5 each (0.5): 2.5 / (4 - 2)
    assert s.total == pytest.approx(1.25)
    plain = floor_of([run(None, r) for _, r in rates], "native", "2026-11-29", "s", "d", {})  # type: ignore[misc]
    one = plain.get("low", THROUGHPUT)
    assert one is not None and plain.boxes == 1
    assert one.total == pytest.approx(sum((r - 110.75) ** 2 for _, r in rates) / 3)
