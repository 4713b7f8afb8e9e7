"""Races over the box: a round's candidates spread over the GPUs that ``--gpus`` names,
each round one phase (or a few) of the one runner instead of one phase per candidate.

The rules (``docs/gpus-races.md`` says why):

- one mode per phase unless ``mix`` (below): a one-mode phase's isolation (the
  scrubbed environment, the ``/proc/PID/maps`` proof, ``modes.isolation``) and its
  daemon are the runner's per phase; a mixed phase is the runner's split phase, each
  copy with its own mode's environment, backend and proof;
- one daemon of a mode per phase, so candidates whose daemon-wide settings differ never share a
  phase (``phase_wide``): XSched's xserver serves every GPU with one policy, port,
  install and platform; MPS's control daemon is one per phase (its tool). Per-process
  settings (XSched's threshold, batch size, priority, level; MPS's client priority,
  active thread percentage, pinned memory limit) come from each copy's environment
  and may differ within a phase;
- a phase places each candidate on one GPU, at most one candidate a GPU; a group of
  n candidates (same mode, same daemon-wide settings) on k GPUs takes ceil(n/k)
  phases, the last one with idle GPUs where n is not a multiple of k;
- the assignment rotates every round as a Latin square: the i-th running candidate of
  a group (in the plan's order) runs on GPU ``gpus[(i + round) % k]``, so over k
  rounds of the same candidates each runs once on every GPU and each GPU has each
  candidate once; no candidate is tied to one GPU, and a GPU's own speed is spread
  over every candidate (the statistics see it as run-to-run variance; each run
  records its GPU);
- ``fill`` (advise's races): no GPU idles. With ``mix`` (the headless race, whose
  plan runs split phases) the groups' phases of fewer than k candidates are packed
  together where the runner's split phase allows it (``mixed``):
  at most one group of each non-native mode a phase (one xserver, one MPS daemon, each
  serving its own copies alone), native candidates beside any of them on GPUs of their
  own. A phase of c candidates then gives each about k/c GPUs: GPU ``gpus[j]`` runs
  the ``(j - round) % c``-th candidate of the phase (in the plan's order), so each
  candidate meets every GPU over the rounds; with c = k it is the rule above. A
  candidate's run is then the geometric mean over its copies, as the answer takes it
  (``race.record_run``);
- a phase's workloads are the candidates' copies, each copy named ``NAME@GPU`` and
  pinned as ``--gpus`` pins copies (``Scenario.on_gpus``), each with its candidate's
  settings (``box_scenario``).

``compare --layout split`` is the one place where modes share a phase (``split_gpus``):
its phases run every mode at once, each mode on GPUs of its own (the runner's split
phase: each copy's environment, backend and isolation proof are its own mode's; one
xserver for the XSched copies, an MPS daemon for the MPS copies' GPUs alone), GPU
``gpus[j]`` in repeat ``r`` (from 0) running mode ``modes[(j + r) % m]``: a Latin square
over the GPUs, so over ``m`` repeats each mode meets every GPU, and each run pairs the
modes inside one phase.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xwatch.core import model as M
from xwatch.core.modes import registry
from xwatch.core.modes.base import NATIVE, ModeBackend, split_name
from xwatch.scenario import Scenario, Workload

#: a candidate's setting as the sweep writes it: {"low": {"threshold": 2}}
Setting = Mapping[str, Mapping[str, M.SettingValue]]


@dataclass(frozen=True)
class Entry:
    """A candidate to place: its name, mode and daemon-wide settings (``phase_wide``)."""

    label: str
    mode: str
    wide: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class BoxPhase:
    """One phase of a round: its mode (``native+mps``: mixed) and each GPU's candidate,
    in GPU order (a candidate may hold several GPUs); ``modes``: each candidate's mode
    where the phase mixes them."""

    mode: str
    placed: tuple[tuple[str, int], ...]
    modes: tuple[tuple[str, str], ...] = ()

    @property
    def gpus(self) -> tuple[int, ...]:
        return tuple(g for _, g in self.placed)

    @property
    def labels(self) -> tuple[str, ...]:
        """Its candidates, each once, in GPU order."""
        return tuple(dict.fromkeys(lb for lb, _ in self.placed))

    def gpus_of(self, label: str) -> tuple[int, ...]:
        return tuple(g for lb, g in self.placed if lb == label)

    def mode_of(self, label: str) -> str:
        return dict(self.modes).get(label, self.mode)

    def where(self) -> str:
        """``mps sm=50% @GPU0,2 | native @GPU1,3``."""
        return " | ".join(f"{lb} @GPU{','.join(map(str, self.gpus_of(lb)))}"
                          for lb in self.labels)


def phase_wide(backend: ModeBackend | None) -> tuple[tuple[str, str], ...]:
    """The settings of ``backend`` that hold for a whole phase (one daemon for every GPU:
    ``ModeBackend.phase_wide``). Candidates that differ in one of them never share a
    phase. Native (no backend) has none."""
    return backend.phase_wide() if backend is not None else ()


def layout(entries: Sequence[Entry], gpus: Sequence[int], rnd: int,
           fill: bool = False, mix: bool = False) -> list[BoxPhase]:
    """Round ``rnd``'s phases for the running ``entries`` (in the plan's order): grouped
    by mode and daemon-wide settings, each group's i-th entry on ``gpus[(i + rnd) % k]``,
    k entries a phase; ``fill``: each phase's candidates spread over every GPU, and with
    ``mix`` the groups' phases packed together (``mixed``; see the module)."""
    k = len(gpus)
    if k == 0:
        raise ValueError("a box round needs at least one GPU")
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[Entry]] = {}
    for e in entries:
        groups.setdefault((e.mode, e.wide), []).append(e)
    if fill:
        bins = mixed(list(groups.values()), k) if mix else \
            [list(m[s:s + k]) for m in groups.values() for s in range(0, len(m), k)]
        return [_spread(b, list(entries), gpus, rnd) for b in bins]
    out = []
    for (mode, _), members in groups.items():
        for start in range(0, len(members), k):
            chunk = members[start:start + k]
            placed = sorted(((e.label, gpus[(start + j + rnd) % k])
                             for j, e in enumerate(chunk)), key=lambda lg: gpus.index(lg[1]))
            out.append(BoxPhase(mode, tuple(placed)))
    return out


def mixed(groups: Sequence[Sequence[Entry]], k: int) -> list[list[Entry]]:
    """The groups' chunks of at most ``k`` packed into phases of at most ``k`` entries
    (largest first, each into the first phase it fits): a phase holds at most one group
    of each non-native mode (one daemon each); native entries join any phase."""
    chunks = [list(m[s:s + k]) for m in groups for s in range(0, len(m), k)]
    bins: list[list[Entry]] = []
    for ch in sorted(chunks, key=len, reverse=True):  # stable: the plan's order on ties
        mode = ch[0].mode
        for b in bins:
            if len(b) + len(ch) <= k and (mode == NATIVE or all(
                    e.mode != mode for e in b)):
                b.extend(ch)
                break
        else:
            bins.append(list(ch))
    return bins


def _spread(members: list[Entry], order: list[Entry], gpus: Sequence[int], rnd: int
            ) -> BoxPhase:
    """One phase of ``members`` over every GPU: ``gpus[j]`` runs member ``(j - rnd) % c``
    (members in the plan's ``order``)."""
    members = sorted(members, key=order.index)
    c = len(members)
    placed = tuple((members[(j - rnd) % c].label, g) for j, g in enumerate(gpus))
    modes = {e.label: e.mode for e in members}
    kinds = sorted(set(modes.values()))
    if len(kinds) == 1:
        return BoxPhase(kinds[0], placed)
    return BoxPhase(split_name(kinds), placed, tuple(modes.items()))


def split_gpus(modes: Sequence[str], gpus: Sequence[int], rnd: int) -> dict[int, str]:
    """Repeat ``rnd``'s (from 0) mode of each GPU of a split phase: ``gpus[j]`` runs
    ``modes[(j + rnd) % m]`` (every mode on about ``len(gpus) / m`` GPUs; needs at least
    as many GPUs as modes)."""
    m = len(modes)
    if m == 0 or len(gpus) < m:
        raise ValueError(f"a split phase needs at least one GPU per mode ({m} modes, "
                         f"{len(gpus)} GPUs)")
    return {g: modes[(j + rnd) % m] for j, g in enumerate(gpus)}


def split_copies(scen: Scenario, placed: Mapping[int, str]) -> dict[str, str]:
    """Each copy's mode in a split phase (``{"high@0": "native", ...}``): the copies of
    every workload on a GPU run in that GPU's mode."""
    return {copy_name(w.name, g): mode for g, mode in placed.items()
            for w in scen.unreplicated().workloads}


def apply_setting(scen: Scenario, s: Setting) -> Scenario:
    """``scen`` with a sweep setting (``{"low": {"threshold": 2}}``) applied to the
    workloads it names (by name or by the scenario's name of a copy): each mode's keys
    to its settings (``Mode.with_settings``)."""
    wls = []
    for w in scen.workloads:
        kv = s.get(w.name) or s.get(w.base_name)
        if kv:
            for mode in registry.modes():
                w = mode.with_settings(w, kv)
        wls.append(w)
    return dataclasses.replace(scen, workloads=tuple(wls))


def copy_name(name: str, gpu: int) -> str:
    """A workload's copy on ``gpu``, as ``Scenario.on_gpus`` names it."""
    return f"{name}@{gpu}"


def box_scenario(scen: Scenario, placed: Sequence[tuple[Setting | None, int]]) -> Scenario:
    """The scenario of one box phase: for each (setting, GPU) the workloads as written,
    with that setting applied, copied onto that GPU (``NAME@GPU``, pinned)."""
    base = scen.unreplicated()
    wls: list[Workload] = []
    for setting, g in placed:
        sc = apply_setting(base, setting) if setting else base
        wls.extend(sc.on_gpus((g,)).workloads)
    return dataclasses.replace(base, workloads=tuple(wls), gpus=tuple(g for _, g in placed),
                               single=base.workloads)


def phase_copy_modes(scen: Scenario, bp: BoxPhase) -> dict[str, str] | None:
    """A mixed phase's mode of each copy (the runner's split phase); None: one mode."""
    if not bp.modes:
        return None
    return split_copies(scen, {g: bp.mode_of(lb) for lb, g in bp.placed})


def copies(scen: Scenario, gpus: Sequence[int]) -> tuple[str, ...]:
    """The names of every workload's copy on each of ``gpus`` (a phase's ``only``)."""
    return tuple(copy_name(w.name, g) for g in gpus for w in scen.unreplicated().workloads)


def copy_settings(scen: Scenario, placed: Sequence[tuple[Setting | None, int]]
                  ) -> dict[str, dict[str, M.SettingValue]]:
    """Each copy's setting, keyed by the copy's name (the phase's ``setting_values``)."""
    out: dict[str, dict[str, M.SettingValue]] = {}
    for setting, g in placed:
        for wl, kv in (setting or {}).items():
            out[copy_name(wl, g)] = dict(kv)
    return out


def split_rounds(scen: Scenario, modes: list[str], repeat: int) -> list[tuple[int, Any]]:
    """``compare --layout split``: one phase a repeat (a ``driver.Step``), every mode at
    once on GPUs of its own, rotated every repeat (``split_gpus``)."""
    from xwatch.core.plans.driver import Step

    out: list[tuple[int, Any]] = []
    for r in range(max(1, repeat)):
        placed = split_gpus(modes, scen.gpus, r)
        where = " | ".join(f"{m} @GPU{','.join(str(g) for g, x in placed.items() if x == m)}"
                           for m in modes)
        out.append((r + 1, Step(split_name(modes), label=where,
                                copy_modes=split_copies(scen, placed))))
    return out
