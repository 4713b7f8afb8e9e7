"""Per-GPU grouping on a recorded two-H200 XSched run: groups, PCI matching, the
fallback by index, the roll-up, and the compact progress line for 3+ GPUs."""

from __future__ import annotations

from pathlib import Path

import msgspec

from xwatch.core.analysis.gpu.gpus import gpu_groups, rollup
from xwatch.core.export.snapshot import load_snapshot
from xwatch.core.plans.console import progress_line

SNAP = load_snapshot(Path(__file__).resolve().parent.parent / "data" / "snapshot_two_gpus.json")


def test_groups_match_telemetry_by_pci_and_roll_up() -> None:
    p = SNAP.phases[0]
    tel = SNAP.telemetry
    groups = gpu_groups(p, tel)
    assert [g.gpu for g in groups] == [0, 1]
    assert [w.name for w in groups[1].workloads] == ["high@1", "low@1"]
    assert groups[0].bus_id == "0000:00:06.0" and groups[0].matched_by == "pci"
    assert groups[0].high_p99 == p.workload("high@0").phase.p99  # type: ignore[union-attr]
    assert groups[1].low_samples_per_s == p.workload("low@1").throughput.samples_per_s  # type: ignore[union-attr]
    r = rollup(groups)
    worst = max(groups, key=lambda g: g.high_p99)
    assert r.worst_gpu == worst.gpu and r.worst_high_p99_ms == round(worst.high_p99, 6)
    assert r.high_requests == sum(g.high.count for g in groups if g.high)
    assert r.low_samples_per_s == round(sum(g.low_samples_per_s for g in groups), 3)


def test_without_pci_in_hello_the_index_is_used_and_said() -> None:
    p = SNAP.phases[0]
    bare = tuple(msgspec.structs.replace(w, hello={}) for w in p.workloads)
    groups = gpu_groups(msgspec.structs.replace(p, workloads=bare), SNAP.telemetry)
    assert [(g.telemetry_device, g.matched_by) for g in groups] == [("gpu0", "index"),
                                                                    ("gpu1", "index")]
    single = tuple(msgspec.structs.replace(w, gpu=None) for w in p.workloads)
    assert gpu_groups(msgspec.structs.replace(p, workloads=single), None) == []


def test_progress_line_is_per_gpu_from_three_gpus() -> None:
    p = SNAP.phases[0]
    assert "high@1 stopped n=" in progress_line(p)  # two GPUs: every copy
    more = tuple(msgspec.structs.replace(w, name=w.name.replace("@1", "@2"), gpu=2)
                 for w in p.workloads if w.gpu == 1)
    line = progress_line(msgspec.structs.replace(p, workloads=p.workloads + more))
    assert line.count(" | ") == 2 and "3 GPUs: HIGH P99 worst" in line
    assert "high@2 stopped" in line


def test_eight_gpus_headless_lines_stay_readable() -> None:
    """Sixteen copies: the progress line is the roll-up (short, worst GPU named, every
    GPU's P99 in order, the failed copy named), the final table is grouped under a
    line per GPU with HIGH's P99 interval, and ends with the roll-up over all."""
    from tests.helpers.fleet import fleet_snapshot
    from xwatch.core.analysis.stats.intervals import hist_of, percentile_interval
    from xwatch.core.plans.console import final_table

    snap = fleet_snapshot()
    p = snap.phases[0]
    line = progress_line(p)
    assert len(line.splitlines()[0]) < 200
    groups = gpu_groups(p)
    p99 = [g.high.window.p99 for g in groups if g.high]  # type: ignore[union-attr]
    worst = max(range(8), key=lambda i: p99[i])
    assert worst == 5 and f"worst {p99[5]:.2f} ms (GPU 5)" in line
    assert "by GPU " + " ".join(f"{v:.2f}" for v in p99) in line
    assert "low@6 failed" in line and "! low@6: failed (exit code 1)" in line
    table = final_table(p, snap.telemetry).splitlines()
    heads = [i for i, ln in enumerate(table) if ln.startswith("-- GPU ")]
    assert len(heads) == 8
    for g, i in enumerate(heads):  # each head, then its two copies
        assert table[i].startswith(f"-- GPU {g} · HIGH P99 ")
        assert table[i + 1].startswith(f"high@{g} ") and table[i + 2].startswith(f"low@{g} ")
    h5 = p.workload("high@5")
    assert h5 is not None
    iv = percentile_interval(hist_of(h5), 99.0)
    assert f"HIGH P99 {h5.phase.p99:.2f} [{iv.lo:.2f}, " in table[heads[5]]
    mean = sum(60 + 4 * 5 + i % 3 for i in range(60)) / 60  # the fake's 60 samples of gpu5
    assert f"util {mean:.0f}%" in table[heads[5]]
    assert table[heads[7] + 3].startswith("-- all 8 GPUs: HIGH P99 worst ")
    assert "(GPU 5)" in table[heads[7] + 3]


def test_many_workloads_on_one_gpu_make_a_short_progress_line() -> None:
    """Sixteen workloads without --gpus (as benchmarks/gpu/scenarios/sixteen-on-one.toml):
    loading, a count per state; measuring, the top priority's worst and best P99."""
    from tests.helpers.fleet import fleet_snapshot

    p = fleet_snapshot().phases[0]
    flat = msgspec.structs.replace(p, workloads=tuple(msgspec.structs.replace(w, gpu=None)
                                                  for w in p.workloads))
    line = progress_line(flat).splitlines()[0]
    highs = [w for w in flat.workloads if w.name.startswith("high")]
    worst = max(highs, key=lambda w: w.window.p99)
    best = min(highs, key=lambda w: w.window.p99)
    assert f"8 HIGH: P99 worst {worst.window.p99:.2f}ms ({worst.name}), " \
           f"best {best.window.p99:.2f}ms ({best.name})" in line
    assert "8 LOW: " in line and "low@6 failed" in line and len(line) < 200
    loading = msgspec.structs.replace(flat, measuring=False, workloads=tuple(
        msgspec.structs.replace(w, state="starting" if i % 4 else "warming")
        for i, w in enumerate(flat.workloads)))
    assert progress_line(loading).endswith("16 workloads: 4 warming, 12 starting")


def test_rollup_series_against_the_copies_rows() -> None:
    """The roll-up charts' series: per second, the worst (and best) HIGH P99 of any
    GPU and the LOW samples summed over GPUs, checked against each copy's own rows;
    the second a running phase is still in is left out."""
    import math

    from tests.helpers.fleet import fleet_snapshot
    from xwatch.core.analysis.gpu.gpus import gpu_roles, rollup_series
    from xwatch.core.analysis.timeline import phase_offsets

    snap = fleet_snapshot()
    p = snap.phases[0]
    roles = gpu_roles(snap.scenario.workloads)
    assert roles.gpus == list(range(8)) and roles.high[5] == "high@5"
    assert roles.lows[6] == ("low@6",)
    offs = phase_offsets(snap.phases)
    rows = {w.name: {r.sec: r for r in w.series} for w in p.workloads}
    secs = sorted({s for r in rows.values() for s in r})
    assert p.status == "running"
    worst = dict(x for x in rollup_series(snap.phases, offs, list(roles.high.values()),
                                          "p99", "max") if not math.isnan(x[1]))
    best = dict(x for x in rollup_series(snap.phases, offs, list(roles.high.values()),
                                         "p99", "min") if not math.isnan(x[1]))
    lows = [n for g in roles.gpus for n in roles.lows[g]]
    total = dict(x for x in rollup_series(snap.phases, offs, lows, "samples", "sum")
                 if not math.isnan(x[1]))
    assert sorted(worst) == [offs[0] + s for s in secs[:-1]]  # the newest second is out
    for s in secs[:-1]:
        p99 = [rows[n][s].p99 for n in roles.high.values() if s in rows[n]]
        assert worst[offs[0] + s] == max(p99) and best[offs[0] + s] == min(p99)
        assert total[offs[0] + s] == sum(rows[n][s].samples for n in lows if s in rows[n])


def test_final_table_names_early_stops_in_one_line_and_failures_in_full() -> None:
    """Sixteen workloads stopped by q: one line naming them, not sixteen tracebacks of
    the KeyboardInterrupt the stop caused; a failure keeps its cause and stderr, the
    cause not printed twice."""
    from tests.helpers.fleet import fleet_snapshot
    from xwatch.core import model as M
    from xwatch.core.plans.console import final_table

    p = fleet_snapshot().phases[0]
    ws = tuple(w if w.name == "low@6" else msgspec.structs.replace(
        w, state="stopped", exit=M.Exit(code=None, signal=2, reason="stopped", ran_to_end=False),
        stderr_tail=("Traceback (most recent call last):", "KeyboardInterrupt"))
        for w in p.workloads)
    lines = final_table(msgspec.structs.replace(p, workloads=ws)).splitlines()
    early = [ln for ln in lines if "stopped before the planned end" in ln]
    assert len(early) == 1 and early[0].count("@") == 15 and "low@6" not in early[0]
    assert not any("KeyboardInterrupt" in ln for ln in lines)
    fail = [i for i, ln in enumerate(lines) if ln.startswith("  ! low@6: failed (exit code 1)")]
    assert len(fail) == 1
    assert sum("OutOfMemoryError" in ln for ln in lines) == 1  # said once


def test_the_report_rolls_eight_gpus_up_as_the_dashboard_does() -> None:
    """Eight GPUs in a report: the latency chart is HIGH's worst/best GPU (not 32 lines),
    LOW's throughput is summed, the CDF is the worst GPU's HIGH."""
    import re

    from tests.helpers.fleet import fleet_snapshot
    from xwatch.core.export.render.charts import build_charts

    charts = build_charts(fleet_snapshot(ended=True))
    text = "\n".join(charts)
    assert "8 GPUs rolled up" in text and "HIGH P99, worst GPU" in text
    assert "high@3 P99" not in text
    assert "8 GPUs summed" in text and "LOW samples/s, all GPUs" in text
    assert re.search(r"high@5 \(the GPU with the worst HIGH P99\): latency distribution", text)
    two = build_charts(fleet_snapshot(gpus=2, ended=True))  # two GPUs: every copy drawn
    assert "high@1 P99" in "\n".join(two)
