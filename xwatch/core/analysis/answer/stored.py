"""The session's answer as the snapshot stores it: computed once from the phases
(``session_answer``, by the session's host as phases end, ``core.host``; ``with_answer``
for a snapshot written before it was stored, as it is loaded), and what every front end
reads of it (``stored``, ``answer_lines``: the console, the report's Answer section, the
dashboard's Compare tab; ``gate`` and ``unjudged``: ``--fail-if``'s exit status). No
reader recomputes it. The changes themselves are ``analysis.verdict``'s."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from msgspec import UNSET

from xwatch.core import model as M
from xwatch.core.analysis.phases import side_by_side, slo_metric
from xwatch.core.analysis.stats.copies import GpuFinding, grouped_text, role
from xwatch.core.analysis.verdict import (
    METHOD,
    METHOD_BOX,
    METHOD_GPUS,
    UNMEASURED,
    StepAnswer,
    answer,
    blocks_note,
    findings,
    step_label,
    step_where,
)
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.model.metric import Metric


# ------------------------------------------------------------ computed once
def session_answer(snap: SessionSnapshot) -> M.SessionAnswer:
    """The session's answer, computed once (by its host, ``core.host``; on load for a
    snapshot written before it was stored, ``with_answer``): the records, the GPUs
    unlike the others and the box every front end says."""
    ans = answer(snap)
    fs = findings(snap)
    return M.SessionAnswer(records=_records(ans), gpu_findings=_finding_records(fs),
                           box=_box(snap, ans, fs))


def with_answer(snap: SessionSnapshot) -> SessionSnapshot:
    """``snap`` carrying its answer: as it is where it has one, else with the answer
    computed (a snapshot written before the answer was stored, or never settled)."""
    if snap.answer is not None:
        return snap
    return msgspec.structs.replace(snap, answer=session_answer(snap))


def _records(ans: Sequence[StepAnswer]) -> list[M.Answer]:
    """The answer as the snapshot carries it, for scripts: one record per change."""
    def absent(a: StepAnswer) -> list[M.NoPart]:
        return [M.NoPart(workload=n.workload, verdict=n.verdict, reason=n.reason,
                         runs=n.runs, of=n.of) for n in a.part.absent]

    return [M.Answer(step=a.step, baseline=a.base_step, workload=c.workload,
                     metric=str(c.metric), unit=c.unit, estimate=_r(c.diff.est),
                     lo=_r(c.diff.lo), hi=_r(c.diff.hi), way=c.way_word(), runs=c.repeats,
                     basis=c.basis, base=_r(c.base.est), value=_r(c.other.est),
                     floor=c.floor if c.floor else UNSET,
                     few_requests=c.few if c.few else UNSET,
                     pooled=c.pooled if c.few else UNSET,
                     gpus=c.gpus if c.gpus > 1 else UNSET,
                     took_part=a.took_part, no_part=absent(a),
                     scope=a.part.scope() or UNSET, text=c.text())
            for a in ans for c in a.changes]


def _finding_records(fs: Sequence[GpuFinding]) -> list[M.GpuFinding]:
    """The GPUs named as unlike the others, as the snapshot carries them."""
    return [M.GpuFinding(workload=f.workload, metric=str(f.metric), gpu=f.gpu,
                         others=list(f.others), relative=_r(f.rel.est), lo=_r(f.rel.lo),
                         hi=_r(f.rel.hi), runs=f.runs, tests=f.tests, text=f.text(step_where),
                         step=f.step if len(f.steps) > 1 else None)
            for f in fs]


def _r(v: float | None) -> float | None:
    return None if v is None or v != v else round(v, 6)


def _box(snap: SessionSnapshot, ans: Sequence[StepAnswer], fs: Sequence[GpuFinding]
         ) -> M.AnswerBox:
    """The verdict box: a sentence per step, then the notes."""
    if not ans:
        return M.AnswerBox()
    steps = [M.StepVerdict(step=a.step, baseline=a.base_step, sentence=a.sentence(),
                           took_part=a.took_part,
                           no_verdict="" if a.took_part else a.part.no_verdict(),
                           unmeasured=any(c.basis == UNMEASURED for c in a.changes))
             for a in ans]
    lines: list[str] = []
    gpus = max(a.gpus for a in ans)
    if gpus > 1:
        lines += [f"Finding: {t}, not averaged away." for t in grouped_text(fs, step_where)]
        if not fs:
            lines.append(f"No GPU's copies differ from the others' beyond noise ({gpus} "
                         "GPUs compared; it needs 2 runs of a step or more).")
    many = len(ans) > 1  # name the step, or two steps' "high P99" read as one
    advice = [f"{step_label(a.step)} vs {step_label(a.base_step)}, {x}" if many else x
              for a in ans for c in a.changes if c.way == 0 for x in [c.advice()] if x]
    if advice:
        lines.append("To tell: " + "; ".join(advice[:3]) + ".")
    if any(c.basis == UNMEASURED for a in ans for c in a.changes):
        lines.append(f"One run per step cannot tell a change from run-to-run noise: record "
                     f"this machine's floor once with `xwatch noise {snap.scenario.name}"
                     f" --mode native` (and each mode), or run with --repeat 3 or more.")
    lines.append(METHOD + blocks_note([c.blocks for a in ans for c in a.changes]))
    if gpus > 1:
        lines.append(METHOD_GPUS)
    if any(side_by_side(p) for p in snap.phases):
        lines.append(METHOD_BOX)
    return M.AnswerBox(steps=steps, notes=lines)


# ------------------------------------------------------------ read
def stored(snap: SessionSnapshot) -> M.SessionAnswer:
    """The answer ``snap`` carries (its session host settled it, or loading computed
    it for a snapshot written before it was stored); a snapshot without one is a
    mistake of its maker, never read as "nothing changed"."""
    if snap.answer is None:
        raise ValueError("this snapshot carries no answer: a session's host settles it "
                         "(core.host), loading a file computes it (with_answer)")
    return snap.answer


def gate(snap: SessionSnapshot, fail_if: str) -> list[str]:
    """Why ``--fail-if fail_if`` trips (empty: it does not), from the stored answer.
    ``slower``: the SLO workload's metric (the scenario's ``[slo]`` percentile, else
    HIGH's P99) is worse beyond noise in some step; ``lower-throughput``: some LOW's
    samples/s is lower beyond noise."""
    wl, metric = slo_metric(snap)
    out = []
    for r in stored(snap).records:
        if (fail_if == "slower" and wl is not None and role(r.workload) == role(wl)
                and r.metric == str(metric) and r.way == "slower"):
            out.append(f"{step_label(r.step)}: {r.workload} {r.metric} {r.text}")
        if fail_if == "lower-throughput" and Metric.parse(r.metric).kind == "throughput" and r.way == "lower":
            out.append(f"{step_label(r.step)}: {r.workload} {r.metric} {r.text}")
    return out


def unjudged(snap: SessionSnapshot) -> list[str]:
    """Why steps could not be judged, a line each (``step: why``), from the stored
    answer: the step's mechanism took no part (``analysis.participation``), or its
    changes got no verdict (one run each, no floor)."""
    out = []
    for st in stored(snap).box.steps:
        if not st.took_part:
            out.append(f"{step_label(st.step)}: not judged: "
                       + st.no_verdict.removeprefix("no verdict: "))
        elif st.unmeasured:
            out.append(f"{step_label(st.step)}: not judged (one run each, no noise floor)")
    return out


def answer_lines(snap: SessionSnapshot) -> list[str]:
    """The stored answer box as plain lines (the console, the report, the Compare
    tab); none where the snapshot carries no answer yet (a session's start)."""
    return snap.answer.box.lines() if snap.answer is not None else []
