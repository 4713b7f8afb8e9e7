"""The Prometheus exporter (``--metrics-port``): session snapshots as metrics in the
Prometheus / OpenMetrics text format, served with ``prometheus_client``.

Data flow stays one way: whoever runs the event loop (the dashboard's tick, or the
headless plan) *publishes* an immutable ``SessionSnapshot`` about once a second; a
scrape, on the exporter's own HTTP thread, only reads the newest published one. So
a scrape never touches live engine state and costs the measured processes nothing.

Names, labels and meanings are documented in ``docs/metrics.md``. Latency metrics
are in seconds (Prometheus base units); every series carries ``host``, and
per-workload series ``gpu``, ``workload``, ``priority``, ``mode`` and ``phase``. A
mode's own series (XSched's queues) are its package's (``Mode.metrics``).
``prometheus_client`` is imported only when an exporter is started.
"""

from __future__ import annotations

import math
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

from xwatch.core import model as M
from xwatch.core.engine.snapshot import PENDING, STARTING, SessionSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import PERCENTILES, nan_if_none, stat
from xwatch.core.modes import registry
from xwatch.errors import XwatchError

WL_LABELS = ("host", "gpu", "workload", "priority", "mode", "phase")
_CUDA_RE = re.compile(r"^(?:cuda|hip)(?::(\d+))?$")


class MetricsError(XwatchError):
    """The metrics endpoint cannot be served (bad address, port in use)."""


def _f(v: float | None) -> float:
    return math.nan if v is None else float(v)


def workload_gpu(w: WorkloadSnapshot) -> str | None:
    """The ``gpu`` label: the pinned GPU of a multi-GPU copy, else the index of the
    device the worker reported (``cuda:1`` -> ``1``), ``cpu``, or ``""`` for a workload
    that never says (a program of one's own without a hello). None: not known *yet* (no
    hello while pending or starting): its series wait for it, so that the label a
    workload is first published with is the one it keeps (a changed label is a new
    series)."""
    if w.gpu is not None:
        return str(w.gpu)
    dev = str(w.hello.get("device") or "")
    m = _CUDA_RE.match(dev)
    if m:
        return m.group(1) or "0"
    if dev == "cpu":
        return "cpu"
    return None if not w.hello and w.state in (PENDING, STARTING) else ""


def families(snap: SessionSnapshot, host: str, published_at: float | None = None
             ) -> list[Any]:
    """Every metric family for ``snap`` (``prometheus_client.core`` objects)."""
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
        InfoMetricFamily,
        Metric,
    )

    import xwatch

    out: list[Any] = []
    info = InfoMetricFamily("xwatch", "xwatch and the scenario it runs", labels=["host"])
    info.add_metric([host], {"version": xwatch.__version__, "scenario": snap.scenario.name,
                             "source": snap.scenario.source,
                             "gpus": ",".join(map(str, snap.scenario.gpus))})
    out.append(info)

    def gauge(name: str, doc: str, extra: tuple[str, ...] = ()) -> Any:
        g = GaugeMetricFamily(name, doc, labels=[*WL_LABELS, *extra])
        out.append(g)
        return g

    def counter(name: str, doc: str, extra: tuple[str, ...] = ()) -> Any:
        c = CounterMetricFamily(name, doc, labels=[*WL_LABELS, *extra])
        out.append(c)
        return c

    phase_info = GaugeMetricFamily(
        "xwatch_phase_info", "1 for every phase of the session; its status and setting",
        labels=["host", "phase", "mode", "status", "setting"])
    phase_running = GaugeMetricFamily("xwatch_phase_running", "1 while the phase runs",
                                      labels=["host", "phase", "mode"])
    phase_measured = GaugeMetricFamily("xwatch_phase_measured_seconds",
                                       "measured time of the phase so far",
                                       labels=["host", "phase", "mode"])
    out += [phase_info, phase_running, phase_measured]

    hist = HistogramMetricFamily("xwatch_request_latency_seconds",
                                 "open-loop request latency over the phase (from the scheduled "
                                 "send time to the synchronized end)", labels=list(WL_LABELS))
    summ = Metric("xwatch_request_latency_percentile_seconds",
                  "xwatch's own nearest-rank percentiles over the phase (unfinished requests "
                  "included at their waiting time when the phase reports them)", "summary")
    out += [hist, summ]
    window = gauge("xwatch_window_latency_seconds",
                   "percentiles over requests that ended in the sliding window", ("quantile",))
    win_len = GaugeMetricFamily("xwatch_window_seconds", "length of the sliding window",
                                labels=["host"])
    win_len.add_metric([host], snap.window_s)
    out.append(win_len)
    requests = counter("xwatch_requests", "measured requests (warm-up excluded)")
    late = counter("xwatch_requests_late", "open-loop requests started > 1 ms after schedule")
    errors = counter("xwatch_request_errors", "requests that reported an error")
    samples = counter("xwatch_samples", "samples processed (batch x requests)")
    unfinished = gauge("xwatch_requests_unfinished",
                       "requests due but not completed when the phase ended (-1: unknown)")
    rate = gauge("xwatch_request_rate", "requests per second over the phase")
    wrate = gauge("xwatch_window_request_rate", "requests per second in the window")
    sps = gauge("xwatch_samples_rate", "samples per second over the phase")
    wsps = gauge("xwatch_window_samples_rate", "samples per second in the window")
    target = gauge("xwatch_target_request_rate", "the scenario's open-loop rate (req/s)")
    state = gauge("xwatch_workload_state", "1 for the workload's current state", ("state",))
    stalled = gauge("xwatch_workload_stalled", "1 while the workload is stalled")
    goodput = gauge("xwatch_goodput_ratio", "share of requests within the SLO (SLO workload)")
    # each mode's own series (``Mode.metrics``), declared here, in the families' order
    own = [registry.load_ref(m.metrics)(gauge) for m in registry.modes()
           if m.metrics is not None]
    named = gauge("xwatch_request_metric_percentile_seconds",
                  "named per-request metrics the workload reports (ttft_ms, tpot_ms, ...): "
                  "nearest-rank percentiles over the phase", ("metric", "quantile"))
    named_n = counter("xwatch_request_metric", "values of each named per-request metric",
                      ("metric",))

    for p in snap.phases:
        setting = str(p.setting or "")
        phase_info.add_metric([host, p.name, p.mode, p.status, setting], 1)
        phase_running.add_metric([host, p.name, p.mode], 1 if p.status == "running" else 0)
        phase_measured.add_metric([host, p.name, p.mode],
                                  p.elapsed_s if p.measuring and p.elapsed_s == p.elapsed_s else 0)
        for w in p.workloads:
            gpu = workload_gpu(w)
            if gpu is None:
                continue
            lab = [host, gpu, w.name, w.priority_label, p.mode, p.name]
            _latency(hist, summ, lab, w)
            for key, q in PERCENTILES:
                window.add_metric([*lab, _q(q)], stat(w.window, key) / 1000.0)
            requests.add_metric(lab, w.count)
            late.add_metric(lab, w.late)
            errors.add_metric(lab, w.errors)
            samples.add_metric(lab, w.samples)
            unfinished.add_metric(lab, -1 if w.unfinished is None else w.unfinished.count)
            rate.add_metric(lab, nan_if_none(w.throughput.requests_per_s))
            wrate.add_metric(lab, nan_if_none(w.throughput.window_requests_per_s))
            sps.add_metric(lab, nan_if_none(w.throughput.samples_per_s))
            wsps.add_metric(lab, nan_if_none(w.throughput.window_samples_per_s))
            if w.target_rate:
                target.add_metric(lab, w.target_rate)
            for mname, m in w.metrics.items():
                named_n.add_metric([*lab, mname], m.count)
                for key, q in PERCENTILES:
                    named.add_metric([*lab, mname, _q(q)], stat(m.phase, key) / 1000.0)
            state.add_metric([*lab, w.state], 1)
            stalled.add_metric(lab, 1 if w.stalled_since is not None else 0)
            if w.goodput is not None:
                goodput.add_metric(lab, _f(w.goodput))
            for add in own:
                add(p, w, lab)
    out += _participation(snap, host)
    out += _telemetry(snap.telemetry, host)
    spool = snap.spool or M.Spool()
    kept = CounterMetricFamily("xwatch_events_spooled", "raw events written to the spool",
                               labels=["host"])
    kept.add_metric([host], spool.rows_kept)
    dropped = CounterMetricFamily("xwatch_events_dropped",
                                  "raw events not spooled past --spool-max-mb (statistics "
                                  "still count them)", labels=["host"])
    dropped.add_metric([host], spool.rows_dropped)
    age = GaugeMetricFamily("xwatch_snapshot_age_seconds",
                            "seconds since the snapshot these metrics come from was taken",
                            labels=["host"])
    age.add_metric([host], max(0.0, time.time() - (published_at or snap.taken_at)))
    out += [kept, dropped, age]
    return out


def _q(q: float) -> str:
    return f"{q / 100.0:g}"


def _latency(hist: Any, summ: Any, lab: list[str], w: WorkloadSnapshot) -> None:
    if w.latency_buckets_ms:  # measured requests only (never censored waits)
        b = [(f"{le / 1000.0:g}", float(c)) for le, c in w.latency_buckets_ms]
        b.append(("+Inf", float(w.count)))
        hist.add_metric(lab, b, w.latency_sum_ms / 1000.0)
    total = (stat(w.phase, "mean") * w.phase_count / 1000.0) if w.phase_count else 0.0
    name = summ.name
    d = dict(zip(WL_LABELS, lab))
    for key, q in PERCENTILES:
        summ.add_sample(name, {**d, "quantile": _q(q)}, stat(w.phase, key) / 1000.0)
    summ.add_sample(name + "_count", d, float(w.phase_count))
    summ.add_sample(name + "_sum", d, total)


def _participation(snap: SessionSnapshot, host: str) -> list[Any]:
    """Per step of a mode (``analysis.participation``): whether its mechanism took part
    (1 / 0; an answer that gives no verdict on a step with 0), and 1 per workload that
    did not take part, with its recorded verdict."""
    from prometheus_client.core import GaugeMetricFamily

    from xwatch.core.analysis.participation import participation
    from xwatch.core.analysis.verdict import steps

    took = GaugeMetricFamily("xwatch_step_took_part",
                             "1 when the step's mechanism took part (some workload proven "
                             "scheduled by it), 0: the answer gives it no verdict",
                             labels=["host", "step", "mode"])
    absent = GaugeMetricFamily("xwatch_step_no_part",
                               "1 per workload that did not take part in the step's "
                               "mechanism (or is undecided), with its recorded verdict",
                               labels=["host", "step", "mode", "workload", "verdict"])
    for key, ps in steps(snap).items():
        part = participation(ps, snap.scenario)
        if part.mode == "native" or not part.recorded:
            continue
        took.add_metric([host, key, part.mode], 1 if part.took_part else 0)
        for a in part.absent:
            absent.add_metric([host, key, part.mode, a.workload, a.verdict], 1)
    return [took, absent]


def _telemetry(tel: M.Telemetry | None, host: str) -> list[Any]:
    from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily

    if tel is None:
        return []
    latest: dict[str, M.Sample] = {}
    for s in tel.samples:
        latest[s.device] = s
    info = InfoMetricFamily("xwatch_gpu", "each telemetry device", labels=["host", "gpu"])
    specs = (  # metric, key in the sample, scale, doc
        ("xwatch_gpu_utilization_ratio", "util_pct", 0.01,
         "share of time a kernel ran (NVML) / the engine was busy (amdsmi)"),
        ("xwatch_gpu_memory_bandwidth_utilization_ratio", "mem_util_pct", 0.01,
         "share of time memory was read or written"),
        ("xwatch_gpu_memory_used_bytes", "mem_used_mib", 2**20, "device memory in use"),
        ("xwatch_gpu_memory_total_bytes", "mem_total_mib", 2**20, "device memory"),
        ("xwatch_gpu_power_watts", "power_w", 1.0, "board power"),
        ("xwatch_gpu_temperature_celsius", "temp_c", 1.0, "GPU temperature"),
        ("xwatch_gpu_sm_clock_hertz", "clock_mhz", 1e6, "SM / graphics clock"),
        ("xwatch_host_cpu_utilization_ratio", "cpu_pct", 0.01, "host CPU (host backend)"),
    )
    gauges = {key: (GaugeMetricFamily(name, doc, labels=["host", "gpu"]), scale)
              for name, key, scale, doc in specs}
    age = GaugeMetricFamily("xwatch_gpu_sample_age_seconds", "age of the newest sample",
                            labels=["host", "gpu"])
    now = time.monotonic()
    for dev, s in latest.items():
        gpu = dev[3:] if dev.startswith("gpu") else dev
        info.add_metric([host, gpu], {"device": dev, "name": s.name, "bus_id": s.bus_id or "",
                                      "ours": "true" if s.ours else "false",
                                      "backend": tel.backend})
        for key, val in s.metrics.items():
            if key in gauges and val is not None:
                gauges[key][0].add_metric([host, gpu], float(val) * gauges[key][1])
        age.add_metric([host, gpu], max(0.0, now - s.t))
    cost = GaugeMetricFamily("xwatch_telemetry_poll_seconds",
                             "xwatch's own cost of one telemetry poll", labels=["host", "kind",
                                                                                 "quantile"])
    for kind, c in (("counters", tel.poll_cost_ms),
                    ("per_process", tel.proc_poll_cost_ms or M.PollCost())):
        for q, v in (("0.5", c.median), ("0.99", c.p99)):
            if v is not None:
                cost.add_metric([host, kind, q], v / 1000.0)
    return [info, *(g for g, _ in gauges.values()), age, cost]


class _Collector:
    def __init__(self, host: str) -> None:
        self.host = host
        self.snap: SessionSnapshot | None = None
        self.published_at = 0.0

    def describe(self) -> list[Any]:
        return []  # described at scrape time: the label sets follow the session

    def collect(self) -> Iterator[Any]:
        snap = self.snap  # one reference read: the snapshot is immutable
        if snap is None:
            return iter(())
        return iter(families(snap, self.host, self.published_at))


class MetricsServer:
    """The HTTP endpoint. ``start`` binds at once (so a bad port fails before any
    workload starts); ``publish`` hands it the newest snapshot."""

    def __init__(self, port: int, host: str = "127.0.0.1", label_host: str | None = None
                 ) -> None:
        if not 0 <= port <= 65535:
            raise MetricsError(f"--metrics-port {port}: a TCP port is 0-65535 (0: any free)",
                               title="Bad metrics port")
        self.port = port
        self.host = host
        self.collector = _Collector(label_host or socket.gethostname())
        self._httpd: Any = None
        self._thread: Any = None

    def start(self) -> None:
        from prometheus_client import CollectorRegistry, start_http_server
        from prometheus_client.process_collector import ProcessCollector

        reg = CollectorRegistry(auto_describe=False)
        reg.register(self.collector)
        ProcessCollector(registry=reg)  # process_cpu_seconds_total etc.: xwatch's own cost
        try:
            self._httpd, self._thread = start_http_server(self.port, addr=self.host, registry=reg)
        except (socket.gaierror, ValueError) as e:
            raise MetricsError(f"--metrics-host {self.host!r} is not an address of this "
                               f"machine ({e})", title="Bad metrics address")
        except OSError as e:
            why = "is in use" if e.errno in (98, 48) else f"cannot be used ({e.strerror or e})"
            raise MetricsError(f"{self.host}:{self.port} {why}; pick another --metrics-port "
                               "(0 picks a free one) or stop what holds it",
                               title="Metrics port unavailable")
        self.port = int(self._httpd.server_port)

    @property
    def url(self) -> str:
        h = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{h}:{self.port}/metrics"

    def publish(self, snap: SessionSnapshot) -> None:
        self.collector.snap = snap
        self.collector.published_at = time.time()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
