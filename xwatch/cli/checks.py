"""What a command asks for, read and checked before anything starts, so a typo never
costs a run: the scenario with the command line's overrides (``--duration``,
``--device``, ``--gpus``, ``--server``, joins), the modes, the export folder, the
GPUs, an explicit telemetry backend, and the modes' backends (each mode configures
its own and checks what it can before anything starts: ``ModeBackend.check_now``)."""

from __future__ import annotations

import argparse

from xwatch.cli.parser import until_stopped
from xwatch.core.modes import registry
from xwatch.core.modes.base import NATIVE, ModeBackend
from xwatch.core.plans.options import Backends
from xwatch.errors import UsageError
from xwatch.scenario import (
    Scenario,
    load_scenario,
    parse_gpus,
)


def scenario_of(args: argparse.Namespace) -> Scenario:
    """The scenario a command that runs one (``_add_run_args``) asked for, with its
    overrides."""
    forever = until_stopped(args)
    if args.duration is not None and args.duration <= 0 and not forever:
        hint = " (0, until stopped, is for `xwatch run`)" if args.duration == 0 else ""
        raise UsageError(f"--duration must be > 0 (got {args.duration:g}){hint}")
    scen = load_scenario(args.scenario).with_server(args.server, args.served_model)
    gpus = parse_gpus(args.gpus) if args.gpus is not None else None
    duration = None if forever else args.duration
    scen = scen.with_overrides(duration_s=duration, device=args.device, gpus=gpus)
    for mode in registry.modes():  # what the command line says of each mode (joins)
        scen = mode.with_args(args, scen)
    return scen


def modes_of(args: argparse.Namespace) -> list[str]:
    """The modes this command will run (checked before anything starts)."""
    from xwatch.core.plans.advise import race_modes

    cmd = args.command
    if cmd == "compare":
        modes = [m.strip() for m in args.modes.split(",") if m.strip()]
        names = registry.names()
        bad = [m for m in modes if m not in names]
        if bad or not modes:
            raise UsageError(f"--modes {args.modes!r}: unknown mode {bad[0] if bad else ''!r}; "
                             f"allowed: {', '.join(names)} (comma-separated, e.g. "
                             f"{','.join(race_modes())})")
        if len(set(modes)) != len(modes):
            raise UsageError(f"--modes {args.modes!r} names a mode twice")
        if len(modes) < 2:
            raise UsageError("compare needs at least two modes (e.g. --modes "
                             f"{','.join(race_modes()[:2])})")
        return modes
    if cmd == "calibrate":
        return ["native", args.mode]
    if cmd == "sweep":  # the mode of its first key (a key of no mode: refused later)
        keys = [spec.partition("=")[0].partition(".")[2] for spec in args.set]
        owner = next((o for k in keys if (o := registry.owner_of(k))), None) or \
            next(m for m in registry.modes() if m.sweep_keys)
        return [NATIVE, owner.name]
    if cmd == "noise":
        if args.repeat < 2:
            raise UsageError(f"noise needs --repeat 2 or more (got {args.repeat}): the "
                             "floor is the variance between runs")
        return [args.mode]
    return [args.mode]


def check_export(directory: str | None) -> None:
    """The export folder can be made and written: checked before anything starts, so a
    typo never costs a run (a full disk later is handled where it happens)."""
    if not directory:
        return
    import os
    import tempfile
    from pathlib import Path

    d = Path(directory)
    if d.exists() and not d.is_dir():
        raise UsageError(f"--export {directory}: that is a file, not a folder",
                         title="Export folder unusable")
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".xwatch-probe-", dir=d)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"--export {directory}: cannot write there ({e.strerror or e}); "
                         "nothing was started", title="Export folder unusable")


def check_devices(scen: Scenario) -> None:
    """GPUs asked for (``--gpus``, ``cuda:N``) must exist; refused before anything
    starts. Where the count cannot be read, the workloads find out themselves."""
    from xwatch.core.telemetry.devices import gpu_count

    wanted = sorted({int(w.device.split(":")[1]) for w in scen.workloads
                     if (w.model is not None or w.server is not None) and w.gpu is None
                     and w.device.startswith("cuda:")})
    gpus = sorted(set(scen.gpus))
    if not wanted and not gpus:
        return
    n, how = gpu_count()
    if n is None:
        return
    asked = ", ".join([*(f"--gpus {','.join(map(str, gpus))}" for _ in [0] if gpus),
                       *(f"device cuda:{i}" for i in wanted)])
    if n == 0:
        raise UsageError(f"{asked}: this machine has no GPU ({how}); run on the CPU with "
                         "--device cpu, or where the GPUs are", title="No such GPU")
    bad = [i for i in [*gpus, *wanted] if i >= n]
    if bad:
        raise UsageError(f"{asked}: GPU {bad[0]} does not exist; this machine has {n} "
                         f"(0-{n - 1}; {how})", title="No such GPU")


def check_ports(scen: Scenario) -> None:
    """A server's fixed port that something already listens on is refused now, naming
    who holds it, before any mode or workload starts (``port = "auto"`` takes a free
    one at the server's start)."""
    from xwatch.core.engine.serve.ports import port_holder

    for w in scen.workloads:
        if w.server is None or w.port_auto:
            continue
        holder = port_holder(int(w.port))
        if holder is not None:
            raise UsageError(f"workload {w.name}: port {w.port} is already taken by {holder}; "
                             "nothing was started. Free it, set another port, or port = "
                             '"auto" with {port} in the server command (a free port for '
                             "each copy)", title="Server port taken")


def check_telemetry(choice: str) -> None:
    """An explicit backend that cannot start is an error before anything starts."""
    if choice in ("auto", "off", "host"):
        return
    from xwatch.core.telemetry import select_backend

    backend, _, _ = select_backend(choice)  # raises TelemetryError, naming the cause
    if backend is not None:
        backend.close()


def backends_of(args: argparse.Namespace, scen: Scenario, modes: list[str],
                wanted: list[str] | None = None, explicit: bool = True,
                check: bool = True) -> Backends:
    """The backends of the modes configured here (``wanted``: only these; None: every
    registered mode, for the dashboard's keys), in the registry's order. A mode this
    command runs (``modes``, with ``explicit``) that cannot run is an error; with
    ``check``, each of them is checked now (``ModeBackend.check_now``)."""
    configured: dict[str, ModeBackend] = {}
    unavailable: dict[str, str] = {}
    for mode in registry.modes():
        if wanted is not None and mode.name not in wanted:
            continue
        backend, why = registry.configure(mode, args, scen,
                                          explicit=explicit and mode.name in modes)
        if backend is not None:
            configured[mode.name] = backend
            if check and mode.name in modes:
                backend.check_now()
        elif why:
            unavailable[mode.name] = why
    return Backends(configured, unavailable)


def check_modes(backends: Backends, modes: list[str]) -> None:
    """Each mode of ``modes`` configured here, checked before anything starts."""
    for m in modes:
        backend = backends.get(m)
        if backend is not None:
            backend.check_now()
