"""Whether a scenario asks an XSched install for what it has, checked before anything
starts: the policy (listed in the install's ``types.h`` and compiled into its build)
and every ``XSCHED_*`` setting a workload would get (known to the install). An
explicit choice the install cannot honour is an error naming the scenario file, the
key and what the install allows; a live policy change is checked the same way. And
whether a session may start its xserver beside another's, or join it with its
policy."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from xwatch.core import model as M
from xwatch.core.procs import own_pids
from xwatch.core.xsched.client import XserverClient
from xwatch.core.xsched.env import SETTING_VARS
from xwatch.core.xsched.install import XschedError
from xwatch.core.xsched.meta import InstallMeta, channel_key
from xwatch.core.xsched.rules.neighbours import Xserver, find_xserver
from xwatch.scenario import Scenario


def policy_problem(meta: InstallMeta, name: str) -> str | None:
    """Why ``name`` cannot be used with this install, or None."""
    table = meta.policies
    ver = f"XSched {meta.version}" if meta.version else "this XSched install"
    p = table.by_name(name)
    if p is None:
        return (f"{ver} at {meta.root} has no policy {name!r} ({table.source} lists "
                f"{', '.join(table.names())}); allowed: {', '.join(table.usable())}")
    if p.creatable is False:
        return (f"{ver} at {meta.root} lists {name} ({p.number}) in its {table.source} but "
                f"its build cannot create it: no {p.enum}Policy class in "
                f"{table.creatable_from}, so xserver would abort (\"invalid policy type: "
                f"{p.number}\") and stop answering; allowed: {', '.join(table.usable())}")
    return None


def check_policy(meta: InstallMeta, name: str, where: str = "policy") -> int:
    """The number of policy ``name`` in this install; an XschedError if it cannot be
    used (``where`` names the key or control that asked for it)."""
    why = policy_problem(meta, name)
    if why:
        raise XschedError(f"{where} = {name!r}: {why}", title="XSched policy not available")
    p = meta.policies.by_name(name)
    assert p is not None
    return p.number


def unknown_settings(meta: InstallMeta, scen: Scenario) -> list[tuple[str, str]]:
    """(scenario key, variable) for every XSCHED_* setting a workload sets that the
    install does not know ([] when the install's settings cannot be told)."""
    out = []
    for w in scen.unreplicated().workloads:
        where = f"workload {w.name!r} [workload.xsched]"
        asked = [(f"{where} {k}", var) for k, var in SETTING_VARS.items()
                 if getattr(w.xsched, k) is not None]
        asked += [(f"{where} env.{var}", var) for var in w.xsched.env
                  if var.startswith("XSCHED_")]
        out += [(k, var) for k, var in asked if meta.knows(var) is False]
    return out


def check_scenario(meta: InstallMeta, scen: Scenario) -> None:
    """Raise XschedError naming the file, key and what is allowed for the first thing
    the scenario asks that the install cannot do."""
    src = scen.source
    why = policy_problem(meta, scen.xsched.policy)
    if why:
        raise XschedError(f"{src}: [xsched] policy = {scen.xsched.policy!r}: {why}",
                          title="XSched policy not available")
    bad = unknown_settings(meta, scen)
    if bad:
        key, var = bad[0]
        ver = f"XSched {meta.version}" if meta.version else "this XSched install"
        known = sorted(v for v in meta.settings if v.startswith("XSCHED_"))
        raise XschedError(
            f"{src}: {key}: {ver} at {meta.root} does not know {var} (its "
            f"{meta.settings_source} names {', '.join(known)})"
            + (f"; also {', '.join(v for _, v in bad[1:])}" if len(bad) > 1 else ""),
            title="XSched setting not known to the install")


def running_policy_note(meta: InstallMeta | None, policy: str, want: int | None,
                        running: int) -> str | None:
    """What to say when the xserver started with ``policy`` reports another number: the
    install's header and its binaries number policies differently."""
    if meta is None or want is None or running == want:
        return None
    return (f"xserver started with {policy} reports policy {meta.policies.label(running)}, "
            f"but {meta.policies.source} numbers {policy} {want}: the install's header and "
            "binaries disagree; policy numbers shown may be wrong")


def refusal(other: Xserver, scen: Scenario) -> str:
    """Why a session does not start its own xserver beside ``other``, and what to do."""
    why = (f"{other.describe()}. XSched's shims reach their xserver through one IPC "
           f"channel per machine (System V message queue key {other.key}); a second "
           "xserver would take it over, and the first one's workloads would die (\"failed "
           "to send event to server\")")
    stop = f"stop it (`kill -INT {other.pid}` as {other.proc.user}), " if other.proc else ""
    if other.port is None:
        return why + f". Its port is unknown, so it cannot be joined: {stop}or run elsewhere"
    stop = stop[:1].upper() + stop[1:] if stop else "Stop it, "
    where = "the scenario" if scen.source.startswith("<") else scen.source
    return (why + f". {stop}or join it: --join-xserver (or "
            f"[xsched] join = \"keep-policy\" in {where}) uses it as it runs, on "
            f"port {other.port}, and never stops it")


def join_policy(meta: InstallMeta, scen: Scenario, running: int,
                other: Xserver) -> int | None:
    """The policy number to set on the joined xserver (``[xsched] join =
    "set-policy"`` and it runs another), else None; with "keep-policy" a policy that
    differs from the scenario's is an error naming both."""
    want = check_policy(meta, scen.xsched.policy)
    if running == want:
        return None
    label = meta.policies.label(running)
    if scen.xsched.join != "set-policy":
        p = meta.policies.by_number(running)
        raise XschedError(
            f"the xserver to join (pid {other.pid}, port {other.port}) runs policy {label}; "
            f"{scen.source} asks for {scen.xsched.policy} ({want}). xwatch does not change "
            "another session's policy unasked: use its policy ([xsched] policy = "
            f"\"{p.name if p else label}\"), or --join-xserver=set-policy to set "
            f"{scen.xsched.policy} on it (every session it serves then runs under it)",
            title="Joined xserver runs another policy")
    return want


def other_xserver(xserver: Path, scen: Scenario,
                  note: Callable[..., None]) -> Xserver | None:
    """The xserver already serving the channel of the install whose binary is
    ``xserver`` (any user's), to join; an XschedError saying what to do unless the
    scenario joins one (or it cannot be joined: its port unknown)."""
    key = channel_key(xserver)
    found, stale = find_xserver(key, channel_key, own_pids())
    if stale is not None:
        note(f"XSched's channel (message queue key {key}, msqid {stale.msqid}) was left "
             "by an xserver that is gone; a new xserver replaces it")
    if found is not None and (scen.xsched.join == "no" or found.port is None):
        raise XschedError(refusal(found, scen), title="xserver already running")
    return found


async def join(meta: InstallMeta, scen: Scenario, other: Xserver,
               note: Callable[..., None]) -> tuple[XserverClient, int, M.Joined]:
    """Start using ``other`` (another session's xserver; never stopped by this one):
    (its client, the policy it runs, the record of the join). It must answer; its
    policy is changed only with ``[xsched] join = "set-policy"``, said as a warning."""
    assert other.port is not None and other.proc is not None
    client = XserverClient(other.port)
    try:
        running = await asyncio.to_thread(client.get_policy)
    except XschedError as e:
        raise XschedError(f"cannot join {other.describe()}: {e}",
                          title="xserver to join does not answer") from None
    number = join_policy(meta, scen, running, other)
    change = None
    if number is not None:
        change = f"{meta.policies.label(running)} -> {scen.xsched.policy} ({number})"
        note(f"CHANGING THE POLICY of the joined xserver (pid {other.pid}, user "
             f"{other.proc.user}): {change}; every session it serves runs under it from "
             "now on", "warning")
        await asyncio.to_thread(client.set_policy, number)
        running = await asyncio.to_thread(client.get_policy)
        if running != number:
            raise XschedError(f"the joined xserver was asked for {scen.xsched.policy} "
                              f"({number}) and reports {meta.policies.label(running)}",
                              title="Policy not applied")
    note(f"joined {other.describe()}: this session neither started it nor stops it; only "
         "its own workloads' XQueues are counted")
    try:
        rows = await asyncio.to_thread(client.xqueue_rows)
    except (XschedError, ValueError):
        rows = []
    if rows:  # HPF ranks per device: a HIGH of theirs on our GPU holds back our LOW
        devs = sorted({r.device for r in rows if r.device is not None})
        note(f"the joined xserver already schedules {len(rows)} XQueue(s) of "
             f"{len({r.pid for r in rows})} other process(es) (XSched devices "
             f"{', '.join(map(str, devs)) or 'unknown'}); priorities are ranked per device, "
             "so on a GPU they share they compete with this session's", "warning")
    return client, running, M.Joined(pid=other.pid, user=other.proc.user,
                                     command=other.proc.cmdline, port=other.port,
                                     policy_change=change)


def check_join(meta: InstallMeta | None, scen: Scenario, other: Xserver) -> str | None:
    """Before anything starts: the xserver to join answers, and its policy is the
    scenario's unless ``[xsched] join = "set-policy"`` (blocking: HTTP). The policy
    change joining will make, to be said at once, else None."""
    if meta is None:
        return None
    try:
        running = XserverClient(other.port or 0).get_policy()
    except XschedError as e:
        raise XschedError(f"cannot join {other.describe()}: {e}",
                          title="xserver to join does not answer") from None
    number = join_policy(meta, scen, running, other)
    if number is None:
        return None
    user = other.proc.user if other.proc else "unknown"
    return (f"joining xserver pid {other.pid} (user {user}) CHANGES ITS POLICY "
            f"{meta.policies.label(running)} -> {scen.xsched.policy} ({number}) for every "
            "session it serves")


def policy_failure(state: str, pid: int | None, number: int, name: str,
                   err: Exception) -> str:
    """Why a live policy change failed: xserver ``hung`` (alive, its API silent after
    the POST) or ``gone``."""
    if state == "hung":
        return (f"xserver (pid {pid}) is hung: alive, but it did not answer after "
                f"POST /policy?policy={number} ({name}): {err}")
    return f"xserver is gone after POST /policy?policy={number} ({name}): {err}"
