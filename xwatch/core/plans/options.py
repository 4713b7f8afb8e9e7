"""What a plan is run with: ``Options`` (every choice a command or the dashboard makes,
each default written once here; the command line and the app build one) and
``Backends`` (the mode backends configured for this machine, and the one factory that
builds a backend for another scenario: a sweep's setting, an advise candidate, a box
phase)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from xwatch.core.modes.base import NATIVE, ModeBackend
from xwatch.core.telemetry import PROC_INTERVAL_S

if TYPE_CHECKING:
    from xwatch.core.engine.snapshot import SessionSnapshot
    from xwatch.scenario import Scenario

DEFAULT_BUDGET_MIN = 20.0  # advise: minutes
DEFAULT_PRECISION = 5.0  # noise: percent, half-width of a 95% interval of a difference
DEFAULT_NOISE_RUNS = 6


class MetricsSink(Protocol):
    """Where each new snapshot goes while a plan runs (``export.prometheus.MetricsServer``)."""

    def publish(self, snap: SessionSnapshot) -> None: ...


@dataclass(frozen=True)
class Options:
    """Every choice a plan or the dashboard reads, with its default. A plan reads the
    fields it needs; the others keep their defaults."""

    # the session
    spool_max_mb: float = 1024
    telemetry: str = "auto"
    telemetry_interval: float = 0.5
    telemetry_proc_interval: float = PROC_INTERVAL_S
    #: a phase runs until stopped (``run --duration 0``), not the scenario's duration_s
    until_stopped: bool = False
    #: the metrics endpoint, handed every snapshot (bound by the command line first)
    metrics: MetricsSink | None = None
    #: write the snapshot and reports here at the end (headless) or on ``s`` (dashboard)
    export: str | None = None
    # headless plans
    repeat: int = 1
    #: compare: "replicate" (every phase one mode on every GPU) or "split" (the modes side
    #: by side on GPUs of their own in each phase, rotated every repeat)
    layout: str = "replicate"
    fail_if: str | None = None
    trace: float | None = None  # seconds of kernel capture mid-phase
    sets: tuple[str, ...] = ()  # sweep, advise: --set WL.KEY=V1,V2,...
    slo: str | None = None  # advise: the objective, else the scenario's [slo]
    budget_min: float = DEFAULT_BUDGET_MIN  # advise
    seed: int = 0  # advise, capacity: each round's shuffled order
    rates: str | None = None  # capacity: LO:HI requests/s of the SLO workload
    precision: float = DEFAULT_PRECISION  # noise
    # the dashboard
    mode: str = NATIVE  # the first phase's mode
    autostart: bool = True  # start that phase at once
    keep: int = 0  # keep the newest N sessions on exit (0: none)
    keep_max_bytes: int = 2 << 30
    sessions_dir: Path | None = None  # the sessions folder (None: the state folder's)

    def phase_s(self, scen: Scenario) -> float:
        """A phase's planned measured seconds."""
        return float("inf") if self.until_stopped else scen.duration_s


@dataclass(frozen=True)
class Backends:
    """The mode backends configured here, by mode (a mode without one cannot run, and
    ``unavailable`` may say why)."""

    configured: Mapping[str, ModeBackend] = field(default_factory=dict)
    unavailable: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, *backends: ModeBackend | None,
           unavailable: Mapping[str, str] | None = None) -> Backends:
        """These backends, each under its mode (None: left out)."""
        return cls({b.mode: b for b in backends if b is not None}, dict(unavailable or {}))

    def get(self, mode: str) -> ModeBackend | None:
        return self.configured.get(mode)

    def for_scenario(self, mode: str, sc: Scenario) -> ModeBackend | None:
        """The one backend factory: a backend of ``mode`` for the scenario ``sc`` (a
        sweep setting, an advise candidate, a box phase), set up as the configured one;
        None for native or a mode not configured here."""
        b = self.configured.get(mode)
        return b.for_scenario(sc) if b is not None else None
