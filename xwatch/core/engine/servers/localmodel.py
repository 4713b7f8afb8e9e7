"""The model the built-in server scenarios serve, made here on first use and cached:
a random-weight Llama-shaped model (``LlamaConfig`` + ``save_pretrained``), a small BPE
tokenizer trained with ``tokenizers`` on inline text, and a chat template. Nothing is
downloaded.

``python -m xwatch.core.engine.servers.localmodel serve SIZE [transformers serve options]``
makes (or finds) the model, then execs ``transformers serve`` on it with
``HF_HUB_OFFLINE=1``: the server workload's process is the server itself.
``... path SIZE`` prints the folder. transformers and tokenizers are imported only here
(the server's side), never by xwatch or its load generator.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

#: (hidden, layers, heads, kv heads, intermediate) by size name; the vocabulary is the
#: trained tokenizer's
SIZES = {
    "tiny": (64, 2, 4, 2, 128),  # CPU tests: a few hundred thousand parameters
    "small": (768, 12, 12, 4, 2048),  # ~75 M (290 MB in fp32): a GPU serves it in milliseconds a token
    "1b": (2048, 16, 32, 8, 8192),  # ~1.0 B, as tried on the H100
}
VOCAB = 2048  # asked of the BPE trainer; the inline text yields fewer
MAX_POSITIONS = 4096
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}")
SPECIAL = ["<unk>", "<s>", "</s>", "<|end|>", "<|user|>", "<|assistant|>", "<|system|>"]
_TEXT = (
    "A server answers requests while a trainer fills the same GPU. Each request streams "
    "tokens back, one chunk at a time; the time to the first token, the time per output "
    "token and the gaps between chunks say how the server fared. The scheduler decides "
    "which work runs first: the latency-sensitive server, or the training step that "
    "would run for hundreds of milliseconds. Priorities, preemption, queues, streams, "
    "kernels, memory, batches, prompts, completions, tokens, words and numbers 0 1 2 3 4 "
    "5 6 7 8 9 appear here so that the tokenizer learns pieces of ordinary English text.")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "xwatch" / "models"


def model_dir(size: str, root: Path | None = None) -> Path:
    key = hashlib.sha256(json.dumps([3, SIZES[size], VOCAB, CHAT_TEMPLATE, _TEXT]).encode())
    return (root or cache_root()) / f"llama-random-{size}-{key.hexdigest()[:10]}"


def _tokenizer(out: Path) -> tuple[int, list[int]]:
    """Trains and saves the tokenizer; returns the vocabulary's size (the model's
    ``vocab_size``: an id beyond it would decode to nothing) and the ids that decode to
    no text of their own: the special tokens and the byte-level pieces of a multi-byte
    character (0x80-0xff alone). A random model that repeats one of those streams no
    text at all (on an H100, 3-6 requests a phase ended so), so generation never picks
    them."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([_TEXT] * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
        pad_token="</s>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    silent = [i for i in range(len(fast))
              if i < len(SPECIAL) or not (text := fast.decode([i])) or "\ufffd" in text]
    return len(fast), silent


def make(size: str, root: Path | None = None) -> Path:
    """The model's folder, made once (atomically: built beside, then renamed)."""
    if size not in SIZES:
        raise SystemExit(f"xwatch localmodel: unknown size {size!r}; sizes: {', '.join(SIZES)}")
    final = model_dir(size, root)
    if (final / "config.json").is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=final.name + ".", dir=final.parent))
    try:
        import torch
        from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

        vocab, silent = _tokenizer(tmp)
        hidden, layers, heads, kv, inter = SIZES[size]
        cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                          num_attention_heads=heads, num_key_value_heads=kv,
                          intermediate_size=inter, max_position_embeddings=MAX_POSITIONS,
                          bos_token_id=1, eos_token_id=2, pad_token_id=2,
                          tie_word_embeddings=True)
        torch.manual_seed(0)
        model = LlamaForCausalLM(cfg)
        # greedy; the special tokens (EOS too) and the pieces without text of their own
        # never generated: every request makes its max_tokens of visible text, as
        # vLLM's ignore_eos does
        model.generation_config = GenerationConfig(  # type: ignore[no-untyped-call]
            bos_token_id=1, eos_token_id=2, pad_token_id=2, do_sample=False,
            suppress_tokens=silent)
        model.save_pretrained(tmp)
        try:
            os.rename(tmp, final)
        except OSError:  # another process made it first
            if not (final / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("serve", "path"):
        print("usage: python -m xwatch.core.engine.servers.localmodel serve|path SIZE "
              f"[transformers serve options]; sizes: {', '.join(SIZES)}", file=sys.stderr)
        return 2
    path = make(argv[1])
    if argv[0] == "path":
        print(path)
        return 0
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import importlib.util

    cli = "transformers.cli.transformers" if importlib.util.find_spec(
        "transformers.cli.transformers") else "transformers.commands.transformers_cli"
    args = [sys.executable, "-m", cli, "serve", str(path), *argv[2:]]
    sys.stdout.flush()
    os.execv(sys.executable, args)
    return 0  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
