"""A vector cache in front of any embedder, for the kinds of text that repeat."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from reflexio.embed.protocol import Embedder, EmbedKind, Vectors, text_list

__all__ = ["CachedEmbedder"]


class CachedEmbedder:
    """Remembers the vectors of recent texts of the kinds it is told repeat.

    By default only `kind="query"` calls are cached: queries repeat far more often than
    documents do, and a document is usually embedded once, when it is stored. A caller that
    embeds the same documents again and again (aggregation compares the instructions of
    playbooks run after run) keeps its own cache with `kinds=("document",)`. Entries are kept
    per (kind, text), since an asymmetric model embeds a query and a document differently.
    Cached rows are read-only, and every call returns a fresh array, so a caller that writes
    into its result cannot corrupt the cache.
    """

    def __init__(
        self, inner: Embedder, max_entries: int = 2048, *, kinds: tuple[EmbedKind, ...] = ("query",)
    ) -> None:
        """Wrap `inner`, keeping at most `max_entries` vectors (least recent dropped).

        Args:
            inner: The embedder asked for what the cache does not hold.
            max_entries: How many vectors are kept, over all cached kinds together.
            kinds: Which kinds of text are cached; the others always go to `inner`.
        """
        self.inner = inner
        self.kinds = frozenset(kinds)
        self._max_entries = max_entries
        self._entries: OrderedDict[tuple[EmbedKind, str], Vectors] = OrderedDict()
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
        """Embed like the inner embedder, answering repeated texts of a cached kind from the cache."""
        if kind not in self.kinds:
            return self.inner.embed(texts, kind=kind)
        batch = text_list(texts)
        found = self._lookup(kind, batch)
        missing = [text for text in dict.fromkeys(batch) if text not in found]
        if missing:
            found.update(self._store(kind, missing, self.inner.embed(missing, kind=kind)))
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[text] for text in batch])

    def _lookup(self, kind: EmbedKind, texts: list[str]) -> dict[str, Vectors]:
        with self._lock:
            found = {text: self._entries[kind, text] for text in texts if (kind, text) in self._entries}
            for text in found:
                self._entries.move_to_end((kind, text))
        return found

    def _store(self, kind: EmbedKind, texts: list[str], vectors: Vectors) -> dict[str, Vectors]:
        rows = dict(zip(texts, vectors.copy(), strict=True))
        with self._lock:
            for text, row in rows.items():
                row.flags.writeable = False
                self._entries[kind, text] = row
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return rows
