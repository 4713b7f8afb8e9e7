"""The model the built-in server scenarios serve, made here on first use and cached:
a random-weight Llama-shaped model (``LlamaConfig`` + ``save_pretrained``), a small BPE
tokenizer trained with ``tokenizers`` on inline text, and a chat template. Nothing is
downloaded.

``python -m xwatch.core.engine.servers.localmodel serve SIZE [transformers serve options]``
makes (or finds) the model, then execs ``transformers serve`` on it with
``HF_HUB_OFFLINE=1``: the server workload's process is the server itself.
``... path SIZE`` prints the folder. transformers and tokenizers are imported only here
(the server's side), never by xwatch or its load generator.

llama.cpp (``docs/serving.md``): ``... gguf SIZE`` converts the model to GGUF with
llama.cpp's own ``convert_hf_to_gguf.py`` (the source folder in ``XWATCH_LLAMA_CPP``),
cached beside it, and prints its path; ``... llama SIZE [llama-server options]`` makes
both, then execs ``llama-server -m MODEL.gguf`` (the binary in ``XWATCH_LLAMA_SERVER``,
else ``XWATCH_LLAMA_CPP/build/bin/llama-server``), the suppressed ids as its logit biases.
"""

from __future__ import annotations

import contextlib
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


LLAMA_CPP_ENV = "XWATCH_LLAMA_CPP"  # llama.cpp's source folder (its converter)
LLAMA_SERVER_ENV = "XWATCH_LLAMA_SERVER"  # the llama-server binary
GGUF_NAME = "model-f16.gguf"
#: llama.cpp's converter, run as it is with two of its methods replaced. It names a BPE
#: tokenizer's pre-tokenizer by a hash of the ids a known model's vocabulary gives a test
#: text; a vocabulary trained here matches none, so the converter refuses it. This one
#: splits with GPT-2's regex (``ByteLevel`` with its regex), which llama.cpp calls
#: ``gpt-2``. And a Llama's tokenizer is tried as SentencePiece first, importing
#: ``sentencepiece`` before it looks for ``tokenizer.model``: without that package (and
#: without the file, as here) the converter now goes on to the BPE vocabulary, as it
#: does with the package.
_CONVERT = """
import runpy, sys
script = sys.argv[1]
sys.argv = [script, *sys.argv[2:]]
import conversion.base as base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"
_sentencepiece = base.TextModel._create_vocab_sentencepiece
def _create_vocab_sentencepiece(self):
    if not (self.dir_model / "tokenizer.model").is_file():
        raise FileNotFoundError(self.dir_model / "tokenizer.model")
    return _sentencepiece(self)
base.TextModel._create_vocab_sentencepiece = _create_vocab_sentencepiece
runpy.run_path(script, run_name="__main__")
"""


def _llama_cpp() -> Path:
    src = os.environ.get(LLAMA_CPP_ENV)
    if not src or not (Path(src) / "convert_hf_to_gguf.py").is_file():
        raise SystemExit(f"xwatch localmodel: set {LLAMA_CPP_ENV} to llama.cpp's source "
                         f"folder (it holds convert_hf_to_gguf.py; now: {src!r})")
    return Path(src)


def gguf(size: str, root: Path | None = None) -> Path:
    """The model as GGUF (f16), converted once by llama.cpp's ``convert_hf_to_gguf.py``
    and kept in the model's folder (written beside, then renamed)."""
    import subprocess

    folder = make(size, root)
    out = folder / GGUF_NAME
    if out.is_file():
        return out
    src = _llama_cpp()  # (checked first by ``main``: before the model is made)
    tmp = folder / f".{GGUF_NAME}.{os.getpid()}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(src), str(src / "gguf-py"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    try:
        subprocess.run([sys.executable, "-c", _CONVERT, str(src / "convert_hf_to_gguf.py"),
                        str(folder), "--outfile", str(tmp), "--outtype", "f16"],
                       env=env, check=True, stdout=sys.stderr)
        os.replace(tmp, out)
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"xwatch localmodel: llama.cpp's converter failed (exit status "
                         f"{e.returncode}; its output is above)") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return out


def _llama_server() -> str:
    got = os.environ.get(LLAMA_SERVER_ENV)
    if got:
        return got
    built = _llama_cpp() / "build" / "bin" / "llama-server"
    if built.is_file():
        return str(built)
    raise SystemExit(f"xwatch localmodel: set {LLAMA_SERVER_ENV} to the llama-server binary "
                     f"(not found at {built})")


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("serve", "path", "gguf", "llama"):
        print("usage: python -m xwatch.core.engine.servers.localmodel serve|path|gguf|llama "
              "SIZE [transformers serve or llama-server options]; sizes: "
              f"{', '.join(SIZES)}", file=sys.stderr)
        return 2
    if argv[0] in ("gguf", "llama"):
        if argv[0] == "llama" and not os.environ.get(LLAMA_SERVER_ENV):
            _llama_server()
        if argv[1] in SIZES and not (model_dir(argv[1]) / GGUF_NAME).is_file():
            _llama_cpp()
        model = gguf(argv[1])
        if argv[0] == "gguf":
            print(model)
            return 0
        binary = _llama_server()
        # the ids the generation config suppresses (EOS, the pieces without text), as
        # llama-server's own logit biases: every answer makes its max_tokens of text
        gen = json.loads((model.parent / "generation_config.json").read_text())
        bias = [a for i in gen.get("suppress_tokens") or () for a in ("-l", f"{i}-inf")]
        sys.stdout.flush()
        os.execv(binary, [binary, "-m", str(model), *bias, *argv[2:]])
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
