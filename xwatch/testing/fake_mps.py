"""A fake ``nvidia-cuda-mps-control`` for tests, faithful to the interface NVIDIA
documents (``nvidia-cuda-mps-control(1)``, the MPS guide's "Tools and Interface
Reference"):

- ``-f``: the control daemon in the foreground. It reads ``CUDA_MPS_PIPE_DIRECTORY``
  and ``CUDA_MPS_LOG_DIRECTORY``, writes ``nvidia-cuda-mps-control.pid`` into the pipe
  directory and ``control.log`` into the log directory, and answers commands on a
  socket in the pipe directory. Once a client exists it starts a "server" child (a
  sleeping process) and logs ``Starting new server``, as the real one does.
- no arguments: the client. Commands on stdin, one per line; without a daemon
  behind ``CUDA_MPS_PIPE_DIRECTORY`` it prints ``Cannot find MPS control daemon
  process`` and exits 1.
- Commands: ``get_server_list``, ``get_client_list PID``, ``set_active_thread_percentage
  PID PCT``, ``set_default_active_thread_percentage PCT``, ``quit``.
- Clients: on a CPU there is no CUDA initialization to join through, so every process
  whose environment has this daemon's ``CUDA_MPS_PIPE_DIRECTORY`` counts as a client
  (what the real driver does at CUDA init), except ``FAKE_MPS_OUTSIDE=1`` (a program
  that ends up outside MPS) and the control tool itself.
- Every command is appended to ``$FAKE_MPS_RECORD`` (else ``<log dir>/commands.txt``).
None of this is NVIDIA code.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SCRIPT = r'''#!PYTHON
import os, signal, socket, subprocess, sys, time

PIPE = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
LOG = os.environ.get("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps")
SOCK = os.path.join(PIPE, "control")


def clients():
    me = os.getpid()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = dict(x.split(b"=", 1) for x in f.read().split(b"\0") if b"=" in x)
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if env.get(b"CUDA_MPS_PIPE_DIRECTORY", b"").decode() != PIPE:
            continue
        if b"nvidia-cuda-mps-control" in cmd or env.get(b"FAKE_MPS_OUTSIDE") == b"1":
            continue
        out.append(int(d))
    return sorted(out)


def daemon():
    os.makedirs(PIPE, exist_ok=True)
    os.makedirs(LOG, exist_ok=True)
    log = open(os.path.join(LOG, "control.log"), "a", buffering=1)
    rec = open(os.environ.get("FAKE_MPS_RECORD") or os.path.join(LOG, "commands.txt"), "a",
               buffering=1)
    with open(os.path.join(PIPE, "nvidia-cuda-mps-control.pid"), "w") as f:
        f.write(str(os.getpid()))
    log.write("[fake] Starting control daemon (CUDA_VISIBLE_DEVICES="
              + os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>") + ")\n")
    print("[fake] control daemon running", flush=True)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(SOCK)
    except OSError:
        pass
    srv.bind(SOCK)
    srv.listen(8)
    server = None
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    try:
        while True:
            conn, _ = srv.accept()
            line = conn.makefile().readline().strip()
            rec.write(line + "\n")
            words = line.split()
            cl = clients()
            if cl and server is None:
                server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1e6)"])
                log.write(f"[fake] Starting new server {server.pid} for user 0\n")
            answer = ""
            if server is not None and server.poll() is not None:  # the real daemon notices
                log.write(f"[fake] Server {server.pid} exited with status {server.returncode}\n")
                server = None
            if words[:1] == ["get_server_list"]:
                answer = f"{server.pid}\n" if server else ""
            elif words[:1] == ["get_client_list"]:
                answer = "".join(f"{p}\n" for p in cl) if server and words[1:] == [str(server.pid)] else ""
            elif words[:1] in (["set_active_thread_percentage"], ["set_default_active_thread_percentage"]):
                answer = "\n"
            elif words[:1] == ["quit"]:
                conn.sendall(b"")
                conn.close()
                log.write("[fake] quit\n")
                if server:
                    server.terminate()
                    server.wait()
                    log.write(f"[fake] Server {server.pid} exited with status 0\n")
                return 0
            else:
                answer = f"Unknown command {line}\n"
            conn.sendall(answer.encode())
            conn.close()
    finally:
        if server and server.poll() is None:
            server.kill()
        try:
            os.unlink(SOCK)
        except OSError:
            pass


def client():
    rc = 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(SOCK)
        except OSError:
            print("Cannot find MPS control daemon process")
            return 1
        s.sendall((line + "\n").encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        sys.stdout.write(data.decode())
    return rc


if "-f" in sys.argv[1:]:
    sys.exit(daemon())
sys.exit(client())
'''


def make_tool(folder: Path) -> Path:
    """Write the fake ``nvidia-cuda-mps-control`` into ``folder``; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "nvidia-cuda-mps-control"
    p.write_text(SCRIPT.replace("PYTHON", sys.executable, 1))
    p.chmod(0o755)
    return p


def commands(record: str | os.PathLike[str]) -> list[str]:
    f = Path(record)
    return f.read_text().splitlines() if f.exists() else []
