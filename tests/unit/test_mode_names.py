"""Generic code knows a mode only through the contract (``core/modes/contract.py``) and
the registry: how many modules outside a mode's own package name it, counted from the
syntax tree (identifiers, attributes, arguments, imports and string constants; never
comments or docstrings), capped so the count only goes down; the plumbing that runs
phases, plans and the command line (``PLUMBING``) names no mode at all, and probes no
backend with ``hasattr``/``getattr``.

Issue 66 counted 47 modules naming XSched and 36 naming MPS at 021cf77 (this count: 52 and
38 there, 58 and 44 at d8138a9, 46 and 31 once the contract took the plumbing's; then each
mode's report sections, environment lines, Prometheus series, snapshot upgrade, capacity
words, dashboard panels, keys, help and control words, its doctor checks and own
arguments, the scenario loader's tables, its fork support, proof, verdict words, isolation
and neighbours moved behind the contract): 12 each, its target. What is left is the
snapshot's and the scenario's own fields and tables (``model/``, ``scenario/model.py``,
the key tables of ``scenario/keys.py``: the scenario stage sits below the modes, so it
declares them), the phase snapshot and the live phase that fill them, the worker's GPU-
runtime variables (``worker/__init__``), calibrate's XSched decomposition, the registry's
``BUILTIN`` and ``CALIBRATED``, and the help texts of ``cli/parser.py``."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import xwatch

ROOT = Path(xwatch.__file__).parent

NAMES: dict[str, Callable[[str], bool]] = {
    "xsched": lambda s: "xsched" in s.lower(),
    "mps": lambda s: re.search(r"(?i)(^|[^a-z])mps([^a-z]|$)", s) is not None,
}
#: each mode's own package
OWN = {"xsched": "core/xsched", "mps": "core/mps"}
#: at most this many modules outside the mode's package name it (lower them as code
#: moves behind the contract; never raise them)
CAPS = {"xsched": 12, "mps": 12}
#: generic code that names no mode
PLUMBING = ("core/plans/runner.py", "core/plans/box.py", "core/plans/options.py",
            "core/plans/advise.py", "core/plans/sweep.py", "core/plans/capacity/run.py",
            "core/export/report.py", "core/modes/contract.py", "cli/checks.py", "cli/main.py",
            "ui/app.py")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            b = n.body
            if b and isinstance(b[0], ast.Expr) and isinstance(b[0].value, ast.Constant) \
                    and isinstance(b[0].value.value, str):
                out.add(id(b[0].value))
    return out


def names_in(source: str) -> Iterator[str]:
    """Every name and string constant of a module, docstrings left out."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            yield n.id
        elif isinstance(n, ast.Attribute):
            yield n.attr
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield n.name
        elif isinstance(n, ast.arg):
            yield n.arg
        elif isinstance(n, ast.alias):
            yield n.name
            yield n.asname or ""
        elif isinstance(n, ast.ImportFrom):
            yield n.module or ""
        elif isinstance(n, ast.keyword):
            yield n.arg or ""
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            yield n.value


@functools.cache
def _names_of(path: Path) -> tuple[str, ...]:
    return tuple(names_in(path.read_text()))


def naming(mode: str, root: Path = ROOT) -> list[str]:
    """The modules under ``root``, outside ``mode``'s package and outside ``testing/``
    (the simulations the tests and benchmarks share: recorded data, like tests/), that
    name it."""
    hit = NAMES[mode]
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                  if not str(p.relative_to(root)).startswith((OWN[mode] + "/", "testing/"))
                  and any(hit(s) for s in _names_of(p)))


def test_modes_are_named_in_ever_fewer_modules() -> None:
    for mode, cap in CAPS.items():
        got = naming(mode)
        assert len(got) <= cap, f"{mode}: {len(got)} modules name it (cap {cap}): {got}"


def test_the_plumbing_names_no_mode() -> None:
    for mode in NAMES:
        assert [m for m in naming(mode) if m in PLUMBING] == []


def test_no_backend_is_probed() -> None:
    """The runner, the plans, the command line and the dashboard ask the contract: no
    ``hasattr``, no ``getattr`` (``doctor`` reads torch's optional attributes) and no
    ``type: ignore[attr-defined]`` standing in for a declared capability."""
    files = [*(ROOT / "core/plans").rglob("*.py"), ROOT / "ui/controller.py",
             ROOT / "ui/app.py", *(p for p in (ROOT / "cli").glob("*.py")
                                   if p.name != "doctor.py")]
    bad = [f"{p.relative_to(ROOT)}: {s}" for p in files for s in names_in(p.read_text())
           if s in ("hasattr", "getattr")]
    bad += [str(p.relative_to(ROOT)) for p in files if "ignore[attr-defined]" in p.read_text()]
    assert bad == []


def test_the_count_sees_code_and_not_words(tmp_path: Path) -> None:
    """Planted: identifiers and strings count, a docstring or comment does not."""
    (tmp_path / "core" / "xsched").mkdir(parents=True)
    (tmp_path / "core" / "xsched" / "own.py").write_text("XSCHED = 1\n")
    (tmp_path / "words.py").write_text('"""About XSched and MPS."""\n# xsched, mps\nx = 1\n')
    (tmp_path / "ident.py").write_text('"""Plain."""\nfrom a import run_xsched\n')
    (tmp_path / "string.py").write_text('"""Plain."""\nMODE = "mps"\nPIPE = "CUDA_MPS_PIPE"\n')
    (tmp_path / "near.py").write_text('"""Plain."""\nbumps = "bumps"\n')
    assert naming("xsched", tmp_path) == ["ident.py"]
    assert naming("mps", tmp_path) == ["string.py"]
