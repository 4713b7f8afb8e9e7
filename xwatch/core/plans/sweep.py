"""Parameter sweeps: one native phase, then one XSched (or MPS) phase per setting; on
several GPUs (``--gpus``) the settings run side by side, one a GPU, rotated every
repeat (``box_rounds``, ``plans.box``).

XSched keys: ``low.threshold``; MPS keys: ``low.mps.active_thread_percentage``,
``low.mps.priority`` (one mode per sweep).

``--set low.threshold=1,2,4,8 --set low.batch_size=1,1,2,4`` gives four
settings (lists of equal length are zipped; a single value is used for every
setting). A setting whose phase fails is a failed point, not the end of the
sweep. ``frontier_rows`` turns a sweep snapshot into the trade-off table: HIGH
P50/P99 and LOW samples/s per setting, relative to native, and which settings
are on the Pareto frontier (lower HIGH P99, higher LOW throughput).
"""

from __future__ import annotations

from collections.abc import Callable

from xwatch.core.analysis.phases import setting_label as setting_label
from xwatch.core.modes import registry
from xwatch.core.modes.base import ModeBackend
from xwatch.core.plans import box
from xwatch.core.plans.box import apply_setting as apply_setting
from xwatch.core.plans.driver import Driver, Plan, Step
from xwatch.core.plans.options import Backends, Options
from xwatch.errors import UsageError
from xwatch.scenario import Scenario


def sweep_keys() -> tuple[str, ...]:
    """Every key a sweep can vary: each mode's (``Mode.sweep_keys``)."""
    return tuple(k for m in registry.modes() for k in m.sweep_keys)


def sweep_mode(settings: list[dict[str, dict[str, int]]]) -> str:
    """The mode whose settings these are (``parse_settings`` allows one a sweep)."""
    key = next(k for s in settings for kv in s.values() for k in kv)
    owner = registry.owner_of(key)
    assert owner is not None  # parse_settings refused the keys of no mode
    return owner.name


def parse_settings(specs: list[str], scen: Scenario) -> list[dict[str, dict[str, int]]]:
    """``['low.threshold=1,2', 'low.batch_size=1,1']`` -> [{'low': {...}}, ...]."""
    if not specs:
        raise UsageError("sweep needs at least one --set WL.KEY=V1,V2,...")
    names = list(dict.fromkeys(w.base_name for w in scen.workloads))
    columns: list[tuple[str, str, list[int]]] = []
    for spec in specs:
        lhs, sep, rhs = spec.partition("=")
        wl, dot, key = lhs.partition(".")
        if not sep or not dot:
            raise UsageError(f"--set {spec!r}: expected WORKLOAD.KEY=V1,V2,... "
                             "(e.g. low.threshold=1,2,4,8)")
        if wl not in names:
            raise UsageError(f"--set {spec!r}: no workload {wl!r}; workloads: {', '.join(names)}")
        if key not in sweep_keys():
            raise UsageError(f"--set {spec!r}: key {key!r} cannot be swept; one of "
                             + ", ".join(sweep_keys()))
        try:
            vals = [int(v) for v in rhs.split(",") if v.strip()]
        except ValueError:
            raise UsageError(f"--set {spec!r}: values must be integers")
        if not vals:
            raise UsageError(f"--set {spec!r}: no values")
        columns.append((wl, key, vals))
    kinds = {owner.label for _, k, _ in columns if (owner := registry.owner_of(k))}
    if len(kinds) > 1:
        raise UsageError(f"a sweep varies one mode's keys, not {' and '.join(sorted(kinds))}'s")
    n = max(len(v) for _, _, v in columns)
    for wl, key, vals in columns:
        if len(vals) not in (1, n):
            raise UsageError(f"--set {wl}.{key}: {len(vals)} values, but other --set lists have "
                             f"{n}; lists are zipped, so give {n} values or one")
    settings: list[dict[str, dict[str, int]]] = []
    for i in range(n):
        s: dict[str, dict[str, int]] = {}
        for wl, key, vals in columns:
            s.setdefault(wl, {})[key] = vals[i if len(vals) > 1 else 0]
        for wl, kv in s.items():
            th, bs = kv.get("threshold"), kv.get("batch_size")
            if th is not None and bs is not None and bs > th:
                raise UsageError(f"setting {i + 1}: {wl}.batch_size={bs} exceeds "
                                 f"{wl}.threshold={th}")
        for j, earlier in enumerate(settings):
            if earlier == s:
                raise UsageError(f"setting {i + 1} ({setting_label(s)}) is setting {j + 1} "
                                 "again; give each setting once (--repeat runs each more "
                                 "than once)")
        settings.append(s)
    return settings


def box_rounds(scen: Scenario, settings: list[dict[str, dict[str, int]]], mode: str,
               backend: Callable[[Scenario], ModeBackend | None], repeat: int) -> list[tuple[int, Step]]:
    """The sweep's phases on several GPUs (``scen.gpus``), round by round (round from 1):
    native, a phase of its own on every GPU as on one setting; then the settings side by
    side (``plans.box``, ``fill``): in groups that may share a phase (one mode, the
    same daemon-wide settings: ``box.phase_wide``), each phase's c settings spread over
    every GPU (about k/c each: no GPU idles), the assignment rotated every round (a
    Latin square: with c = k round r puts a group's i-th setting on
    ``gpus[(i + r - 1) % k]``), each copy with its own setting (``box.box_scenario``)
    under one backend a phase."""
    base = scen.unreplicated()
    by_label = {setting_label(s): s for s in settings}
    entries = [box.Entry(lb, mode, box.phase_wide(backend(apply_setting(base, s))))
               for lb, s in by_label.items()]
    out: list[tuple[int, Step]] = []
    for rnd in range(1, max(1, repeat) + 1):
        out.append((rnd, Step("native")))
        for bp in box.layout(entries, scen.gpus, rnd - 1, fill=True):
            placed = [(by_label[lb], g) for lb, g in bp.placed]
            out.append((rnd, Step(bp.mode, backend(box.box_scenario(scen, placed)), bp.where(),
                                  box.copy_settings(scen, placed),
                                  only=box.copies(scen, bp.gpus))))
    return out


async def run_sweep(scen: Scenario, opts: Options, backends: Backends) -> int:
    """Headless sweep into one session/snapshot; returns the exit status. On several
    GPUs (``--gpus``) the settings run side by side (``box_rounds``)."""
    settings = parse_settings(list(opts.sets), scen)
    mode = sweep_mode(settings)

    def backend(sc: Scenario) -> ModeBackend | None:
        return backends.for_scenario(mode, sc)

    driver = Driver(scen, opts, backends)

    if len(scen.gpus) > 1:
        rounds = box_rounds(scen, settings, mode, backend, max(1, opts.repeat))
        first = [st for rnd, st in rounds if rnd == 1]
        return await driver.run(Plan(first, rounds=rounds))
    steps = [Step("native")] + [Step(mode, backend(apply_setting(scen, s)), setting_label(s), s)
                                for s in settings]
    return await driver.run(Plan(steps))
