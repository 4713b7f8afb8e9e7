"""Where a server runs: its whole process tree pinned to the scenario's GPU (or one
server per GPU with ``--gpus``, ``chat@0`` ...), ``{device}`` and ``{port}`` in its
command, ``port = "auto"`` (a free port for each copy) and a fixed port that is taken,
named before anything starts."""

from __future__ import annotations

import os
import socket

import pytest

from xwatch.core.engine.launch import build_launch
from xwatch.core.engine.serve import CONFIG_ENV
from xwatch.core.engine.serve.config import ServeConfig
from xwatch.core.engine.serve.ports import free_port, listener_pid, port_holder
from xwatch.errors import ScenarioError, UsageError
from xwatch.scenario import load_scenario, parse_scenario

BASE = {"PATH": "/usr/bin"}  # no CUDA_VISIBLE_DEVICES of the user's own


def _serve(**kw: object) -> dict[str, object]:
    w: dict[str, object] = {"name": "chat", "priority": "high", "rate": 2,
                            "server": ["srv", "--port", "{port}", "--device={device}"],
                            "port": "auto"}
    w.update(kw)
    return {"workload": [w]}


def _cfg(launch_env: object) -> ServeConfig:
    assert isinstance(launch_env, dict) or hasattr(launch_env, "get")
    return ServeConfig.from_json(launch_env[CONFIG_ENV])  # type: ignore[index]


def test_a_servers_tree_is_pinned_to_the_scenarios_device() -> None:
    """auto: GPU 0 (PCI order), and {device} stays 'auto'; cuda:N (the scenario's, the
    workload's or --device's): GPU N, seen as cuda:0; cpu: no GPU visible."""
    auto = parse_scenario(_serve()).workload("chat")
    ls = build_launch(auto, base_env=BASE)
    assert (ls.env["CUDA_VISIBLE_DEVICES"], ls.env["HIP_VISIBLE_DEVICES"],
            ls.env["CUDA_DEVICE_ORDER"]) == ("0", "0", "PCI_BUS_ID")
    assert ls.env_added["CUDA_VISIBLE_DEVICES"] == "0"  # recorded in the snapshot
    cfg = _cfg(ls.env)
    assert cfg.server == ("srv", "--port", "{port}", "--device=auto") and cfg.port == 0

    two = parse_scenario({**_serve(), "device": "cuda:2"})
    ls = build_launch(two.workload("chat"), base_env=BASE)
    assert ls.env["CUDA_VISIBLE_DEVICES"] == "2"
    assert _cfg(ls.env).server[-1] == "--device=cuda:0"
    assert two.gpu_indices() == {2}
    moved = two.with_overrides(device="cuda:3").workload("chat")  # --device moves it too
    assert build_launch(moved, base_env=BASE).env["CUDA_VISIBLE_DEVICES"] == "3"
    own = parse_scenario(_serve(device="cuda:1")).workload("chat")
    assert build_launch(own, base_env=BASE).env["CUDA_VISIBLE_DEVICES"] == "1"

    cpu = build_launch(parse_scenario(_serve(device="cpu")).workload("chat"), base_env=BASE)
    assert cpu.env["CUDA_VISIBLE_DEVICES"] == "" and _cfg(cpu.env).server[-1] == "--device=cpu"
    # the user's own choice of GPUs: auto takes its first one, in its own order
    mine = build_launch(auto, base_env={**BASE, "CUDA_VISIBLE_DEVICES": "GPU-abc,GPU-def"})
    assert mine.env["CUDA_VISIBLE_DEVICES"] == "GPU-abc"
    # the workload's own env still has the last word
    env_set = parse_scenario(_serve(env={"CUDA_VISIBLE_DEVICES": "5"})).workload("chat")
    assert build_launch(env_set, base_env=BASE).env["CUDA_VISIBLE_DEVICES"] == "5"


def test_a_fixed_port_is_put_where_the_command_says_port() -> None:
    w = parse_scenario(_serve(port=8123)).workload("chat")
    cfg = _cfg(build_launch(w, base_env=BASE).env)
    assert cfg.port == 8123 and cfg.server[:3] == ("srv", "--port", "8123")
    plain = parse_scenario(_serve(port=8124, server=["srv", "-p", "8124"])).workload("chat")
    assert _cfg(build_launch(plain, base_env=BASE).env).server == ("srv", "-p", "8124")


def test_one_server_per_gpu_each_with_its_own_port_and_gpu() -> None:
    scen = load_scenario("serve-train").with_overrides(gpus=(0, 1, 2, 3))
    chats = [w for w in scen.workloads if w.base_name == "chat"]
    assert [w.name for w in chats] == ["chat@0", "chat@1", "chat@2", "chat@3"]
    assert scen.gpu_indices() == {0, 1, 2, 3}
    for g, w in enumerate(chats):
        ls = build_launch(w, base_env=BASE)
        assert ls.env["CUDA_VISIBLE_DEVICES"] == str(g) == ls.env["HIP_VISIBLE_DEVICES"]
        cfg = _cfg(ls.env)
        assert cfg.name == f"chat@{g}" and cfg.port == 0  # each generator chooses its own
        argv = list(cfg.server)
        assert argv[argv.index("--device") + 1] == "cuda:0"
        assert argv[argv.index("--port") + 1] == "{port}"
    # the snapshot records the scenario as written (loading replicates again)
    assert [w["name"] for w in scen.to_dict()["workloads"]] == ["chat", "trainer"]
    assert scen.to_dict()["workloads"][0]["port"] == "auto"


def test_a_fixed_port_cannot_be_copied_and_auto_needs_port_in_the_command() -> None:
    with pytest.raises(UsageError, match=r"fixed port 8000, so its copies on GPUs 0, 1 "
                                         r"would collide: set port = \"auto\""):
        parse_scenario(_serve(port=8000)).on_gpus((0, 1))
    assert parse_scenario(_serve(port=8000)).on_gpus((1,)).workload("chat@1").port == 8000
    with pytest.raises(ScenarioError, match=r"workload\[0\] \(chat\)\.port: .*put \{port\} "
                                            "where the server command takes its port"):
        parse_scenario(_serve(server=["srv", "--port", "8000"]))
    with pytest.raises(ScenarioError, match=r"port: 'eight' must be an integer from 1 to "
                                            r"65535 or 'auto'"):
        parse_scenario(_serve(port="eight"))
    two = {"workload": [_serve(port=9000)["workload"][0],  # type: ignore[index]
                        {**_serve(port=9000)["workload"][0], "name": "b"}]}  # type: ignore[index]
    with pytest.raises(ScenarioError, match="9000 is also the port of the server workload chat"):
        parse_scenario(two)


def test_the_builtins_take_a_free_port_and_their_device() -> None:
    for name in ("serve-train", "serve-own"):
        w = load_scenario(name).workload("chat")
        assert w.port_auto and w.device == "auto", name
    argv = load_scenario("serve-train").workload("chat").server
    assert argv is not None and "{device}" in argv and "{port}" in argv


def test_free_ports_and_who_holds_one() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        held = s.getsockname()[1]
        holder = port_holder(held)
        assert holder is not None and holder.startswith(f"pid {os.getpid()} (")
        assert listener_pid(held) == os.getpid()
        got = free_port(avoid={held})
        assert got != held and port_holder(got) is None
    assert port_holder(held) is None  # closed: free again


def test_the_generator_chooses_the_port_and_fills_the_command() -> None:
    from xwatch.core.engine.serve.server import Server

    cfg = ServeConfig(name="chat", server=("srv", "--port={port}", "--x", "{port}"), rate=1.0,
                      port=0)
    s = Server(cfg)
    port = s.cfg.port
    assert port > 0 and s.cfg.port_auto and s.base == f"http://127.0.0.1:{port}"
    assert s.cfg.server == ("srv", f"--port={port}", "--x", str(port))
    fixed = Server(ServeConfig(name="c", server=("srv", "9"), rate=1.0, port=9001))
    assert fixed.cfg.port == 9001 and not fixed.cfg.port_auto


def test_a_port_taken_between_its_choice_and_the_start_is_named() -> None:
    import asyncio
    import subprocess
    import sys

    from xwatch.core.engine.launch import OWNER_ENV
    from xwatch.core.engine.serve.server import Fatal, Server

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        srv = Server(ServeConfig(name="chat", server=("srv",), rate=1.0, port=port,
                                 port_auto=True))
        with pytest.raises(Fatal, match=rf"port {port}, chosen free for it \(port = \"auto\"\), "
                                        rf"was taken by pid {os.getpid()} .* run it again"):
            asyncio.run(srv.start_server())
    # another xwatch workload's server answering on the port: named, not measured
    code = ("import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); "
            "print(s.getsockname()[1], flush=True); time.sleep(30)")
    other = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, OWNER_ENV: "1"})
    mine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert other.stdout is not None
        port = int(other.stdout.readline())
        srv = Server(ServeConfig(name="chat", server=("srv",), rate=1.0, port=port,
                                 port_auto=True))
        srv.proc = mine  # type: ignore[assignment]  # only its pid is read
        with pytest.raises(Fatal, match=rf"answered on port {port} by pid {other.pid} .*another "
                                        r"xwatch workload's process, not by this server"):
            srv.check_listener()
        srv.proc = other  # type: ignore[assignment]  # its own server: fine
        srv.check_listener()
    finally:
        for p in (other, mine):
            p.kill()
            p.wait()


def test_a_recorded_server_scenario_loads_again() -> None:
    from xwatch.core.export.snapshot import scenario_from_dict

    scen = load_scenario("serve-train").with_overrides(device="cuda:1")
    again = scenario_from_dict(scen.to_dict(), "x")
    w = again.workload("chat")
    assert w.port_auto and w.device == "cuda:1" and w.server == scen.workload("chat").server
