"""``xwatch sweep`` on several GPUs (``plans.sweep.box_rounds``): native a phase of its
own on every GPU; the settings side by side, one a GPU, rotated every repeat (a Latin
square), each copy with its own setting; settings whose daemon-wide settings differ
(XSched's policy) never share a phase. And the readers' view of such a phase
(``analysis.phases.per_setting``): one run per setting, its own copies."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from xwatch.core.analysis.phases import per_setting, setting_label, side_by_side
from xwatch.core.plans.sweep import box_rounds, parse_settings
from xwatch.errors import UsageError
from xwatch.scenario import Scenario, Workload


def _scen(gpus: tuple[int, ...]) -> Scenario:
    wls = (Workload(name="high", priority="high", command=("true",)),
           Workload(name="low", priority="low", command=("true",)))
    return Scenario(name="s", description="", duration_s=10.0, device="cpu", window_s=10.0,
                    workloads=wls).on_gpus(gpus)


def _backend(policy_of: Any = lambda sc: "HPF") -> Any:
    """What ``phase_wide`` reads of an XSched backend; the policy from the scenario."""
    from pathlib import Path

    from xwatch.core.xsched.controller import XschedController
    from xwatch.core.xsched.install import XschedInstall

    def make(sc: Scenario) -> Any:
        xs = dataclasses.replace(sc.xsched, policy=policy_of(sc))
        return XschedController(XschedInstall(Path("/opt/xsched"), "test"),
                                dataclasses.replace(sc, xsched=xs))
    return make


def _box_steps(rounds: list[tuple[int, Any]], rnd: int) -> list[Any]:
    return [st for r, st in rounds if r == rnd and st.mode != "native"]


@pytest.mark.parametrize("gpus", [(0, 1), (3, 1, 2)])
def test_settings_side_by_side_rotated_native_alone(gpus: tuple[int, ...]) -> None:
    scen = _scen(gpus)
    k = len(gpus)
    settings = parse_settings(["low.threshold=1,2,4,8,16"], scen)
    rounds = box_rounds(scen, settings, "xsched", _backend(), repeat=k)
    seen: dict[str, list[int]] = {}
    for rnd in range(1, k + 1):
        steps = [st for r, st in rounds if r == rnd]
        assert steps[0].mode == "native" and steps[0].only is None  # every GPU's copies
        assert steps[0].backend is None and steps[0].label is None
        boxed = steps[1:]
        assert len(boxed) == -(-5 // k)  # ceil(n/k) phases a round
        labels = []
        for st in boxed:
            placed = {int(n.split("@")[1]) for n in st.only}
            assert len(placed) * 2 == len(st.only)  # a GPU's copies of both workloads
            per_gpu: dict[int, str] = {}
            for copy, kv in st.setting.items():
                per_gpu[int(copy.split("@")[1])] = setting_label({copy.split("@")[0]: kv})
            assert set(per_gpu) == placed  # one setting a GPU
            for g, lb in per_gpu.items():
                labels.append(lb)
                seen.setdefault(lb, []).append(g)
                on = st.label.split(f"{lb} @GPU", 1)[1].split(" |")[0].split(",")
                assert str(g) in on, st.label  # every GPU named, one a setting or several
                # the phase's backend gives that GPU's copy its own threshold
                wl = st.backend.scenario.workload(f"low@{g}")
                assert wl.xsched.threshold == settings[[setting_label(s) for s in
                                                        settings].index(lb)]["low"]["threshold"]
        assert sorted(set(labels)) == sorted(setting_label(s) for s in settings)
        assert len(labels) == len(boxed) * k  # every GPU busy in every phase
    for lb in (setting_label(s) for s in settings[:k]):  # a full group: a Latin square
        assert sorted(seen[lb]) == sorted(gpus), seen
    assert all(v[0] != v[1] for v in seen.values()), seen  # no setting keeps its GPU


def test_settings_that_differ_in_the_xserver_policy_never_share_a_phase() -> None:
    """A sweep's keys are per process, so every setting shares one xserver; were one's
    policy different (planted through the backend), it would run in a phase of its own."""
    scen = _scen((0, 1))
    settings = parse_settings(["low.threshold=2,4,8"], scen)

    def policy(sc: Scenario) -> str:
        w = next(w for w in sc.workloads if w.base_name == "low")
        return "CBS" if w.xsched.threshold == 8 else "HPF"

    for rnd in (1, 2):
        steps = _box_steps(box_rounds(scen, settings, "xsched", _backend(policy), 2), rnd)
        groups = sorted(sorted({kv["threshold"] for c, kv in st.setting.items()})
                        for st in steps)
        assert groups == [[2, 4], [8]], groups
    plain = _box_steps(box_rounds(scen, settings, "xsched", _backend(), 1), 1)
    assert [len({kv["threshold"] for kv in st.setting.values()}) for st in plain] == [2, 1]
    assert [len(st.setting) for st in plain] == [2, 2]  # the lone one on both GPUs


def test_a_setting_given_twice_is_refused() -> None:
    with pytest.raises(UsageError, match=r"setting 3 .* is setting 1 again"):
        parse_settings(["low.threshold=2,4,2"], _scen(()))


def test_the_readers_see_one_run_per_setting_its_own_copies() -> None:
    """A box phase's view: each GPU's copies, the setting's own label, values and step
    (as on one GPU); failed only through the other setting's copy, it still counts."""
    from xwatch.core.engine.snapshot import PhaseSnapshot

    def wl(name: str, gpu: int, state: str = "running") -> Any:
        return SimpleNamespace(name=name, gpu=gpu, state=state, count=10)

    base = PhaseSnapshot(index=2, name="mps", mode="mps", status="failed",
                         started_at="", ended_at=None, elapsed_s=2.0, measuring=False,
                         workloads=(wl("high@0", 0), wl("low@0", 0), wl("high@1", 1),
                                    wl("low@1", 1, "failed")),  # type: ignore[arg-type]
                         setting="low.threshold=2 @GPU0 | low.threshold=8 @GPU1",
                         setting_values={"low@0": {"threshold": 2}, "low@1": {"threshold": 8}},
                         step="mps [low.threshold=2 @GPU0 | low.threshold=8 @GPU1]", repeat=1)
    assert side_by_side(base) == {0: {"low": {"threshold": 2}}, 1: {"low": {"threshold": 8}}}
    a, b = per_setting([base])
    assert [w.name for w in a.workloads] == ["high@0", "low@0"]
    assert [w.name for w in b.workloads] == ["high@1", "low@1"]
    assert (a.setting, a.step, a.setting_values) == (
        "low.threshold=2", "mps [low.threshold=2]", {"low": {"threshold": 2}})
    assert a.status == "done" and b.status == "failed"  # b's own copy failed
    assert a.name == "mps (GPU 0)" and a.repeat == 1
    # a phase of one setting (keyed by workload) is kept as it is
    single = PhaseSnapshot(index=1, name="x", mode="mps", status="done", started_at="",
                           ended_at=None, elapsed_s=1.0, measuring=False, workloads=(),
                           setting="low.threshold=2", setting_values={"low": {"threshold": 2}})
    assert per_setting([single]) == (single,) and not side_by_side(single)
