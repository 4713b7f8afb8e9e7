"""``python -m benchmarks list`` (every benchmark: what it measures, how long it takes,
whether it needs a GPU), ``python -m benchmarks run NAME [ARGS...]`` (runs one, from
the repository's root, with ARGS passed on), ``python -m benchmarks show NAME [ARGS...]``
(the command ``run`` would run, one argument a line) and ``python -m benchmarks check``
(the registry against the scripts on disk: exit 1 naming each problem). The registry is
``benchmarks/suite.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from benchmarks.suite import command, every, find, problems


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "list":
        for b in every():
            print(f"{b.name:22} {b.takes:>10}  GPU: {b.gpu}")
            print(textwrap.indent(textwrap.fill(b.measures, 80), " " * 4))
            if b.params:
                print(textwrap.indent(textwrap.fill("parameters: " + b.params, 80), " " * 4))
            if b.example:
                print(f"    e.g. python -m benchmarks run {b.name} {b.example}")
        return 0
    if argv[0] == "check":
        bad = problems()
        for line in bad:
            print(line, file=sys.stderr)
        print(f"{len(every())} benchmarks, {len(bad)} problems")
        return 1 if bad else 0
    if argv[0] in ("run", "show") and len(argv) >= 2:
        try:
            b = find(argv[1])
        except KeyError:
            print(f"benchmarks: no benchmark {argv[1]!r} (python -m benchmarks list)",
                  file=sys.stderr)
            return 2
        root = Path(__file__).resolve().parent.parent
        env = dict(os.environ)
        env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"]
                                         if env.get("PYTHONPATH") else "")
        rest = argv[2:]
        cmd = command(b, rest[1:] if rest[:1] == ["--"] else rest)
        if argv[0] == "show":
            print("\n".join(cmd))
            return 0
        print("$ " + " ".join(cmd), flush=True)
        return subprocess.call(cmd, cwd=root, env=env)
    print("usage: python -m benchmarks list | check | run NAME [ARGS...] | show NAME [ARGS...]",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
