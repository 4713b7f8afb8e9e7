"""The observer effect, decided with intervals: HIGH's latency under xwatch against
the independent yardstick (``benchmarks/measure/yardstick.py --out``), repeats interleaved.

    python benchmarks/measure/observer_effect.py DIR

DIR holds ``yard-N.json`` (yardstick latencies) and ``off-N/``, ``nvml-N/`` (xwatch
exports with telemetry off / NVML) for repeats N = 1, 2, ...; prints for each
xwatch variant the pooled difference in HIGH's P50 and P99 (xwatch - yardstick)
with its 95% interval, each repeat's difference, and how noisy the machine was
(the spread of the yardstick's own P99 over the repeats).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from xwatch.core.analysis.stats.intervals import Hist, diff_interval, merge, percentile_interval
from xwatch.core.analysis.verdict import Change
from xwatch.core.engine.stats import LogHistogram
from xwatch.core.model.metric import Metric


def yard_hist(path: Path) -> Hist:
    lat = json.loads(path.read_text())["latency_ms"]
    h = LogHistogram()
    for v in lat:
        h.add(v)
    return Hist.of(h, min(lat), max(lat))


def xwatch_hist(folder: Path, name: str = "high") -> Hist | None:
    from xwatch.core.analysis.stats.intervals import hist_of
    from xwatch.core.export.snapshot import load_snapshot

    try:
        snap = load_snapshot(folder / "snapshot.json")
    except Exception:
        return None
    w = snap.phases[0].workload(name) if snap.phases else None
    return hist_of(w) if w is not None and w.latency_hist.buckets else None


def main() -> int:
    d = Path(sys.argv[1])
    yards = sorted(d.glob("yard-*.json"))
    reps = [p.stem.split("-")[1] for p in yards]
    ys = {r: yard_hist(d / f"yard-{r}.json") for r in reps}
    p99s = [percentile_interval(h, 99).est for h in ys.values()]
    print(f"{len(reps)} repeats; the yardstick's own P99 ranged {min(p99s):.2f}-{max(p99s):.2f} ms "
          f"(how noisy this machine was); P50 "
          + ", ".join(f"{percentile_interval(h, 50).est:.2f}" for h in ys.values()))
    for variant in ("off", "nvml"):
        xs = {r: xwatch_hist(d / f"{variant}-{r}") for r in reps}
        pairs = [(ys[r], xs[r]) for r in reps if xs[r] is not None]
        if not pairs:
            continue
        a, b = merge(p[0] for p in pairs), merge(p[1] for p in pairs)
        for q in (50.0, 99.0):
            per = tuple(percentile_interval(x, q).est - percentile_interval(y, q).est
                        for y, x in pairs)
            c = Change("high", Metric.latency(q), percentile_interval(a, q),
                       percentile_interval(b, q), diff_interval(a, b, q), per, len(pairs))
            print(f"xwatch (telemetry {variant}) - yardstick, {c.metric}: {c.text()}; "
                  f"per repeat: " + ", ".join(f"{v:+.2f}" for v in per))
    return 0


if __name__ == "__main__":
    sys.exit(main())
