"""The '?' screen: keys and how to read the numbers."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# xwatch keys

| key | what it does |
|---|---|
| `x` | stop every workload, switch NATIVE <-> XSCHED, restart them: a new phase |
| `m` | the same for MPS (NVIDIA): NATIVE <-> MPS under a private control daemon |
| `k` (MPS phase) | the MPS server's active thread percentage, live |
| `r` | restart every workload in the same mode: a new phase |
| `s` | export a snapshot (snapshot.json, events.csv.gz, report.md/html) into a timestamped folder |
| `k` | XSched live control: a workload's priority, its XQueues' threshold/batch/level, the policy |
| `C` | calibrate: HIGH alone and all together, native and XSched (4 phases); Compare splits the change |
| `a` | repeat the last A/B (the last two modes run) 3 more times each, interleaved |
| `A` | advise: race native, MPS and XSched settings to the cheapest that meets the SLO |
| `M` | the next per-request metric: latency_ms, then each named one (ttft_ms, tpot_ms, ...) |
| `[` `]` | scroll the workload table up / down (many workloads on one GPU) |
| `1`-`4` | tabs: live, compare, xsched, logs (`l` = logs, `c` = compare) |
| `p` | pause / resume the charts (data keeps flowing) |
| `t` | kernel capture: 2 s of GPU kernels from every built-in workload (torch.profiler) |
| `z` | zoom the kernel lane onto HIGH's slowest requests in turn (then back to the whole window) |
| `g` | several GPUs (`--gpus`): charts of all GPUs (HIGH's worst/best P99, LOW total), then each GPU |
| `e` | several GPUs: expand every GPU's copies in the table, or fold them to a line per GPU |
| `q`, Ctrl+C | stop every workload (and xserver), then quit |
| `?` | this help; Esc closes it |

# Reading the numbers
- Latency is in ms, from the **scheduled** send time for rate-driven workloads (a stalled
  GPU shows as latency and *late* starts), from the start of the request for closed loops.
  Each request ends with a device synchronize. Warm-up is never counted.
- Table columns **P50/P95/P99/max** cover the **sliding window** (the last `window_s`
  seconds, 10 s by default); **P99 ph / max ph** cover the whole phase. Once a phase has
  ended, every column shows the whole phase.
- Percentiles are nearest-rank, from a histogram with 0.5% wide buckets (error < 0.25%;
  exact when a workload reports whole numbers).
- **Compare**: the run is the unit. A change between one run of each mode is judged
  against this machine's recorded noise floor (`xwatch noise`; `~` within it), or not at
  all (`?`: run-to-run noise unmeasured). `a` adds runs; with two or more each, the
  answer's interval is Student's t over the paired runs. On several GPUs (`--gpus`)
  every GPU's copy counts: a run's value is the mean over its copies ("3 runs x 2
  GPUs"), and a GPU unlike the others is named as a finding.
- **Goodput** is the share of the SLO workload's requests at or under the SLO latency.
- NVML's GPU **utilization** is the share of time *a kernel was running*, not how full
  the GPU is.
- In XSched mode a workload is **engaged** only when xserver lists XQueues for its pid and
  they are seen ready/suspended while it completes requests. Before its models load, an
  XSched phase runs a few seconds of **preflight** under the shim (XSched tab).
- **stalled**: alive but no request completed (or no heartbeat) for longer than
  max(2 s, 20x its recent service time, 3 request gaps). A phase that ends with a workload
  stalled, or whose xserver died, is **failed**.
- Requests due but **unfinished** when a phase ends are counted at their waiting time so far
  (a lower bound) in the phase percentiles, and as misses in goodput.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(HELP)
