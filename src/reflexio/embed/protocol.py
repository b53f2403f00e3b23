"""The one seam between Reflexio and an embedding model, and the helpers every model shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from reflexio.errors import ServiceUnavailableError

__all__ = ["EmbedKind", "Embedder", "EmbedderUnavailable", "Vectors", "Window", "normalise_rows", "text_list"]

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
        the local models embed both alike, except that they read only the head and tail of a
        long query (a `Window`); `CachedEmbedder` caches each kind apart. A text with no
        tokens (for WordLlama, the empty string) embeds as the zero vector.
        """
        ...


@dataclass(frozen=True, slots=True)
class Window:
    """Which tokens of a long text are embedded: the first `head` and the last `tokens - head`.

    Queries get one because agents search with whole prompts, and a prompt with a pasted log
    says what it wants before the paste ("fix this:") or after it ("why does it fail?"): the
    middle of a long query would drown both, in a forward pass or in a mean of token vectors.
    A window keeps at least one token from each end (for MiniLM, [CLS] and [SEP]).
    """

    tokens: int
    head: int

    def __post_init__(self) -> None:
        if not 1 <= self.head < self.tokens:
            raise ValueError(f"a window needs 1 <= head < tokens, got {self}")

    def clip(self, ids: list[int]) -> list[int]:
        """`ids` when they fit, else their head and tail."""
        if len(ids) <= self.tokens:
            return ids
        return ids[: self.head] + ids[len(ids) - (self.tokens - self.head) :]


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
