"""Who of a phase's workloads XSched scheduled, as its proof recorded it (``PROOF``, the
mode's ``modes.contract.Proof``): the verdicts that prove it (``engaged``); what each of
its verdicts means (``WORDS``, ``Mode.verdicts``: its engagement's, its preflight
probes' and the maps proof's of isolation); what each verdict of taking no part means,
said after a workload's name in an answer (``REASONS``); why a workload takes no part
and what to do (``ADVICE``: the live alerts); and the workloads of a phase that take no
part, or have not been seen taking part so far (``absent``).

An XSched verdict of ``not-scheduled`` waits until enough polls would have seen the
workload's queues ready (``xsched.engagement.EXPECTED_READY_MIN``): at 10 Hz that is a second
for a busy workload and ten for one busy a tenth of the time. Until then a workload whose
queues were never seen ready although half that evidence is in carries a warning
starting with ``SO_FAR``: it is shown as provisional ("not seen scheduled so far"),
never as the verdict. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from xwatch.core import model as M
from xwatch.core.engine.snapshot import PhaseSnapshot, WorkloadSnapshot
from xwatch.core.modes import verdicts as V
from xwatch.core.modes.participation import Absent, Advice

MODE = "xsched"
#: how the warning of a still pending XSched verdict starts once its evidence leans to
#: not-scheduled (``xsched.engagement.engagement`` writes it)
SO_FAR = "not seen scheduled so far"

#: what makes a program's GPU work schedulable by XSched 1.2
OWN_STREAM = ("run its GPU work on a CUDA stream it creates (torch.cuda.Stream(); xwatch's "
              "workloads: stream = \"created\")")

ADVICE: dict[str, Advice] = {
    "shim-not-loaded": Advice(
        "XSched cannot see it: the XSched shim is not loaded in its process",
        "keep the LD_PRELOAD / LD_LIBRARY_PATH xwatch gives it (neither a wrapper script nor "
        "the program may reset them), link the CUDA runtime dynamically (not cudart_static); "
        "in a container set XSCHED_CUDA_LIB"),
    "no-xqueue": Advice(
        "no XQueue: the XSched shim never saw its GPU work",
        "do its GPU work in the process xwatch starts, or in a child that keeps its "
        "environment (LD_PRELOAD, LD_LIBRARY_PATH), through the dynamically linked CUDA "
        "runtime or driver the shim intercepts"),
    "not-scheduled": Advice(
        "XSched is not scheduling it (its XQueues were never seen ready while its requests "
        "completed: its work runs on the default stream, or through a library the shim "
        "does not intercept)", OWN_STREAM),
    "app-managed": Advice(
        "XSched does not schedule it across processes (its shim runs an app-managed "
        "scheduler)",
        "leave XSCHED_SCHEDULER and XSCHED_POLICY unset in its environment (xwatch sets "
        "XSCHED_SCHEDULER=GLB)"),
    "local": Advice(
        "XSched orders its work only inside its own process (a local scheduler)",
        "leave XSCHED_POLICY unset in its environment, so that xserver's policy orders it "
        "against the other workloads"),
}

#: a server workload (its evidence is its whole process tree): what differs
SERVER_ADVICE: dict[str, Advice] = {
    "no-xqueue": Advice(
        "no XQueue in its process tree: the XSched shim never saw the server's GPU work",
        "start the server so that the processes doing its GPU work keep the environment "
        "xwatch gives it (LD_PRELOAD, LD_LIBRARY_PATH) and use the dynamically linked CUDA "
        "runtime or driver the shim intercepts"),
    "not-scheduled": Advice(
        "XSched is not scheduling it (its kernels bypass the shim: a server launching on "
        "the default stream through libcudart, as vLLM does)",
        "XSched 1.2 cannot schedule such a server: compare it under MPS (--modes "
        "native,mps), or launch its work on streams it creates"),
}

#: a built-in workload that says it runs on the default stream: the cause is known
DEFAULT_STREAM_ADVICE = Advice(
    "XSched is not scheduling it (its work runs on the default stream, which XSched 1.2 "
    "does not schedule)", OWN_STREAM)

#: what each verdict of taking no part means, said after the workload's name in an answer
REASONS = {
    "shim-not-loaded": "shim not loaded (the XSched shim was not in its process, so "
                       "XSched never saw its work)",
    "no-xqueue": "had no XQueue (the shim never saw its GPU work)",
    "not-scheduled": "not scheduled (its XQueues were never seen ready while its requests "
                     "completed: its GPU work bypassed XSched)",
    "app-managed": "app-managed scheduler (no cross-process priority: XSCHED_SCHEDULER is "
                   "not GLB)",
    "local": "local scheduler (priorities only inside its own process)",
}
#: ``not-scheduled`` where the evidence says the work ran on the default stream
DEFAULT_STREAM = ("not scheduled (its work ran on the default stream, which XSched{v} "
                  "does not schedule)")


class XschedProof:
    """XSched's ``modes.contract.Proof``: its engagement verdicts
    (``engagement.engagement``, recorded in ``xsched.workloads``)."""

    fields = ("xsched", "preflight")
    took_part = frozenset({"engaged"})
    verbs = ("was scheduled by XSched", "were scheduled by XSched", "unscheduled")
    advices: Mapping[str, Advice] = ADVICE

    def verdict(self, phase: PhaseSnapshot, name: str) -> str | None:
        if phase.xsched is None:
            return None
        xw = phase.xsched.workloads.get(name)
        return "unrecorded" if xw is None else xw.status

    def reason(self, verdict: str, phase: PhaseSnapshot, default_stream: bool) -> str | None:
        if verdict == "not-scheduled" and default_stream:
            v = phase.xsched.version if phase.xsched is not None else None
            return DEFAULT_STREAM.format(v=f" {v}" if isinstance(v, str) and v else "")
        return REASONS.get(verdict)

    def advice(self, status: str, server: bool = False,
               default_stream: bool = False) -> Advice | None:
        if default_stream and status == "not-scheduled":
            return DEFAULT_STREAM_ADVICE
        if server and status in SERVER_ADVICE:
            return SERVER_ADVICE[status]
        return ADVICE.get(status)

    def absent(self, phase: PhaseSnapshot) -> list[Absent]:
        """XSched's verdicts of taking no part so far, and those a pending verdict leans
        against (``provisional``)."""
        out: list[Absent] = []
        by_name = {w.name: w for w in phase.workloads}
        for name, info in (phase.xsched.workloads.items() if phase.xsched is not None
                           else ()):
            w = by_name.get(name)
            if info.status == "pending":
                so_far = next((x for x in info.warnings if x.startswith(SO_FAR)), None)
                if so_far is not None:
                    a = self.advice("not-scheduled", _server(w), _default_stream(w))
                    assert a is not None
                    detail = so_far[len(SO_FAR):].lstrip(": ")
                    out.append(Absent(name, MODE, info.status,
                                      "XSched has not been seen scheduling it so far"
                                      + (f" ({detail})" if detail else ""), a.todo,
                                      provisional=True))
                continue
            a = self.advice(info.status, _server(w), _default_stream(w))
            if a is not None:
                out.append(Absent(name, MODE, info.status, a.reason, a.todo))
        return out


    def shared(self, phase: PhaseSnapshot) -> str | None:
        s = phase.xsched.shared if phase.xsched is not None else None
        return s.describe("xserver") if isinstance(s, M.Shared) else None

    def lanes(self, phase: PhaseSnapshot) -> Mapping[str, list[tuple[float, str]]]:
        """The lanes its evidence recorded from xserver's polls."""
        if phase.xsched is None:
            return {}
        return {name: [(float(t), str(s)) for t, s in info.lane]
                for name, info in phase.xsched.workloads.items()}


def _server(w: WorkloadSnapshot | None) -> bool:
    return w is not None and "server_pid" in w.hello  # the load generator's hello


def _default_stream(w: WorkloadSnapshot | None) -> bool:
    return w is not None and w.hello.get("stream") == "default"


PROOF = XschedProof()


ENGAGEMENT = "XSched engagement"
PROBE = "XSched preflight"
#: its verdicts (``Mode.verdicts``), in the order the table shows them
WORDS: tuple[V.Word, ...] = (
    V.Word("engaged", (ENGAGEMENT, PROBE), V.PROOF,
         "XSched scheduled this workload's GPU work: the XSched shim is loaded in its "
         "process, xserver lists XQueues of that process (for a server, of its process "
         "tree), and once it completed requests those XQueues were seen ready in "
         "xserver's polls. A preflight probe is engaged when its XQueues were ready in at "
         "least 3 polls and 2% of them."),
    V.Word("not-scheduled", (ENGAGEMENT, PROBE), V.NO_PART,
         "XSched did not schedule it: requests completed (or a probe's iterations ran) while "
         "its XQueues were never seen ready, or xserver listed none for a server that served "
         "with the shim loaded. Usual cause: GPU work on the default stream, which XSched's "
         "automatic XQueues do not intercept. In the preflight it fails the phase."),
    V.Word("no-xqueue", (ENGAGEMENT,), V.NO_PART,
         "The workload ran under XSched but xserver never listed an XQueue for its process: "
         "the shim never saw its GPU work (a library the shim does not intercept, or no GPU "
         "work at all)."),
    V.Word("shim-not-loaded", (ENGAGEMENT, PROBE), V.NO_PART,
         "The XSched shim is not in the process: its memory map (/proc/PID/maps) has no "
         "shim, or the shim logged no scheduler line and xserver saw no XQueue. The "
         "environment was overridden (LD_PRELOAD, LD_LIBRARY_PATH), or the program loads "
         "the GPU runtime some other way (a static runtime, a launcher of its own)."),
    V.Word("app-managed", (ENGAGEMENT, PROBE), V.NO_PART,
         "The shim reported 'using app-managed scheduler': no cross-process priority, "
         "because XSCHED_SCHEDULER is not GLB in the workload's environment."),
    V.Word("local", (ENGAGEMENT, PROBE), V.WARNING,
         "The shim reported a local scheduler: priorities apply only inside this process, "
         "not between workloads (an XSCHED_POLICY of the workload's own)."),
    V.PENDING.by(ENGAGEMENT),
    V.CRASHED.by(PROBE),
    V.Word("crashed-at-exit", (PROBE,), V.WARNING,
         "The probe ran engaged to its end, said so, and then died while exiting (XSched "
         "1.2's shim, as other scheduled processes exit): a warning, the phase goes on."),
    V.HUNG.by(PROBE),
    V.Word("clean", (V.ISOLATION,), V.PROOF,
         "A native or MPS workload's process maps were read and hold no XSched library: "
         "the phase is a clean baseline."),
    V.Word("shim-mapped", (V.ISOLATION,), V.FAILS,
         "An XSched shim is mapped in a native or MPS workload's process: not a clean "
         "baseline, so the phase fails, naming the library and where it came from."),
    V.Word("shim-loaded", (V.ISOLATION,), V.PROOF,
         "Under XSched, the shim is mapped in the workload's process: the first half of "
         "engaged (the XQueues seen ready are the second)."),
    V.Word("shim-missing", (V.ISOLATION,), V.NO_PART,
         "Under XSched, the process maps were read and hold no shim (the engagement then "
         "says shim-not-loaded)."),
    V.Word("unverified", (V.ISOLATION,), V.OPEN, ""),  # defined with MPS's client list
)
