"""Who of a phase's workloads MPS served, as its proof recorded it (``PROOF``, the mode's
``modes.contract.Proof``): a client of the phase's daemon by its client list
(``in-mps``) took part, ``not-in-mps`` did not (``REASONS``, ``ADVICE``: what it means
and what to do); ``pending`` and ``unverified`` are undecided. Its verdicts' meanings:
``WORDS`` (``Mode.verdicts``). Pure."""

from __future__ import annotations

from collections.abc import Mapping

from xwatch.core import model as M
from xwatch.core.engine.snapshot import PhaseSnapshot
from xwatch.core.modes import verdicts as V
from xwatch.core.modes.participation import Absent, Advice

MODE = "mps"
ADVICE: dict[str, Advice] = {
    "not-in-mps": Advice(
        "MPS is not serving it: it is not a client of the phase's MPS daemon",
        "keep the CUDA_MPS_PIPE_DIRECTORY xwatch gives it (set none of your own) and do its "
        "GPU work in the process xwatch starts or its children (a program that does no CUDA "
        "work never becomes a client)"),
}
#: what each verdict of taking no part means, said after the workload's name in an answer
REASONS = {"not-in-mps": "not a client of the MPS daemon (CUDA ran it outside MPS)"}


class MpsProof:
    """MPS's ``modes.contract.Proof``: its client verdicts (``controller``, recorded in
    ``mps.workloads``)."""

    fields = ("mps",)
    took_part = frozenset({"in-mps"})
    verbs = ("was a client of MPS", "were clients of MPS", "outside MPS")
    advices: Mapping[str, Advice] = ADVICE

    def verdict(self, phase: PhaseSnapshot, name: str) -> str | None:
        if phase.mps is None:
            return None
        mw = phase.mps.workloads.get(name)
        return "unrecorded" if mw is None else mw.status

    def reason(self, verdict: str, phase: PhaseSnapshot, default_stream: bool) -> str | None:
        return REASONS.get(verdict)

    def advice(self, status: str, server: bool = False,
               default_stream: bool = False) -> Advice | None:
        return ADVICE.get(status)

    def absent(self, phase: PhaseSnapshot) -> list[Absent]:
        """The workloads MPS's client lists say are not its clients."""
        out: list[Absent] = []
        for name, minfo in (phase.mps.workloads.items() if phase.mps is not None else ()):
            a = self.advice(minfo.status)
            if a is not None:
                out.append(Absent(name, MODE, minfo.status, a.reason, a.todo))
        return out

    def shared(self, phase: PhaseSnapshot) -> str | None:
        s = phase.mps.shared if phase.mps is not None else None
        return s.describe("MPS control daemon") if isinstance(s, M.Shared) else None

    def lanes(self, phase: PhaseSnapshot) -> Mapping[str, list[tuple[float, str]]]:
        return {}


PROOF = MpsProof()


MPS_CLIENT = "MPS"
#: its verdicts (``Mode.verdicts``), in the order the table shows them
WORDS: tuple[V.Word, ...] = (
    V.PENDING.by(MPS_CLIENT),
    V.CRASHED.by(MPS_CLIENT),
    V.HUNG.by(MPS_CLIENT),
    V.Word("in-mps", (MPS_CLIENT,), V.PROOF,
         "MPS took part: the workload's process (or one it started) is in the client list "
         "of the phase's MPS server."),
    V.Word("not-in-mps", (MPS_CLIENT,), V.NO_PART,
         "The workload is not among the MPS server's clients: CUDA ran it without MPS, "
         "silently (a pipe directory of its own, another user, or no CUDA work)."),
    V.Word("skipped", (MPS_CLIENT,), V.OPEN,
         "No MPS preflight: no built-in model workload to probe."),
    V.Word("unverified", (MPS_CLIENT,), V.OPEN,
         "No evidence either way: the process maps or the MPS client list could not be read "
         "(another user's process, or one that exited before it was looked at). Never taken "
         "as proof."),
)
