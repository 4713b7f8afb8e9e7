"""The dashboard's keys, written once: ``KEYS``, each row of the help screen's table
with the bindings it explains. The app's ``BINDINGS`` (``bindings``) and the help
screen's table (``keys_table``) are both made from it."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Key:
    """A row of the help: the keys as shown, what they do, and their bindings (none:
    a key whose binding another row holds, e.g. ``k`` in an MPS phase)."""

    keys: str
    does: str
    bindings: tuple[Binding, ...] = ()


KEYS = (
    Key("`x`", "stop every workload, switch NATIVE <-> XSCHED, restart them: a new phase",
        (Binding("x", "mode_on_off('xsched')", "XSched on/off"),)),
    Key("`m`", "the same for MPS (NVIDIA): NATIVE <-> MPS under a private control daemon",
        (Binding("m", "mode_on_off('mps')", "MPS on/off"),)),
    Key("`k` (MPS phase)", "the MPS server's active thread percentage, live"),
    Key("`r`", "restart every workload in the same mode: a new phase",
        (Binding("r", "restart", "Restart"),)),
    Key("`s`", "export a snapshot (snapshot.json, events.csv.gz, report.md/html) into a "
        "timestamped folder", (Binding("s", "export", "Snapshot"),)),
    Key("`k`", "XSched live control: a workload's priority, its XQueues' "
        "threshold/batch/level, the policy", (Binding("k", "control", "XSched ctl"),)),
    Key("`C`", "calibrate: HIGH alone and all together, native and XSched (4 phases); "
        "Compare splits the change", (Binding("C", "calibrate", "Calibrate", show=False),)),
    Key("`a`", "repeat the last A/B (the last two modes run) 3 more times each, interleaved",
        (Binding("a", "repeat_ab", "A/B x3", show=False),)),
    Key("`A`", "advise: race native, MPS and XSched settings to the cheapest that meets "
        "the SLO", (Binding("A", "advise", "Advise", show=False),)),
    Key("`K`", "capacity: the highest HIGH load each sharing setting carries under the "
        "SLO, and the shares of a dedicated GPU's work it keeps",
        (Binding("K", "capacity", "Capacity", show=False),)),
    Key("`M`", "the next per-request metric: latency_ms, then each named one (ttft_ms, "
        "tpot_ms, ...); an SLO on a named metric: that one first",
        (Binding("M", "next_metric", "Metric", show=False),)),
    Key("`[` `]`", "scroll the workload table up / down (many workloads on one GPU)",
        (Binding("left_square_bracket", "scroll_table(-3)", "Table up", show=False),
         Binding("right_square_bracket", "scroll_table(3)", "Table down", show=False))),
    Key("`1`-`4`", "tabs: live, compare, xsched, logs (`l` = logs, `c` = compare)",
        (Binding("l", "tab('logs')", "Logs"),
         Binding("c", "tab('compare')", "Compare", show=False),
         Binding("1", "tab('live')", "Live", show=False),
         Binding("2", "tab('compare')", "Compare", show=False),
         Binding("3", "tab('xsched')", "XSched", show=False),
         Binding("4", "tab('logs')", "Logs", show=False))),
    Key("`p`", "pause / resume the charts (data keeps flowing)",
        (Binding("p", "pause", "Pause"),)),
    Key("`t`", "kernel capture: 2 s of GPU kernels from every built-in workload "
        "(torch.profiler)", (Binding("t", "capture", "Kernels", show=False),)),
    Key("`z`", "zoom the kernel lane onto HIGH's slowest requests in turn (then back to "
        "the whole window)", (Binding("z", "zoom_lane", "Zoom lane", show=False),)),
    Key("`g`", "several GPUs (`--gpus`): charts of all GPUs (HIGH's worst/best P99, LOW "
        "total), then each GPU", (Binding("g", "chart_gpu", "Chart GPU", show=False),)),
    Key("`e`", "several GPUs: expand every GPU's copies in the table, or fold them to a "
        "line per GPU", (Binding("e", "fold_gpus", "Expand GPUs", show=False),)),
    Key("`q`, Ctrl+C", "stop every workload (and xserver), then quit",
        (Binding("q", "quit", "Quit"),
         Binding("ctrl+c", "quit", "Quit", show=False, priority=True))),
    Key("`?`", "this help; Esc closes it", (Binding("question_mark", "help", "Help"),)),
)


def bindings() -> list[Binding | tuple[str, str] | tuple[str, str, str]]:
    """The app's bindings: every row's, in the table's order, quit last (the footer
    shows the shown ones in this order, quit at its right end)."""
    rows = sorted(KEYS, key=lambda k: any(b.action == "quit" for b in k.bindings))
    return [b for row in rows for b in row.bindings]


def keys_table() -> str:
    """The help screen's table of keys (Markdown)."""
    return "\n".join(["| key | what it does |", "|---|---|",
                      *(f"| {k.keys} | {k.does} |" for k in KEYS)])
