"""An install's own version, policy numbering, creatable policies and settings (meta),
and the scenario checks made against them (compat), for both numberings XSched has
shipped: 1.0.0 (49079bc) and 1.2.0 (1dd3139 and after, e.g. bd494cb)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import tomllib

from tests.helpers.fake_xsched import RELEASES, write_meta
from xwatch.core.xsched.compat import check_policy, check_scenario, unknown_settings
from xwatch.core.xsched.engagement import EXIT_CRASH, probe_verdict
from xwatch.core.xsched.install import XschedError
from xwatch.core.xsched.meta import parse_policy_enum, parse_version, read_meta, short_name
from xwatch.errors import ScenarioError
from xwatch.scenario import parse_scenario

# 49079bc's header has a preprocessor line and comments inside the enum
HEADER_1_0 = """
typedef enum {
    kPolicyUnknown                           = 0,
    kPolicyHighestPriorityFirst              = 1,
    kPolicyHeterogeneousHighestPriorityFirst = 2,
    kPolicyUtilizationPartition              = 3,
    kPolicyProcessUtilizationPartition       = 4,
    kPolicyKEarliestDeadlineFirst            = 5,
    kPolicyLaxity                            = 6,
    kPolicyActiveWindowFirst                 = 7,
    kPolicyCPUHighestPriorityFirst           = 8,
    // kPolicyOld = 99,
    kPolicyCompletelyFairScheduler           = 9, /* kPolicyX = 98 */
    kPolicyMultiLevelFeedbackQueue           = 10,
    // NEW_POLICY: New XPolicyTypes go here.
    kPolicyMax,
} XPolicyType;
typedef enum { kSchedulerUnknown = 0, kSchedulerGlobal = 3 } XSchedulerType;
"""


def _binaries(root: Path, version: str, drop: tuple[str, ...] = ()) -> None:
    """An xserver whose bytes name the policy classes the way a real build's RTTI does."""
    (root / "bin").mkdir(parents=True, exist_ok=True)
    names = [f"{e}Policy" for e, _, ok in RELEASES[version] if ok and e not in drop]
    blob = b"\0".join(f"N6xsched5sched{len(n)}{n}E".encode() for n in names)
    (root / "bin" / "xserver").write_bytes(b"\x7fELF\0" + blob + b"\0")


def test_parse_both_numberings() -> None:
    assert parse_version("set(XSched_VERSION 1.2.0)\nset(XSched_VERSION_MAJOR 1)") == "1.2.0"
    old = parse_policy_enum(HEADER_1_0)
    assert old["CompletelyFairScheduler"] == 9 and old["CPUHighestPriorityFirst"] == 8
    assert "Old" not in old and "X" not in old and "Unknown" not in old and len(old) == 10
    assert short_name("CPUHighestPriorityFirst") == "CHPF" and short_name("Laxity") == "LAX"
    assert short_name("StrictProcessUtilizationPartition") == "SPUP"
    assert short_name("EarliestDeadlineNew") == "EDN"  # a future policy: its capitals


@pytest.mark.parametrize("version,cfs,spup", [("1.2.0", 10, 6), ("1.0.0", 9, None)])
def test_read_meta_from_an_install(tmp_path: Path, version: str, cfs: int,
                                   spup: int | None) -> None:
    write_meta(tmp_path, version)
    _binaries(tmp_path, version)
    m = read_meta(tmp_path)
    assert m.version == version and m.notes == ()
    assert m.policies.by_name("CFS").number == cfs  # type: ignore[union-attr]
    sp = m.policies.by_name("SPUP")
    assert (sp.number if sp else None) == spup
    if sp is not None:  # 1.2 lists it; its build has no class for it
        assert sp.creatable is False and "SPUP" not in m.policies.usable()
        assert m.policies.label(6) == "SPUP (6)"
    assert m.policies.label(42) == "#42 (not in this install's table)"
    assert m.knows("XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS") is (version == "1.2.0")


def test_class_names_inside_longer_ones_do_not_count(tmp_path: Path) -> None:
    """UtilizationPartitionPolicy stands inside ProcessUtilizationPartitionPolicy: only
    the length-prefixed name proves a class."""
    write_meta(tmp_path, "1.2.0")
    _binaries(tmp_path, "1.2.0", drop=("UtilizationPartition",))
    m = read_meta(tmp_path)
    assert m.policies.by_name("UP").creatable is False  # type: ignore[union-attr]
    assert m.policies.by_name("PUP").creatable is True  # type: ignore[union-attr]


def test_missing_header_is_said_and_the_assumption_named(tmp_path: Path) -> None:
    write_meta(tmp_path, "1.2.0", types_h=False, def_h=False)
    m = read_meta(tmp_path)
    assert m.policies.by_name("CFS").number == 10  # type: ignore[union-attr]
    assert "include/xsched/types.h is missing: assumed XSched 1.2.0's policy numbering " \
        "(XSched_VERSION 1.2.0)" in m.policies.assumed
    assert m.policies.by_name("HPF").creatable is None  # type: ignore[union-attr]
    assert m.knows("XSCHED_SCHEDULER_SUSPEND_WAIT_ALL") is True  # by its version
    bare = read_meta(tmp_path / "nothing")
    assert bare.version is None and bare.knows("XSCHED_CUDA_LV3_IMPL") is None
    assert any("version is unknown" in n for n in bare.notes)
    assert any("assumed XSched 1.0.0's policy numbering (no version found)" in n
               for n in bare.notes)


SCEN = """
[xsched]
policy = "{policy}"
[[workload]]
name = "chat"
priority = "high"
model = "resnet18"
[[workload]]
name = "trainer"
priority = "low"
model = "resnet18"
[workload.xsched]
level = 3
{extra}
"""


def _scen(policy: str = "HPF", extra: str = "") -> object:
    return parse_scenario(tomllib.loads(SCEN.format(policy=policy, extra=extra)), "x.toml")


def test_scenario_settings_reach_the_environment() -> None:
    from xwatch.core.xsched.env import settings_env

    sc = _scen(extra='lv3_impl = "TSG"\nsingle_stream = true\nsuspend_wait_idle = false')
    w = sc.workloads[1]  # type: ignore[attr-defined]
    assert settings_env(w) == {"XSCHED_CUDA_LV3_IMPL": "TSG",
                               "XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS": "ON",
                               "XSCHED_SCHEDULER_SUSPEND_WAIT_IDLE": "OFF"}
    with pytest.raises(ScenarioError, match=r"lv3_impl.*'TSG', 'TRAP'"):
        _scen(extra='lv3_impl = "FAST"')
    with pytest.raises(ScenarioError, match=r"policy.*'SPUP'"):
        _scen(policy="FIFO")


def test_what_the_install_cannot_do_is_an_error_naming_file_key_and_choices(
        tmp_path: Path) -> None:
    new, old = tmp_path / "new", tmp_path / "old"
    for root, v in ((new, "1.2.0"), (old, "1.0.0")):
        write_meta(root, v)
        _binaries(root, v)
    m_new, m_old = read_meta(new), read_meta(old)
    with pytest.raises(XschedError) as e:
        check_scenario(m_new, _scen("SPUP"))  # type: ignore[arg-type]
    msg = str(e.value)
    assert msg.startswith("x.toml: [xsched] policy = 'SPUP'") and "cannot create it" in msg
    assert "allowed: HPF, HHPF, CHPF, UP, PUP, KEDF" in msg
    with pytest.raises(XschedError, match="no policy 'SPUP'"):
        check_scenario(m_old, _scen("SPUP"))  # type: ignore[arg-type]
    assert check_policy(m_new, "CFS") == 10 and check_policy(m_old, "CFS") == 9
    sc = _scen(extra='single_stream = true\nenv = { XSCHED_NOT_A_THING = "1" }')
    assert unknown_settings(m_new, sc) == [  # type: ignore[arg-type]
        ("workload 'trainer' [workload.xsched] env.XSCHED_NOT_A_THING", "XSCHED_NOT_A_THING")]
    with pytest.raises(XschedError, match=r"x.toml: workload 'trainer' \[workload.xsched\] "
                       "single_stream: XSched 1.0.0 .* does not know "
                       "XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS"):
        check_scenario(m_old, sc)  # type: ignore[arg-type]
    check_scenario(m_new, _scen(extra='lv3_impl = "TSG"'))  # type: ignore[arg-type]
    # no def.h (as `make cuda` installs): an install newer than xwatch knows may have
    # settings xwatch has never heard of: not an error; def.h, when there, decides
    newer = dataclasses.replace(m_new, version="1.3.0", settings_source="by version")
    assert newer.knows("XSCHED_FROM_THE_FUTURE") is None
    assert m_new.knows("XSCHED_FROM_THE_FUTURE") is False


def test_a_probe_that_crashes_only_while_exiting_is_told_apart() -> None:
    segv = ["[INFO @ T1 @ 0:0:0.0] using global scheduler", "Segmentation fault"]
    # ran engaged to its end, said done, then SIGSEGV: the phase may go on, warned
    v = probe_verdict(-11, segv, 3, 40, False, 1400, 80, finished=True)
    assert v[0] == EXIT_CRASH and "killed by SIGSEGV while exiting" in v[1]
    # the same crash before "done" is a crash
    assert probe_verdict(-11, segv, 3, 40, False, 700, 80, finished=False)[0] == "crashed"
    # finished but never engaged: the engagement verdict stands (and names the crash)
    v = probe_verdict(-11, segv, 3, 0, False, 1400, 80, finished=True)
    assert v[0] == "not-scheduled" and "while exiting" in v[1]
    assert probe_verdict(0, segv, 3, 40, False, 1400, 80, finished=True)[0] == "engaged"
