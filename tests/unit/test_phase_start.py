"""``benchmarks/measure/phase_start.py``'s account of how copies started (issue 51 goal 5): forked
or exec'd and why, whether each ran on the GPU it was pinned to, and the goal line on the
phases where every copy was forked."""

from __future__ import annotations

from typing import Any

from xwatch.testing.starts import breakdown, render

FORK = "fork (fork server pid 7)"
IMPORTING = "exec (the fork server is still importing)"
BUS = {0: 0x19, 1: 0x3B}


def _copy(gpu: int, start: str, bus: int | None = None) -> dict[str, Any]:
    hello: dict[str, Any] = {"gpu_init_env": {"CUDA_VISIBLE_DEVICES": str(gpu)}}
    if bus is not None:
        hello["pci"] = {"domain": 0, "bus": bus, "device": 0}
    return {"gpu": gpu, "launch": {"start": start}, "hello": hello,
            "stages": {"spawn": 0.1, "warm": 1.0, "ready": 1.2}}


def _phase(name: str, t: float, start: str, measure_s: float, elsewhere: bool = False
           ) -> dict[str, Any]:
    wls = {f"{w}@{g}": _copy(g, start, BUS[1 - g] if elsewhere and g == 1 else BUS[g])
           for g in (0, 1) for w in ("high", "low")}
    return {"name": name, "mode": name.split("-")[0], "status": "done", "t_start": t,
            "t_measure": t + measure_s, "workloads": wls}


def _doc(*phases: dict[str, Any]) -> dict[str, Any]:
    return {"telemetry": {"info": {"devices": [
        {"device": "gpu0", "bus_id": "00000000:19:00.0"},
        {"device": "gpu1", "bus_id": "00000000:3B:00.0"}]}}, "phases": list(phases)}


def test_copies_say_how_they_started_and_where_they_ran() -> None:
    phases = breakdown(_doc(_phase("native-1", 0, IMPORTING, 12.0), _phase("mps-2", 20, FORK, 6.0),
                            _phase("native-3", 40, FORK, 3.0), _phase("mps-4", 60, FORK, 9.0)))
    assert [p["first"] for p in phases] == [True, False, False, False]
    c = phases[2]["copies"]["low@1"]
    assert c["how"] == "fork" and c["gpu"] == 1 and c["placed"] is True
    assert c["bus"] == "0000:3b:00.0" and c["gpu_init_env"] == {"CUDA_VISIBLE_DEVICES": "1"}
    text = render(phases)
    native, mps = text.split("mps: ")
    assert "copies started: 4 forked, 4 exec'd (in 2 phase(s))" in native
    assert "after each run's first phase: 4 of 4 copies forked" in native
    assert f"{IMPORTING}: 4 (native-1:high@0, native-1:low@0" in native
    assert "8 of 8 copies ran on the GPU they were pinned to" in native
    # the goal is read on the phases with every copy forked only (not the 12 s first)
    assert "<= 5 s (native), in the 1 phase(s) with every copy forked: median 3.00 s " \
           "(3.00-3.00); 1 of 1 within the goal" in native
    assert "<= 8 s (mps), in the 2 phase(s) with every copy forked: median 7.50 s " \
           "(6.00-9.00); 1 of 2 within the goal" in mps


def test_a_copy_on_another_gpu_or_exec_d_is_named() -> None:
    other = "exec (its environment differs from the fork server's in HIP_VISIBLE_DEVICES)"
    ph = _phase("native-2", 20, FORK, 3.0, elsewhere=True)
    ph["workloads"]["high@1"]["launch"]["start"] = other
    text = render(breakdown(_doc(_phase("native-1", 0, IMPORTING, 12.0), ph)))
    assert "after each run's first phase: 3 of 4 copies forked" in text
    assert f"{other}: 1 (native-2:high@1)" in text
    assert "6 of 8 copies ran on the GPU they were pinned to (their PCI address = " \
           "telemetry's for that index), 2 elsewhere: native-2:high@1 (0000:19:00.0), " \
           "native-2:low@1 (0000:19:00.0)" in text
    assert "no phase after its run's first had every copy forked" in text


def test_without_addresses_where_copies_ran_is_not_claimed() -> None:
    doc = _doc(_phase("native-1", 0, IMPORTING, 12.0))
    for w in doc["phases"][0]["workloads"].values():
        del w["hello"]["pci"]
    text = render(breakdown(doc))
    assert "where each copy ran is not known" in text and "copies ran on the GPU" not in text


def test_xsched_s_goal_counts_every_phase_after_the_run_s_first() -> None:
    """Issue 58 goal 4: at most 8 s in every XSched phase, its first included (it pays
    the xserver's start and the preflight: named on a line of its own with how its probes
    started), however its copies started; a run's first phase is a cold start, named and
    not counted."""
    x1 = _phase("xsched-2", 20, FORK, 8.1)
    x1["preflight"] = {"seconds": 7.96, "verdicts": [
        {"start": "exec", "cached": False}, {"start": FORK, "cached": False}]}
    x2 = _phase("xsched-4", 60, IMPORTING, 3.4)
    x2["preflight"] = {"seconds": 0.0, "verdicts": [{"start": FORK, "cached": True}]}
    text = render(breakdown(_doc(_phase("native-1", 0, FORK, 4.0), x1,
                                 _phase("native-3", 40, FORK, 3.0), x2)))
    xs = text.split("xsched: ")[1]
    assert "goal: phase start -> first measured second <= 8 s (xsched), in every phase after " \
           "its run's first (2, its first xsched phase included; 1 with every copy forked): " \
           "median 5.75 s (3.40-8.10); 1 of 2 within the goal: xsched-2 8.10 s" in xs
    assert "xsched's first phase xsched-2: 8.10 s, preflight 7.96 s" in xs
    assert f"preflight probes: 1 forked, 1 exec'd; exec; {FORK}" in xs
    cold = render(breakdown(_doc(_phase("xsched-1", 0, FORK, 11.0))))
    assert "goal (8 s, xsched): no xsched phase after its run's first" in cold
    assert "xsched's first phase xsched-1 (its run's first: a cold start, not counted): " \
           "11.00 s, no preflight" in cold


def test_restart_s_goal_line_names_the_first_x() -> None:
    from xwatch.testing.starts import goal_lines, key_of

    assert key_of("native", "xsched") == key_of("xsched", "native") == "x"
    assert key_of("native", "mps") == "m" and key_of("native", "native") is None
    sw = [{"from": "native", "to": "xsched", "key_to_measured": 8.9},
          {"from": "xsched", "to": "native", "key_to_measured": 3.0},
          {"from": "native", "to": "xsched", "key_to_measured": 3.5},
          {"from": "native", "to": "mps", "key_to_measured": 6.0}]
    assert goal_lines(sw) == [
        "goal: x (into and out of xsched), key -> first measured second <= 8 s: 2 of 3 within "
        "the goal, median 3.50 s (3.00-8.90); the first into xsched: 8.90 s (OVER the goal)"]
