"""A query-vector cache in front of any embedder."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from reflexio.embed.protocol import Embedder, EmbedKind, Vectors, text_list

__all__ = ["CachedEmbedder"]


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
