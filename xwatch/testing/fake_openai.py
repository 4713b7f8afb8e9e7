"""A small OpenAI-style streaming server for the server workload's tests, on aiohttp
(CI does not need the serving extras). It follows the real API as the load generator
meets it: ``GET /health``; ``POST /v1/chat/completions`` and ``/v1/completions`` with
``stream: true`` answer ``text/event-stream`` with ``data: {...}`` chunks (a role chunk
for chat, one chunk per token, a last chunk with ``finish_reason`` and ``usage``) and
``data: [DONE]`` (``--no-done``: none, as transformers serve does); unknown fields are
rejected with 422 as transformers serve rejects ``ignore_eos``.

``python -m xwatch.testing.fake_openai PORT [--first-ms X] [--token-ms Y] [--fault F]``,
faults: ``never-ready`` (/health answers 503), ``die-after=N`` (exits 3 after N
requests, a line on stderr first), ``status=CODE`` (every POST answers CODE),
``cut-after=N`` (the N+1th and later streams are cut after two tokens),
``not-openai`` (POST answers an HTML page), ``empty-every=N`` (every Nth stream finishes
without any text: a role chunk, a finish chunk and ``[DONE]``), ``fail-every=N`` (every
Nth POST answers HTTP 500). ``--serial``: one request generates at a time, the others
wait (as ``transformers serve`` without continuous batching serves them).

The stream's shape, each on a known schedule (the tests' truth): ``--tail-ms T`` (the
usage chunk and ``[DONE]`` come T ms after the last token, the finish chunk with it),
``--reasoning K`` (the first K tokens stream as ``delta.reasoning``;
``--reasoning-key reasoning_content`` as older servers), ``--tools`` (every token is a
``tool_calls`` delta), ``--empty-finish`` (the finish chunk carries ``content: ""``, as
vLLM's server sends it, ``--token-ms`` after the last token).
``--metrics vllm|llama.cpp``: ``GET /metrics`` answers Prometheus
text under that server's names (``engine.servers.scrape.ENGINES``): requests running and
waiting (for ``--serial``'s turn) and token counters; vLLM's TTFT histogram observes
exactly ``--first-ms`` for each request, so its percentiles are known; without the
option ``/metrics`` answers 404, as a server without metrics does.
``--close-after-stream``: a connection serves one streamed answer, as llama-server's
did: a request sent on a kept-alive one after that is cut before any answer (the
connection closed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

from aiohttp import web

KNOWN = {"model", "messages", "prompt", "max_tokens", "stream", "stream_options",
         "temperature", "top_p", "ignore_eos"}


def chunk(api: str, text: str | None, finish: str | None = None,
          usage: dict[str, int] | None = None, role: bool = False,
          key: str = "content") -> bytes:
    if api == "chat":
        delta: dict[str, object] = {"role": "assistant"} if role else \
            ({key: text} if text is not None else {})
        if key == "tool_calls" and text is not None:
            delta = {"tool_calls": [{"index": 0, "function": {"arguments": text}}]}
        choice: dict[str, object] = {"index": 0, "delta": delta}
    else:
        choice = {"index": 0, "text": text or ""}
    if finish:
        choice["finish_reason"] = finish
    obj: dict[str, object] = {"id": "x", "object": "chunk", "created": 0, "model": "fake",
                              "choices": [choice]}
    if usage:
        obj["usage"] = usage
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


#: vLLM's TTFT buckets (seconds), as its ``loggers.py`` has them
VLLM_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                     2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)


class Metrics:
    """The fake's own metrics, in Prometheus' text format (prometheus_client)."""

    def __init__(self, engine: str) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.engine = engine
        self.reg = CollectorRegistry()
        p = "vllm:" if engine == "vllm" else "llamacpp:"
        lab = ["model_name"] if engine == "vllm" else []
        running = "num_requests_running" if engine == "vllm" else "requests_processing"
        waiting = "num_requests_waiting" if engine == "vllm" else "requests_deferred"
        self.running = Gauge(p + running, "running", registry=self.reg, labelnames=lab)
        self.waiting = Gauge(p + waiting, "waiting", registry=self.reg, labelnames=lab)
        gen = "generation_tokens" if engine == "vllm" else "tokens_predicted"
        self.prompt = Counter(p + "prompt_tokens", "prompt", registry=self.reg, labelnames=lab)
        self.gen = Counter(p + gen, "generated", registry=self.reg, labelnames=lab)
        self.ttft = Histogram(p + "time_to_first_token_seconds", "ttft", registry=self.reg,
                              buckets=VLLM_TTFT_BUCKETS, labelnames=lab) if engine == "vllm" else None

    def _m(self, metric: object) -> object:
        return metric.labels(model_name="fake") if self.engine == "vllm" else metric  # type: ignore[attr-defined]

    def add(self, what: str, n: float) -> None:
        m = self._m(getattr(self, what))
        (m.inc if n >= 0 else m.dec)(abs(n))  # type: ignore[attr-defined]

    def first_token(self, seconds: float) -> None:
        if self.ttft is not None:
            self._m(self.ttft).observe(seconds)  # type: ignore[attr-defined]

    def text(self) -> str:
        from prometheus_client import generate_latest

        return generate_latest(self.reg).decode()


def make_app(a: argparse.Namespace) -> web.Application:
    served = {"n": 0}
    metrics = Metrics(a.metrics) if a.metrics else None
    fault = a.fault or ""
    one_at_a_time = asyncio.Lock()

    async def health(_: web.Request) -> web.Response:
        if fault == "never-ready":
            return web.Response(status=503, text="loading")
        return web.Response(text="ok")

    streamed: set[object] = set()  # --close-after-stream: connections that served one

    async def complete(req: web.Request) -> web.StreamResponse:
        if a.close_after_stream and req.transport in streamed:
            req.transport.close()  # type: ignore[union-attr]  # closed after the last answer
            return web.Response(status=500)
        api = "chat" if req.path.endswith("chat/completions") else "completions"
        if fault == "not-openai":
            return web.Response(text="<html><body>Welcome</body></html>",
                                content_type="text/html")
        if fault.startswith("fail-every="):
            served["posts"] = served.get("posts", 0) + 1
            if served["posts"] % int(fault.split("=")[1]) == 0:
                return web.json_response({"error": {"message": "fake failure"}}, status=500)
        if fault.startswith("status="):
            code = int(fault.split("=")[1])
            return web.json_response({"error": {"message": "fake failure"}}, status=code)
        body = await req.json()
        unknown = set(body) - KNOWN - ({"ignore_eos"} if a.accept_ignore_eos else set())
        if "ignore_eos" in body and not a.accept_ignore_eos:
            unknown.add("ignore_eos")
        if unknown:
            return web.json_response({"detail": f"Unexpected fields in the request: {unknown}"},
                                     status=422)
        served["n"] += 1
        if fault.startswith("die-after=") and served["n"] > int(fault.split("=")[1]):
            print("fake_openai: CUDA error: an illegal memory access was encountered",
                  file=sys.stderr, flush=True)
            os._exit(3)
        n = int(body.get("max_tokens", 16))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(req)
        if api == "chat":
            await resp.write(chunk(api, None, role=True))
        if fault.startswith("empty-every=") and served["n"] % int(fault.split("=")[1]) == 0:
            await resp.write(chunk(api, None, "stop"))
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
            return resp
        if metrics is not None:
            metrics.add("prompt", 4)
            metrics.add("waiting", 1)
        try:
            if a.serial:
                async with one_at_a_time:
                    return await generate(req, resp, api, n)
            return await generate(req, resp, api, n)
        finally:
            if metrics is not None:
                metrics.add("running", -1)

    async def metrics_text(_: web.Request) -> web.Response:
        if metrics is None:
            return web.Response(status=404, text="Not Found")
        return web.Response(text=metrics.text(), content_type="text/plain")

    async def generate(req: web.Request, resp: web.StreamResponse, api: str,
                       n: int) -> web.StreamResponse:
        cut = fault.startswith("cut-after=") and served["n"] > int(fault.split("=")[1])
        if metrics is not None:
            metrics.add("waiting", -1)
            metrics.add("running", 1)
        await asyncio.sleep(a.first_ms / 1e3)
        for i in range(n):
            if i:
                await asyncio.sleep(a.token_ms / 1e3)
            elif metrics is not None:
                metrics.first_token(a.first_ms / 1e3)
            key = "tool_calls" if a.tools else (a.reasoning_key if i < a.reasoning
                                                 else "content")
            await resp.write(chunk(api, f"t{i} ", key=key))
            if metrics is not None:
                metrics.add("gen", 1)
            if cut and i == 1:
                assert req.transport is not None
                req.transport.close()  # the connection breaks mid-stream
                return resp
        if a.empty_finish and api == "chat":
            await asyncio.sleep(a.token_ms / 1e3)
            await resp.write(chunk(api, "", "length"))
        await asyncio.sleep(a.tail_ms / 1e3)
        await resp.write(chunk(api, None, None if a.empty_finish else "length",
                               {"prompt_tokens": 4, "completion_tokens": n,
                                "total_tokens": n + 4}))
        if not a.no_done:
            await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        if a.close_after_stream:
            streamed.add(req.transport)
        return resp

    app = web.Application()
    app.router.add_get("/health", health)
    app.router.add_get("/metrics", metrics_text)
    app.router.add_post("/v1/chat/completions", complete)
    app.router.add_post("/v1/completions", complete)
    return app


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--first-ms", type=float, default=20.0)
    p.add_argument("--token-ms", type=float, default=5.0)
    p.add_argument("--fault", default="")
    p.add_argument("--no-done", action="store_true")
    p.add_argument("--accept-ignore-eos", action="store_true")
    p.add_argument("--serial", action="store_true")
    p.add_argument("--tail-ms", type=float, default=0.0)
    p.add_argument("--reasoning", type=int, default=0)
    p.add_argument("--reasoning-key", default="reasoning")
    p.add_argument("--tools", action="store_true")
    p.add_argument("--empty-finish", action="store_true")
    p.add_argument("--metrics", choices=("vllm", "llama.cpp"), default="")
    p.add_argument("--close-after-stream", action="store_true")
    p.add_argument("--ready-after-s", type=float, default=0.0)
    a = p.parse_args()
    time.sleep(a.ready_after_s)  # loading the model
    print(f"fake_openai: serving on {a.port} (CUDA_VISIBLE_DEVICES="
          f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})", file=sys.stderr, flush=True)
    web.run_app(make_app(a), host="127.0.0.1", port=a.port, print=None)


if __name__ == "__main__":
    main()
