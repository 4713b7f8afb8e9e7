"""Builds the workload's model and its reusable input (torch imported here only).

torchvision classification models by name, or BERT architectures from a config
with random weights, or Llama-shaped decoders (``LLM_ARCHS``): nothing is downloaded
at run time. ``forward()`` is one
request: an inference pass, or with ``train`` one training iteration (forward,
loss against random labels drawn once with the seed, backward, SGD step), both
under autocast when ``amp`` asks for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from xwatch.core.archs import BERT_ARCHS, LLM_ARCHS
from xwatch.core.engine.worker import GPU_INIT_ENV
from xwatch.core.engine.worker.config import WorkerConfig

DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}

def resolve_device(torch: Any, spec: str) -> Any:
    if spec == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    dev = torch.device(spec)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"device {spec!r} requested but torch.cuda.is_available() is False "
                               f"(torch {torch.__version__})")
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        if dev.index >= torch.cuda.device_count():
            raise RuntimeError(f"device {spec!r} requested but torch sees "
                               f"{torch.cuda.device_count()} GPU(s)")
    return dev


def import_library(model: str) -> None:
    """Import what builds ``model`` (transformers or torchvision), so that the start's
    ``imports`` stage holds the import and the model's stage only the build."""
    if model.startswith("llama"):
        from transformers import LlamaConfig, LlamaForCausalLM  # noqa: F401
    elif model.startswith("bert"):
        from transformers import BertConfig, BertModel  # noqa: F401
    else:
        import torchvision.models  # noqa: F401


def open_device(torch: Any, device: Any) -> None:
    """Make ``device`` usable now: on a CUDA GPU the first CUDA call creates the
    context (under MPS, joins the daemon), which would otherwise happen inside the
    model's first copy to the device; on the CPU there is nothing to open."""
    if device.type == "cuda":
        torch.empty(1, device=device)
        torch.cuda.synchronize(device)


def gpu_init_env() -> dict[str, str]:
    """The variables the GPU runtime reads as it initializes (``GPU_INIT_ENV``), as the C
    library's ``getenv`` returns them now: what CUDA or HIP would read if the first GPU
    call came now. Python's ``os.environ`` is a copy that only its own writes keep in
    step; a forked worker (``zygote``) must have set both before this."""
    import ctypes

    try:
        getenv = ctypes.CDLL(None).getenv
    except (OSError, AttributeError):  # pragma: no cover (no C library to ask)
        return {k: os.environ[k] for k in sorted(GPU_INIT_ENV) if k in os.environ}
    getenv.restype = ctypes.c_char_p
    getenv.argtypes = [ctypes.c_char_p]
    out = {}
    for k in sorted(GPU_INIT_ENV):
        v = getenv(k.encode())
        if v is not None:
            out[k] = bytes(v).decode(errors="replace")
    return out


def _no_mark(name: str) -> None:
    return None


def build(cfg: WorkerConfig, mark: Callable[[str], None] = _no_mark
          ) -> tuple[Callable[[], Any], Any, dict[str, Any]]:
    """Return (forward, device, info). ``forward()`` runs one request. ``mark(stage)``
    is called as the start's ``imports`` and ``context`` stages end (``loop.Stages``).
    ``info["gpu_init_env"]``: ``gpu_init_env()`` before the first GPU call (asking
    whether CUDA is there initializes it)."""
    import torch

    seen = gpu_init_env()
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = resolve_device(torch, cfg.device)
    import_library(cfg.model)
    mark("imports")
    open_device(torch, device)
    mark("context")
    dtype = getattr(torch, DTYPES[cfg.dtype])
    info: dict[str, Any] = {"gpu_init_env": seen}
    if cfg.model.startswith("llama"):
        return _llm(torch, cfg, device, dtype, info)
    if cfg.model.startswith("bert"):
        arch = BERT_ARCHS.get(cfg.model)
        if arch is None:
            raise ValueError(f"unknown BERT model {cfg.model!r}; known: {', '.join(BERT_ARCHS)}")
        from transformers import (
            BertConfig,
            BertForQuestionAnswering,
            BertForSequenceClassification,
            BertModel,
        )

        layers, hidden, heads, inter, vocab = arch
        bcfg = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                          num_attention_heads=heads, intermediate_size=inter,
                          max_position_embeddings=max(512, cfg.seq_len))
        cls = {"qa": BertForQuestionAnswering, "classification": BertForSequenceClassification,
               "base": BertModel}[cfg.task]
        model = cls(bcfg).eval().to(device=device, dtype=dtype)
        ids = torch.randint(0, vocab, (cfg.batch, cfg.seq_len), device=device)
        mask = torch.ones_like(ids)
        inputs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        info["input"] = f"tokens {cfg.batch}x{cfg.seq_len}"
        if cfg.train:  # the head computes its own loss from these labels
            if cfg.task == "classification":
                inputs["labels"] = torch.randint(0, int(bcfg.num_labels or 2), (cfg.batch,),
                                                 device=device)
            else:
                inputs["start_positions"] = torch.randint(0, cfg.seq_len, (cfg.batch,),
                                                          device=device)
                inputs["end_positions"] = torch.randint(0, cfg.seq_len, (cfg.batch,),
                                                        device=device)

        def forward() -> Any:
            return model(**inputs)

        def loss_of(out: Any) -> Any:
            return out.loss
    else:
        import torchvision

        known = torchvision.models.list_models(module=torchvision.models)
        if cfg.model not in known:
            raise ValueError(f"unknown torchvision classification model {cfg.model!r}; "
                             f"torchvision {torchvision.__version__} has: " + ", ".join(known))
        model = torchvision.models.get_model(cfg.model, weights=None).eval()
        model = model.to(device=device, dtype=dtype)
        x = torch.randn((cfg.batch, *cfg.input), device=device, dtype=dtype)
        info["input"] = "images " + "x".join(str(d) for d in (cfg.batch, *cfg.input))
        info["torchvision"] = torchvision.__version__
        labels: Any = None
        if cfg.train:
            with torch.no_grad():
                classes = int(model(x[:1]).shape[-1])
            labels = torch.randint(0, classes, (cfg.batch,), device=device)

        def forward() -> Any:
            return model(x)

        def loss_of(out: Any) -> Any:
            return torch.nn.functional.cross_entropy(out.float(), labels)

    info["params"] = sum(p.numel() for p in model.parameters())
    info["dtype"] = cfg.dtype
    info["train"] = cfg.train
    info["amp"] = cfg.amp
    step = _autocast(torch, cfg.amp, device, forward)
    if cfg.train:
        step = _train_step(torch, model, step, loss_of, cfg.amp, device)
    return step, device, info


class TokenTimes(list):  # type: ignore[type-arg]
    """What one LLM request returns: the monotonic end time of each generated token
    (the first one ends the prefill), each taken after a device synchronize; with
    ``keep`` the tokens themselves too (for tests: eager and graphed decode the same)."""

    def __init__(self, keep: bool = False) -> None:
        super().__init__()
        self.tokens: list[Any] | None = [] if keep else None

    def mark(self, clock: Callable[[], float], tok: Any) -> None:
        self.append(clock())
        if self.tokens is not None:
            self.tokens.append(tok.clone())


def _llm(torch: Any, cfg: WorkerConfig, device: Any, dtype: Any, info: dict[str, Any],
         keep_tokens: bool = False, static: bool | None = None
         ) -> tuple[Callable[[], Any], Any, dict[str, Any]]:
    """A Llama-shaped decoder from a config (random weights): each request prefills a
    random ``prompt_len`` prompt and greedily decodes ``new_tokens`` with a KV cache,
    timing every token after a synchronize. ``decode = "eager"``: a growing cache,
    every kernel launched from Python (HF eager); ``"graphed"``: a static cache and
    each decode step one CUDA graph replay (the serving engines' way). ``static`` (for
    tests) runs the static-cache path without capturing a graph."""
    import time

    from transformers import LlamaConfig, LlamaForCausalLM

    layers, hidden, heads, kv, inter, vocab = LLM_ARCHS[cfg.model]
    lcfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                       num_attention_heads=heads, num_key_value_heads=kv,
                       intermediate_size=inter,
                       max_position_embeddings=max(2048, cfg.prompt_len + cfg.new_tokens))
    graphed = cfg.decode == "graphed"
    if graphed and device.type != "cuda":
        raise RuntimeError(f"decode = 'graphed' captures CUDA graphs and needs a CUDA GPU; "
                           f"this workload runs on {device}")
    with torch.device(device):  # random init where it runs: seconds, not a CPU minute
        model = LlamaForCausalLM(lcfg)
    model = model.eval().to(dtype=dtype)
    prompt = torch.randint(0, vocab, (cfg.batch, cfg.prompt_len), device=device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    info.update(input=f"prompt {cfg.batch}x{cfg.prompt_len}, {cfg.new_tokens} new tokens",
                params=sum(p.numel() for p in model.parameters()), dtype=cfg.dtype,
                train=False, amp=cfg.amp, decoder=True, decode=cfg.decode)
    if graphed or static:
        forward = _static_decode(torch, model, lcfg, prompt, cfg.new_tokens, device, sync,
                                 time.monotonic, graph=graphed, keep=keep_tokens)
        return forward, device, info
    forward = _eager_decode(model, prompt, cfg.new_tokens, sync, time.monotonic,
                            keep=keep_tokens)
    return _autocast(torch, cfg.amp, device, forward), device, info


def _eager_decode(model: Any, prompt: Any, n: int, sync: Callable[[], None],
                  clock: Callable[[], float], keep: bool) -> Callable[[], TokenTimes]:
    from transformers import DynamicCache

    def forward() -> TokenTimes:
        times = TokenTimes(keep)
        cache = DynamicCache()
        out = model(input_ids=prompt, past_key_values=cache, use_cache=True)
        nxt = out.logits[:, -1:].argmax(-1)
        sync()
        times.mark(clock, nxt)
        for _ in range(n - 1):
            out = model(input_ids=nxt, past_key_values=cache, use_cache=True)
            nxt = out.logits[:, -1:].argmax(-1)
            sync()
            times.mark(clock, nxt)
        return times
    return forward


def _static_decode(torch: Any, model: Any, lcfg: Any, prompt: Any, n: int, device: Any,
                   sync: Callable[[], None], clock: Callable[[], float], graph: bool,
                   keep: bool) -> Callable[[], TokenTimes]:
    """A static KV cache sized prompt + ``n``; the decode step reads its token and
    position from fixed tensors, so its kernels and their arguments never change and
    ``graph`` captures it once (after a warm-up on a side stream, as PyTorch's CUDA
    graph recipe asks) and replays it for every token of every request."""
    from transformers import StaticCache

    b, plen = prompt.shape
    cache = StaticCache(config=lcfg, max_cache_len=plen + n)
    prompt_pos = torch.arange(plen, device=device)
    tok = torch.zeros((b, 1), dtype=torch.long, device=device)
    pos = torch.zeros((1,), dtype=torch.long, device=device)

    def prefill() -> Any:
        out = model(input_ids=prompt, past_key_values=cache, cache_position=prompt_pos,
                    use_cache=True)
        return out.logits[:, -1:].argmax(-1)

    def step() -> Any:
        out = model(input_ids=tok, past_key_values=cache, cache_position=pos, use_cache=True)
        return out.logits[:, -1:].argmax(-1)

    run_step = step
    if graph:
        with torch.inference_mode():
            tok.copy_(prefill())  # the cache's tensors exist once a prefill wrote them
            pos.fill_(plen)
            try:
                g, out_tok = capture_graph(device, step)
            except RuntimeError as e:
                raise RuntimeError(f"decode = 'graphed': capturing the decode step as a CUDA "
                                   f"graph failed (transformers' Llama with a static cache "
                                   f"did something a graph cannot hold, or a library that "
                                   f"intercepts kernel launches broke the capture, as XSched "
                                   f"49079bc's shim does): {e}") from e
            sync()

        def run_step() -> Any:
            g.replay()
            return out_tok

    def forward() -> TokenTimes:
        times = TokenTimes(keep)
        cache.reset()
        nxt = prefill()
        sync()
        times.mark(clock, nxt)
        for i in range(n - 1):
            tok.copy_(nxt)
            pos.fill_(plen + i)
            nxt = run_step()
            sync()
            times.mark(clock, nxt)
        return times
    return forward


def capture_graph(device: Any, step: Callable[[], Any], warmups: int = 3) -> tuple[Any, Any]:
    """PyTorch's CUDA graph recipe: ``step`` warmed up on a side stream, then captured
    once; returns the graph (``.replay()`` reruns it) and the output tensor(s) the
    captured step wrote. Shared by the graphed decoder and the preflight smoke."""
    import torch

    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(warmups):
            step()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()
    return graph, out


def token_metrics(times: TokenTimes, t_sched: float) -> str:
    """The named metrics of one LLM request, as a JSON fragment for the request event:
    time to first token (from the scheduled send time, like the latency), the mean time
    per output token after the first, and every inter-token latency."""
    itl = [(b - a) * 1e3 for a, b in pairwise(times)]
    tpot = sum(itl) / len(itl) if itl else 0.0
    return (f',"ttft_ms":{(times[0] - t_sched) * 1e3:.4f},"tpot_ms":{tpot:.4f},'
            f'"itl_ms":[{",".join(f"{x:.4f}" for x in itl)}]')


def _autocast(torch: Any, amp: str, device: Any, forward: Callable[[], Any]
              ) -> Callable[[], Any]:
    if amp == "off":
        return forward
    dtype = getattr(torch, DTYPES[amp])

    def cast() -> Any:
        with torch.autocast(device_type=device.type, dtype=dtype):
            return forward()
    return cast


def _train_step(torch: Any, model: Any, forward: Callable[[], Any],
                loss_of: Callable[[Any], Any], amp: str, device: Any) -> Callable[[], Any]:
    """One training iteration per call: forward, loss, backward, SGD step."""
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler(device.type) if amp == "fp16" else None

    def step() -> Any:
        opt.zero_grad(set_to_none=True)
        loss = loss_of(forward())
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss
    return step


def device_info(torch: Any, device: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"device": str(device), "torch": torch.__version__,
                           "torch_cuda": getattr(torch.version, "cuda", None),
                           "torch_hip": getattr(torch.version, "hip", None)}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        out["device_name"] = props.name
        out["device_memory_bytes"] = int(props.total_memory)
        bus = getattr(props, "pci_bus_id", None)
        if bus is not None:
            out["pci"] = {"domain": getattr(props, "pci_domain_id", 0), "bus": bus,
                          "device": getattr(props, "pci_device_id", 0)}
        out["gcn_arch"] = getattr(props, "gcnArchName", None)
    else:
        import platform

        out["device_name"] = f"CPU ({platform.processor() or platform.machine()}, "\
                             f"{torch.get_num_threads()} threads)"
    return out
