"""The '?' screen: the keys (``ui.keys``, as the bindings), how to read the numbers, and
what every verdict means (``core.modes.verdicts``, the one definition)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

from xwatch.core.modes import registry, verdicts
from xwatch.ui.keys import keys_table

READING = """\
# xwatch keys

{keys}

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
- A dim **`*`** after a percentile: fewer requests than that percentile needs (P95 from
  fewer than 20, P99 from fewer than 100), so the value is their maximum, not yet a P99.
  In the Compare tab `~` is within the noise floor, `?` has no verdict (run-to-run noise
  unmeasured) and `*` marks a change drawn from too few requests.
"""
STALLS_AND_VERDICTS = """- **stalled**: alive but no request completed (or no heartbeat) for longer than
  max(2 s, 20x its recent service time, 3 request gaps). A phase that ends with a workload
  stalled, or whose xserver died, is **failed**.
- Requests due but **unfinished** when a phase ends are counted at their waiting time so far
  (a lower bound) in the phase percentiles, and as misses in goodput.

# Verdicts: did the mode take part?
""" + verdicts.markdown() + "\n\n" + verdicts.TOOK_NO_PART + "\n"


def help_markdown() -> str:
    """The help: the keys, how to read the numbers, what each mode says of its evidence
    (``Mode.help``), and what every verdict means."""
    modes = registry.modes()
    evidence = [m.label for m in modes if m.backend_factory is not None]
    said = "".join(f" {m.help}" for m in modes if m.help)
    return (READING.format(keys=keys_table())
            + f"- Whether a mode took part is a **verdict** per workload (below; the "
            f"{', '.join(evidence)} and Logs\n  tabs show the evidence).{said}\n"
            + STALLS_AND_VERDICTS)


HELP = help_markdown()


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(help_markdown())
