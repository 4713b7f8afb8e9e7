"""Where does XSched 1.2's SIGSEGV happen? Runs the preflight's created-stream smoke (and,
if given, a small CUDA program) many times under the shim and records, per run: the exit
status, whether the program said "done" (all its GPU work finished and synchronized)
before it died, its iterations, and the last stderr lines.

Variants (each N times, one after another, so runs do not disturb each other):
- ``glb``: the global scheduler with a running xserver (what xwatch's XSched mode does);
- ``lcl``: a local scheduler (``XSCHED_POLICY=HPF``): no xserver and no IPC channel, so a
  crash here is not the (locally adapted) ipc library's;
- ``glb-hard-exit``: as ``glb``, but the process ends with ``os._exit`` right after "done",
  skipping interpreter finalization and the libraries' exit-time destructors;
- ``c-glb`` / ``c-lcl``: the small CUDA program (benchmarks/investigations/xsched/repro/stream_loop.cu),
  no PyTorch at all;
- ``glb-3par`` / ``lcl-3par``: the created, default-stream and graph smokes at once, as
  the preflight and ``doctor`` start them (one row per process); ``ONLY=par``: these alone.

Usage (on the GPU machine, from the repo root):
  python3 benchmarks/investigations/xsched/xsched_exit_crash.py ROOT OUTDIR [N] [SECONDS] [C_BINARY]
Writes OUTDIR/exit_crash.jsonl (one line a run) and prints a table.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SMOKE = [sys.executable, "-u", "-m", "xwatch.core.engine.worker.smoke", "cuda:0", "created"]
HARD_EXIT = ("import os, sys; from xwatch.core.engine.worker import smoke; "
             "rc = smoke.main(sys.argv[1:]); sys.stdout.flush(); os._exit(rc)")


def shim_env(root: Path, glb: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": f"{root}/lib", "XSCHED_AUTO_XQUEUE": "ON",
                "XSCHED_AUTO_XQUEUE_PRIORITY": "1", "XSCHED_AUTO_XQUEUE_LEVEL": "1",
                "XSCHED_AUTO_XQUEUE_THRESHOLD": "16", "XSCHED_AUTO_XQUEUE_BATCH_SIZE": "8"})
    if glb:
        env["XSCHED_SCHEDULER"] = "GLB"
    else:
        env["XSCHED_POLICY"] = "HPF"
    return env


def one(argv: list[str], env: dict[str, str], timeout: float) -> dict[str, object]:
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = None, (e.stdout or b"").decode(errors="replace") if isinstance(
            e.stdout, bytes) else (e.stdout or ""), "timeout"
    done = [ln for ln in out.splitlines() if '"done"' in ln or ln.startswith("done ")]
    iters = None
    if done:
        ln = done[-1]
        iters = int(ln.split()[1]) if ln.startswith("done ") else json.loads(ln).get("iters")
    sig = signal.Signals(-rc).name if rc is not None and rc < 0 else None
    return {"rc": rc, "signal": sig, "done": bool(done), "iters": iters,
            "seconds": round(time.monotonic() - t0, 2),
            "stderr_tail": [ln for ln in err.splitlines() if ln.strip()][-4:]}


def parallel(argvs: list[list[str]], env: dict[str, str], timeout: float) -> list[dict[str, object]]:
    """The programs at once (as the preflight and doctor start their probes)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(argvs)) as pool:
        return list(pool.map(lambda a: one(a, env, timeout), argvs))


def main() -> int:
    root = Path(sys.argv[1]).resolve()
    out = Path(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    seconds = sys.argv[4] if len(sys.argv) > 4 else "2"
    cbin = sys.argv[5] if len(sys.argv) > 5 else ""
    out.mkdir(parents=True, exist_ok=True)
    port = "50777"
    xs = subprocess.Popen([str(root / "bin" / "xserver"), "HPF", port], cwd=str(root),
                          stdout=open(out / "xserver.log", "w"), stderr=subprocess.STDOUT,
                          start_new_session=True)
    time.sleep(1.5)
    variants: list[tuple[str, list[str], bool, int]] = [
        ("glb", [*SMOKE, seconds], True, n),
        ("lcl", [*SMOKE, seconds], False, max(4, n // 2)),
        ("glb-hard-exit", [sys.executable, "-u", "-c", HARD_EXIT, "cuda:0", "created", seconds],
         True, max(4, n // 2)),
    ]
    if cbin:
        variants += [("c-glb", [cbin, seconds], True, n), ("c-lcl", [cbin, seconds], False,
                                                             max(4, n // 2))]
    streams = ("created", "default", "graph")
    par = [[sys.executable, "-u", "-m", "xwatch.core.engine.worker.smoke", "cuda:0", k, seconds]
           for k in streams]
    only = os.environ.get("ONLY")  # e.g. ONLY=par: the parallel variants alone
    if only == "par":
        variants = []
    rows = []
    with open(out / "exit_crash.jsonl", "w") as f:
        for name, glb in (("glb-3par", True), ("lcl-3par", False)):
            for k in range(n if glb else max(4, n // 2)):
                for stream, r in zip(streams, parallel(par, shim_env(root, glb), 120)):
                    row = {"variant": f"{name}:{stream}", "run": k, **r}
                    rows.append(row)
                    f.write(json.dumps(row) + "\n")
                    f.flush()
        for name, argv, glb, times in variants:
            for k in range(times):
                r = {"variant": name, "run": k, **one(argv, shim_env(root, glb), 120)}
                rows.append(r)
                f.write(json.dumps(r) + "\n")
                f.flush()
                if xs.poll() is not None:
                    print(f"xserver died (exit {xs.returncode}) during {name} run {k}")
                    xs = subprocess.Popen([str(root / "bin" / "xserver"), "HPF", port],
                                          cwd=str(root), stdout=open(out / "xserver2.log", "a"),
                                          stderr=subprocess.STDOUT, start_new_session=True)
                    time.sleep(1.5)
    xs.send_signal(signal.SIGINT)
    try:
        xs.wait(5)
    except subprocess.TimeoutExpired:
        xs.kill()
    print(f"{'variant':<15}{'runs':>5}{'ok':>5}{'crash after done':>18}{'crash before':>14}"
          f"{'timeout':>9}  signals")
    for name in dict.fromkeys(r["variant"] for r in rows):
        mine = [r for r in rows if r["variant"] == name]
        ok = sum(r["rc"] == 0 for r in mine)
        after = sum(r["rc"] not in (0, None) and r["done"] for r in mine)
        before = sum(r["rc"] not in (0, None) and not r["done"] for r in mine)
        to = sum(r["rc"] is None for r in mine)
        sigs = sorted({str(r["signal"] or r["rc"]) for r in mine if r["rc"] not in (0, None)})
        print(f"{name:<15}{len(mine):>5}{ok:>5}{after:>18}{before:>14}{to:>9}  {','.join(sigs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
