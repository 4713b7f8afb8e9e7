"""The mode contract: what a scheduling mode declares, so that the rest of xwatch knows a
mode only through it (``registry`` finds them by name).

A mode is two things:

- ``Mode``, its declaration (a frozen dataclass subclassing ``ModeBase``, which holds
  every member at its default), one per name, registered (``registry.register``; native,
  MPS, XSched and a mode from outside the tree alike): its name and label; its scenario
  keys (the ``--set`` keys of a sweep, advise's grid, how they apply to a workload); the
  backend it configures from the command line (or why it cannot run here); its report
  sections and lines of the environment, its Prometheus series, the upgrade of its
  records in older snapshots, its words (capacity's sentences, the dashboard's keys,
  help and alerts), its dashboard key, tab, lanes, Compare panel and live-control
  screen. What lives elsewhere is named by ``module:attr`` references that the
  registry, the report and the dashboard load: a mode's declaration imports neither its
  backend nor what sits above it. A dashboard panel may be plain data (``View``,
  ``Lanes``) that the dashboard draws, so that a mode keeps it in its package.

  sections, its dashboard key, tab and live-control screen; its own rules, asked by
  the generic machinery (who took part, ``Proof``; its verdict words; its traces kept
  out of the other modes' workloads, ``Isolation``; how an answer words its settings).
  What lives elsewhere is named by ``module:attr`` references that the registry, the
  report and the dashboard load: a mode's declaration imports neither its backend nor
  what sits above it.
- ``ModeBackend``, the configured backend that runs its phases: enter and leave a
  phase; the environment of its workloads and their fork support; the preflight
  (``settle``) and the engagement proof (``on_running``, ``last_look``); its health
  (``failure``); its live controls (``control``); a backend of the same mode for
  another scenario (``for_scenario``: a sweep's setting, an advise candidate, a box
  phase) and the settings that hold for a whole phase (``phase_wide``); the one retry of
  a phase whose daemon died early (``died_early``). Its workloads' processes reach the
  mode's fork support through their environment (``engine.worker.support``).

Native is the absence of a backend: its ``Mode`` configures none.
"""

from __future__ import annotations

import abc
import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from xwatch.core import model as M
    from xwatch.core.engine.live.phase import Phase
    from xwatch.core.engine.live.session import Session
    from xwatch.core.engine.live.workload import WorkloadRun
    from xwatch.core.engine.snapshot import PhaseSnapshot
    from xwatch.core.engine.worker.zygote import ForkServer
    from xwatch.scenario import Scenario, Workload

#: a mode's backend from the command line's arguments and the scenario: (its backend,
#: None) where it can run here, else (None, why not); with ``explicit`` (the mode was
#: asked for by name) what stops it is a titled error instead
Configure = Callable[[argparse.Namespace, "Scenario", bool],
                     "tuple[ModeBackend | None, str | None]"]
#: the fork server a workload with this environment forks from (``Supervisor.server_for``)
ServerFor = Callable[[Mapping[str, str]], "ForkServer | None"]
#: where a mode's own arguments go among a command's (``Mode.add_arguments``): "install"
#: after the run arguments' ``--served-model`` (where its install is found), "join" after
#: ``--trace`` (joining another session's daemon), "doctor" among ``doctor``'s
ARGUMENT_PLACES = ("install", "join", "doctor")
#: a mode's ``xwatch doctor`` checks from the command's arguments and what the workloads'
#: interpreter reported of torch (``cli.doctor.probe_python``): (status PASS, WARN, SKIP
#: or FAIL, what was checked, the finding) each
DoctorChecks = Callable[[argparse.Namespace, Mapping[str, object]],
                        "list[tuple[str, str, str]]"]


@dataclass(frozen=True)
class Control:
    """A live control request from the dashboard's control screen: its action (one of
    the backend's ``Controls.actions``), the workload it names (if any) and its values."""

    action: str
    workload: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)


# -- names-ui: what a mode shows on the dashboard, as plain data
@dataclass(frozen=True)
class KeyHelp:
    """A row of the dashboard's keys that a mode declares (``Mode.keys_help``): its place
    among the rows (the dashboard's own: ``r`` 40, ``s`` 50, ``a`` 80, ``A`` 90, ...),
    the keys as the help shows them, what they do, and their bindings (key, action,
    the footer's words, shown in the footer). Plain data: the dashboard makes the
    bindings."""

    place: int
    keys: str
    does: str
    bindings: tuple[tuple[str, str, str, bool], ...] = ()


#: styled text as plain data: (text, rich style string) pieces
Styled = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class View:
    """What a mode shows in a dashboard panel, as data the dashboard draws
    (``Mode.tab_view``, ``Mode.compare_view``): styled text (``head_style`` over all of
    it), a table under it (its header and rows; none: no table), styled text under the
    table; ``key`` tells two views apart beyond what they show."""

    head: Styled
    head_style: str = ""
    header: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    foot: Styled = ()
    foot_style: str = ""
    key: str = ""


@dataclass(frozen=True)
class Lanes:
    """Each workload's scheduler lane in a phase (``Mode.lanes``): (workload, its status,
    one mark per poll), and the legend of the marks."""

    lanes: tuple[tuple[str, str, Styled], ...]
    legend: Styled = ()


@dataclass(frozen=True)
class Controls:
    """What a backend lets change while its phase runs, as the control screen shows it:
    its actions, the policy running and the policies it can switch to (None: unknown)."""

    actions: tuple[str, ...]
    policy: str | None = None
    policies: list[str] | None = None
    # -- names-ui: the control screen's words, the mode's own
    #: the screen's title
    title: str = ""
    #: what the screen says under its fields (what cannot change live, and why)
    note: str = ""


class ModeBackend(abc.ABC):
    """What a non-native mode's configured backend provides to the runner and the
    plans. The lifecycle is abstract; the capabilities have the defaults of a mode
    that has none of them."""

    #: the name of its ``Mode``
    mode: str
    #: its workloads fork from a fork server of their own, started with ``fork_env``
    #: (the common fork server's environment is not theirs)
    own_fork_server: bool = False

    # -- a phase's lifecycle
    @abc.abstractmethod
    async def enter(self, phase: Phase) -> dict[str, dict[str, str]]:
        """Prepare the mode; return extra environment per workload name."""

    async def settle(self, phase: Phase) -> None:
        """The preflight: wait for what ``enter`` left running beside the workloads'
        start; raise its failure. The start gate stays shut until this returns."""
        return None

    async def last_look(self, phase: Phase) -> None:
        """The phase's workloads are about to be stopped: the last moment they are seen
        running (MPS reads the client lists for those not proven clients yet: on a busy
        machine a short phase can end before its watch got to them). None here."""
        return None

    @abc.abstractmethod
    async def leave(self, phase: Phase) -> None:
        """Undo ``enter`` (stop daemons); must be safe to call twice."""

    @abc.abstractmethod
    def kill_now(self) -> None:
        """Synchronous emergency stop."""

    @abc.abstractmethod
    def failure(self) -> str | None:
        """Why the mode can no longer run this phase (its daemon died), else None."""

    @abc.abstractmethod
    def on_running(self, run: WorkloadRun, libraries: list[str] | None) -> None:
        """The engagement proof: a workload of the phase is running; ``libraries``: the
        scheduler libraries its processes have mapped (None: unreadable)."""

    def check_now(self) -> None:
        """Before anything starts: what can be checked of its scenario here (an
        install's platforms, another session's daemon); raises a titled error."""
        return None

    # -- its workloads' environment and fork support
    def scrubbed_libraries(self) -> list[str]:
        """Library folders of this mode that every other mode's environment must not
        see (``isolation.clean_env``)."""
        return []

    async def fork_env(self, w: Workload) -> dict[str, str] | None:
        """With ``own_fork_server``: ``w``'s environment for that server before a phase;
        None where its copies are exec'd."""
        return None

    def start_probes_as_workloads(self, base_env: Mapping[str, str],
                                  server_for: ServerFor) -> None:
        """Before ``enter``: the preflight's probes start from ``base_env`` and fork as
        the phase's workloads do (``server_for``). Nothing here."""
        return None

    # -- configured for other scenarios
    @abc.abstractmethod
    def for_scenario(self, scenario: Scenario) -> ModeBackend:
        """A backend of this mode for ``scenario``, set up as this one."""

    def phase_wide(self) -> tuple[tuple[str, str], ...]:
        """The settings that hold for a whole phase (one daemon for every GPU):
        candidates that differ in one of them never share a phase."""
        return ()

    # -- live controls
    def controls(self) -> Controls | None:
        """What can change while a phase runs (None: nothing)."""
        return None

    async def control(self, request: Control) -> str:
        """Apply ``request`` live; the line that says what changed. A mode without live
        controls (``controls`` None) refuses any request, naming it: the dashboard offers
        none, so only a caller that did not ask ``controls`` first gets here."""
        from xwatch.errors import ModeError

        raise ModeError(f"{self.mode} has no live control {request.action!r} (it declares "
                        "none)", title="No live control")

    # -- names-engine: the one retry of a phase whose daemon died early
    def died_early(self, phase: Phase) -> Retry | None:
        """How to retry ``phase`` when it failed because the mode's daemon died before its
        first measured second (XSched's xserver); None: it is not retried (the default)."""
        return None


class Mode(Protocol):
    """A scheduling mode's declaration (see the module)."""

    @property
    def name(self) -> str:
        """Its name on the command line, in scenarios and snapshots (``native``,
        ``mps``)."""

    @property
    def label(self) -> str:
        """How it is named on screen and in reports."""

    @property
    def key(self) -> str | None:
        """The dashboard key that switches between native and it (None: none)."""

    @property
    def tab(self) -> str | None:
        """The dashboard's tab (``module:Widget``, ``show(snap, reason)``; None: none)."""

    @property
    def control_screen(self) -> str | None:
        """The live-control screen for its ``Controls`` (``module:Screen``; None: none)."""

    @property
    def report_sections(self) -> tuple[tuple[int, str], ...]:
        """Its report sections: (place among the modes' sections, ``module:function`` of
        the snapshot, returning a section or None)."""

    @property
    def sweep_keys(self) -> tuple[str, ...]:
        """The ``--set`` keys a sweep or advise varies in its settings."""

    @property
    def short_keys(self) -> Mapping[str, str]:
        """How a candidate's name in tables spells each of them (``mps.priority``:
        ``pri``)."""

    @property
    def advise_grid(self) -> tuple[Mapping[str, Any], ...]:
        """Advise's candidates: each a setting of the lower-priority workloads."""

    @property
    def unavailable(self) -> str:
        """Why it cannot run where no backend was configured."""

    @property
    def backend_factory(self) -> str | None:
        """Its backend from the command line (``module:function`` of ``Configure``);
        None: it runs without one (native)."""

    def owns_key(self, key: str) -> bool:
        """Whether a ``--set`` key is one of this mode's settings."""

    def with_settings(self, w: Workload, kv: Mapping[str, Any]) -> Workload:
        """``w`` with this mode's ``--set`` keys of ``kv`` applied."""

    def with_args(self, args: argparse.Namespace, scen: Scenario) -> Scenario:
        """``scen`` with what the command line says of this mode (``--join-xserver``)."""

    def deploy(self, kv: Mapping[str, Any]) -> list[str]:
        """The scenario lines (TOML, in a workload's table) that set a workload's
        ``--set`` keys ``kv`` of this mode: how advice is deployed."""

    # -- names-scen: its command-line arguments and its doctor checks
    def add_arguments(self, parser: argparse.ArgumentParser, place: str) -> None:
        """Add its own arguments to a command's ``parser`` at ``place`` (one of
        ``ARGUMENT_PLACES``: where they appear in ``--help``); ``with_args`` and its
        ``backend_factory`` read them."""

    @property
    def doctor(self) -> str | None:
        """Its ``xwatch doctor`` checks (``module:function`` of ``DoctorChecks``), after
        the generic ones; None: none."""

    # -- names-ui: what the report, the snapshot's reader, the metrics and the dashboard
    # ask of a mode (each mode's own words and records, so that they name none)
    @property
    def env_prefixes(self) -> tuple[str, ...]:
        """The prefixes of its own environment variables (``XSCHED_``): recorded with
        the host's environment and shown with a failed workload's."""

    @property
    def libraries(self) -> str | None:
        """What the isolation proof looks for of it in a workload's maps, as the report
        names it (``XSched libraries``); None: nothing."""

    @property
    def report_environment(self) -> str | None:
        """Its lines of the report's environment (``module:function`` of a
        ``PhaseSnapshot``, returning its rows of the environment table and its tables
        under it, ``(rows, [(title, Table)])``); None: none."""

    @property
    def metrics(self) -> str | None:
        """Its Prometheus series (``module:function``: given the exporter's ``gauge``
        maker, it declares its families and returns what adds a workload's samples,
        ``add(phase, workload, labels)``); None: none."""

    @property
    def upgrade(self) -> str | None:
        """The step that brings its records in an older snapshot's raw JSON to the
        current shape (``module:function`` of the raw document, returning it, the same
        object where nothing changed); None: none."""

    @property
    def help(self) -> str:
        """What the dashboard's help says of it beside the verdicts (Markdown; "":
        nothing)."""

    @property
    def keys_help(self) -> tuple[KeyHelp, ...]:
        """Its rows of the dashboard's keys (its key, its live control ...)."""

    def words(self, settings: Mapping[str, Any]) -> str | None:
        """How a candidate of it with ``settings`` reads in a sentence (capacity's
        consolidation: ``MPS at 50%``); None: by the candidate's name."""

    def warnings(self, phase: PhaseSnapshot) -> list[tuple[str, str]]:
        """Its warnings of a phase's workloads beyond their participation, as the
        dashboard's alert bar shows them: (workload, warning)."""

    @property
    def tab_view(self) -> str | None:
        """What its tab shows, where its ``tab`` is the dashboard's own ``ViewPanel``
        (``module:function`` of the snapshot and why the mode cannot run, if it cannot,
        returning a ``View``); None: its tab draws itself."""

    @property
    def lanes(self) -> str | None:
        """Each workload's scheduler lane under the latency chart (``module:function`` of a
        ``PhaseSnapshot`` and the width, returning ``Lanes``); None: none."""

    @property
    def compare_view(self) -> str | None:
        """Its panel on the Compare tab (``module:function`` of the snapshot, returning a
        ``View`` or None when the session has nothing for it); None: none."""

    # -- names-engine: the mode's own rules, asked by the generic machinery
    @property
    def proof(self) -> str | None:
        """Its proof of who took part (``module:attr`` of a ``Proof``); None: the verdicts
        a phase records in ``proof``, ``engaged`` taking part (a mode from outside the
        tree), or nothing to prove (native)."""

    @property
    def isolation(self) -> str | None:
        """How it keeps its traces out of the other modes' workloads, and proves it
        (``module:attr`` of an ``Isolation``); None: it leaves none."""

    @property
    def verdicts(self) -> str | None:
        """The verdicts its proof prints and what each means (``module:attr`` of a tuple of
        ``modes.verdicts.Word``, merged into one table by ``modes.verdicts``); None: none."""

    @property
    def setting_words(self) -> Mapping[str, str]:
        """How an answer words a workload's ``--set`` key of this mode (``{wl}``: the
        workload, ``{v}``: the value); a key not here reads ``{wl} {key} {v}``."""


@dataclass(frozen=True)
class ModeBase:
    """Every ``Mode`` member at its default (a mode that has none of it): a mode's
    declaration subclasses it (a frozen dataclass too) and states only its name, label
    and what it has; each member's meaning is ``Mode``'s."""

    name: str = ""
    label: str = ""
    key: str | None = None
    tab: str | None = None
    control_screen: str | None = None
    report_sections: tuple[tuple[int, str], ...] = ()
    sweep_keys: tuple[str, ...] = ()
    short_keys: Mapping[str, str] = field(default_factory=dict)
    advise_grid: tuple[Mapping[str, Any], ...] = ()
    unavailable: str = ""
    backend_factory: str | None = None
    doctor: str | None = None
    env_prefixes: tuple[str, ...] = ()
    libraries: str | None = None
    report_environment: str | None = None
    metrics: str | None = None
    upgrade: str | None = None
    help: str = ""
    keys_help: tuple[KeyHelp, ...] = ()
    tab_view: str | None = None
    lanes: str | None = None
    compare_view: str | None = None
    proof: str | None = None
    isolation: str | None = None
    verdicts: str | None = None
    setting_words: Mapping[str, str] = field(default_factory=dict)

    def owns_key(self, key: str) -> bool:
        return False

    def with_settings(self, w: Workload, kv: Mapping[str, Any]) -> Workload:
        return w

    def with_args(self, args: argparse.Namespace, scen: Scenario) -> Scenario:
        return scen

    def deploy(self, kv: Mapping[str, Any]) -> list[str]:
        return []

    def add_arguments(self, parser: argparse.ArgumentParser, place: str) -> None:
        return None

    def words(self, settings: Mapping[str, Any]) -> str | None:
        return None

    def warnings(self, phase: PhaseSnapshot) -> list[tuple[str, str]]:
        return []


# -- names-engine: what a mode's own rules are (``Mode.proof``, ``Mode.isolation``,
# ``ModeBackend.died_early``)
@dataclass(frozen=True)
class Advice:
    """Why a workload takes no part in its mode, and what to do about it."""

    reason: str
    todo: str


@dataclass(frozen=True)
class Absent:
    """A workload of a phase that takes no part in the phase's mode (or, ``provisional``,
    has not been seen taking part so far)."""

    workload: str
    mode: str  # the mode's name
    status: str  # the mode's verdict (``pending`` while provisional)
    reason: str
    todo: str
    provisional: bool = False

    def line(self) -> str:
        """What the main screen and the console say: "infer: XSched is not scheduling
        it (...): run its GPU work on a CUDA stream it creates (...)"."""
        todo = f"if it stays so, {self.todo}" if self.provisional else self.todo
        return f"{self.workload}: {self.reason}: {todo}"


class Proof(Protocol):
    """A mode's proof of who of a phase's workloads took part in it, and what else the
    readers of a snapshot ask of its record in a phase (``Mode.proof``): for the answer
    (``analysis.participation``), the live alerts (``modes.participation``), a split
    phase's per-mode view and the daemon it shared (``analysis.phases``), the slow
    requests' attribution (``analysis.gpu.attribution``)."""

    #: the phase snapshot's fields that hold its record (a split phase's copies of another
    #: mode do without them)
    fields: tuple[str, ...]

    #: the recorded verdicts that prove a workload took part
    took_part: frozenset[str]
    #: what taking part is called: (one workload "was ...", several "were ...", the
    #: others "ran ... beside it")
    verbs: tuple[str, str, str]
    #: why a workload takes no part and what to do, by verdict
    advices: Mapping[str, Advice]

    def verdict(self, phase: PhaseSnapshot, name: str) -> str | None:
        """The verdict ``phase`` recorded for workload ``name`` ("unrecorded": none for
        it; None: the phase has no record of the mode's evidence at all)."""

    def reason(self, verdict: str, phase: PhaseSnapshot, default_stream: bool) -> str | None:
        """What ``verdict`` means, said after the workload's name in an answer
        (``default_stream``: the evidence says its work ran on the default stream); None:
        the generic words."""

    def advice(self, status: str, server: bool = False,
               default_stream: bool = False) -> Advice | None:
        """Why a workload whose verdict is ``status`` takes no part, and what to do (a
        server's, a default-stream workload's own); None: it is not taking no part."""

    def absent(self, phase: PhaseSnapshot) -> list[Absent]:
        """The workloads of ``phase`` its verdicts say take no part, or that have not been
        seen taking part so far (``Absent.provisional``)."""

    def shared(self, phase: PhaseSnapshot) -> str | None:
        """What its daemon also served in ``phase`` that was not this session's (None:
        nothing, or no daemon)."""

    def lanes(self, phase: PhaseSnapshot) -> Mapping[str, list[tuple[float, str]]]:
        """Each workload's scheduler state per poll in ``phase`` (time, ``running`` /
        ``suspended`` / ``idle``), where the mode records one; empty: none recorded."""


class Scrubbing(Protocol):
    """A starting environment being cleaned of a mode's traces
    (``modes.isolation.Cleaned``): what is left, and what to take out."""

    env: dict[str, str]

    def drop(self, name: str, why: str, keep: str | None = None) -> None:
        """Take ``name`` out (``keep``: what is left of its value), saying why."""


class Isolation(Protocol):
    """How a mode keeps its traces out of the other modes' workloads, and proves it
    (``Mode.isolation``; ``modes.isolation`` asks every registered mode's)."""

    #: a phase of this mode is proven by its library mapped in each workload's process
    #: (``marks``): ``shim-loaded`` / ``shim-missing``
    maps_proof: bool

    def scrub(self, env: Mapping[str, str], mode: str, cleaned: Scrubbing,
              libs: list[str], private_dir: str | None) -> None:
        """Take this mode's traces in ``env`` out of a ``mode`` phase's starting
        environment (``cleaned``); ``libs``: the configured modes' library folders;
        ``private_dir``: the private folder kept for the other modes (``private_dir``)."""

    def private_dir(self, scratch_dir: str) -> str | None:
        """A folder it keeps for the other modes' workloads, made in ``scratch_dir``
        (None: none)."""

    def record(self, envs: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
        """Its fields of a phase's ``Isolation`` record (``envs``: each mode's cleaned
        starting environment)."""

    def marks(self, path: str) -> bool:
        """Whether a library mapped in a process marks this mode."""

    def failure_text(self, mode: str, name: str, pid: int, libraries: list[str],
                     origin: str) -> str:
        """Why a ``mode`` phase fails when its library (one of ``libraries``, from
        ``origin``) is mapped in workload ``name``'s process (``pid``)."""


class Retry(Protocol):
    """A phase that failed because its mode's daemon died before its first measured
    second (``ModeBackend.died_early``): the driver runs it once more, once."""

    def first_attempt(self, session: Session) -> tuple[M.PhaseRetry, str]:
        """The record of the failed first attempt and the console's line about the retry
        (logged in ``session``, the attempt taken out of its phases)."""

    def failed_twice(self, first: M.PhaseRetry) -> None:
        """The retry (this phase) died early too: it fails, saying so."""
