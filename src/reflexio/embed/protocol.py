"""The one seam between Reflexio and an embedding model, and the helpers every model shares."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from reflexio.errors import ServiceUnavailableError

__all__ = ["EmbedKind", "Embedder", "EmbedderUnavailable", "Vectors", "normalise_rows", "text_list"]

Vectors = NDArray[np.float32]
EmbedKind = Literal["query", "document"]


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
        the models here embed both alike, except that MiniLM reads only the head and tail of a
        long query (`reflexio.embed.minilm.QUERY_TOKENS`); `CachedEmbedder` caches each kind
        apart. A text with no tokens (for WordLlama, the empty string) embeds as the zero vector.
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
