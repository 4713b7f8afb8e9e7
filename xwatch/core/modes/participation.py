"""Whether each workload of a phase takes part in the phase's mode, said so that a user
can act on it: for every verdict of a mode's proof that means "took no part" (XSched:
``shim-not-loaded``, ``no-xqueue``, ``not-scheduled``, ``app-managed``, ``local``; MPS:
``not-in-mps``) a short reason and what to do (``advice``), and the workloads of a phase
that take no part, or have not been seen taking part so far (``absent``).

The machinery is here; each mode's words and how it reads its record are its own
(``Mode.proof``: a ``modes.contract.Proof``, e.g. ``xsched.participation``), asked
through the registry. One wording for every front end: the dashboard's main screen (its
alert bar) and the headless console print ``Absent.line``; the answer may name
``Advice.reason`` (``Absent`` and ``Advice`` are the contract's). Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xwatch.core.modes.contract import Absent, Advice, Proof

if TYPE_CHECKING:
    from xwatch.core.engine.snapshot import PhaseSnapshot


def proof_of(mode: str) -> Proof | None:
    """The proof ``mode`` declares (``Mode.proof``; None: none, or a mode not
    registered here)."""
    from xwatch.core.modes import registry

    declared = registry.find(mode)
    ref = declared.proof if declared is not None else None
    return registry.load_ref(ref) if ref is not None else None


def proofs() -> list[tuple[str, Proof]]:
    """Every registered mode's proof, in the registry's order."""
    from xwatch.core.modes import registry

    return [(m.name, registry.load_ref(m.proof)) for m in registry.modes()
            if m.proof is not None]


def advices() -> dict[tuple[str, str], Advice]:
    """(mode, verdict) -> its advice, for every verdict of taking no part of every mode
    (a server's and a default-stream workload's own left out)."""
    return {(name, status): a for name, p in proofs() for status, a in p.advices.items()}


def advice(mode: str, status: str, server: bool = False,
           default_stream: bool = False) -> Advice | None:
    """Why a workload whose verdict in ``mode`` is ``status`` takes no part, and what to
    do; None when the verdict is not one of taking no part (engaged, pending, native,
    in-mps, unverified). ``server``: an inference server workload; ``default_stream``:
    the workload said it runs on the default stream (a built-in worker's hello)."""
    p = proof_of(mode)
    return p.advice(status, server, default_stream) if p is not None else None


def absent(phase: PhaseSnapshot) -> list[Absent]:
    """The workloads of ``phase`` that take no part in its mode, by the verdicts its
    mode's proof recorded so far (XSched's engagement, MPS's client lists), and those a
    verdict still pending leans against (``provisional``), mode by mode."""
    return [a for _, p in proofs() for a in p.absent(phase)]


__all__ = ["Absent", "Advice", "absent", "advice", "advices", "proof_of", "proofs"]
