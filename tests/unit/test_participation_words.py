"""Who takes no part in a phase's mode, and what to do (``modes.participation``): the
wording for every verdict of taking no part, a server's and a default-stream workload's
own, the provisional line of a pending XSched verdict, and MPS's non-clients."""

from __future__ import annotations

import msgspec

from xwatch.core import model as M
from xwatch.core.engine.snapshot import PhaseSnapshot, WorkloadSnapshot
from xwatch.core.modes.participation import Absent, absent, advice, advices
from xwatch.core.xsched.rules.participation import SO_FAR


def _w(name: str, **hello: object) -> WorkloadSnapshot:
    return WorkloadSnapshot(name=name, priority_label="high", phase=M.Summary(),
                            window=M.Summary(), throughput=M.Throughput(), hello=dict(hello))


def _phase(xsched: dict[str, M.XschedWorkload] | None = None,
           mps: dict[str, M.MpsWorkload] | None = None,
           workloads: tuple[WorkloadSnapshot, ...] = ()) -> PhaseSnapshot:
    return PhaseSnapshot(
        index=1, name="xsched", mode="xsched" if xsched is not None else "mps",
        status="running", started_at="", ended_at=None, elapsed_s=5.0, measuring=True,
        workloads=workloads,
        xsched=None if xsched is None else M.Xsched(
            root="/x", policy="HPF", workloads=xsched),
        mps=None if mps is None else M.Mps(tool="t", pipe_dir="p", log_dir="l", workloads=mps))


def test_every_verdict_of_taking_no_part_has_a_reason_and_what_to_do() -> None:
    assert set(advices()) == {("xsched", s) for s in ("shim-not-loaded", "no-xqueue",
                                                        "not-scheduled", "app-managed",
                                                        "local")} | {("mps", "not-in-mps")}
    for a in advices().values():
        assert a.reason and a.todo and not a.todo.endswith(".")
    for mode, status in (("xsched", "engaged"), ("xsched", "pending"), ("mps", "in-mps"),
                         ("mps", "unverified"), ("native", "native")):
        assert advice(mode, status) is None, (mode, status)
    nq = advice("xsched", "no-xqueue")
    assert nq is not None and "never saw its GPU work" in nq.reason and "LD_PRELOAD" in nq.todo
    ns = advice("xsched", "not-scheduled")
    assert ns is not None and "torch.cuda.Stream" in ns.todo
    # what is known of the workload changes the reason
    dflt = advice("xsched", "not-scheduled", default_stream=True)
    assert dflt is not None and "its work runs on the default stream" in dflt.reason
    srv = advice("xsched", "not-scheduled", server=True)
    assert srv is not None and "vLLM" in srv.reason and "MPS" in srv.todo
    mps = advice("mps", "not-in-mps")
    assert mps is not None and "not a client of the phase's MPS daemon" in mps.reason


def test_the_line_names_the_workload_the_reason_and_what_to_do() -> None:
    a = Absent("infer", "xsched", "not-scheduled", "XSched is not scheduling it", "do X")
    assert a.line() == "infer: XSched is not scheduling it: do X"
    p = Absent("infer", "xsched", "pending", "XSched has not been seen scheduling it so far",
               "do X", provisional=True)
    assert p.line() == "infer: XSched has not been seen scheduling it so far: if it stays so, do X"


def test_absent_reads_the_phase_verdicts_xsched_and_mps() -> None:
    so_far = f"{SO_FAR}: its XQueues were never seen ready in 70 polls while 120 requests completed"
    ph = _phase(xsched={
        "infer": M.XschedWorkload(status="not-scheduled", warnings=["never seen ready"]),
        "train": M.XschedWorkload(status="no-xqueue"),
        "high": M.XschedWorkload(status="engaged"),
        "slow": M.XschedWorkload(status="pending", warnings=[so_far]),
        "young": M.XschedWorkload(status="pending"),
    }, workloads=(_w("infer", stream="default"), _w("train"), _w("high"), _w("slow")))
    got = {a.workload: a for a in absent(ph)}
    assert set(got) == {"infer", "train", "slow"}
    assert got["infer"].line().startswith(
        "infer: XSched is not scheduling it (its work runs on the default stream, which "
        "XSched 1.2 does not schedule): run its GPU work on a CUDA stream it creates")
    assert got["train"].line().startswith("train: no XQueue: the XSched shim never saw its GPU work: ")
    slow = got["slow"]
    assert slow.provisional and slow.status == "pending"
    assert slow.reason == ("XSched has not been seen scheduling it so far (its XQueues were "
                           "never seen ready in 70 polls while 120 requests completed)")
    assert "if it stays so, run its GPU work on a CUDA stream" in slow.line()
    mps = _phase(mps={"chat": M.MpsWorkload(status="not-in-mps"),
                      "trainer": M.MpsWorkload(status="in-mps")},
                 workloads=(_w("chat", server_pid=7), _w("trainer")))
    assert [a.line()[:61] for a in absent(mps)] == [
        "chat: MPS is not serving it: it is not a client of the phase'"]
    assert absent(_phase(xsched={})) == [] and absent(msgspec.structs.replace(
        mps, mps=None)) == []
