"""Whether each workload of a phase takes part in the phase's mode, said so that a user
can act on it: for every verdict of a mode's proof that means "took no part" (XSched:
``shim-not-loaded``, ``no-xqueue``, ``not-scheduled``, ``app-managed``, ``local``; MPS:
``not-in-mps``) a short reason and what to do (``advice``), and the workloads of a phase
that take no part, or have not been seen taking part so far (``absent``).

One wording for every front end: the dashboard's main screen (its alert bar) and the
headless console print ``Absent.line``; the answer may name ``Advice.reason``. Pure.

An XSched verdict of ``not-scheduled`` waits until enough polls would have seen the
workload's queues ready (``xsched.engagement.EXPECTED_READY_MIN``): at 10 Hz that is a
second for a busy workload and ten for one busy a tenth of the time. Until then a
workload whose queues were never seen ready although half that evidence is in carries a
warning starting with ``SO_FAR``: it is shown as provisional ("not seen scheduled so
far"), never as the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from xwatch.core.engine.snapshot import PhaseSnapshot, WorkloadSnapshot
from xwatch.core.modes.base import MPS, XSCHED

#: how the warning of a still pending XSched verdict starts once its evidence leans to
#: not-scheduled (``xsched.engagement.engagement`` writes it)
SO_FAR = "not seen scheduled so far"

#: what makes a program's GPU work schedulable by XSched 1.2
OWN_STREAM = ("run its GPU work on a CUDA stream it creates (torch.cuda.Stream(); xwatch's "
              "workloads: stream = \"created\")")


@dataclass(frozen=True)
class Advice:
    """Why a workload takes no part in its mode, and what to do about it."""

    reason: str
    todo: str


ADVICE: dict[tuple[str, str], Advice] = {
    (XSCHED, "shim-not-loaded"): Advice(
        "XSched cannot see it: the XSched shim is not loaded in its process",
        "keep the LD_PRELOAD / LD_LIBRARY_PATH xwatch gives it (neither a wrapper script nor "
        "the program may reset them), link the CUDA runtime dynamically (not cudart_static); "
        "in a container set XSCHED_CUDA_LIB"),
    (XSCHED, "no-xqueue"): Advice(
        "no XQueue: the XSched shim never saw its GPU work",
        "do its GPU work in the process xwatch starts, or in a child that keeps its "
        "environment (LD_PRELOAD, LD_LIBRARY_PATH), through the dynamically linked CUDA "
        "runtime or driver the shim intercepts"),
    (XSCHED, "not-scheduled"): Advice(
        "XSched is not scheduling it (its XQueues were never seen ready while its requests "
        "completed: its work runs on the default stream, or through a library the shim "
        "does not intercept)", OWN_STREAM),
    (XSCHED, "app-managed"): Advice(
        "XSched does not schedule it across processes (its shim runs an app-managed "
        "scheduler)",
        "leave XSCHED_SCHEDULER and XSCHED_POLICY unset in its environment (xwatch sets "
        "XSCHED_SCHEDULER=GLB)"),
    (XSCHED, "local"): Advice(
        "XSched orders its work only inside its own process (a local scheduler)",
        "leave XSCHED_POLICY unset in its environment, so that xserver's policy orders it "
        "against the other workloads"),
    (MPS, "not-in-mps"): Advice(
        "MPS is not serving it: it is not a client of the phase's MPS daemon",
        "keep the CUDA_MPS_PIPE_DIRECTORY xwatch gives it (set none of your own) and do its "
        "GPU work in the process xwatch starts or its children (a program that does no CUDA "
        "work never becomes a client)"),
}

#: a server workload (its evidence is its whole process tree): what differs
SERVER_ADVICE: dict[tuple[str, str], Advice] = {
    (XSCHED, "no-xqueue"): Advice(
        "no XQueue in its process tree: the XSched shim never saw the server's GPU work",
        "start the server so that the processes doing its GPU work keep the environment "
        "xwatch gives it (LD_PRELOAD, LD_LIBRARY_PATH) and use the dynamically linked CUDA "
        "runtime or driver the shim intercepts"),
    (XSCHED, "not-scheduled"): Advice(
        "XSched is not scheduling it (its kernels bypass the shim: a server launching on "
        "the default stream through libcudart, as vLLM does)",
        "XSched 1.2 cannot schedule such a server: compare it under MPS (--modes "
        "native,mps), or launch its work on streams it creates"),
}

#: a built-in workload that says it runs on the default stream: the cause is known
DEFAULT_STREAM = Advice(
    "XSched is not scheduling it (its work runs on the default stream, which XSched 1.2 "
    "does not schedule)", OWN_STREAM)

def advice(mode: str, status: str, server: bool = False,
           default_stream: bool = False) -> Advice | None:
    """Why a workload whose verdict in ``mode`` is ``status`` takes no part, and what to
    do; None when the verdict is not one of taking no part (engaged, pending, native,
    in-mps, unverified). ``server``: an inference server workload; ``default_stream``:
    the workload said it runs on the default stream (a built-in worker's hello)."""
    if default_stream and (mode, status) == (XSCHED, "not-scheduled"):
        return DEFAULT_STREAM
    if server and (mode, status) in SERVER_ADVICE:
        return SERVER_ADVICE[(mode, status)]
    return ADVICE.get((mode, status))


@dataclass(frozen=True)
class Absent:
    """A workload of a phase that takes no part in the phase's mode (or, ``provisional``,
    has not been seen taking part so far)."""

    workload: str
    mode: str  # xsched | mps
    status: str  # the mode's verdict (``pending`` while provisional)
    reason: str
    todo: str
    provisional: bool = False

    def line(self) -> str:
        """What the main screen and the console say: "infer: XSched is not scheduling
        it (...): run its GPU work on a CUDA stream it creates (...)"."""
        todo = f"if it stays so, {self.todo}" if self.provisional else self.todo
        return f"{self.workload}: {self.reason}: {todo}"


def _server(w: WorkloadSnapshot | None) -> bool:
    return w is not None and "server_pid" in w.hello  # the load generator's hello


def _default_stream(w: WorkloadSnapshot | None) -> bool:
    return w is not None and w.hello.get("stream") == "default"


def absent(phase: PhaseSnapshot) -> list[Absent]:
    """The workloads of ``phase`` that take no part in its mode, by the verdicts its
    mode's proof recorded so far (XSched's engagement, MPS's client lists), and those an
    XSched verdict still pending leans against (``provisional``)."""
    out: list[Absent] = []
    by_name = {w.name: w for w in phase.workloads}
    for name, info in (phase.xsched.workloads.items() if phase.xsched is not None else ()):
        w = by_name.get(name)
        if info.status == "pending":
            so_far = next((x for x in info.warnings if x.startswith(SO_FAR)), None)
            if so_far is not None:
                a = advice(XSCHED, "not-scheduled", _server(w), _default_stream(w))
                assert a is not None
                detail = so_far[len(SO_FAR):].lstrip(": ")
                out.append(Absent(name, XSCHED, info.status,
                                  "XSched has not been seen scheduling it so far"
                                  + (f" ({detail})" if detail else ""), a.todo,
                                  provisional=True))
            continue
        a = advice(XSCHED, info.status, _server(w), _default_stream(w))
        if a is not None:
            out.append(Absent(name, XSCHED, info.status, a.reason, a.todo))
    for name, minfo in (phase.mps.workloads.items() if phase.mps is not None else ()):
        a = advice(MPS, minfo.status, _server(by_name.get(name)))
        if a is not None:
            out.append(Absent(name, MPS, minfo.status, a.reason, a.todo))
    return out
