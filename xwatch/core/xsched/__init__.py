"""The XSched mode, one package: install discovery (install), per-workload environment
(env), the xserver HTTP client (client), engagement rules (engagement), the preflight
(preflight) and the mode backend that ties them together (controller).

This module is the mode's face to the rest of xwatch (``modes.contract``): ``MODE``, its
declaration (registered by ``modes.registry``: name, key, tab, report sections, scenario
keys, the backend it configures from the command line), and ``XschedBackend``, what the
backend declares beyond a phase's lifecycle (its workloads' library folder and fork
server, the probes forked as they are, the settings one xserver holds for a phase, the
checks made before anything starts, the live controls). It imports the rest of the
package only inside functions, so that listing the modes costs nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xwatch.core.modes.contract import (
    Control,
    Controls,
    KeyHelp,
    Mode,
    ModeBackend,
    ModeBase,
    Retry,
    ServerFor,
)

if TYPE_CHECKING:
    import subprocess

    from xwatch.core.engine.live.phase import Phase
    from xwatch.core.engine.snapshot import PhaseSnapshot
    from xwatch.core.xsched.client import XserverClient
    from xwatch.core.xsched.engagement import XserverLog
    from xwatch.core.xsched.install import XschedInstall
    from xwatch.core.xsched.meta import InstallMeta
    from xwatch.core.xsched.preflight import Launcher
    from xwatch.core.xsched.rules.neighbours import Xserver
    from xwatch.scenario import Scenario, Workload

#: its name (``XschedMode.name``)
NAME = "xsched"
#: the ``--set`` keys a sweep or advise varies (``[workload.xsched]``)
SWEEP_KEYS = ("priority", "level", "threshold", "batch_size")
#: its report sections and lines of the environment; its series and upgrade
_SECTIONS = "xwatch.core.xsched.report.sections"
_RECORDS = "xwatch.core.xsched.report.records"
_VIEWS = "xwatch.core.xsched.report.views"


class XschedBackend(ModeBackend):
    """What the XSched backend (``controller.XschedController``) declares beyond a
    phase's lifecycle, and its live controls."""

    mode = NAME
    own_fork_server = True  # its copies fork from a server started under the shim

    if TYPE_CHECKING:  # the controller's state these read
        install: XschedInstall
        scenario: Scenario
        preflight: bool
        launcher: Launcher | None
        meta: InstallMeta | None
        policy: str
        proc: subprocess.Popen[bytes] | None
        joined: Xserver | None
        client: XserverClient | None
        phase: Phase | None
        log: XserverLog

        def _fail(self, reason: str, rc: int | None = None) -> None: ...
        def _annotate(self, text: str, **data: Any) -> None: ...
        def other_xserver(self) -> Xserver | None: ...
        async def set_priority(self, name: str, priority: int) -> int: ...
        async def configure(self, name: str, level: int | None = None,
                            threshold: int | None = None,
                            batch_size: int | None = None) -> int: ...

    def scrubbed_libraries(self) -> list[str]:
        return [str(self.install.lib)]

    def start_probes_as_workloads(self, base_env: Mapping[str, str],
                                  server_for: ServerFor) -> None:
        """The preflight forks its probes from the server its workloads fork from
        (``preflight.Launcher``)."""
        from xwatch.core.xsched.preflight import Launcher, fork_from

        self.launcher = Launcher(base_env, lambda py, mod, args, env: fork_from(
            server_for(env), py, mod, args, env))

    def phase_wide(self) -> tuple[tuple[str, str], ...]:
        """xserver serves every GPU of a phase with one policy, port, install, platform
        and poll pace."""
        xs = self.scenario.xsched
        return (("policy", str(xs.policy)), ("port", str(xs.port)),
                ("install", str(self.install.root)),
                ("platform", str(xs.platform)), ("poll_ms", str(xs.poll_ms)),
                ("settled_poll_ms", str(xs.settled_poll_ms)),
                ("preflight", str(self.preflight)))

    def check_now(self) -> None:
        """The install holds what the workloads' platforms need; another session's
        xserver on this machine is refused (or, joining it, its answer and policy
        checked)."""
        from xwatch.core.xsched.compat import check_join
        from xwatch.core.xsched.install import workload_platform

        scen = self.scenario
        self.install.check({workload_platform(w, scen) for w in scen.workloads})
        other = self.other_xserver()
        if other is not None:
            change = check_join(self.meta, scen, other)
            print(f"xwatch: joining {other.describe()}", file=sys.stderr)
            if change:
                print(f"xwatch: WARNING: {change}", file=sys.stderr)

    # -- live controls (``k``)
    def controls(self) -> Controls:
        """A workload's priority hint, its XQueues' config, the policy (those this
        install can create)."""
        from xwatch.core.xsched.meta import read_meta

        meta = self.meta or read_meta(self.install.root)
        return Controls(("priority", "config", "policy"), self.policy,
                        meta.policies.usable(),
                        title="XSched live control (applies to every XQueue of the workload)")

    async def control(self, request: Control) -> str:
        v, name = request.values, str(request.workload)
        if request.action == "priority":
            n = await self.set_priority(name, v["priority"])
            return f"{name}: priority {v['priority']} on {n} XQueue(s)"
        if request.action == "config":
            n = await self.configure(name, v.get("level"), v.get("threshold"),
                                     v.get("batch_size"))
            return f"{name}: config applied to {n} XQueue(s)"
        await self.set_policy(v["policy"])
        return f"policy {v['policy']}"

    def died_early(self, phase: Phase) -> Retry | None:
        """A phase whose xserver died before its first measured second is run once more
        (``leave.retry``)."""
        from xwatch.core.xsched.leave.retry import retry_of

        return retry_of(phase)

    def hung_or_gone(self) -> str:
        """'hung' while xserver's process lives (its HTTP API silent), else 'gone'."""
        from xwatch.core.procs import pid_alive

        alive = self.proc.poll() is None if self.proc is not None else \
            self.joined is not None and pid_alive(self.joined.pid or 0, zombie=False)
        return "hung" if alive else "gone"

    async def set_policy(self, name: str) -> None:
        """Set the policy by the install's own number, then read it back from xserver.
        A policy the install cannot create is refused before sending; an xserver that
        stops answering (alive) is named hung and fails the phase."""
        from msgspec.structs import replace

        from xwatch.core.xsched.compat import check_policy, policy_failure
        from xwatch.core.xsched.install import XschedError
        from xwatch.core.xsched.meta import read_meta

        if self.client is None:
            raise XschedError("XSched mode is not running")
        if self.joined is not None and self.scenario.xsched.join != "set-policy":
            raise XschedError(f"this session joined another's xserver (pid {self.joined.pid})"
                              ": its policy is theirs too ([xsched] join = \"set-policy\" "
                              "allows changing it)", title="Policy of a joined xserver")
        meta = self.meta or read_meta(self.install.root)
        number = check_policy(meta, name, "k policy")
        try:
            await asyncio.to_thread(self.client.set_policy, number)
            back = await asyncio.to_thread(self.client.get_policy)
        except XschedError as e:
            state = self.hung_or_gone()
            pid = self.proc.pid if self.proc is not None else \
                self.joined.pid if self.joined is not None else None
            why = policy_failure(state, pid, number, name, e)
            tail = " | ".join(list(self.log)[-3:])
            self._fail(why + (f". Its log: {tail}" if tail else ""))
            raise XschedError(why, title=f"xserver {state}") from None
        if back != number:
            raise XschedError(f"xserver was asked for {name} ({number}) and reports "
                              f"{meta.policies.label(back)}", title="Policy not applied")
        self.policy = name
        if self.phase is not None and self.phase.xsched is not None:
            self.phase.xsched = replace(self.phase.xsched, policy=name, policy_number=number,
                                        policy_running=back)
        self._annotate(f"policy -> {name} ({number}, read back)", policy=name, number=number)


@dataclass(frozen=True)
class XschedMode(ModeBase):
    """XSched's declaration (``modes.contract.Mode``)."""

    name: str = NAME
    label: str = "XSched"
    key: str | None = "x"
    tab: str | None = "xwatch.ui.widgets.panels:ViewPanel"  # drawn from ``tab_view``
    control_screen: str | None = "xwatch.ui.screens.control:ControlScreen"
    report_sections: tuple[tuple[int, str], ...] = (
        (10, f"{_SECTIONS}:engagement_section"), (40, f"{_SECTIONS}:preflight_section"),
        (60, f"{_SECTIONS}:calibrate_section"), (70, f"{_SECTIONS}:attribution_section"))
    sweep_keys: tuple[str, ...] = SWEEP_KEYS
    short_keys: Mapping[str, str] = dataclasses.field(default_factory=lambda: {
        "threshold": "th", "batch_size": "b", "priority": "prio", "level": "lvl"})
    advise_grid: tuple[Mapping[str, Any], ...] = tuple(
        {"threshold": t, "batch_size": b}
        for t, b in ((1, 1), (2, 1), (4, 2), (8, 4), (16, 8)))
    unavailable: str = ("XSched mode needs an XSched install: pass --xsched ROOT, set "
                        "XSCHED_HOME, or set [xsched] root in the scenario")
    backend_factory: str | None = "xwatch.core.xsched.controller:backend_of"

    # -- names-ui
    env_prefixes: tuple[str, ...] = ("XSCHED_",)
    libraries: str | None = "XSched libraries"
    report_environment: str | None = f"{_SECTIONS}:environment"
    metrics: str | None = f"{_RECORDS}:metrics"
    upgrade: str | None = f"{_RECORDS}:upgrade"
    help: str = ("Before its models load, an XSched phase runs a few seconds of\n  "
                 "**preflight** under the shim (XSched tab).")
    keys_help: tuple[KeyHelp, ...] = (
        KeyHelp(10, "`x`", "stop every workload, switch NATIVE <-> XSCHED, restart them: a "
                "new phase", (("x", "mode_on_off('xsched')", "XSched on/off", True),)),
        KeyHelp(60, "`k`", "XSched live control: a workload's priority, its XQueues' "
                "threshold/batch/level, the policy", (("k", "control", "XSched ctl", True),)),
        KeyHelp(70, "`C`", "calibrate: HIGH alone and all together, native and XSched (4 "
                "phases); Compare splits the change", (("C", "calibrate", "Calibrate", False),)))
    tab_view: str | None = f"{_VIEWS}:tab"
    lanes: str | None = f"{_VIEWS}:lanes"
    compare_view: str | None = f"{_VIEWS}:calibration"

    # -- names-engine: the mode's own rules
    proof: str | None = "xwatch.core.xsched.rules.participation:PROOF"
    isolation: str | None = "xwatch.core.xsched.rules.isolation:ISOLATION"
    verdicts: str | None = "xwatch.core.xsched.rules.participation:WORDS"

    def owns_key(self, key: str) -> bool:
        return key in SWEEP_KEYS

    def with_settings(self, w: Workload, kv: Mapping[str, Any]) -> Workload:
        own = {k: v for k, v in kv.items() if k in SWEEP_KEYS}
        return dataclasses.replace(w, xsched=dataclasses.replace(w.xsched, **own)) \
            if own else w

    def with_args(self, args: argparse.Namespace, scen: Scenario) -> Scenario:
        """``--join-xserver``: another session's xserver, used as it runs."""
        if not args.join_xserver:
            return scen
        return dataclasses.replace(scen, xsched=dataclasses.replace(
            scen.xsched, join=args.join_xserver))

    def deploy(self, kv: Mapping[str, Any]) -> list[str]:
        return ["[workload.xsched]", *(f"{k} = {v}" for k, v in kv.items())]

    # -- names-scen: its command-line arguments and its doctor checks
    doctor: str | None = "xwatch.core.xsched.commands:doctor_checks"

    def add_arguments(self, parser: argparse.ArgumentParser, place: str) -> None:
        """``--xsched ROOT`` (the install; doctor's too), ``--join-xserver``."""
        if place == "install":
            parser.add_argument("--xsched", metavar="ROOT", help="XSched install folder (else "
                                "XSCHED_HOME, else the scenario's [xsched] root)")
        elif place == "doctor":
            parser.add_argument("--xsched", metavar="ROOT")
        elif place == "join":
            parser.add_argument(
                "--join-xserver", nargs="?", const="keep-policy",
                choices=("keep-policy", "set-policy"), metavar="keep-policy|set-policy",
                help="XSched: use the xserver already running on this machine (another "
                     "session's) instead of refusing to start; it is never stopped. Its "
                     "policy is kept (refused if it differs from the scenario's) unless "
                     "=set-policy (overrides [xsched] join)")

    def warnings(self, phase: PhaseSnapshot) -> list[tuple[str, str]]:
        """What the shim and xserver's polls warned of each workload."""
        xs = phase.xsched
        return [(name, w) for name, info in (xs.workloads if xs is not None else {}).items()
                for w in info.warnings]


MODE: Mode = XschedMode()  # checked against the contract
