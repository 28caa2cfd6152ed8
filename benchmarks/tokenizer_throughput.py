"""Measure single-core tokenisation throughput (bytes of text per second per CPU core).

Why: ``catalogs/system/pipeline.toml`` needs a per-core rate to turn the token rate a
training plan consumes into a CPU-core count for on-the-fly tokenisation. Published
figures (the Hugging Face tokenizers README: "less than 20 seconds to tokenize a GB of
text on a server's CPU") are per server, not per core, so this script measures one core.

Method: train a byte-level BPE (32,000 tokens, GPT-2 style pre-tokeniser) with the
Hugging Face ``tokenizers`` library on English text found on this machine
(/usr/share/common-licenses and /usr/share/doc/*/copyright, identical files dropped, up to 16 MB), then
encode it with one Rayon thread and print bytes/s, tokens/s and bytes/token.

Run: ``RAYON_NUM_THREADS=1 python benchmarks/tokenizer_throughput.py`` (needs
``pip install tokenizers``; prints a note and exits 0 when it is missing).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")


def _corpus(limit_bytes: int = 16_000_000) -> list[str]:
    """Distinct English text files (duplicated licence copies dropped), never repeated."""
    seen: set[str] = set()
    lines: list[str] = []
    size = 0
    roots = [Path("/usr/share/common-licenses"), *sorted(Path("/usr/share/doc").glob("*/copyright"))]
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            try:
                text = f.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if text in seen:
                continue
            seen.add(text)
            for ln in text.splitlines():
                if ln.strip():
                    lines.append(ln)
                    size += len(ln.encode()) + 1
            if size >= limit_bytes:
                return lines
    return lines


def main() -> None:
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    except ImportError:
        print("tokenizers is not installed: pip install tokenizers")
        return
    lines = _corpus()
    if not lines:
        print("no English text found under /usr/share; nothing measured")
        return
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(lines[:20000], trainers.BpeTrainer(vocab_size=32000, show_progress=False))
    n_bytes = sum(len(ln.encode()) + 1 for ln in lines)
    batch = 1000
    t0 = time.perf_counter()
    n_tokens = 0
    for i in range(0, len(lines), batch):
        for enc in tok.encode_batch(lines[i : i + batch]):
            n_tokens += len(enc.ids)
    dt = time.perf_counter() - t0
    print(f"threads (RAYON_NUM_THREADS): {os.environ['RAYON_NUM_THREADS']}")
    print(f"text: {n_bytes / 1e6:.1f} MB, tokens: {n_tokens:,}, time: {dt:.2f} s")
    print(f"throughput: {n_bytes / dt / 1e6:.2f} MB/s per core, {n_tokens / dt / 1e6:.3f} M tokens/s per core")
    print(f"bytes per token: {n_bytes / n_tokens:.2f}")


if __name__ == "__main__":
    main()
