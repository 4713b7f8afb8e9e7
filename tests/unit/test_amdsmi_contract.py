"""Contract test against the real ``amdsmi`` package (AMD's Python interface to
amd-smi, installed from the package index with the test extra).

The package cannot be imported without ``libamd_smi.so`` (its import raises
``KeyError: 'libamd_smi.so'``), so this reads its source: which names the package
exports, each ``amdsmi_*`` function's parameters in ``amdsmi_interface.py``, and
the members of its enums. Every call xwatch's AMD backend makes (read from its own
source, so a new call is checked without touching this test) must exist there,
exported, with a number of positional arguments the function accepts, and every
enum member it names must exist.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import xwatch.core.telemetry.amd as amd_backend

spec = importlib.util.find_spec("amdsmi")  # finds the package without importing it
pytestmark = pytest.mark.skipif(spec is None or not spec.submodule_search_locations,
                                reason="the amdsmi package is not installed (pip install amdsmi)")


def _package() -> Path:
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def _interface() -> tuple[set[str], dict[str, tuple[int, int]], dict[str, set[str]]]:
    """(exported names, {function: (required, max positional)}, {enum: members})."""
    pkg = _package()
    init = ast.parse((pkg / "__init__.py").read_text())
    exported = {a.asname or a.name for n in ast.walk(init) if isinstance(n, ast.ImportFrom)
                for a in n.names}
    tree = ast.parse((pkg / "amdsmi_interface.py").read_text())
    funcs: dict[str, tuple[int, int]] = {}
    enums: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args
            pos = len(args.posonlyargs) + len(args.args)
            funcs[node.name] = (pos - len(args.defaults), 10 ** 6 if args.vararg else pos)
        elif isinstance(node, ast.ClassDef):
            enums[node.name] = {t.id for s in node.body if isinstance(s, ast.Assign)
                                for t in s.targets if isinstance(t, ast.Name)}
    return exported, funcs, enums


def _our_uses() -> tuple[dict[str, set[int]], set[tuple[str, str]]]:
    """From the backend's source: {amdsmi function: positional argument counts used}
    and {(enum, member)} named (``a.AmdSmiClkType.GFX``, ``temp("EDGE")``)."""
    tree = ast.parse(Path(amd_backend.__file__).read_text())
    calls: dict[str, set[int]] = {}
    members: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr.startswith("amdsmi_"):
            calls.setdefault(node.func.attr, set()).add(len(node.args))
        if isinstance(node, ast.Attribute) and node.attr.startswith("amdsmi_"):
            calls.setdefault(node.attr, set())  # referenced (e.g. passed as a callable)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and \
                node.value.attr.startswith("AmdSmi"):
            members.add((node.value.attr, node.attr))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "temp" and node.args and isinstance(node.args[0], ast.Constant):
            members.add(("AmdSmiTemperatureType", str(node.args[0].value)))
    return calls, members


def test_the_backend_reads_what_it_calls() -> None:
    calls, members = _our_uses()
    # the scan itself sees the backend's calls (guards against a silent empty scan)
    assert {"amdsmi_init", "amdsmi_get_processor_handles", "amdsmi_get_gpu_activity",
            "amdsmi_get_clock_info", "amdsmi_get_gpu_process_list"} <= set(calls)
    assert ("AmdSmiClkType", "GFX") in members and ("AmdSmiTemperatureType", "EDGE") in members


def test_every_amdsmi_call_exists_with_the_arguments_xwatch_passes() -> None:
    exported, funcs, enums = _interface()
    calls, members = _our_uses()
    problems = []
    for name, counts in sorted(calls.items()):
        if name not in exported:
            problems.append(f"{name}: not exported by the amdsmi package")
        if name not in funcs:
            problems.append(f"{name}: not defined in amdsmi_interface.py")
            continue
        lo, hi = funcs[name]
        for n in counts:
            if not lo <= n <= hi:
                problems.append(f"{name}: xwatch passes {n} positional argument(s), the "
                                f"package takes {lo}..{hi}")
    for enum, member in sorted(members):
        if enum not in exported:
            problems.append(f"{enum}: not exported by the amdsmi package")
        if member not in enums.get(enum, set()):
            problems.append(f"{enum}.{member}: no such member")
    assert not problems, "\n".join(problems)


def test_the_contract_check_fails_on_a_call_the_package_lacks() -> None:
    """The check above can fail: a made-up call or arity is reported."""
    _, funcs, enums = _interface()
    assert "amdsmi_get_gpu_teleport" not in funcs
    lo, hi = funcs["amdsmi_get_clock_info"]
    assert not lo <= 1 <= hi  # (handle) alone is too few: the clock type is required
    assert "NOT_A_CLOCK" not in enums["AmdSmiClkType"]
