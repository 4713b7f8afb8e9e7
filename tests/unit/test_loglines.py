"""A workload's stderr keeps its first lines beside its last: a server's "serving on"
outlives the tracebacks of the requests cut at the phase's end (a busy machine leaves
more of them than a tail holds), and a failed workload's report shows both."""

from __future__ import annotations

from pathlib import Path

import msgspec

from xwatch.core.engine.live.loglines import HEAD, TAIL, HeadTail
from xwatch.core.export.sections.session import failures_section
from xwatch.core.export.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parents[2]
START = "fake_openai: serving on 40187 (CUDA_VISIBLE_DEVICES=0)"
CUT = ["Error handling request from 127.0.0.1", "Traceback (most recent call last):",
       *[f'  File "aiohttp/web_protocol.py", line {n}' for n in range(19)],
       "aiohttp.client_exceptions.ClientConnectionResetError: Cannot write to closing transport"]


def test_a_short_stream_is_all_tail_and_a_long_one_keeps_its_start() -> None:
    short = HeadTail(TAIL)
    for ln in [START, *CUT]:
        short.append(ln)
    assert list(short) == [START, *CUT] and short.head() == [] and short.skipped() == 0
    long = HeadTail(TAIL)
    lines = [START, *CUT * 3]  # three requests cut at the end: 67 lines
    for ln in lines:
        long.append(ln)
    assert list(long) == lines[-TAIL:] and START not in long
    assert long.head() == lines[:HEAD] and long.head()[0] == START
    assert long.skipped() == len(lines) - TAIL - HEAD == 17
    # a few lines past the tail: only those that rolled off are the head, none twice
    near = HeadTail(TAIL)
    for ln in lines[:TAIL + 3]:
        near.append(ln)
    assert near.head() == lines[:3] and near.skipped() == 0
    assert near.head() + list(near) == lines[:TAIL + 3]


def test_a_failed_workloads_report_shows_its_first_stderr_lines_then_its_last() -> None:
    snap = load_snapshot(ROOT / "data/results/h100-2026-11-24-xsched12/llm")
    p = next(p for p in snap.phases if any(w.state == "failed" for w in p.workloads))
    i = next(i for i, w in enumerate(p.workloads) if w.state == "failed")
    ws = list(p.workloads)
    ws[i] = msgspec.structs.replace(ws[i], stderr_head=[START, "loading the model"])
    p2 = msgspec.structs.replace(p, workloads=tuple(ws))
    phases = tuple(p2 if q is p else q for q in snap.phases)
    sec = failures_section(msgspec.structs.replace(snap, phases=phases))
    assert sec is not None
    text = "\n".join(sec.paragraphs)
    first = text.index("stderr (first lines):")
    assert text.index(START) > first and text.index("stderr (last lines):", first) > \
        text.index("loading the model")
    # a snapshot written before the head existed reads as it did: no head block
    old = failures_section(snap)
    assert old is not None and "first lines" not in "\n".join(old.paragraphs)
