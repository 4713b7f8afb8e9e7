"""Pure pieces that explain failures and XSched: cause lines, clipping, the
arrival schedule, probe verdicts, the calibrate decomposition, tail attribution."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

import msgspec
import pytest

from tests.helpers.fixture_snapshot import workload_snapshot
from xwatch.core import model as M
from xwatch.core.analysis.calibrate import calibrate, high_names
from xwatch.core.analysis.gpu.attribution import attribute
from xwatch.core.engine.causes import best_cause, clip, strip_prefix
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot
from xwatch.core.engine.stats import Moments
from xwatch.core.engine.worker.arrivals import Schedule, due_times
from xwatch.core.xsched.engagement import probe_verdict
from xwatch.scenario import parse_scenario

# What upstream XSched 49079bc printed when PyTorch crashed on created streams
# (driver 580), followed by the interpreter's own death notice.
XSCHED_CRASH = [
    "[INFO @ T597 @ 12:15:01.102934] using global scheduler",
    "[INFO @ T597 @ 12:15:01.103001] XQueue created for stream 0x55d1c2a0",
    "[ERRO @ T597 @ 12:15:06.595215] cuda error 1: invalid argument @ "
    "/work/xsched/platforms/cuda/hal/src/level1/cuda_queue.cpp:44",
]
PY_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/x/loop.py", line 99, in run',
    "    forward()",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]


def test_cause_prefers_xsched_error_and_strips_its_prefix() -> None:
    assert best_cause(XSCHED_CRASH) == ("cuda error 1: invalid argument @ "
                                        "/work/xsched/platforms/cuda/hal/src/level1/cuda_queue.cpp:44")


def test_cause_reads_xsched_1_2_lines() -> None:
    """1.2 logs ``[XSCHED ERRO @ T 10140 @ ...]`` (as its xserver did on SPUP, on the H100)."""
    lines = ["[XSCHED INFO @ T 513 @ 21:06:30.373125] using global scheduler",
             "[XSCHED ERRO @ T 10140 @ 21:04:41.714465] Assertion failed: invalid policy type: "
             "6 @ /xsched/sched/src/policy/policy.cpp:66"]
    assert best_cause(lines) == ("Assertion failed: invalid policy type: 6 @ "
                                 "/xsched/sched/src/policy/policy.cpp:66")
    assert best_cause(lines[:1]) == ""


def test_cause_never_picks_an_info_line() -> None:
    assert best_cause(XSCHED_CRASH[:2]) == ""
    assert best_cause(["[INFO @ T1 @ 00:00:00.0] using global scheduler", "bye"]) == "bye"


def test_cause_python_traceback_and_device_error() -> None:
    assert best_cause(PY_TRACEBACK) == \
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert best_cause(["warming up", "Segmentation fault (core dumped)", ""]) == \
        "Segmentation fault (core dumped)"
    assert best_cause(["ValueError: bad shape", "INFO done"]) == "ValueError: bad shape"


def test_strip_prefix_and_clip_at_words() -> None:
    assert strip_prefix("[WARN @ T12 @ 01:02:03.000004] careful") == "careful"
    text = "RuntimeError: device 'cuda:0' requested but torch sees no GPU"
    c = clip(text, 40)
    assert len(c) <= 40 and c.endswith("…") and text.startswith(c[:-1])
    assert c[:-1].split()[-1] in text.split()  # no word cut in half
    assert clip("short", 40) == "short"


def test_schedule_fixed_is_computed_not_accumulated() -> None:
    s = Schedule(100.0, 20.0)
    got = [s.next() for _ in range(1001)]
    assert got[1000] == 100.0 + 1000 / 20.0
    assert due_times(100.0, 20.0, "fixed", 0, until=100.0 + 2.0) == \
        [100.0 + i / 20 for i in range(41)]
    assert due_times(100.0, 20.0, "fixed", 0, until=102.0, skip=38) == \
        [100.0 + i / 20 for i in range(38, 41)]
    assert due_times(100.0, 20.0, "fixed", 0, until=102.0, limit=10) == \
        [100.0 + i / 20 for i in range(10)]
    assert due_times(100.0, 20.0, "fixed", 0, until=99.0) == []


def test_schedule_poisson_matches_the_worker_rng() -> None:
    rng = random.Random(7)
    t, expect = 5.0, []
    for _ in range(50):
        expect.append(t)
        t += rng.expovariate(30.0)
    s = Schedule(5.0, 30.0, "poisson", 7)
    assert [s.next() for _ in range(50)] == expect
    until = expect[40]
    assert due_times(5.0, 30.0, "poisson", 7, until) == expect[:41]
    assert due_times(5.0, 30.0, "poisson", 7, until, skip=30) == expect[30:41]


@pytest.mark.parametrize(("rc", "stderr", "qmax", "ready", "timed_out", "want"), [
    (-11, XSCHED_CRASH, 2, 0, False, "crashed"),
    (0, ["[INFO @ T1 @ 0:0:0.0] using global scheduler"], 2, 5, False, "engaged"),
    (0, ["[INFO @ T1 @ 0:0:0.0] using global scheduler"], 2, 0, False, "not-scheduled"),
    (0, ["[INFO @ T1 @ 0:0:0.0] using global scheduler",
         "[WARN @ T1 @ 0:0:0.0] CudaQueueCreate failed: does not support default stream"],
     0, 0, False, "not-scheduled"),
    (0, [], 0, 0, False, "shim-not-loaded"),
    (0, ["[INFO @ T1 @ 0:0:0.0] using app-managed scheduler"], 0, 0, False, "app-managed"),
    (0, ["[INFO @ T1 @ 0:0:0.0] using local scheduler with policy HPF"], 0, 0, False, "local"),
    (-9, ["[INFO @ T1 @ 0:0:0.0] using global scheduler"], 2, 0, True, "hung"),
])
def test_probe_verdicts(rc: int, stderr: list[str], qmax: int, ready: int, timed_out: bool,
                        want: str) -> None:
    status, detail, cause, _ = probe_verdict(rc, stderr, qmax, ready, timed_out, 10)
    assert status == want, detail
    if want == "crashed":
        assert "SIGSEGV" in detail and "cuda error 1: invalid argument" in detail
        assert cause.startswith("cuda error 1")


SCEN = parse_scenario({"duration_s": 10, "workload": [
    {"name": "high", "priority": "high", "model": "resnet18", "rate": 20},
    {"name": "low", "priority": "low", "model": "resnet50"}]})


def _summary(values: list[float]) -> object:
    m = Moments()
    for v in values:
        m.add(v)
    return m.summary()


def _phase(index: int, mode: str, role: str, hi_ms: list[float] | None, low_sps: float | None,
           status: str = "done", extra: dict[str, object] | None = None,
           slowest: tuple[tuple[float, float], ...] = ()) -> PhaseSnapshot:
    wls = []
    if hi_ms is not None:
        wls.append(workload_snapshot("high", 1, _summary(hi_ms), len(hi_ms), 20.0,
                                     slowest=slowest))
    if low_sps is not None:
        wls.append(workload_snapshot("low", 0, _summary([100.0]), 10, low_sps))
    kw: dict[str, Any] = dict(extra or {})
    if "xsched" in kw:
        kw["xsched"] = msgspec.convert({"root": "", **kw["xsched"]}, M.Xsched)
    return PhaseSnapshot(index, f"{role}-{mode}-1", mode, status, "", None, 10.0, True,
                         tuple(wls), calibrate=role, **kw)


def test_calibrate_decomposition_and_verdict() -> None:
    assert high_names(SCEN) == ("high",)
    alone_n = [4.0] * 98 + [5.0, 5.0]
    alone_x = [3.5] * 98 + [22.0, 22.0]
    tog_n = [4.3] * 98 + [14.0, 14.0]
    tog_x = [3.6] * 98 + [18.5, 18.5]
    snap = SessionSnapshot(SCEN, (
        _phase(0, "native", "alone", alone_n, None), _phase(1, "xsched", "alone", alone_x, None),
        _phase(2, "native", "together", tog_n, 6164.0),
        _phase(3, "xsched", "together", tog_x, 5057.0)), (), 0.0, 10.0)
    cal = calibrate(snap)
    assert cal is not None and not cal.missing
    p50 = cal.rows[0]
    p99 = cal.rows[2]
    # exact against the percentiles each phase reports (histogram-quantized)
    assert p50.shim_overhead == pytest.approx(snap.phases[1].workloads[0].phase.p50
                                              - snap.phases[0].workloads[0].phase.p50)
    assert p50.recovered == pytest.approx(p50.together_native - p50.together_xsched)
    assert p99.contention == pytest.approx(p99.together_native - p99.alone_native)
    assert p99.shim_overhead > 15 and p99.recovered < 0
    assert cal.low_price_pct == pytest.approx((5057 - 6164) / 6164 * 100)
    v = cal.verdict
    assert "lowers high's median" in v and "raises its P99" in v
    assert "comes from the shim itself" in v and "-18.0%" in v


def test_calibrate_missing_phase_is_said() -> None:
    snap = SessionSnapshot(SCEN, (
        _phase(0, "native", "alone", [4.0] * 10, None),
        _phase(1, "xsched", "alone", None, None, status="failed"),
        _phase(2, "native", "together", [5.0] * 10, 100.0),
        _phase(3, "xsched", "together", [4.5] * 10, 90.0)), (), 0.0, 10.0)
    cal = calibrate(snap)
    assert cal is not None and cal.missing == ("alone xsched (failed)",)
    assert math.isnan(cal.rows[0].shim_overhead)
    assert cal.verdict.startswith("Incomplete calibration")


def test_tail_attribution_counts_by_nearest_polls() -> None:
    lanes = {"high": {"lane": [[t / 10, "running"] for t in range(100)]},
             "low": {"lane": [[t / 10, "running" if t < 30 else "suspended" if t < 60
                               else "idle" if t < 80 else "none"] for t in range(80)]}}
    lanes["high"]["lane"][50] = [5.0, "suspended"]
    slow = ((1.02, 50.0),   # open 0.97-1.02: polls at 1.0 -> LOW running
            (4.05, 60.0),   # 3.99-4.05: poll 4.0 -> LOW suspended
            (5.01, 20.0),   # 4.99-5.01: HIGH's own queue suspended at 5.0
            (7.03, 20.0),   # 7.01-7.03: no poll inside; nearest 7.0 -> LOW idle
            (9.53, 20.0),   # 9.51-9.53: nearest LOW poll 7.9 is too far; HIGH's 9.5 says ready
            (2.0, 5.0))     # under the SLO: not counted
    p = _phase(1, "xsched", "together", [4.0] * 100, 10.0,
               extra={"xsched": {"workloads": lanes}}, slowest=slow)
    a = attribute(p, slo_ms=10.0)
    assert a is not None and a.threshold_kind == "SLO"
    assert a.counts == {"LOW running": 1, "LOW suspended": 1, "LOW idle": 1,
                        "HIGH suspended": 1, "unknown": 1}
    assert "1 while LOW running" in a.sentence()
    native = _phase(0, "native", "together", [4.0] * 100, 10.0, slowest=slow)
    assert attribute(native, slo_ms=10.0) is None


def test_cause_on_stderr_captured_from_the_real_crash() -> None:
    """stderr of a preflight probe under upstream XSched 49079bc on the H100 (driver 580):
    the XSched error, then glibc's abort message; the cause is the XSched line."""
    from pathlib import Path

    lines = (Path(__file__).parents[1] / "data" / "stderr" /
             "xsched-49079bc-h100-created-stream.txt").read_text().splitlines()
    assert lines[-1].startswith("malloc(): unsorted double linked list corrupted")
    cause = best_cause(lines)
    assert cause.startswith("cuda error 1: invalid argument @ ")
    assert cause.endswith("level1/cuda_queue.cpp:44")
    status, detail, _, sched = probe_verdict(-6, lines, 144, 4, False, 0, 40)
    assert (status, sched) == ("crashed", "global")
    assert detail.startswith("killed by SIGABRT: cuda error 1: invalid argument")


def test_probes_of_a_multi_gpu_run_are_those_of_its_first_gpu(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from xwatch.core.xsched.env import xsched_env
    from xwatch.core.xsched.install import XschedInstall
    from xwatch.core.xsched.preflight import plan_probes
    from xwatch.scenario import load_scenario

    inst = XschedInstall(Path(tmp_path), "test")
    one = load_scenario("intensive").with_overrides(device="cuda:0")
    eight = one.with_overrides(gpus=tuple(range(8)))

    def probes(scen):  # type: ignore[no-untyped-def]
        plats = {w.name: "cuda" for w in scen.workloads}
        envs = {w.name: xsched_env(w, inst, "cuda") for w in scen.workloads}
        return plan_probes(scen, inst, plats, envs)

    p1, p8 = probes(one), probes(eight)
    assert len(p8) == len(p1) == 4  # HIGH and LOW, created and default stream
    high_created = next(p for p in p8 if p.stream == "created" and "high@0" in p.workloads)
    assert high_created.workloads == tuple(f"high@{g}" for g in range(8))
    assert high_created.env["CUDA_VISIBLE_DEVICES"] == "0"  # run on the first GPU


def test_a_graphed_decoder_gets_a_graph_probe_and_fails_on_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """XSched 49079bc crashed a graphed decoder on an H100 (its shim queues kernels
    launched during a capture into its own queue); the graph probe must be planned for
    the workload that captures graphs only, and its failure must stop that workload."""
    import dataclasses
    from pathlib import Path

    from xwatch.core.xsched.env import xsched_env
    from xwatch.core.xsched.install import XschedInstall
    from xwatch.core.xsched.preflight import Verdict, plan_probes, preflight_failure
    from xwatch.scenario import load_scenario

    inst = XschedInstall(Path(tmp_path), "test")
    root = Path(__file__).parents[2]
    scen = load_scenario(str(root / "benchmarks" / "gpu" / "scenarios" / "llm-graphed.toml")
                         ).with_overrides(device="cuda:0")
    plats = {w.name: "cuda" for w in scen.workloads}
    envs = {w.name: xsched_env(w, inst, "cuda") for w in scen.workloads}
    kinds = {(p.stream, n) for p in plan_probes(scen, inst, plats, envs) for n in p.workloads}
    assert kinds == {("created", "chat"), ("default", "chat"), ("graph", "chat"),
                     ("created", "trainer"), ("default", "trainer")}
    every = {p.stream for p in plan_probes(scen, inst, plats, envs, graphs=True)
             if "trainer" in p.workloads}
    assert every == {"created", "default", "graph"}  # doctor's: a graph probe for all

    def verdict(stream: str, status: str, who: list[str]) -> Verdict:
        return Verdict(status=status, detail="killed by SIGSEGV: cuda error 715", python="py",
                       platform="cuda", device="cuda:0", stream=stream, workloads=who)

    fine = [verdict(s, "engaged", ["chat", "trainer"]) for s in ("created", "default")]
    graph_crash = verdict("graph", "crashed", ["chat"])
    why = preflight_failure([*fine, graph_crash], scen)
    assert why is not None and why.startswith("preflight: a CUDA graph (captured, then "
                                              "replayed) under XSched crashed (killed by")
    assert "chat uses CUDA graphs (decode = 'graphed'), so its real workload would fail " \
        "the same way" in why
    assert preflight_failure(fine, scen) is None
    # a graph probe that failed stops only workloads that capture graphs
    assert preflight_failure([*fine, verdict("graph", "crashed", ["trainer"])], scen) is None
    eager = dataclasses.replace(scen, workloads=tuple(
        dataclasses.replace(w, decode="eager") for w in scen.workloads))
    assert preflight_failure([*fine, graph_crash], eager) is None


def test_the_smoke_graph_kind_on_a_cpu_is_the_plain_cpu_run(capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from xwatch.core.engine.worker.smoke import main

    assert main(["cpu", "graph", "0"]) == 0
    start, done = (json.loads(ln) for ln in capsys.readouterr().out.splitlines())
    assert start["stream"] == "n/a (cpu)" and done["iters"] >= 3


def test_the_preflight_names_a_crash_before_what_may_follow_from_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """On the H100 the graph probe crashed while xserver stopped answering, and the
    created-stream probe beside it was judged not-scheduled; the crash is the cause."""
    from pathlib import Path

    from xwatch.core.xsched.preflight import Verdict, preflight_failure
    from xwatch.scenario import load_scenario

    root = Path(__file__).parents[2]
    scen = load_scenario(str(root / "benchmarks" / "gpu" / "scenarios" / "llm-graphed.toml")
                         ).with_overrides(device="cuda:0")

    def verdict(stream: str, status: str, detail: str) -> Verdict:
        return Verdict(status=status, detail=detail, python="py", platform="cuda",
                       device="cuda:0", stream=stream, workloads=["chat", "trainer"]
                       if stream != "graph" else ["chat"])

    got = [verdict("created", "not-scheduled", "ready in only 3 of 272 polls"),
           verdict("default", "not-scheduled", "never seen ready"),
           verdict("graph", "crashed", "killed by SIGABRT: cuda error 907")]
    why = preflight_failure(got, scen)
    assert why is not None
    assert why.startswith("preflight: a CUDA graph (captured, then replayed) under XSched "
                          "crashed (killed by SIGABRT: cuda error 907); chat uses CUDA graphs")
    # the created stream's failure is named once (chat and trainer both use it), the
    # default stream's not at all (nobody uses it)
    assert why.count("Also: created stream not-scheduled.") == 1
    assert "default stream" not in why


def test_calibrate_says_no_verdict_where_xsched_took_no_part() -> None:
    """Issue 64: a calibration whose XSched runs scheduled nothing gives no verdict on
    XSched and says who and why; only LOW scheduled: it says what that measures."""
    nox = {"workloads": {"high": {"status": "no-xqueue"}, "low": {"status": "no-xqueue"}}}
    alone_x = {"workloads": {"high": {"status": "shim-not-loaded"}}}

    def snap(tog: Mapping[str, object], alone: Mapping[str, object]) -> SessionSnapshot:
        return SessionSnapshot(SCEN, (
            _phase(0, "native", "alone", [4.0] * 100, None),
            _phase(1, "xsched", "alone", [4.1] * 100, None, extra={"xsched": dict(alone)}),
            _phase(2, "native", "together", [9.0] * 100, 100.0),
            _phase(3, "xsched", "together", [5.0] * 100, 90.0, extra={"xsched": dict(tog)})),
            (), 0.0, 10.0)

    cal = calibrate(snap(nox, alone_x))
    assert cal is not None
    assert cal.verdict.startswith("No verdict: together, XSched took no part: high had no "
                                  "XQueue"), cal.verdict
    assert "alone, XSched took no part: high shim not loaded" in cal.verdict
    assert "lowers" not in cal.verdict and "recovering" not in cal.verdict
    low_only = {"workloads": {"high": {"status": "no-xqueue"}, "low": {"status": "engaged"}}}
    engaged = {"workloads": {"high": {"status": "engaged"}}}
    cal = calibrate(snap(low_only, engaged))
    assert cal is not None
    assert cal.verdict.startswith(
        "Only low was scheduled by XSched: the change measures XSched's effect on low "
        "alone; high ran unscheduled beside it"), cal.verdict
    assert "lowers high's median" in cal.verdict
