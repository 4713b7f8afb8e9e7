"""Builds the workload's model and its reusable input (torch imported here only).

torchvision classification models by name, or BERT architectures from a config
with random weights: nothing is downloaded at run time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xwatch.core.engine.worker.archs import BERT_ARCHS
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


def build(cfg: WorkerConfig) -> tuple[Callable[[], Any], Any, dict[str, Any]]:
    """Return (forward, device, info). ``forward()`` runs one request."""
    import torch

    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = resolve_device(torch, cfg.device)
    dtype = getattr(torch, DTYPES[cfg.dtype])
    info: dict[str, Any] = {}
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
        inputs = {"input_ids": ids, "attention_mask": mask}
        info["input"] = f"tokens {cfg.batch}x{cfg.seq_len}"

        def forward() -> Any:
            return model(**inputs)
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

        def forward() -> Any:
            return model(x)

    info["params"] = sum(p.numel() for p in model.parameters())
    info["dtype"] = cfg.dtype
    return forward, device, info


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
