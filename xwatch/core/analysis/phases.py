"""Which phase and which workloads a comparison is about: the highest-priority
workload, the baseline phase, a phase's label, a sweep setting's label, a sweep
phase that ran several settings side by side (``plans.box``) seen as one run per
setting and a split phase (``compare --layout split``: modes side by side) as one run
per mode (``per_setting``), whether its daemon served processes not of its
session (``shared_lines``); which numbers the answer compares (``answered``: the SLO's
metric, ``slo_metric``; a server's TTFT and TPOT in vLLM's order) and their words
(``metric_words``). Pure functions on snapshots."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import msgspec

from xwatch.core import model as M
from xwatch.core.analysis.stats.copies import failed_beside, role
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot, WorkloadSnapshot
from xwatch.core.model.metric import P50, P99, THROUGHPUT, Metric
from xwatch.core.modes.base import modes_of
from xwatch.core.modes.participation import proofs


def by_priority(p: PhaseSnapshot) -> tuple[WorkloadSnapshot | None, list[WorkloadSnapshot]]:
    """(the highest-priority workload, every workload of lower priority)."""
    if not p.workloads:
        return None, []
    ws = sorted(p.workloads, key=lambda w: -w.priority)
    top = ws[0]
    lows = [w for w in ws if w.priority < top.priority]
    return top, lows


def baseline(snap: SessionSnapshot) -> PhaseSnapshot | None:
    """The phase every other is compared with: the first native phase that did not fail
    (a split phase's native copies, ``per_mode``)."""
    phases = per_mode(snap.phases)
    ok = [p for p in phases if p.mode == "native" and p.status != "failed"]
    return ok[0] if ok else (phases[0] if phases else None)


def label(p: PhaseSnapshot) -> str:
    """A phase's name with its sweep setting, if any."""
    setting = p.setting
    return f"{p.name} [{setting}]" if setting else p.name


def setting_label(s: Mapping[str, Mapping[str, M.SettingValue]]) -> str:
    """A sweep setting's name: ``low.threshold=4, low.batch_size=2``."""
    return ", ".join(f"{wl}.{k}={v}" for wl, kv in s.items() for k, v in kv.items())


def side_by_side(p: PhaseSnapshot) -> dict[int, dict[str, dict[str, M.SettingValue]]]:
    """Each GPU's setting in a sweep phase that ran several settings at once, one a GPU
    (``plans.box``: its ``setting_values`` are keyed by copy, ``low@1``), by GPU in the
    order recorded; empty for a phase of one setting (keyed by workload, ``low``)."""
    sv = p.setting_values
    if not p.setting or p.candidate or not sv or not all("@" in k for k in sv):
        return {}
    out: dict[int, dict[str, dict[str, M.SettingValue]]] = {}
    for key, kv in sv.items():
        wl, _, gpu = key.partition("@")
        if not gpu.isdigit():
            return {}
        out.setdefault(int(gpu), {})[wl] = dict(kv)
    return out


def is_box(p: PhaseSnapshot) -> bool:
    """A phase whose GPUs ran different candidates (advise), settings (sweep) or modes
    (a split compare) side by side (``plans.box``): a worst GPU of it would be a worst
    candidate, setting or mode."""
    return bool(p.candidate and "@GPU" in p.candidate) or bool(side_by_side(p)) \
        or bool(p.copy_modes)


def per_mode(phases: Iterable[PhaseSnapshot]) -> tuple[PhaseSnapshot, ...]:
    """A split phase (``copy_modes``: modes side by side on GPUs of their own) as one
    phase per mode, holding only that mode's copies, in that mode, named ``NAME (MODE)``,
    with the step key a one-mode phase of the mode has and the same repeat: so each
    mode's run is its own copies and pairs with the other modes' runs of the same phase
    (the run's shared noise cancels in the difference). Only its own mode's records
    (each mode's ``Proof.fields``) stay on it, and its own copies' proofs. A split phase that failed
    only through another mode's copies (``failed_beside``) is ``done`` for this mode.
    Every other phase is kept as it is."""
    out: list[PhaseSnapshot] = []
    for p in phases:
        cm = p.copy_modes
        if not cm:
            out.append(p)
            continue
        for m in modes_of(p.mode):
            mine = frozenset(n for n, x in cm.items() if x == m)
            status, error = p.status, p.error
            if status == "failed" and failed_beside(p, mine):
                status, error = "done", None
            iso = p.isolation
            if iso is not None:
                iso = msgspec.structs.replace(iso, mode=m, workloads={
                    n: v for n, v in iso.workloads.items() if n in mine})
            theirs = {f: None for name, proof in proofs() if name != m for f in proof.fields}
            out.append(msgspec.structs.replace(
                p, name=f"{p.name} ({m})", mode=m, status=status, error=error,
                workloads=tuple(w for w in p.workloads if w.name in mine),
                isolation=iso, step=m, copy_modes=None, **theirs))
    return tuple(out)


def per_setting(phases: Iterable[PhaseSnapshot]) -> tuple[PhaseSnapshot, ...]:
    """The phases as the sweep's and compare's readers count them (a split phase: one
    per mode, ``per_mode``); a phase that ran several settings
    side by side (``side_by_side``) becomes one phase per setting, holding only that
    setting's copies (its GPUs'), named ``NAME (GPU g)`` (``GPUs g,h``), with the setting's own label,
    values and step key (``MODE [label]``, as on one GPU), so that each setting's runs
    are its own copies and never the phase's mean over settings. A box phase that
    failed only through another setting's copies (``failed_beside``) is ``done`` for the
    settings whose copies ran to the end. Every other phase is kept as it is."""
    out: list[PhaseSnapshot] = []
    for p in per_mode(phases):
        placed = side_by_side(p)
        if not placed:
            out.append(p)
            continue
        on: dict[str, list[int]] = {}  # a setting spread over several GPUs: one run
        for gpu, s in placed.items():
            on.setdefault(setting_label(s), []).append(gpu)
        for name, gpus in on.items():
            ats = tuple(f"@{g}" for g in gpus)
            mine = frozenset(w.name for w in p.workloads if w.name.endswith(ats))
            status, error = p.status, p.error
            if status == "failed" and failed_beside(p, mine):
                status, error = "done", None
            where = f"GPU {gpus[0]}" if len(gpus) == 1 else f"GPUs {','.join(map(str, gpus))}"
            out.append(msgspec.structs.replace(
                p, name=f"{p.name} ({where})", status=status, error=error,
                workloads=tuple(w for w in p.workloads if w.name in mine),
                setting=name, setting_values=placed[gpus[0]], step=f"{p.mode} [{name}]"))
    return tuple(out)


def shared_lines(p: PhaseSnapshot) -> list[str]:
    """What the phase's daemon also served that was not this session's (``shared``):
    ``shared its xserver from t=... on with ...: not a clean XSched measurement``."""
    return [line for _, proof in proofs() if (line := proof.shared(p)) is not None]


def slo_metric(snap: SessionSnapshot) -> tuple[str | None, Metric]:
    """(the SLO workload, its metric): the scenario's ``[slo]`` (P99, or a named
    metric's tpot_ms:P99), else HIGH's P99."""
    slo = snap.scenario.slo
    if slo is not None:
        return slo.workload, Metric.of(slo.named, slo.percentile)
    p = baseline(snap)
    hi = by_priority(p)[0] if p is not None else None
    return (hi.name if hi is not None else None), P99


#: the per-token metrics a server's answer shows, in vLLM's order (its benchmark
#: prints TTFT, then TPOT), each at these percentiles, before the whole request
TOKEN_METRICS = ("ttft_ms", "tpot_ms")
TOKEN_PERCENTILES = (50.0, 99.0)
TOKEN_WORDS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "itl_ms": "ITL"}


def metric_words(metric: Metric, tokens: bool = False) -> str:
    """A compared number as the answer's sentence names it: ``TTFT P99`` for
    ``ttft_ms:P99``; the whole request's ``P99`` is ``request P99`` beside per-token
    metrics (``tokens``)."""
    if metric.kind == "named":
        return f"{TOKEN_WORDS.get(metric.name, metric.name)} {metric.pq}"
    return f"request {metric}" if tokens and metric.kind == "latency" else str(metric)


def answered(hi: WorkloadSnapshot | None, lows: Sequence[WorkloadSnapshot],
             slo_wl: str | None, slo_m: Metric) -> list[tuple[str, Metric]]:
    """(workload, metric) of every number the answer compares: HIGH's P50, P99 (and
    the SLO's percentile), each LOW's samples/s; copies on several GPUs once, by the
    scenario's name (``analysis.stats.copies``: every copy counts). A HIGH that reports
    TTFT or TPOT (a server, an LLM decoder) leads with its SLO metric where the SLO is
    on a named one, then TTFT and TPOT at P50 and P99 (vLLM's order), then the whole
    request."""
    out: list[tuple[str, Metric]] = []
    if hi is not None:
        mine = slo_wl is not None and role(slo_wl) == role(hi.name)
        tokens = [Metric.of(m, q) for m in TOKEN_METRICS
                  if (hm := hi.metrics.get(m)) is not None and hm.count
                  for q in TOKEN_PERCENTILES]
        metrics = ([slo_m] if tokens and mine and slo_m.kind == "named" else []) + tokens
        metrics += [P50, P99]
        if mine and slo_m not in metrics:
            metrics.append(slo_m)
        out += [(hi.name, m) for m in dict.fromkeys(metrics)]
    seen = set()
    for lw in lows:
        if role(lw.name) not in seen:
            seen.add(role(lw.name))
            out.append((lw.name, THROUGHPUT))
    return out
