"""The inference servers xwatch ships for its built-in server scenarios (``localmodel``:
a random-weight model served by ``transformers serve``). They run as the server
workload's server process, under the phase's mode, never inside xwatch or its load
generator (``serve``, the client side). ``scrape``: the servers' own Prometheus metrics
(vLLM's, SGLang's, llama.cpp's names), read by the load generator.
"""
