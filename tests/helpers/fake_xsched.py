"""A fake XSched install for tests, faithful to XSched's documented env, daemon and HTTP API.

- ``lib/libshimhip.so`` and ``lib/libshimcuda.so``: a real shared library (compiled
  here with the system C compiler) whose constructor logs which scheduler is in
  force exactly like the real shim (``[INFO @ T<tid> @ ...] using global
  scheduler``) and, with ``XSCHED_AUTO_XQUEUE=ON``, registers its process's
  XQueue settings in ``<root>/run/<pid>.json`` (the real shim talks to xserver
  over IPC; a file stands in for that channel).
- ``bin/xserver POLICY PORT``: serves the documented HTTP API (/xqueues,
  /xqueue/<hex>, /config/<hex>, /policy, /hint), two XQueues per registered
  live pid (``FAKE_XQUEUES_PER_PROCESS`` in its env: more, as PyTorch under the real
  shim creates ~144), logs like the real daemon, stops on SIGINT, refuses a port in use.
  It holds its install's channel as the real one does: a System V message queue whose
  key is the install's ``XSCHED_SERVER_CHANNEL_KEY`` (written into its
  ``include/xsched/protocol/def.h``; unique per fake install, where XSched's is 1), made
  with ``IPC_CREAT | IPC_EXCL``. Finding it taken, it removes the holder's queue and
  makes its own (XSched's ipc library does so when its "delete it? (y/n)" prompt reads
  no "n", as with stdin closed); the first xserver's blocked receive then fails and it
  shuts down, as the real one does. It removes its queue when it stops.
  Every control call is appended to ``<root>/run/calls.jsonl``.
  ``FAKE_XQUEUE_READY`` in a workload's env picks how its queues look:
  ``toggle`` (default: alternately ready), ``never`` (idle), ``always``, ``gone`` (one
  XQueue logged created, its priority set and destroyed at once, then none listed: as
  the real xserver logged a server's whose work bypassed the shim).
  A registered process that exits normally (``exit``, not ``_exit`` nor a signal)
  appends ``{"call": "exit", "pid": N}``, as XSched's ``SchedAgent`` destructor tells
  xserver it leaves.
  ``FAKE_SHIM_CRASH=1`` makes the shim log XSched's ``[ERRO ...] cuda error 1`` line
  and die by SIGSEGV, as upstream XSched did with PyTorch on driver 580.
  A monitor thread logs "client process N connected" and, once N left (``leave``) or
  died, "client process N closed", as the real one's receiver and process monitor do.
  In xserver's env: ``FAKE_LINGER_S`` keeps a process that left or died listed (and
  not yet "closed") that long, as a busy xserver would; ``FAKE_ABORT_ON_BUSY_LEAVE=1``
  aborts as XSched 1.2's did (issue 64): an HTTP request in flight or answered within
  ``BUSY_S`` of a preflight probe's leave (exec'd: its command line names the smoke), or
  before its "closed" (every query makes the real
  scheduler send an operation to every process, and one sent to a process that removed
  its queue fails ``server.cpp:200``); ``FAKE_ABORT_AFTER_S=T`` aborts T s after it
  started, in the first ``FAKE_ABORT_TIMES`` (default 1) starts of the install
  (counted in ``run/aborts``). An abort logs the real lines and dies by SIGABRT.
None of this is XSched code.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env(const char *k) { const char *v = getenv(k); return v ? v : ""; }

static void run_file(char *out, size_t n, const char *name) {
    Dl_info info;
    char path[4096] = ".";
    if (dladdr((void *)run_file, &info) && info.dli_fname)
        strncpy(path, info.dli_fname, sizeof path - 1);
    path[sizeof path - 1] = 0;
    snprintf(out, n, "%s/../run/%s", dirname(path), name);
}

static void fake_register(const char *sched);

/* XSched 1.2's SchedAgent: the scheduler XSCHED_SCHEDULER/XSCHED_POLICY name, taken at
   load; the app-managed one (neither set) tells xserver nothing */
__attribute__((constructor)) static void fake_shim_init(void) {
    const char *sched = env("XSCHED_SCHEDULER");
    const char *policy = env("XSCHED_POLICY");
    char what[128];
    if (*policy) snprintf(what, sizeof what, "local scheduler with policy %s", policy);
    else if (strcmp(sched, "GLB") == 0) snprintf(what, sizeof what, "global scheduler");
    else if (strcmp(sched, "LCL") == 0) snprintf(what, sizeof what, "local scheduler with policy HPF");
    else snprintf(what, sizeof what, "app-managed scheduler");
    fprintf(stderr, "[INFO @ T%d @ 00:00:00.000000] using %s\n", (int)getpid(), what);
    if (strcmp(env("FAKE_SHIM_CRASH"), "1") == 0) {  /* as upstream 49079bc on driver 580 */
        fprintf(stderr, "[ERRO @ T%d @ 00:00:00.000001] cuda error 1: invalid argument @ "
                "/xsched/platforms/cuda/hal/src/level1/cuda_queue.cpp:44\n", (int)getpid());
        fflush(stderr);
        raise(SIGSEGV);
    }
    if (*policy || *sched) fake_register(sched);
}

/* include/xsched/hint.h: switch the scheduler at run time (kSchedulerAppManaged = 1,
   kSchedulerGlobal = 3, as the fake types.h numbers them): the global one registers
   this process as it is now (its pid, its XSCHED_AUTO_XQUEUE_* now: XQueues read them
   when they are made); leaving it tells xserver the process is gone (its record kept as N.json.left) */
int XHintSetScheduler(int scheduler, int policy) {
    char reg[4400], name[64];
    (void)policy;
    snprintf(name, sizeof name, "%d.json", (int)getpid());
    run_file(reg, sizeof reg, name);
    if (scheduler == 3) {
        fprintf(stderr, "[INFO @ T%d @ 00:00:00.000000] using global scheduler\n", (int)getpid());
        fake_register("GLB");
    } else if (scheduler == 1) {
        fprintf(stderr, "[INFO @ T%d @ 00:00:00.000000] using app-managed scheduler\n",
                (int)getpid());
        char kept[4410];  /* xserver forgets it; tests can still read what it was */
        snprintf(kept, sizeof kept, "%s.left", reg);
        if (rename(reg, kept) == 0) {
            char calls[4400];
            run_file(calls, sizeof calls, "calls.jsonl");
            FILE *c = fopen(calls, "a");
            if (c) { fprintf(c, "{\"call\": \"leave\", \"pid\": %d}\n", (int)getpid()); fclose(c); }
        }
    } else return 1;
    return 0;
}

/* XSched's SchedAgent destructor, at a normal exit (exit(), never _exit() nor a signal):
   a registered process tells xserver it leaves (ProcessDestroyEvent) */
__attribute__((destructor)) static void fake_shim_fini(void) {
    char reg[4400], name[64], calls[4400];
    snprintf(name, sizeof name, "%d.json", (int)getpid());
    run_file(reg, sizeof reg, name);
    if (access(reg, F_OK) != 0) return;
    run_file(calls, sizeof calls, "calls.jsonl");
    FILE *c = fopen(calls, "a");
    if (c) { fprintf(c, "{\"call\": \"exit\", \"pid\": %d}\n", (int)getpid()); fclose(c); }
}

static void fake_register(const char *sched) {
    if (strcmp(env("XSCHED_AUTO_XQUEUE"), "ON") != 0) return;
    char reg[4400], name[64];
    snprintf(name, sizeof name, "%d.json", (int)getpid());
    run_file(reg, sizeof reg, name);
    FILE *f = fopen(reg, "w");
    if (!f) return;
    fprintf(f, "{\"pid\": %d, \"scheduler\": \"%s\", \"priority\": \"%s\", \"level\": \"%s\", "
               "\"threshold\": \"%s\", \"batch_size\": \"%s\", \"ready\": \"%s\"}\n",
            (int)getpid(), sched, env("XSCHED_AUTO_XQUEUE_PRIORITY"),
            env("XSCHED_AUTO_XQUEUE_LEVEL"), env("XSCHED_AUTO_XQUEUE_THRESHOLD"),
            env("XSCHED_AUTO_XQUEUE_BATCH_SIZE"), env("FAKE_XQUEUE_READY"));
    fclose(f);
}
"""

XSERVER_PY = r'''
import ctypes, errno, json, os, signal, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

# the install's own numbering, as its include/xsched/types.h gives it (make_install)
POLICIES = __POLICIES__
# policy classes compiled in, as the real build's RTTI names them (meta.py reads these)
CLASSES = "__CLASSES__"
RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "run")
policy_name, port = sys.argv[1], int(sys.argv[2])
PER_PROCESS = int(os.environ.get("FAKE_XQUEUES_PER_PROCESS", "2"))  # the real shim: ~144
def log(msg):
    print(f"[INFO @ T{os.getpid()} @ {time.strftime('%H:%M:%S')}.000000] {msg}", flush=True)
ENUM = __ENUM__
HUNG = threading.Event()
STOPPING = threading.Event()
if policy_name not in POLICIES:
    log(f"unknown policy {policy_name}"); sys.exit(1)
KEY = __KEY__  # the install's XSCHED_SERVER_CHANNEL_KEY
libc = ctypes.CDLL(None, use_errno=True)
libc.msgrcv.restype = ctypes.c_ssize_t
libc.msgrcv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long, ctypes.c_int]
IPC_CREAT, IPC_EXCL, IPC_RMID = 0o1000, 0o2000, 0

def take_channel():
    q = libc.msgget(KEY, IPC_CREAT | IPC_EXCL | 0o666)
    if q == -1 and ctypes.get_errno() == errno.EEXIST:
        log(f"kReceiver of Node (key: 0x{KEY:x}) already exists, deleting it")
        libc.msgctl(libc.msgget(KEY, 0o666), IPC_RMID, None)
        q = libc.msgget(KEY, IPC_CREAT | IPC_EXCL | 0o666)
    if q == -1:
        log(f"failed to create message queue, key: 0x{KEY:x}"); sys.exit(1)
    return q

QID = take_channel()

def receive():
    buf = ctypes.create_string_buffer(8192)
    while True:
        if libc.msgrcv(QID, buf, 8192 - 8, 0, 0) >= 0:
            continue
        if ctypes.get_errno() == errno.EINTR:
            continue
        if not STOPPING.is_set():  # taken over by another xserver
            log("recv_chan_ receive failed, exiting RecvWorker thread")
            log("xserver stopping")
            os._exit(0)
        return

threading.Thread(target=receive, daemon=True).start()
state = {"policy": POLICIES[policy_name], "polls": 0, "config": {}, "prio": {}}
lock = threading.Lock()

def record(kind, **kw):
    with lock, open(os.path.join(RUN, "calls.jsonl"), "a") as f:
        f.write(json.dumps({"call": kind, **kw}) + "\n")

def alive(pid):
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False

def queues():
    regs = []
    for name in sorted(os.listdir(RUN)):
        if name.endswith(".json.left") and name[:-10].isdigit():  # left, not yet closed
            if int(name[:-10]) in CLOSED or int(name[:-10]) not in GONE_AT:
                continue
            name = name[:-5]
            path = os.path.join(RUN, name + ".left")
        else:
            path = os.path.join(RUN, name)
        if name.endswith(".json") and name[:-5].isdigit():
            try:
                with open(path) as f:
                    reg = json.load(f)
            except (OSError, ValueError):
                continue
            if alive(reg["pid"]) or reg["pid"] not in CLOSED and reg["pid"] in GONE_AT:
                regs.append(reg)
    state["polls"] += 1
    out = []
    for reg in regs:
        pattern = reg.get("ready") or "toggle"
        if pattern == "gone":  # one XQueue made and destroyed at once, then none listed
            if reg["pid"] not in state.setdefault("gone", set()):
                state["gone"].add(reg["pid"])
                h = reg["pid"] * 16
                log(f"XQueue (0x{h:x}) from process {reg['pid']} created")
                log(f"set priority {reg.get('priority') or 0} for XQueue 0x{h:x}")
                log(f"XQueue (0x{h:x}) from process {reg['pid']} destroyed")
            continue
        ready = {"never": False, "always": True}.get(pattern, state["polls"] % 2 == 0)
        for k in range(PER_PROCESS):
            h = reg["pid"] * 16 + k if PER_PROCESS <= 16 else reg["pid"] * 1024 + k
            cfg = state["config"].get(h, {})
            prio = state["prio"].get(h, int(reg.get("priority") or 0))
            out.append({"handle": h, "device": 0, "pid": reg["pid"],
                        "level": cfg.get("level", int(reg.get("level") or 1)),
                        "threshold": cfg.get("threshold", int(reg.get("threshold") or 16)),
                        "batch_size": cfg.get("batch_size", int(reg.get("batch_size") or 8)),
                        "ready": ready, "suspended": False, "_prio": prio})
    top = max([q["_prio"] for q in out if q["ready"]], default=None)
    for q in out:
        q["suspended"] = bool(q["ready"] and top is not None and q["_prio"] < top)
        del q["_prio"]
    return out, regs

# FAKE_STALL_AFTER_EXIT_S: as 1.2's scheduler thread was seen to (issue 58 goal 5),
# answer nothing for that long once a registered process died without leaving (its
# registration still there); every request waits behind it
STALL_S = float(os.environ.get("FAKE_STALL_AFTER_EXIT_S") or 0)
STALL_LOCK = threading.Lock()

LINGER_S = float(os.environ.get("FAKE_LINGER_S") or 0)
ABORT_BUSY = os.environ.get("FAKE_ABORT_ON_BUSY_LEAVE") == "1"
BUSY_S = 0.05
HTTP = {"inflight": 0, "last": 0.0}
CLOSED = set()  # pids logged closed: not listed any more
GONE_AT = {}  # pid -> when it left or was first seen dead

def abort(pid):
    """XSched 1.2's xserver when a send to a client's removed queue fails."""
    log(f"client process {pid} closed")
    print("msgsnd fail: (22)Invalid argument", flush=True)
    print(f"[ERRO @ T{os.getpid()} @ {time.strftime('%H:%M:%S')}.000000] Assertion failed: "
          f"cannot send operation to client process {pid} @ "
          "/xsched/service/server/src/server.cpp:200", flush=True)
    print("terminate called after throwing an instance of 'std::system_error'\n"
          "  what():  Resource deadlock avoided", flush=True)
    STOPPING.set()  # its Server::Stop removed its queue on the way (server.cpp:81-86)
    libc.msgctl(QID, IPC_RMID, None)
    os.abort()

def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""

def monitor():
    seen = {}  # pid -> its command line when it connected
    while True:
        now = time.monotonic()
        for name in os.listdir(RUN):
            left = name.endswith(".json.left")
            if not (left or name.endswith(".json")) or not name.split(".")[0].isdigit():
                continue
            pid = int(name.split(".")[0])
            if pid in CLOSED:
                continue
            if pid not in seen:
                seen[pid] = cmdline(pid)
                log(f"client process {pid} connected, cmdline: {seen[pid][:80]}")
            if not left and alive(pid):
                continue
            t = GONE_AT.setdefault(pid, now)
            busy = HTTP["inflight"] or now - HTTP["last"] < BUSY_S or HTTP["last"] > t - BUSY_S
            if ABORT_BUSY and busy and "worker.smoke" in seen[pid]:  # the probes' end
                abort(pid)
            if now - t >= LINGER_S:
                CLOSED.add(pid)
                log(f"client process {pid} closed")
        time.sleep(0.005)

def abort_later(after):
    f = os.path.join(RUN, "aborts")
    n = int(open(f).read()) if os.path.exists(f) else 0
    if n >= int(os.environ.get("FAKE_ABORT_TIMES") or 1):
        return
    with open(f, "w") as out:
        out.write(str(n + 1))
    time.sleep(after)
    abort(0)

def stall_on_exit():
    with STALL_LOCK:
        if not STALL_S:
            return
        for name in sorted(os.listdir(RUN)):
            if not (name.endswith(".json") and name[:-5].isdigit()):
                continue
            pid = int(name[:-5])
            if pid in state.setdefault("stalled", set()) or alive(pid):
                continue
            state["stalled"].add(pid)
            log(f"stalling {STALL_S:g} s: process {pid} left without leaving")
            time.sleep(STALL_S)
            log(f"client process {pid} closed")

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def send(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        HTTP["inflight"] += 1
        try:
            return self.get()
        finally:
            HTTP["inflight"] -= 1
            HTTP["last"] = time.monotonic()
    def get(self):
        if HUNG.is_set():
            while True:
                time.sleep(3600)
        stall_on_exit()
        u = urlparse(self.path)
        if u.path == "/xqueues":
            qs, regs = queues()
            return self.send(200, {"xqueues": qs, "processes": [
                {"pid": r["pid"], "cmdline": "python"} for r in regs]})
        if u.path.startswith("/xqueue/"):
            try:
                h = int(u.path.rsplit("/", 1)[1], 16)
            except ValueError:
                return self.send(400, {"error": "handle must be hex"})
            qs, _ = queues()
            for q in qs:
                if q["handle"] == h:
                    return self.send(200, {"xqueue": q, "process": {"pid": q["pid"]}})
            return self.send(404, {"error": "xqueue not found"})
        if u.path == "/policy":
            return self.send(200, {"policy": state["policy"]})
        self.send(404, {"error": "not found"})
    def do_POST(self):
        u = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}") if n else {}
        if u.path.startswith("/config/"):
            try:
                h = int(u.path.rsplit("/", 1)[1], 16)
            except ValueError:
                return self.send(400, {"error": "handle must be hex"})
            qs, _ = queues()
            cur = next((x for x in qs if x["handle"] == h), None)
            if cur is None:
                return self.send(404, {"error": "xqueue not found"})
            new = {k: int(v) for k, v in q.items()}
            merged = {**{k: cur[k] for k in ("level", "threshold", "batch_size")}, **new}
            if merged["batch_size"] >= merged["threshold"]:
                return self.send(400, {"error": "batch_size must be smaller than threshold"})
            if merged["level"] == 3:
                return self.send(400, {"error": "level 3 is not supported on this device"})
            state["config"][h] = merged
            record("config", handle=h, hex=f"{h:x}", **new)
            return self.send(200, {"info": "success"})
        if u.path == "/policy":
            num = int(q["policy"])
            if not any(n == num and f"{len(k) + 6}{k}Policy" in CLASSES for k, n in ENUM.items()):
                # XSched 1.2's CreatePolicy has no case for SPUP (6): XASSERT fails on the
                # scheduler's thread, the request never returns and the HTTP API stops
                # answering while the process stays alive (seen on the H100)
                log(f"Assertion failed: invalid policy type: {num}")
                HUNG.set()
                while True:
                    time.sleep(3600)
            state["policy"] = num
            record("policy", policy=state["policy"])
            log(f"policy set to {state['policy']}")
            return self.send(200, {"info": "success"})
        if u.path == "/hint":
            if body.get("hint_type") == 1:
                state["prio"][int(body["handle"])] = int(body["priority"])
            record("hint", **body)
            return self.send(200, {"info": "success"})
        self.send(404, {"error": "not found"})

try:
    srv = ThreadingHTTPServer(("0.0.0.0", port), H)
except OSError as e:
    log(f"failed to start HTTP server on port {port}: {e}")
    STOPPING.set()
    libc.msgctl(QID, IPC_RMID, None)
    sys.exit(1)
with open(os.path.join(RUN, "xserver.pid"), "w") as f:
    f.write(str(os.getpid()))
def stop(*a):
    log("xserver stopping")
    STOPPING.set()
    libc.msgctl(QID, IPC_RMID, None)  # as Server::Stop removes recv_chan_
    threading.Thread(target=srv.shutdown).start()
signal.signal(signal.SIGINT, stop)
log(f"xserver started with policy {policy_name} on port {port}")
threading.Thread(target=monitor, daemon=True).start()
if os.environ.get("FAKE_ABORT_AFTER_S"):
    threading.Thread(target=abort_later, args=(float(os.environ["FAKE_ABORT_AFTER_S"]),),
                     daemon=True).start()
srv.serve_forever()
'''


def have_cc() -> bool:
    return shutil.which("cc") is not None or shutil.which("gcc") is not None


#: the two releases' XPolicyType (include/xsched/types.h), short names as XSched's
#: protocol/names.cpp gives them, and which policies each build can create
RELEASES: dict[str, list[tuple[str, str, bool]]] = {
    "1.0.0": [("HighestPriorityFirst", "HPF", True),
              ("HeterogeneousHighestPriorityFirst", "HHPF", True),
              ("UtilizationPartition", "UP", True), ("ProcessUtilizationPartition", "PUP", True),
              ("KEarliestDeadlineFirst", "KEDF", True), ("Laxity", "LAX", True),
              ("ActiveWindowFirst", "AWF", True), ("CPUHighestPriorityFirst", "CHPF", True),
              ("CompletelyFairScheduler", "CFS", True),
              ("MultiLevelFeedbackQueue", "MLFQ", True)],
    "1.2.0": [("HighestPriorityFirst", "HPF", True),
              ("HeterogeneousHighestPriorityFirst", "HHPF", True),
              ("CPUHighestPriorityFirst", "CHPF", True), ("UtilizationPartition", "UP", True),
              ("ProcessUtilizationPartition", "PUP", True),
              ("StrictProcessUtilizationPartition", "SPUP", False),
              ("KEarliestDeadlineFirst", "KEDF", True), ("Laxity", "LAX", True),
              ("ActiveWindowFirst", "AWF", True), ("CompletelyFairScheduler", "CFS", True),
              ("MultiLevelFeedbackQueue", "MLFQ", True)],
}
#: the XSCHED_* settings each release's include/xsched/protocol/def.h names
SETTINGS = {
    "1.0.0": ["XSCHED_AUTO_XQUEUE", "XSCHED_AUTO_XQUEUE_LEVEL", "XSCHED_AUTO_XQUEUE_THRESHOLD",
              "XSCHED_AUTO_XQUEUE_BATCH_SIZE", "XSCHED_AUTO_XQUEUE_PRIORITY",
              "XSCHED_AUTO_XQUEUE_UTILIZATION", "XSCHED_AUTO_XQUEUE_TIMESLICE",
              "XSCHED_CUDA_LIB", "XSCHED_HIP_LIB", "XSCHED_CUDA_LV3_IMPL", "XSCHED_SCHEDULER",
              "XSCHED_POLICY"],
}
SETTINGS["1.2.0"] = [*SETTINGS["1.0.0"], "XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS",
                     "XSCHED_SCHEDULER_SUSPEND_SYNC_HWQ", "XSCHED_SCHEDULER_SUSPEND_WAIT_ALL",
                     "XSCHED_SCHEDULER_SUSPEND_WAIT_IDLE"]


def channel_key(root: Path) -> int:
    """The fake install's ``XSCHED_SERVER_CHANNEL_KEY``: one of its own, so fake
    installs of tests that run at once do not share a channel (never 0 or 1)."""
    return 2 + zlib.crc32(str(Path(root).resolve()).encode()) % 0x7FFFFFF0


def remove_channel(root: Path) -> bool:
    """Remove the fake install's message queue if it is left (an xserver killed by
    SIGKILL leaves it, as the real one does); whether there was one."""
    libc = ctypes.CDLL(None, use_errno=True)
    q = libc.msgget(channel_key(root), 0o666)
    return q != -1 and libc.msgctl(q, 0, None) == 0


def write_meta(root: Path, version: str | None = "1.2.0", types_h: bool = True,
               def_h: bool = True) -> None:
    """The files an install describes itself with: lib/cmake/XSched/XSchedConfig.cmake
    (``version``; None: no such file), include/xsched/types.h (its XPolicyType) and
    include/xsched/protocol/def.h (its settings), in the shape XSched installs them."""
    rel = version if version in RELEASES else "1.2.0"
    if version is not None:
        cm = root / "lib" / "cmake" / "XSched"
        cm.mkdir(parents=True, exist_ok=True)
        major, minor, patch = [*version.split("."), "0", "0"][:3]
        (cm / "XSchedConfig.cmake").write_text(
            "# generated by a fake install\n"
            f"set(XSched_VERSION {version})\nset(XSched_VERSION_MAJOR {major})\n"
            f"set(XSched_VERSION_MINOR {minor})\nset(XSched_VERSION_PATCH {patch})\n")
    inc = root / "include" / "xsched"
    if types_h:
        inc.mkdir(parents=True, exist_ok=True)
        members = "\n".join(f"    kPolicy{e:<40} = {k + 1},"
                            for k, (e, _, _) in enumerate(RELEASES[rel]))
        (inc / "types.h").write_text(
            "#pragma once\ntypedef enum {\n    kPolicyUnknown = 0,\n" + members
            + "\n    // new policies go here\n    kPolicyMax,\n} XPolicyType;\n"
            "typedef enum {\n    kSchedulerUnknown    = 0,\n    kSchedulerAppManaged = 1,\n"
            "    kSchedulerLocal      = 2,\n    kSchedulerGlobal     = 3,\n    kSchedulerMax,\n"
            "} XSchedulerType;\n")
    if def_h:
        (inc / "protocol").mkdir(parents=True, exist_ok=True)
        (inc / "protocol" / "def.h").write_text("".join(
            f'#define {v}_ENV_NAME "{v}"\n' for v in SETTINGS[rel])
            + f"#define XSCHED_SERVER_CHANNEL_KEY    {channel_key(root)}\n")


def make_install(root: Path, platforms: tuple[str, ...] = ("hip", "cuda"),
                 xserver: bool = True, version: str | None = "1.2.0",
                 softlink: bool = False) -> Path:
    """A fake install of XSched ``version`` ("1.0.0": 49079bc's numbering, "1.2.0":
    1.2's, with SPUP listed but not creatable; None: an install without version files,
    numbered as 1.0.0). As the real one, the agent (constructor, ``XHintSetScheduler``)
    is ``lib/libpreempt.so``, which each ``libshim<platform>.so`` loads; ``softlink``:
    ``lib/libcuda.so.1`` is the CUDA shim (``SHIM_SOFTLINK``), so a program that opens
    the driver (torch's cuBLASLt does at import) loads it."""
    (root / "lib").mkdir(parents=True, exist_ok=True)
    (root / "bin").mkdir(exist_ok=True)
    (root / "run").mkdir(exist_ok=True)
    write_meta(root, version, types_h=version is not None, def_h=version is not None)
    rel = version if version in RELEASES else "1.0.0"
    enum = {e: k + 1 for k, (e, _, _) in enumerate(RELEASES[rel])}
    names = {s: k + 1 for k, (_, s, _) in enumerate(RELEASES[rel])}
    classes = " ".join(f"N6xsched5sched{len(e + 'Policy')}{e}PolicyE"
                       for e, _, ok in RELEASES[rel] if ok)
    src = root / "fake_shim.c"
    src.write_text(SHIM_C)
    cc = shutil.which("cc") or shutil.which("gcc") or "cc"
    agent = root / "lib" / "libpreempt.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(agent), str(src), "-ldl"],
                   check=True, capture_output=True)
    stub = root / "fake_stub.c"
    stub.write_text("int fake_shim_stub(void) { return 0; }\n")
    for plat in platforms:
        out = root / "lib" / f"libshim{plat}.so"
        subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(stub),
                        "-Wl,--no-as-needed", f"-L{root / 'lib'}", "-lpreempt",
                        "-Wl,-rpath,$ORIGIN"], check=True, capture_output=True)
    if softlink and "cuda" in platforms:
        (root / "lib" / "libcuda.so.1").symlink_to("libshimcuda.so")
    if xserver:
        xs = root / "bin" / "xserver"
        xs.write_text(f"#!{sys.executable}\n" + textwrap.dedent(XSERVER_PY)
                      .replace("__POLICIES__", repr(names)).replace("__ENUM__", repr(enum))
                      .replace("__CLASSES__", classes)
                      .replace("__KEY__", str(channel_key(root))))
        xs.chmod(0o755)
    return root


def calls(root: Path) -> list[dict[str, object]]:
    import json

    f = root / "run" / "calls.jsonl"
    return [json.loads(x) for x in f.read_text().splitlines()] if f.exists() else []


def xserver_pid(root: Path) -> int | None:
    f = root / "run" / "xserver.pid"
    return int(f.read_text()) if f.exists() else None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
