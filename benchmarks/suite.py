"""The benchmark suite's registry: one entry per benchmark (what it measures, how long
it takes, whether it needs a GPU, how to run it), and the GPU sittings' plans read from
their headers (``benchmarks/gpu/plans/*.sh``). ``python -m benchmarks list`` prints it;
``python -m benchmarks run NAME [ARGS...]`` runs one. docs/benchmarks.md's table of the
suite is generated from it (``python -m tools.docs``).

The scripts sit by kind (docs/benchmarks.md#layout): ``measure/`` (what xwatch costs and
how fast it is), ``stats/`` (its statistics against a planted truth or an A/A),
``gpu/`` (``device.sh``, its plans and their scenarios), ``investigations/TOPIC/`` (one
question about a scheduler, kept with the results pages it produced). Code a test also
needs lives in ``xwatch.testing``, never here: tests do not import benchmarks, nor
benchmarks tests.

To register a benchmark: add its script to the folder of its kind (it prints its result
and takes its own arguments) and one ``Bench`` line to ``BENCHES`` below. To add a GPU
sitting: a plan file ``benchmarks/gpu/plans/NAME.sh`` whose first lines say ``# measures:``,
``# takes:`` and ``# params:``; it is sourced by ``benchmarks/gpu/device.sh`` with
``device_lib.sh``'s ``run``/``say``/``left`` and ``$R`` (the output folder) and ``$X``
(xwatch) set, and is listed and run like any other benchmark."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

# what a benchmark needs: "no" (any machine), "optional" (measures more with one), "yes"
GPU = ("no", "optional", "yes")


@dataclass(frozen=True)
class Bench:
    name: str
    script: str        # its path under benchmarks/ (.py run by python, .sh by bash)
    measures: str
    takes: str         # at its defaults
    gpu: str           # one of GPU
    example: str = ""  # arguments of a typical run ("" = its defaults)
    args: tuple[str, ...] = ()  # fixed leading arguments (a plan's name)
    params: str = ""   # a plan's NAME=VALUE parameters


BENCHES: tuple[Bench, ...] = (
    Bench("ingest", "measure/ingest.py", "events a second xwatch parses and aggregates from one pipe, "
          "against a bare readline + json.loads loop", "30 s", "no", "--events 300000"),
    Bench("run-spread", "measure/run_spread.py", "whether a shorter run is a noisier run: "
          "each run length's run-to-run SD of the SLO workload's log P99 and P50 from noise "
          "snapshots (could a capacity probe run shorter at higher loads; the GPU plan "
          "run-length makes them)",
          "1 s", "no", "SNAPSHOT.json ..."),
    Bench("worker-overhead", "measure/worker_overhead.py", "what recording and sending one request's "
          "event costs the worker loop", "10 s", "no", "--n 300000"),
    Bench("dashboard-cpu", "measure/dashboard_cpu.py", "the dashboard process's own CPU (the "
          "observer), on demo and a fast synthetic producer, or a scenario and mode",
          "2 min", "optional", "--only demo --seconds 20"),
    Bench("dashboard-breakdown", "measure/dashboard_breakdown.py", "where the dashboard's CPU goes, "
          "per component, without a profiler", "1 min", "optional", "demo --seconds 20"),
    Bench("chart-cost", "measure/chart_cost.py", "CPU per draw of each live chart, on a recorded "
          "session", "1 min", "no"),
    Bench("dashboard-screenshot", "measure/dashboard_screenshot.py", "the real dashboard headless on "
          "a scenario: an SVG screenshot, its CPU, what the table showed, nothing left "
          "running", "1 min", "optional", "demo /tmp/demo.svg --seconds 20"),
    Bench("snapshot-cost", "measure/snapshot_cost.py", "the per-second work on the event loop for N "
          "workloads: a snapshot, stall checks, a second's ingest", "1 min", "no"),
    Bench("snapshot-bytes", "measure/snapshot_bytes.py", "whether a change leaves snapshot files and "
          "reports byte for byte as another tree writes them", "1 min", "no",
          "--against /tmp/old"),
    Bench("soak", "measure/soak.py", "memory and disk over a long run at a high event rate",
          "10 min", "no", "--seconds 120"),
    Bench("startup", "measure/startup.py", "xwatch's fixed start-up, from its process start to the "
          "first event counted", "30 s", "no", "--runs 3"),
    Bench("phase-start", "measure/phase_start.py", "a phase's start, stage by stage, per mode, with "
          "intervals", "1-3 min", "optional",
          "demo --modes native --repeat 2 --duration 2 --device cpu"),
    Bench("restart", "measure/restart.py", "the dashboard's m, x and r keys, from the key to the new "
          "phase's first measured second", "2 min", "optional",
          "demo --modes native --toggles 2 --device cpu"),
    Bench("fleet-speed", "measure/fleet_speed.py", "a plan over K Ray boxes against 1 (a real "
          "local cluster in a loopback-only namespace, paced synthetic workloads): runs a "
          "minute, and the answer's interval width at about equal wall time (needs root and "
          "the ray extra)", "4 min", "no", "--boxes 3 --runs 4 --repeat 2"),
    Bench("fleet-agent", "measure/fleet_agent.py", "the fleet's box agent's phase path without "
          "Ray (the BoxSession the Ray actor holds): compare's runs on this machine, merged "
          "as the fleet merges them", "1 min", "optional",
          "demo --modes native,mps --repeat 2 --duration 3 --device cpu"),
    Bench("telemetry-poll", "measure/telemetry_poll.py", "one telemetry poll's cost (device counters, "
          "per-process queries) and one real sample", "20 s", "optional",
          "--backend host --polls 100"),
    Bench("poll-costs", "measure/poll_costs.py", "each of the observer's periodic polls taken apart "
          "(NVML, /xqueues against a served copy, the MPS control tool)", "1 min", "optional"),
    Bench("attribution-pace", "stats/attribution_pace.py", "what a slower /xqueues pace costs tail "
          "attribution, on every recorded XSched phase", "1 min", "no", "--repeat 5"),
    Bench("aa-check", "stats/aa_check.py", "the A/A check of a recorded session: one mode's runs "
          "split in halves must be within noise, a planted 2x shift must not", "5 s", "no",
          "SNAPSHOT.json native"),
    Bench("race-sim", "stats/race_sim.py", "advise's race against a planted frontier: wrong choices, "
          "false 'met', minutes (positional: TRIALS BUDGET_MIN)", "5 min", "no", "50 60"),
    Bench("race-coverage", "stats/race_coverage.py", "the race's intervals from the iterations up: "
          "how often they cover the truth over every look and candidate, and their widths "
          "(positional: RACES LOOKS [CONFIG ...])", "1 min", "no", "200 6"),
    Bench("race-case", "stats/race_case.py", "issue 65's H200 race rebuilt from its numbers, "
          "replayed under the old and the new intervals: when it decides and what", "5 s",
          "no", ""),
    Bench("ray-blocks", "stats/ray_blocks.py", "a fleet's runs with each box as a block against "
          "a known truth (one box 20% slower, heavy tails, a lost box): coverage over every "
          "look of a race and of compare's difference, blocked and not, and the widths "
          "(positional: RACES LOOKS TRIALS)", "5 min", "no", "200 8 1000"),
    Bench("capacity-sim", "stats/capacity_sim.py", "the capacity search against planted knees: how "
          "often a bracket misses its knee at any look, how often it settles within 10%, runs "
          "and minutes to decide (positional: TRIALS)", "2 min", "no", "200 --case intensive"),
    Bench("t-looks", "stats/t_looks.py", "the capacity search's per-look level with "
          "Student's t on a load's own runs (analysis.capacity.loads.T_TABLE): the highest at "
          "which its nine looks at 2-10 runs cross together with at most alpha, by Monte "
          "Carlo (positional: MILLIONS_OF_PATHS SEED)", "5 min", "no", "200 2026"),
    Bench("race-savings", "stats/race_savings.py", "how many runs racing saves against the full grid "
          "to the same decision (positional: TRIALS SD)", "2 min", "no", "50 0.8"),
    Bench("gpu-width-sim", "stats/gpu_width_sim.py", "how much narrower HIGH's P50 and P99 "
          "intervals get with every GPU's copy in the answer (simulated with run-shared "
          "effects, against a known truth), or the widths of two real runs (--measured "
          "ONE TWO)", "5 s", "no", "--runs 3 --sims 500"),
    Bench("split-width-sim", "stats/split_width_sim.py", "compare --layout split against one "
          "phase per mode at equal wall time: interval widths and their coverage of a known "
          "truth (simulated with run-shared effects), or the widths of two real compares "
          "(--measured REPLICATE SPLIT)", "5 s", "no", "--gpus 4 --rounds 3 --sims 500"),
    Bench("neighbours-aa", "stats/neighbours_aa.py", "the neighbour A/A: one setting on GPU A "
          "alone against beside busy GPUs, interleaved rounds, with a planted 1.5x bias "
          "that must be caught", "3 min", "yes",
          "OUT intensive --gpus 0,1 --rounds 4 --duration 8"),
    Bench("split-aa", "stats/split_aa.py", "the split layout's A/A: native against native, each "
          "phase's GPUs cut into the split layout's halves, swapped every round, with a "
          "planted 1.5x bias that must be caught", "3 min", "yes",
          "OUT intensive --gpus 0,1,2,3 --rounds 6 --duration 10"),
    Bench("race-replay", "stats/race_replay.py", "a recorded advise race replayed look by look under "
          "the race's intervals as they are and as they were", "10 s", "no", "SNAPSHOT"),
    Bench("observer-effect", "measure/observer_effect.py", "HIGH's latency under xwatch against the "
          "independent yardstick, from a folder the yardstick plan wrote", "5 s", "no", "DIR"),
    Bench("yardstick", "measure/yardstick.py", "an independent latency loop written without xwatch "
          "code: ResNet-18 at N req/s, optionally beside ResNet-50 b1024", "1 min", "yes",
          "--with-low --seconds 15"),
    Bench("live-controls", "measure/live_controls.py", "XSched's live controls (priority hint, XQueue "
          "config, policy) through xwatch's core, read back from xserver", "1 min", "yes",
          "intensive --xsched ROOT --device cuda:0"),
    Bench("xsched-policies", "investigations/xsched/xsched_policies.py", "every policy an "
          "XSched install can create, set by its own number and read back from the real xserver",
          "30 s", "no", "ROOT --spup"),
    Bench("xsched-exit-crash", "investigations/xsched/xsched_exit_crash.py", "where XSched "
          "1.2's shim crashes at exit, run by run", "5 min", "yes", "ROOT OUT 20 2"),
    Bench("keepalive-probe", "investigations/xsched/keepalive_probe.py", "a kept-alive "
          "/xqueues connection against a fresh one per poll, on a running xserver", "30 s", "yes"),
    Bench("loadgen", "measure/loadgen.py", "the server workload's load generator against the fake "
          "OpenAI server at rising rates: its lateness (real send minus scheduled) and its "
          "CPU per streamed token, up to the rate it saturates one core", "30 s", "no",
          "--rates 25,50,100 --seconds 4"),
)


def plans() -> tuple[Bench, ...]:
    """The GPU sittings: one Bench per plan file, from its header lines."""
    out = []
    for f in sorted((HERE / "gpu" / "plans").glob("*.sh")):
        head: dict[str, str] = {}
        for line in f.read_text().splitlines():
            if not line.startswith("# "):
                break
            key, _, val = line[2:].partition(": ")
            head[key] = val
        missing = {"measures", "takes", "params"} - head.keys()
        if missing:
            raise ValueError(f"{f}: the plan's header lacks # {', # '.join(sorted(missing))}")
        out.append(Bench(f"device-{f.stem}", "gpu/device.sh", head["measures"], head["takes"],
                         "yes", "OUTDIR [NAME=VALUE ...]", args=(f.stem,),
                         params=head["params"]))
    return tuple(out)


def every() -> tuple[Bench, ...]:
    return BENCHES + plans()


#: the folders a benchmark script may sit in (its kind)
KINDS = ("measure", "stats", "investigations")


def problems() -> list[str]:
    """What is wrong with the registry (``python -m benchmarks check``; the tests run it):
    a name twice, a script on disk not registered or registered but not there, a GPU
    need not in GPU, a benchmark that does not say what it measures or how long."""
    out = []
    names = [b.name for b in every()]
    out += [f"{n}: registered twice" for n in sorted({n for n in names if names.count(n) > 1})]
    on_disk = {p.relative_to(HERE).as_posix() for kind in KINDS
               for p in (HERE / kind).rglob("*.py") if p.name != "__init__.py"}
    out += [f"benchmarks/{s}: not registered (add a Bench line to benchmarks/suite.py)"
            for s in sorted(on_disk - {b.script for b in BENCHES})]
    for b in every():
        if not (HERE / b.script).is_file():
            out.append(f"{b.name}: benchmarks/{b.script} is not there")
        if b.gpu not in GPU or not b.measures or not b.takes:
            out.append(f"{b.name}: gpu must be one of {GPU}, measures and takes said")
    return out


def find(name: str) -> Bench:
    for b in every():
        if b.name == name:
            return b
    raise KeyError(name)


def command(b: Bench, args: list[str]) -> list[str]:
    """The command line that runs ``b`` with ``args``, from the repository's root."""
    import sys

    path = str(HERE / b.script)
    runner = ["bash"] if b.script.endswith(".sh") else [sys.executable]
    return [*runner, path, *b.args, *args]


def markdown() -> str:
    """The suite as a Markdown table (docs/benchmarks.md)."""
    rows = ["| benchmark | measures | takes | GPU | arguments of a typical run |",
            "|---|---|---|---|---|"]
    for b in every():
        what = b.measures + (f" (parameters: {b.params})" if b.params else "")
        cells = [f"`{b.name}`", what, b.takes, b.gpu, f"`{b.example}`" if b.example else "(its defaults)"]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)
