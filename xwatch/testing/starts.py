"""How phases started, read from what xwatch recorded: the account ``benchmarks/measure/
phase_start.py`` prints (each workload's ``stages`` turned into steps, per mode, with the
goals of issues 41, 51 and 58) and the goal lines of ``benchmarks/measure/restart.py``
(the dashboard's keys, from the key to the new phase's first measured second).

Shared by those benchmarks and the tests that check them (tests/unit/test_phase_start.py,
tests/unit/test_stages.py, tests/integration/test_start_stages.py); the product never
imports it."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from xwatch.core.engine.pci import bus_from_hello, format_bus, parse_bus_id

#: phase start -> first measured second, seconds (issue 41 goal 1, issue 51 goal 5,
#: issue 58 goal 4)
GOALS = {"native": 5.0, "mps": 8.0, "xsched": 8.0}
#: modes whose goal counts every phase after its run's first, however its copies started
#: (XSched's first phase, with the xserver's start and the preflight, included)
EVERY_PHASE = frozenset({"xsched"})

#: a workload's steps: (label, from stage, to stage); "start" is the phase's start
STEPS: tuple[tuple[str, str, str], ...] = (
    ("phase start -> daemon (MPS/XSched daemon; XSched preflight)", "start", "daemon"),
    ("daemon -> spawn (start_delay_s)", "daemon", "spawn"),
    ("daemon -> mode settled (MPS preflight, beside the load)", "daemon", "mode"),
    ("(before: phase start -> mode, daemon + preflight)", "start", "mode"),
    ("spawn -> spawned (fork + exec)", "spawn", "spawned"),
    ("spawned -> python (interpreter up)", "spawned", "python"),
    ("python -> torch (import torch)", "python", "torch"),
    ("torch -> imports (torchvision/transformers)", "torch", "imports"),
    ("imports -> context (first CUDA call)", "imports", "context"),
    ("context -> model (built, on the device)", "context", "model"),
    ("model -> first (1st warm-up iteration)", "model", "first"),
    ("first -> warm (rest of the warm-up)", "first", "warm"),
    ("warm -> released (start gate wait)", "warm", "released"),
    ("  warm -> warm_seen (xwatch reads it)", "warm", "warm_seen"),
    ("  warm_seen -> gate (the others)", "warm_seen", "gate"),
    ("  gate -> released (SIGUSR2 taken)", "gate", "released"),
    ("released -> ready (first request due)", "released", "ready"),
    ("phase start -> ready", "start", "ready"),
    ("stop -> bye (worker leaves its loop)", "stop", "bye"),
    ("bye -> exit (interpreter + device teardown)", "bye", "exit"),
    ("stop -> exit (teardown)", "stop", "exit"),
)

#: the summary's rows, on the workload the gate waited for: (label, from, to)
SUMMARY: tuple[tuple[str, str, str], ...] = (
    ("phase start -> spawn (mode, start delay)", "start", "spawn"),
    ("spawn -> imports (process, interpreter, imports)", "spawn", "imports"),
    ("imports -> context (device context)", "imports", "context"),
    ("context -> model (model built)", "context", "model"),
    ("model -> warm (warm-up, cuDNN autotuning)", "model", "warm"),
    ("warm -> first measured (start gate, ready)", "warm", "ready"),
)


def workload_steps(stages: dict[str, float]) -> dict[str, float]:
    """A workload's steps (seconds) from its ``stages``; a step whose ends are not both
    there is left out (``first`` without warm-up, ``released`` without the gate)."""
    s = {"start": 0.0, **stages}
    out = {}
    for label, a, b in STEPS:
        if a in s and b in s:
            out[label] = s[b] - s[a]
    if "released" not in s and "warm" in s and "ready" in s:  # no start gate
        out["released -> ready (first request due)"] = s["ready"] - s["warm"]
    return out


def copies(p: dict[str, Any], buses: dict[int, tuple[int, int, int]]) -> dict[str, Any]:
    """Each workload copy of a phase: its GPU (None: not replicated), how it started
    (``fork``, ``exec``, or ``?`` in snapshots that did not say), the launch's words,
    the GPU variables its worker read before its first GPU call (``gpu_init_env``), the
    PCI address it reported, and ``placed``: that address is GPU ``gpu``'s in
    ``buses`` (telemetry's, by index; None: not known)."""
    out = {}
    for n, w in p.get("workloads", {}).items():
        start = str((w.get("launch") or {}).get("start") or "")
        how = "fork" if start.startswith("fork") else "exec" if start.startswith("exec") else "?"
        hello = w.get("hello") or {}
        bus = bus_from_hello(hello)
        gpu = w.get("gpu")
        want = buses.get(gpu) if isinstance(gpu, int) else None
        seen = hello.get("gpu_init_env")
        out[n] = {"gpu": gpu, "how": how, "start": start, "bus": format_bus(bus) or None,
                  "gpu_init_env": seen if isinstance(seen, dict) else None,
                  "placed": None if bus is None or want is None else bus == want}
    return out


def phase_steps(p: dict[str, Any], next_start: float | None = None,
                buses: dict[int, tuple[int, int, int]] | None = None,
                first: bool = False, mode_first: bool = False) -> dict[str, Any]:
    """One phase: each workload's steps, the summary on the workload the start gate
    waited for (the last warm), the phase's own, its copies (``copies``) and how its
    preflight's probes started (``probes``); ``first``: the first phase of its run
    (its fork server imports meanwhile); ``mode_first``: the first of its mode there."""
    wls = {n: w.get("stages") or {} for n, w in p.get("workloads", {}).items()}
    wls = {n: s for n, s in wls.items() if s}
    per = {n: workload_steps(s) for n, s in wls.items()}
    warm = {n: s["warm"] for n, s in wls.items() if "warm" in s and "ready" in s}
    last = max(warm, key=lambda n: warm[n]) if warm else None
    summary: dict[str, float] = {}
    phase: dict[str, float] = {}
    if last is not None:
        s = {"start": 0.0, **wls[last]}
        for label, a, b in SUMMARY:
            if a in s and b in s:
                summary[label] = s[b] - s[a]
        if "released" in s:
            summary["  of which the start gate"] = s["released"] - s["warm"]
    t_start, t_measure = p.get("t_start"), p.get("t_measure")
    if isinstance(t_start, (int, float)) and isinstance(t_measure, (int, float)):
        summary["phase start -> first measured second"] = t_measure - t_start
    stops = [s["stop"] for s in wls.values() if "stop" in s]
    exits = [s["exit"] for s in wls.values() if "exit" in s]
    if stops and exits:
        summary["teardown: stop -> last process gone"] = max(exits) - min(stops)
    left = [s["mode_left"] for s in wls.values() if "mode_left" in s]
    if exits and left:
        phase["last process gone -> mode left (daemon stop)"] = max(left) - max(exits)
    pre = (p.get("mps") or {}).get("preflight") or p.get("preflight") or {}
    if isinstance(pre.get("seconds"), (int, float)):
        phase["preflight (in mode ready)"] = float(pre["seconds"])
    if next_start is not None and left and isinstance(t_start, (int, float)):
        phase["mode left -> next phase's start"] = next_start - (t_start + max(left))
    verdicts = pre.get("verdicts") or []
    probes = [str(v.get("start") or "(not recorded)") for v in verdicts if not v.get("cached")]
    return {"name": p.get("name"), "mode": p.get("mode"), "status": p.get("status"),
            "waited_for": last, "summary": summary, "phase": phase, "workloads": per,
            "first": first, "mode_first": mode_first, "copies": copies(p, buses or {}),
            "probes": probes}


def telemetry_buses(doc: dict[str, Any]) -> dict[int, tuple[int, int, int]]:
    """GPU index -> PCI address, from the snapshot's telemetry devices (``gpuN``)."""
    devices = (((doc.get("telemetry") or {}).get("info") or {}).get("devices")) or []
    out = {}
    for d in devices:
        name, bus = str(d.get("device", "")), parse_bus_id(d.get("bus_id"))
        if name.startswith("gpu") and name[3:].isdigit() and bus is not None:
            out[int(name[3:])] = bus
    return out


def breakdown(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every phase of a snapshot document, in order (``phase_steps``)."""
    phases = doc.get("phases", [])
    buses = telemetry_buses(doc)
    out = []
    seen: set[Any] = set()
    for i, p in enumerate(phases):
        nxt = phases[i + 1].get("t_start") if i + 1 < len(phases) else None
        out.append(phase_steps(p, nxt if isinstance(nxt, (int, float)) else None, buses,
                               first=i == 0, mode_first=p.get("mode") not in seen))
        seen.add(p.get("mode"))
    return out


def starts(mine: list[dict[str, Any]]) -> list[str]:
    """How one mode's copies started: forked and exec'd counts (all phases, and those
    after their run's first), the exec'd ones' reasons, where each ran, and the goal."""
    later = [p for p in mine if not p["first"]]
    every = [c for p in mine for c in p["copies"].values()]
    after = [c for p in later for c in p["copies"].values()]
    hows = {h: sum(c["how"] == h for c in every) for h in ("fork", "exec", "?")}
    lines = [f"copies started: {hows['fork']} forked, {hows['exec']} exec'd"
             + (f", {hows['?']} not recorded" if hows["?"] else "") + f" (in {len(mine)} phase(s))"]
    if later:
        n = sum(c["how"] == "fork" for c in after)
        lines.append(f"after each run's first phase: {n} of {len(after)} copies forked")
    why: dict[str, list[str]] = {}
    for p in mine:
        for name, c in p["copies"].items():
            if c["how"] != "fork":
                why.setdefault(c["start"] or "(not recorded)", []).append(f"{p['name']}:{name}")
    for reason, who in why.items():
        lines.append(f"  {reason}: {len(who)} ({', '.join(who[:6])}{' ...' if len(who) > 6 else ''})")
    gpus = sorted({c["gpu"] for c in every if isinstance(c["gpu"], int)})
    if gpus:
        placed = [c["placed"] for c in every if isinstance(c["gpu"], int)]
        wrong = [f"{p['name']}:{n} ({c['bus']})" for p in mine for n, c in p["copies"].items()
                 if c["placed"] is False]
        unknown = sum(x is None for x in placed)
        where = f"GPUs {','.join(map(str, gpus))}: "
        if unknown == len(placed):
            lines.append(where + "where each copy ran is not known (no copy reported a PCI "
                         "address, or no telemetry named the GPUs)")
        else:
            lines.append(where + f"{sum(x is True for x in placed)} of {len(placed)} copies ran "
                         "on the GPU they were pinned to (their PCI address = telemetry's for "
                         f"that index), {len(wrong)} elsewhere"
                         + (f": {', '.join(wrong)}" if wrong else "")
                         + (f", {unknown} not known" if unknown else ""))
    mode = str(mine[0]["mode"]) if mine else ""
    probes = [s for p in mine for s in p.get("probes") or []]
    if probes:
        forked = sum(s.startswith("fork") for s in probes)
        lines.append(f"preflight probes: {forked} forked, {len(probes) - forked} exec'd"
                     + "".join(f"; {s}" for s in dict.fromkeys(probes)))
    goal = GOALS.get(mode)
    if mode in EVERY_PHASE:
        return lines + every_phase_goal(mine, mode, goal or 0.0)
    full = [p["summary"]["phase start -> first measured second"] for p in later
            if p["copies"] and all(c["how"] == "fork" for c in p["copies"].values())
            and "phase start -> first measured second" in p["summary"]]
    if goal is not None and full:
        med, lo, hi = _stat(full)
        ok = sum(x <= goal for x in full)
        lines.append(f"goal: phase start -> first measured second <= {goal:g} s ({mode}), in "
                     f"the {len(full)} phase(s) with every copy forked: median {med:.2f} s "
                     f"({lo:.2f}-{hi:.2f}); {ok} of {len(full)} within the goal")
    elif goal is not None:
        lines.append(f"goal ({goal:g} s, {mode}): no phase after its run's first had every "
                     "copy forked")
    return lines


def every_phase_goal(mine: list[dict[str, Any]], mode: str, goal: float) -> list[str]:
    """The goal line of a mode whose every phase counts (``EVERY_PHASE``): every phase
    after its run's first, forked or not, the mode's first phase of each run (its daemon
    and preflight) named on a line of its own; a run's first phase is a cold start
    (nothing imported yet), named and not counted."""
    key = "phase start -> first measured second"
    timed = [p for p in mine if key in p["summary"]]
    counted = [p for p in timed if not p["first"]]
    lines = []
    if counted:
        xs = [p["summary"][key] for p in counted]
        med, lo, hi = _stat(xs)
        ok = sum(x <= goal for x in xs)
        forked = sum(bool(p["copies"]) and all(c["how"] == "fork" for c in p["copies"].values())
                     for p in counted)
        lines.append(f"goal: phase start -> first measured second <= {goal:g} s ({mode}), in "
                     f"every phase after its run's first ({len(counted)}, its first {mode} "
                     f"phase included; {forked} with every copy forked): median {med:.2f} s "
                     f"({lo:.2f}-{hi:.2f}); {ok} of {len(counted)} within the goal"
                     + ("" if ok == len(counted) else ": " + ", ".join(
                         f"{p['name']} {p['summary'][key]:.2f} s" for p in counted
                         if p["summary"][key] > goal)))
    else:
        lines.append(f"goal ({goal:g} s, {mode}): no {mode} phase after its run's first")
    for p in timed:
        if not p.get("mode_first"):
            continue
        pre = p["phase"].get("preflight (in mode ready)")
        gate = p["summary"].get("  of which the start gate")
        lines.append(f"  {mode}'s first phase {p['name']}"
                     + (" (its run's first: a cold start, not counted)" if p["first"] else "")
                     + f": {p['summary'][key]:.2f} s"
                     + (f", preflight {pre:.2f} s" if pre is not None else ", no preflight")
                     + (f", start gate {gate:.2f} s" if gate is not None else ""))
    return lines


def _stat(xs: Sequence[float]) -> tuple[float, float, float]:
    return statistics.median(xs), min(xs), max(xs)


def _table(title: str, rows: dict[str, list[float]], order: Sequence[str], md: bool) -> str:
    keys = [k for k in order if rows.get(k)] + [k for k in rows if k not in order and rows[k]]
    if not keys:
        return ""
    w = max(len(k) for k in keys)
    lines = []
    if md:
        lines += [f"| {title} | median s | range s | n |", "|---|---|---|---|"]
        for k in keys:
            med, lo, hi = _stat(rows[k])
            lines.append(f"| {k.strip() if not k.startswith('  ') else '- ' + k.strip()} "
                         f"| {med:.2f} | {lo:.2f}-{hi:.2f} | {len(rows[k])} |")
    else:
        lines.append(f"{title:<{w}}  {'median':>7}  {'min':>7}  {'max':>7}  n")
        for k in keys:
            med, lo, hi = _stat(rows[k])
            lines.append(f"{k:<{w}}  {med:7.3f}  {lo:7.3f}  {hi:7.3f}  {len(rows[k])}")
    return "\n".join(lines)


def render(phases: list[dict[str, Any]], md: bool = False) -> str:
    """The breakdown tables per mode (median and range over its phases)."""
    out = []
    for mode in dict.fromkeys(p["mode"] for p in phases):
        mine = [p for p in phases if p["mode"] == mode]
        names = ", ".join(f"{p['name']} ({p['status']})" for p in mine)
        waited = ", ".join(sorted({str(p["waited_for"]) for p in mine}))
        out.append(f"{'### ' if md else ''}{mode}: {len(mine)} phase(s): {names}")
        summary: dict[str, list[float]] = {}
        for p in mine:
            for k, v in {**p["summary"], **p["phase"]}.items():
                summary.setdefault(k, []).append(v)
        order = [label for label, _, _ in SUMMARY] + ["  of which the start gate",
                                                      "phase start -> first measured second"]
        out.append(_table(f"summary (on {waited}, the last warm)", summary, order, md))
        out.append("\n".join(("- " if md else "") + ln for ln in starts(mine)))
        wnames = list(dict.fromkeys(n for p in mine for n in p["workloads"]))
        for n in wnames:
            rows: dict[str, list[float]] = {}
            for p in mine:
                for k, v in p["workloads"].get(n, {}).items():
                    rows.setdefault(k, []).append(v)
            out.append(_table(f"workload {n}", rows, [label for label, _, _ in STEPS], md))
        out.append("")
    return "\n\n".join(x for x in out if x) + "\n"


# --- the dashboard's keys (benchmarks/measure/restart.py) -------------------------

#: key -> first measured second, seconds, per key (issue 58 goal 4: ``x``)
KEY_GOALS = {"xsched": 8.0}
KEYS = {"xsched": "x", "mps": "m"}


def key_of(old: str, new: str) -> str | None:
    """The dashboard key that switches ``old`` -> ``new`` (``x``/``m``: that mode on or
    back to native), None for a restart (``r``) or no such key."""
    if old == new:
        return None
    return KEYS.get(new if new in KEYS else old)


def goal_lines(switches: list[dict[str, Any]]) -> list[str]:
    """Per key with a goal: every switch by that key against it, the first into the mode
    named on its own."""
    out = []
    for mode, goal in KEY_GOALS.items():
        mine = [s for s in switches if key_of(s["from"], s["to"]) == KEYS[mode]]
        if not mine:
            continue
        v = [s["key_to_measured"] for s in mine]
        ok = sum(x <= goal for x in v)
        first = next((s for s in mine if s["to"] == mode), None)
        line = (f"goal: {KEYS[mode]} (into and out of {mode}), key -> first measured second "
                f"<= {goal:g} s: {ok} of {len(mine)} within the goal, median "
                f"{statistics.median(v):.2f} s ({min(v):.2f}-{max(v):.2f})")
        if first is not None:
            line += (f"; the first into {mode}: {first['key_to_measured']:.2f} s"
                     f" ({'within' if first['key_to_measured'] <= goal else 'OVER'} the goal)")
        out.append(line)
    return out
