"""Whether a scenario asks an XSched install for what it has, checked before anything
starts: the policy (listed in the install's ``types.h`` and compiled into its build)
and every ``XSCHED_*`` setting a workload would get (known to the install). An
explicit choice the install cannot honour is an error naming the scenario file, the
key and what the install allows; a live policy change is checked the same way."""

from __future__ import annotations

from xwatch.core.xsched.env import SETTING_VARS
from xwatch.core.xsched.meta import InstallMeta
from xwatch.errors import XschedError
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
