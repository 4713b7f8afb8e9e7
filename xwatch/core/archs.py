"""BERT and decoder-only LLM architectures xwatch can build from a config (random
weights, no download). A leaf below every stage, standard library only: imported by
the scenario validator and by the worker, which may run under another interpreter.

BERT: name -> (layers, hidden, heads, intermediate, vocab)
"""

BERT_ARCHS: dict[str, tuple[int, int, int, int, int]] = {
    "bert-tiny": (2, 128, 2, 512, 30522),
    "bert-mini": (4, 256, 4, 1024, 30522),
    "bert-small": (4, 512, 8, 2048, 30522),
    "bert-medium": (8, 512, 8, 2048, 30522),
    "bert-base-uncased": (12, 768, 12, 3072, 30522),
    "bert-base-cased": (12, 768, 12, 3072, 28996),
    "bert-large-uncased": (24, 1024, 16, 4096, 30522),
    "bert-large-cased": (24, 1024, 16, 4096, 28996),
}


#: decoder-only LLM shapes (Llama architecture, random weights from a config):
#: layers, hidden, heads, kv heads, intermediate, vocab
LLM_ARCHS: dict[str, tuple[int, int, int, int, int, int]] = {
    "llama-tiny": (2, 64, 4, 2, 128, 1024),  # for CPU tests
    "llama-1b": (16, 2048, 32, 8, 8192, 128256),  # the shape of Llama 3.2 1B
    "llama-7b": (32, 4096, 32, 32, 11008, 32000),  # the shape of Llama 2 7B
}
