"""The box's other sessions as ``/proc`` shows them (``core/modes/neighbours.py``, each mode's own:
``core/xsched/rules/neighbours.py``, ``core/mps/neighbours.py``), read
from a made-up ``/proc``: XSched's channel in ``sysvipc/msg`` and the xserver holding it
(its port and policy from its argv, its install's key), a stale channel, a holder
that is no xserver; MPS control daemons, their pipe folders and GPUs."""

from __future__ import annotations

import os
from pathlib import Path

from xwatch.core.modes.neighbours import Strangers
from xwatch.core.mps.neighbours import MpsDaemon, find_mps_daemons
from xwatch.core.procs import BoxProcess, msg_queues
from xwatch.core.xsched.meta import channel_key
from xwatch.core.xsched.rules.neighbours import find_xserver, xserver_args

HEAD = ("       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  "
        "cgid      stime      rtime      ctime\n")


def fake_proc(root: Path, procs: dict[int, tuple[list[str], int, dict[str, str] | None]],
              queues: list[tuple[int, int, int, int, int]] = ()) -> str:  # type: ignore[assignment]
    """A /proc with ``procs`` (pid: argv, uid, environment or None: unreadable) and
    message queues (key, msqid, cuid, lspid, lrpid)."""
    (root / "sysvipc").mkdir(parents=True)
    (root / "sysvipc" / "msg").write_text(HEAD + "".join(
        f"{k:>10} {q:>10} 666 0 0 {ls:>5} {lr:>5} 0 0 {cu:>5} 0 0 0 0\n"
        for k, q, cu, ls, lr in queues))
    for pid, (argv, uid, env) in procs.items():
        d = root / str(pid)
        d.mkdir()
        (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        (d / "status").write_text(f"Name:\tx\nState:\tS (sleeping)\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
        if env is not None:
            (d / "environ").write_bytes(b"\0".join(f"{k}={v}".encode() for k, v in env.items()))
    return str(root)


def install(tmp_path: Path, key: int | None) -> Path:
    root = tmp_path / "xs"
    (root / "bin").mkdir(parents=True)
    (root / "include" / "xsched" / "protocol").mkdir(parents=True)
    if key is not None:
        (root / "include" / "xsched" / "protocol" / "def.h").write_text(
            f"#define XSCHED_SERVER_CHANNEL_KEY    {key}\n")
    return root / "bin" / "xserver"


def test_channel_key_of_an_install(tmp_path: Path) -> None:
    assert channel_key(install(tmp_path, 77)) == 77
    assert channel_key(tmp_path / "xs") == 77
    assert channel_key(tmp_path / "nowhere" / "bin" / "xserver") == 1  # XSched's own


def test_xserver_argv_gives_policy_and_port() -> None:
    assert xserver_args(("/x/bin/xserver", "CFS", "50123"), 0) == ("CFS", 50123)
    assert xserver_args(("xserver",), 0) == ("HPF", 50000)  # XSched's defaults
    assert xserver_args(("py", "/x/bin/xserver", "HPF", "7"), 1) == ("HPF", 7)
    assert xserver_args(("xserver", "HPF"), 0) == (None, None)


def test_msg_queues_parse(tmp_path: Path) -> None:
    p = fake_proc(tmp_path / "proc", {}, [(1, 5, 1000, 42, 43), (99, 6, 0, 0, 0)])
    qs = msg_queues(f"{p}/sysvipc/msg")
    assert [(q.key, q.msqid, q.cuid, q.lspid, q.lrpid) for q in qs] == \
        [(1, 5, 1000, 42, 43), (99, 6, 0, 0, 0)]


def test_the_xserver_on_the_channel_is_found_with_port_user_and_command(tmp_path: Path) -> None:
    xs = install(tmp_path, None)  # no def.h: XSched's key 1
    other = install(tmp_path / "other", 5)
    p = fake_proc(tmp_path / "proc", {
        300: ([str(xs), "HPF", "50007"], os.getuid(), {}),
        301: ([str(other), "HPF", "50008"], 0, {}),  # another install's channel
        302: (["/usr/bin/python3", "/srv/app.py"], 0, {}),
    }, [(1, 9, 0, 0, 300)])
    found, stale = find_xserver(1, channel_key, proc=p)
    assert stale is None and found is not None and found.pid == 300
    assert (found.port, found.policy) == (50007, "HPF")
    assert found.channel is not None and found.channel.msqid == 9
    text = found.describe()
    assert "xserver pid 300" in text and "port 50007" in text and str(xs) in text
    assert "message queue key 1, msqid 9" in text
    assert find_xserver(1, channel_key, own={300}, proc=p)[0] is None  # our own


def test_an_xserver_whose_channel_is_not_listed_is_found_by_its_process(tmp_path: Path) -> None:
    """XSched 1.2.0 on the H200s: no queue of key 1 in /proc/sysvipc/msg while its
    xserver ran; the message says so without guessing why."""
    p = fake_proc(tmp_path / "proc", {300: ([str(install(tmp_path, None)), "HPF", "50000"],
                                            0, {})})
    found, _ = find_xserver(1, channel_key, proc=p)
    assert found is not None and found.channel is None
    text = found.describe()
    assert "was not found in /proc/sysvipc/msg; found by its process" in text
    assert "still starting" not in text and "namespace" not in text


def test_a_channel_without_a_live_holder_is_stale(tmp_path: Path) -> None:
    p = fake_proc(tmp_path / "proc", {}, [(1, 9, 0, 4000, 4001)])
    found, stale = find_xserver(1, channel_key, proc=p)
    assert found is None and stale is not None and stale.msqid == 9


def test_a_channel_held_by_a_process_that_is_no_xserver_is_still_refused(tmp_path: Path) -> None:
    p = fake_proc(tmp_path / "proc", {500: (["/opt/odd/sched"], 0, {})}, [(1, 9, 0, 0, 500)])
    found, stale = find_xserver(1, channel_key, proc=p)
    assert stale is None and found is not None and found.proc is None and found.port is None
    assert "held by pid 500" in found.describe()


def test_mps_daemons_their_folders_and_gpus(tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "nvidia-cuda-mps-control"
    tool.parent.mkdir()
    tool.write_text("")
    p = fake_proc(tmp_path / "proc", {
        600: ([str(tool), "-d"], 0, {"CUDA_MPS_PIPE_DIRECTORY": "/srv/mps"}),
        601: ([str(tool), "-f"], 0, {"CUDA_VISIBLE_DEVICES": "1"}),
        602: ([str(tool)], 0, {}),  # the tool run as a client: a command, not a daemon
        603: ([str(tool), "-d"], 1234, None),  # another user's: environment unreadable
    })
    ds = {d.proc.pid: d for d in find_mps_daemons(str(tool), proc=p)}
    assert sorted(ds) == [600, 601, 603]
    assert ds[600].pipe_dir == "/srv/mps" and ds[600].serves({3})
    assert ds[601].pipe_dir == "/tmp/nvidia-mps" and not ds[601].serves({0}) and ds[601].serves({1})
    assert ds[603].serves({0}) and "not readable" in ds[603].describe()
    other = tmp_path / "elsewhere" / "nvidia-cuda-mps-control"
    other.parent.mkdir()
    other.write_text("")  # another driver's tool (another file): not this box's MPS
    assert find_mps_daemons(str(other), proc=p) == []


def test_visible_devices_by_uuid_are_taken_to_serve_every_gpu() -> None:
    d = MpsDaemon(BoxProcess(1, 0, ("nvidia-cuda-mps-control", "-d")), "/p", "GPU-1234", True)
    assert d.serves({5})


def test_join_keys_are_strict() -> None:
    import pytest

    from xwatch.errors import ScenarioError
    from xwatch.scenario import parse_scenario

    wl = {"workload": [{"name": "a", "priority": "high", "model": "resnet18"}]}
    s = parse_scenario({**wl, "xsched": {"join": "set-policy"}, "mps": {"join": True}}, "f.toml")
    assert (s.xsched.join, s.mps.join) == ("set-policy", True)
    assert (parse_scenario(wl).xsched.join, parse_scenario(wl).mps.join) == ("no", False)
    with pytest.raises(ScenarioError) as e:
        parse_scenario({**wl, "xsched": {"join": "yes"}}, "f.toml")
    assert "xsched.join" in str(e.value) and "keep-policy" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        parse_scenario({**wl, "mps": {"joined": True}}, "f.toml")
    assert "joined" in str(e.value) and "f.toml" in str(e.value)


def test_gpu_indices_of_a_scenario() -> None:
    from xwatch.scenario import parse_scenario

    wl = {"workload": [{"name": "a", "priority": "high", "model": "resnet18"},
                       {"name": "b", "priority": "low", "model": "resnet18",
                        "device": "cuda:1"}]}
    assert parse_scenario(wl).gpu_indices() == {0, 1}
    assert parse_scenario({**wl, "gpus": [2, 3]}).gpu_indices() == {2, 3}


def test_strangers_are_the_processes_not_of_this_session(tmp_path: Path) -> None:
    """Ours: this xwatch's descendants, or marked with its XWATCH_OWNER (a daemonized
    child); another session's workloads (their own xwatch's) and any other program are
    strangers; a pid already gone cannot be judged."""
    me, other = 100, 200
    procs: dict[int, tuple[int, int, dict[str, str]]] = {  # pid: parent, uid, env
        me: (1, 0, {}), 101: (me, 0, {}), 102: (101, 0, {}),
        103: (1, 0, {"XWATCH_OWNER": str(me)}),
        other: (1, 1000, {}), 201: (other, 1000, {"XWATCH_OWNER": str(other)}),
        202: (1, 1000, {"XWATCH_OWNER": str(other)}), 203: (1, 0, {}),
    }
    p = fake_proc(tmp_path / "proc", {pid: (["python3", "w.py"], uid, env)
                                      for pid, (_, uid, env) in procs.items()})
    for pid, (parent, _, _) in procs.items():
        (Path(p) / str(pid) / "stat").write_text(f"{pid} (python3) S {parent} 0 0\n")
    box = Strangers(me=me, proc=p)
    assert box.foreign([101, 102, 103, me, 999]) == []  # ours, and one already gone
    theirs = box.foreign([101, 201, 202, 203])
    assert theirs == [201, 202, 203]
    assert box.seen(theirs, 37.24, 28.31, queues=4, devices={0x200000038})
    r = box.record
    assert r is not None and (r.t, r.t_measured, r.pids, r.queues) == (37.24, 28.31,
                                                                       [201, 202, 203], 4)
    assert r.devices == [0x200000038] and set(r.users) >= {"root"}
    assert not box.seen(theirs, 40.0, 31.0, queues=4, devices={0x200000038})  # no news
    line = box.line("xserver", joined=False)
    assert line.startswith("another process joined this xserver at t=37.2 s (28.3 s measured)")
    assert "pids 201, 202, 203, 4 XQueue(s) on device 0x200000038" in line
    assert box.line("xserver", joined=True).startswith(
        "processes not of this session share the joined xserver at t=37.2 s")
    assert "not a clean XSched measurement" in r.describe("xserver")
    assert box.seen([202], 41.0, 32.0, queues=6) and box.record is not None
    assert (box.record.t, box.record.queues) == (37.24, 6)  # still since the first look
    assert not box.seen([], 42.0, 33.0)
