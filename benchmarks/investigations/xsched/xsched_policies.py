"""Against a real xserver (no GPU needed): set every policy the install can create by the
install's own number, read it back, and match the xserver's own log line ("policy changed
from A to B") against xwatch's table; then, with ``--spup``, send the number of a policy the
install lists but cannot create, raw, and watch what xserver does (1.2: it asserts, the
request never returns, its HTTP API goes silent, the process lives on).
Usage: python3 benchmarks/investigations/xsched/xsched_policies.py ROOT [--spup]"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from xwatch.core.xsched.client import XserverClient, free_port
from xwatch.core.xsched.compat import policy_problem
from xwatch.core.xsched.install import XschedError
from xwatch.core.xsched.meta import read_meta


def main() -> int:
    root = Path(sys.argv[1]).resolve()
    meta = read_meta(root)
    print(meta.summary())
    port = free_port(50555)
    xs = subprocess.Popen([str(root / "bin" / "xserver"), "HPF", str(port)], cwd=str(root),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True)
    log: list[str] = []
    threading.Thread(target=lambda: [log.append(ln.rstrip()) for ln in xs.stdout or []],
                     daemon=True).start()
    c = XserverClient(port)
    for _ in range(50):
        try:
            c.get_policy()
            break
        except XschedError:
            time.sleep(0.1)
    bad = 0
    for p in meta.policies.policies:
        if policy_problem(meta, p.name):
            print(f"{p.name:<5} {p.number:>2}  refused before sending: "
                  f"{policy_problem(meta, p.name)[:90]}...")  # type: ignore[index]
            continue
        n = len(log)
        c.set_policy(p.number)
        back = c.get_policy()
        time.sleep(0.2)
        said = [ln for ln in log[n:] if "policy" in ln.lower()]
        m = re.search(r"to (\w+)", said[-1]) if said else None
        ok = back == p.number and (m is None or m.group(1) == p.name)
        bad += not ok
        print(f"{p.name:<5} {p.number:>2}  read back {back:>2}  xserver: "
              f"{said[-1].split(']')[-1].strip() if said else '(no log line)'}  "
              f"{'OK' if ok else 'MISMATCH'}")
    if "--spup" in sys.argv:
        sp = next((p for p in meta.policies.policies if p.creatable is False), None)
        if sp is not None:
            c.timeout = 3.0
            t0 = time.monotonic()
            try:
                c.set_policy(sp.number)
                print(f"POST {sp.name} ({sp.number}) answered")
            except XschedError as e:
                print(f"POST {sp.name} ({sp.number}): {e} after {time.monotonic() - t0:.1f} s")
            try:
                print("GET /policy afterwards:", c.get_policy())
            except XschedError as e:
                print(f"GET /policy afterwards: {e}")
            print("xserver alive:", xs.poll() is None, "| last log:", " | ".join(log[-3:]))
    xs.send_signal(signal.SIGINT)
    try:
        xs.wait(5)
    except subprocess.TimeoutExpired:
        xs.kill()
        xs.wait()
    print(f"{bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
