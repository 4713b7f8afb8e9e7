"""The dashboard's keys, written once: ``rows()``, each row of the help screen's table
with the bindings it explains: the dashboard's own, and each mode's (``Mode.keys_help``:
its key, its live control ...), by their places. The app's ``BINDINGS`` (``bindings``)
and the help screen's table (``keys_table``) are both made from it. The rows that speak
of every mode (advise's race, the tabs) are made from the registry."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

from xwatch.core.modes import registry


@dataclass(frozen=True)
class Key:
    """A row of the help: the keys as shown, what they do, and their bindings (none:
    a key whose binding another row holds, e.g. ``k`` in a phase whose mode has a live
    control screen of its own)."""

    keys: str
    does: str
    bindings: tuple[Binding, ...] = ()


def _and(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def _advise() -> Key:
    """``A``: native raced against every mode with settings to race, by label."""
    raced = ["native", *sorted(m.label for m in registry.modes() if m.advise_grid)]
    return Key("`A`", f"advise: race {_and(raced)} settings to the cheapest that meets "
               "the SLO", (Binding("A", "advise", "Advise", show=False),))


def _tabs() -> Key:
    """The tabs by number: live, compare, each mode's own (``Mode.tab``), logs."""
    tabs = [("live", "Live"), ("compare", "Compare"),
            *((m.name, m.label) for m in registry.modes() if m.tab is not None),
            ("logs", "Logs")]
    return Key(f"`1`-`{len(tabs)}`", f"tabs: {', '.join(t for t, _ in tabs)} (`l` = logs, "
               "`c` = compare)",
               (Binding("l", "tab('logs')", "Logs"),
                Binding("c", "tab('compare')", "Compare", show=False),
                *(Binding(str(i), f"tab({t!r})", label, show=False)
                  for i, (t, label) in enumerate(tabs, 1))))


def rows() -> list[Key]:
    """Every row, by place: the dashboard's own and each registered mode's."""
    placed = [
        (40, Key("`r`", "restart every workload in the same mode: a new phase",
                 (Binding("r", "restart", "Restart"),))),
        (50, Key("`s`", "export a snapshot (snapshot.json, events.csv.gz, report.md/html) "
                 "into a timestamped folder", (Binding("s", "export", "Snapshot"),))),
        (80, Key("`a`", "repeat the last A/B (the last two modes run) 3 more times each, "
                 "interleaved", (Binding("a", "repeat_ab", "A/B x3", show=False),))),
        (90, _advise()),
        (100, Key("`K`", "capacity: the highest HIGH load each sharing setting carries under "
                  "the SLO, and the shares of a dedicated GPU's work it keeps",
                  (Binding("K", "capacity", "Capacity", show=False),))),
        (110, Key("`M`", "the next per-request metric: latency_ms, then each named one "
                  "(ttft_ms, tpot_ms, ...); an SLO on a named metric: that one first",
                  (Binding("M", "next_metric", "Metric", show=False),))),
        (120, Key("`[` `]`", "scroll the workload table up / down (many workloads on one GPU)",
                  (Binding("left_square_bracket", "scroll_table(-3)", "Table up", show=False),
                   Binding("right_square_bracket", "scroll_table(3)", "Table down",
                           show=False)))),
        (130, _tabs()),
        (140, Key("`p`", "pause / resume the charts (data keeps flowing)",
                  (Binding("p", "pause", "Pause"),))),
        (150, Key("`t`", "kernel capture: 2 s of GPU kernels from every built-in workload "
                  "(torch.profiler)", (Binding("t", "capture", "Kernels", show=False),))),
        (160, Key("`z`", "zoom the kernel lane onto HIGH's slowest requests in turn (then "
                  "back to the whole window)", (Binding("z", "zoom_lane", "Zoom lane",
                                                        show=False),))),
        (170, Key("`g`", "several GPUs (`--gpus`): charts of all GPUs (HIGH's worst/best P99, "
                  "LOW total), then each GPU", (Binding("g", "chart_gpu", "Chart GPU",
                                                        show=False),))),
        (180, Key("`e`", "several GPUs: expand every GPU's copies in the table, or fold them "
                  "to a line per GPU", (Binding("e", "fold_gpus", "Expand GPUs", show=False),))),
        (190, Key("`q`, Ctrl+C", "stop every workload (and xserver), then quit",
                  (Binding("q", "quit", "Quit"),
                   Binding("ctrl+c", "quit", "Quit", show=False, priority=True)))),
        (200, Key("`?`", "this help; Esc closes it", (Binding("question_mark", "help", "Help"),))),
    ]
    placed += [(k.place, Key(k.keys, k.does, tuple(Binding(key, action, words, show=shown)
                                                   for key, action, words, shown in k.bindings)))
               for m in registry.modes() for k in m.keys_help]
    return [k for _, k in sorted(placed, key=lambda p: p[0])]


def bindings() -> list[Binding | tuple[str, str] | tuple[str, str, str]]:
    """The app's bindings: every row's, in the table's order, quit last (the footer
    shows the shown ones in this order, quit at its right end)."""
    ordered = sorted(rows(), key=lambda k: any(b.action == "quit" for b in k.bindings))
    return [b for row in ordered for b in row.bindings]


def keys_table() -> str:
    """The help screen's table of keys (Markdown)."""
    return "\n".join(["| key | what it does |", "|---|---|",
                      *(f"| {k.keys} | {k.does} |" for k in rows())])
