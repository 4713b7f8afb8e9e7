"""Which workloads took part in a step's scheduling mechanism, and why the others did
not: the rule that keeps an answer from giving an effect verdict on a mechanism that
scheduled nothing (issue 64: a run in which XSched scheduled neither program was
called "within noise"). Pure, from the evidence a snapshot already carries.

- native takes part by definition;
- a mode with a proof of its own (``Mode.proof``, a ``modes.contract.Proof``) says which
  of its recorded verdicts prove a workload took part and what the others mean: XSched's
  ``engaged`` (``xsched.participation``), MPS's ``in-mps`` (``mps.participation``);
  ``pending`` (the phase ended before the evidence decided) and ``unverified`` are
  undecided;
- a mode from outside the tree without one: the verdicts its phases record in ``proof``,
  ``engaged`` taking part.

The verdict words are the recorded ones, the same the report's evidence tables and the
dashboard show; only proven participation counts: an undecided workload gets no effect
verdict either. A step of several runs: a workload took part when it was proven to in
some run and decided out in none (a run whose evidence came too late, e.g. a process
that exited before MPS's client list was read, takes the other runs' word); one
decided out in any run did not take part ("in 1 of 3 runs"). A snapshot from before a
mode recorded its evidence (no record of the mode's in the phase) says so instead of
guessing (``recorded``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from xwatch.core.analysis.stats.copies import role
from xwatch.core.analysis.stats.noise import usable
from xwatch.core.engine.snapshot import PhaseSnapshot
from xwatch.core.modes.base import label as mode_label
from xwatch.core.modes.participation import proof_of
from xwatch.scenario import Scenario

#: the recorded verdicts that prove a workload took part, in a mode without a proof of its
#: own (``PhaseSnapshot.proof``)
ENGAGED = frozenset({"engaged"})
#: the recorded verdicts that leave it open (no effect verdict is claimed either way)
UNDECIDED = frozenset({"pending", "unverified"})
#: what the undecided verdicts mean, said after the workload's name (a mode's own
#: verdicts: its ``Proof.reason``)
REASONS = {
    "pending": "undecided (the phase ended before the evidence decided)",
    "unverified": "undecided (its client list could not be read)",
    "unrecorded": "undecided (no evidence recorded for it)",
}


@dataclass(frozen=True)
class NoPart:
    """A workload that did not take part (or is undecided) in ``runs`` of ``of`` runs."""

    workload: str
    verdict: str  # the recorded verdict: "no-xqueue", "not-in-mps", "pending", ...
    reason: str  # "had no XQueue (the shim never saw its GPU work)"
    runs: int = 1
    of: int = 1

    @property
    def undecided(self) -> bool:
        return _open(self.verdict)

    def text(self) -> str:
        """``train had no XQueue (the shim never saw its GPU work)`` (``in 1 of 2 runs``)."""
        return f"{self.workload} {self.reason}" + (
            f" in {self.runs} of {self.of} runs" if self.runs < self.of else "")


@dataclass(frozen=True)
class Participation:
    """Who took part in a step's mechanism: ``took`` (proven), ``absent`` (did not, or
    undecided). ``recorded``: the runs carry the mode's evidence (False: a snapshot
    from before it; nothing is claimed either way)."""

    mode: str
    took: tuple[str, ...] = ()
    absent: tuple[NoPart, ...] = ()
    recorded: bool = True

    @property
    def took_part(self) -> bool:
        """Some workload was proven to take part (native: always)."""
        return self.mode == "native" or not self.recorded or bool(self.took) \
            or not self.absent

    @property
    def whole(self) -> bool:
        """Every workload took part: the comparison measures the mechanism as meant."""
        return not self.absent

    def no_verdict(self) -> str:
        """``no verdict: XSched took no part: infer not scheduled (...), train had no
        XQueue (...)`` (the mode took no part; "" otherwise)."""
        if self.took_part:
            return ""
        label = mode_label(self.mode)
        head = (f"{label} took no part" if not any(a.undecided for a in self.absent) else
                f"{label} was not proven to take part")
        return f"no verdict: {head}: " + ", ".join(a.text() for a in self.absent)

    def scope(self, what: str = "the change measures") -> str:
        """What a comparison measures when only some workloads took part: ``only train
        was scheduled by XSched: the change measures XSched's effect on train alone;
        infer ran unscheduled beside it (infer not scheduled (...))`` ("" when every
        workload, or none, took part); ``what``: the words before "{label}'s effect"."""
        if self.whole or not self.took_part or not self.recorded or not self.took:
            return ""
        label = mode_label(self.mode)
        proof = proof_of(self.mode)
        one, several, beside = proof.verbs if proof is not None else (
            f"took part in {label}", f"took part in {label}", f"outside {label}")
        *most, last = self.took
        names = f"{', '.join(most)} and {last}" if most else last
        was = several if most else one
        rest = ", ".join(dict.fromkeys(a.workload for a in self.absent))
        verb = "ran" if not all(a.undecided for a in self.absent) else "may have run"
        return (f"only {names} {was}: {what} {label}'s effect on {names} "
                f"alone; {rest} {verb} {beside} beside it ("
                + ", ".join(a.text() for a in self.absent) + ")")

    def unrecorded(self) -> str:
        """A snapshot from before the mode recorded its evidence: said, not guessed."""
        if self.recorded or self.mode == "native":
            return ""
        return (f"{mode_label(self.mode)}'s part not recorded (a snapshot from before its "
                "evidence was kept): the verdicts assume every workload took part")

    def line(self) -> str:
        """The sentence an answer says of it: the no-verdict, the scope, the missing
        record, or ""."""
        return self.no_verdict() or self.scope() or self.unrecorded()


def _open(verdict: str | None) -> bool:
    """An undecided verdict (no proof either way)."""
    return verdict in UNDECIDED or verdict == "unrecorded"


def mode_of(p: PhaseSnapshot, name: str) -> str:
    """The mode a workload ran under in ``p`` (a split phase's copy its own)."""
    return (p.copy_modes or {}).get(name, p.mode)


def _verdict(p: PhaseSnapshot, name: str, mode: str) -> str | None:
    """The recorded verdict of ``name`` in ``p`` under ``mode`` (None: the phase has no
    record of the mode's evidence at all)."""
    if mode == "native":
        return "native"
    proof = proof_of(mode)
    if proof is not None:
        return proof.verdict(p, name)
    return (p.proof or {}).get(name, "unrecorded")  # a mode from outside the tree


def _took_part(mode: str) -> frozenset[str]:
    proof = proof_of(mode)
    return proof.took_part if proof is not None else ENGAGED


def _reason(verdict: str, name: str, p: PhaseSnapshot, mode: str,
            scenario: Scenario | None) -> str:
    """The reason for ``verdict`` (its mode's words, ``Proof.reason``); a
    ``not-scheduled`` one is told whether the evidence says the work ran on the default
    stream (the scenario's ``stream = "default"``, the workload's own hello saying so, as
    the how-to's programs' do, or a preflight probe on the default stream for it that
    was not scheduled either)."""
    default = False
    if verdict == "not-scheduled":
        wl = next((w for w in scenario.workloads if w.name == role(name)), None) \
            if scenario is not None else None
        default = wl is not None and wl.kind == "model" and wl.stream == "default"
        default = default or any(w.name == name and w.hello.get("stream") == "default"
                                 for w in p.workloads)
        probes = p.preflight.verdicts if p.preflight is not None else []
        default = default or any(v.stream == "default" and v.status == "not-scheduled"
                                 and role(name) in map(role, v.workloads) for v in probes
                                 if wl is not None and wl.stream == "default")
    proof = proof_of(mode)
    own = proof.reason(verdict, p, default) if proof is not None else None
    return own or REASONS.get(verdict, verdict)


def participation(phases: Sequence[PhaseSnapshot], scenario: Scenario | None = None,
                  only: Collection[str] | None = None) -> Participation:
    """Who took part in the mechanism of one step (its runs ``phases``): every workload
    that counted requests in a usable run (all runs where none is usable), by its
    recorded verdict. ``scenario`` lets a reason name the default stream; ``only``: these
    workloads (copies) alone (a candidate's in a phase that ran several side by side)."""
    runs = [p for p in phases if usable(p)] or list(phases)
    if not runs:
        return Participation("native")
    mode = runs[0].mode
    names = list(dict.fromkeys(w.name for p in runs for w in p.workloads if w.count)) \
        or list(dict.fromkeys(w.name for p in runs for w in p.workloads))
    if only is not None:
        names = [n for n in names if n in only]
    took: list[str] = []
    absent: list[NoPart] = []
    recorded = True
    for name in names:
        seen = [(p, mode_of(p, name)) for p in runs if p.workload(name) is not None]
        verdicts = [(p, m, _verdict(p, name, m)) for p, m in seen]
        if any(m != "native" for _, m, _ in verdicts):
            mode = next(m for _, m, _ in verdicts if m != "native")
        if any(v is None for _, _, v in verdicts):
            recorded = False
            continue
        bad = [(p, m, v) for p, m, v in verdicts
               if v is not None and v != "native" and v not in _took_part(m)]
        out = [b for b in bad if not _open(b[2])]  # decided: it did not take part
        if not out and len(bad) < len(verdicts):  # proven in a run, in none decided out
            took.append(name)
            continue
        p, m, v = (out or bad)[0]  # the decided verdict first (it says more)
        assert v is not None
        absent.append(NoPart(name, v, _reason(v, name, p, m, scenario), len(out or bad),
                             len(seen)))
    return Participation(mode, tuple(took), tuple(absent), recorded)
