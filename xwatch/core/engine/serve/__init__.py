"""A server workload: xwatch's load generator (``python -m xwatch.core.engine.serve``)
starts an inference server under the phase's mode, waits until it is ready, and drives
open-loop streaming requests at it over OpenAI's HTTP API, reporting every request
over the one event pipe (``protocol``) with the named metrics ``ttft_ms``, ``tpot_ms``
and ``itl_ms``. The generator itself uses no GPU (aiohttp, no torch).

``config``: its settings (JSON in ``XWATCH_SERVE_CONFIG``); ``openai``: request bodies
and the streamed chunks; ``prompts``: prompts and lengths; ``loadgen``: the process;
``server``: the server's lifecycle; ``client``: the open-loop requests. The servers
xwatch ships (the random-weight model) live in ``engine/servers``.
"""

CONFIG_ENV = "XWATCH_SERVE_CONFIG"
