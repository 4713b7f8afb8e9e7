"""BERT architectures xwatch can build from a config (random weights, no
download). Standard library only: imported by the scenario validator and by the
worker, which may run under another interpreter.

name -> (layers, hidden, heads, intermediate, vocab)
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
