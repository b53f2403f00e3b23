"""WordLlama: static token vectors that ship inside the ``wordllama`` wheel (the fallback model)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from reflexio.embed.protocol import (
    EmbedderUnavailable,
    EmbedKind,
    Vectors,
    Window,
    normalise_rows,
    text_list,
)

__all__ = ["WORDLLAMA_DIMS", "WORDLLAMA_QUERY_TOKENS", "WordLlamaEmbedder"]

WORDLLAMA_DIMS: Final = (256, 128, 64)

# A mean of static vectors barely moves after a few thousand tokens; the cap on a document's
# tokens bounds memory (8 MB per text at 256 dims) when someone embeds a whole log file.
_WORDLLAMA_MAX_TOKENS: Final = 8192

#: How many tokens of a query are averaged: its head and tail halves. A mean weighs every
#: token alike, so the question around a pasted log or dialogue would be a few tokens among
#: hundreds; a window keeps what a prompt asks (bench/results/long-queries-wordllama.json,
#: per window). Documents are averaged whole.
WORDLLAMA_QUERY_TOKENS: Final = 64


class WordLlamaEmbedder:
    """The fallback embedder: wordllama's l2_supercat static token vectors, mean-pooled.

    Pooling is done here rather than by `WordLlamaInference.embed`, which pads a batch to its
    longest text (one long text can cost gigabytes) and returns NaN for the empty string.
    Queries longer than `query_window` keep their head and tail (see `WORDLLAMA_QUERY_TOKENS`).
    """

    def __init__(self, dim: int = 256, *, query_window: Window | None = None) -> None:
        """Load the weights bundled in the wordllama wheel.

        Args:
            dim: 256, 128 or 64.
            query_window: The tokens of a long query that are averaged; by default
                `WORDLLAMA_QUERY_TOKENS`, half from its head and half from its tail.
        """
        if dim not in WORDLLAMA_DIMS:
            raise ValueError(f"wordllama dim must be one of {WORDLLAMA_DIMS}, not {dim}")
        self.name = f"wordllama-l2-supercat-{dim}"
        self.dim = dim
        model = _load_wordllama(dim)
        self._table: Vectors = np.asarray(model.embedding, dtype=np.float32)
        self._tokenizer = model.tokenizer
        self._tokenizer.no_padding()
        # Untruncated, so a query's tail is its own: the tokenizer's truncation cuts after
        # tokenizing anyway, and a 10,000-character query can be 40,000 tokens (emoji).
        self._tokenizer.no_truncation()
        self._query_window = query_window or Window(WORDLLAMA_QUERY_TOKENS, WORDLLAMA_QUERY_TOKENS // 2)

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> Vectors:
        """Embed `texts` as unit rows (see `Embedder.embed`); a query's window is its own."""
        batch = text_list(texts)
        encodings = self._tokenizer.encode_batch(batch, add_special_tokens=False)
        pooled = np.zeros((len(batch), self.dim), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            ids = (
                self._query_window.clip(encoding.ids)
                if kind == "query"
                else encoding.ids[:_WORDLLAMA_MAX_TOKENS]
            )
            if ids:
                pooled[row] = self._table[ids].mean(axis=0)
        return normalise_rows(pooled)


def _load_wordllama(dim: int) -> Any:
    """Load from inside the installed package, never from the network.

    Plain `WordLlama.load()` looks for its tokenizer in the wrong folder and then tries to
    download it; pointing `cache_dir` at the package folder finds both files locally.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
    except ImportError as error:
        raise EmbedderUnavailable("wordllama is not installed: pip install wordllama") from error
    finally:
        # Importing wordllama calls logging.basicConfig (INFO on the root logger); a library
        # must not decide an application's logging, so its handler is taken back out.
        for handler in set(root.handlers) - set(handlers):
            root.removeHandler(handler)
        root.setLevel(level)
    try:
        return wordllama.WordLlama.load(
            cache_dir=Path(wordllama.__file__).parent,
            disable_download=True,
            trunc_dim=None if dim == 256 else dim,
        )
    except FileNotFoundError as error:
        raise EmbedderUnavailable(f"wordllama's bundled weights are missing: {error}") from error
