"""The repository's layers beside the package: tests and benchmarks never import each
other (what both need lives in ``xwatch.testing``), and no module of the product imports
``xwatch.testing``. Every ``import`` and ``from ... import`` is read from the source
(lazy ones inside functions too), with an AST scan that is itself tested on planted
files."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported(path: Path) -> set[str]:
    """Every absolute module a Python file imports (``a.b`` for ``import a.b`` and for
    ``from a.b import c``; ``a.b.c`` too when ``c`` may be a module)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def crossings(folder: Path, banned: str) -> list[str]:
    """``file: module`` for every import of ``banned`` (or a module under it) by a file
    under ``folder``."""
    out = []
    for path in sorted(folder.rglob("*.py")):
        for mod in sorted(imported(path)):
            if mod == banned or mod.startswith(banned + "."):
                out.append(f"{path.relative_to(folder.parent).as_posix()}: {mod}")
    return out


def test_tests_never_import_benchmarks() -> None:
    assert crossings(ROOT / "tests", "benchmarks") == [], \
        "move what the test needs into xwatch/testing (docs/development.md)"


def test_benchmarks_never_import_tests() -> None:
    assert crossings(ROOT / "benchmarks", "tests") == [], \
        "move what the benchmark needs into xwatch/testing (docs/development.md)"


def test_the_product_never_imports_its_testing_library() -> None:
    product = ROOT / "xwatch"
    bad = [c for c in crossings(product, "xwatch.testing")
           if not c.startswith("xwatch/testing/")]
    assert bad == []


def test_the_scan_finds_every_kind_of_import(tmp_path: Path) -> None:
    pkg = tmp_path / "benchmarks"
    pkg.mkdir()
    (pkg / "a.py").write_text("import tests.helpers.serving\n")
    (pkg / "b.py").write_text("def f():\n    from tests.helpers import serving\n")
    (pkg / "c.py").write_text("from tests import conftest as c\nimport testsuite\n")
    (pkg / "d.py").write_text("from . import tests\nimport xwatch.testing\n")
    assert crossings(pkg, "tests") == [
        "benchmarks/a.py: tests.helpers.serving", "benchmarks/b.py: tests.helpers",
        "benchmarks/b.py: tests.helpers.serving", "benchmarks/c.py: tests",
        "benchmarks/c.py: tests.conftest"]
