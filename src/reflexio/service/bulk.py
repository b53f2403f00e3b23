"""Bulk writes of learnings: embedded in bounded batches that stop when asked to, then saved at once.

Embedding is the expensive part of adding learnings (the storage would otherwise embed a whole
request's rows in one call that nothing can interrupt). Here rows are embedded
:data:`EMBED_BATCH` at a time with a cancellation check between batches, and saved in one
transaction only when every row has its vector: a cancelled request writes nothing, a finished
one writes everything, and storage re-embeds nothing (each vector matches its row's text).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from reflexio.records import Audit, Learning
from reflexio.service.cancellation import NEVER, Cancellation
from reflexio.service.core import Core
from reflexio.storage.learning_writes import with_current_vectors

__all__ = ["EMBED_BATCH", "save_embedded"]

#: Rows embedded between two cancellation checks: a fraction of a second of model time.
EMBED_BATCH: Final = 32


def save_embedded(
    core: Core, rows: Sequence[Learning], audit: Audit, cancel: Cancellation = NEVER
) -> list[Learning]:
    """Embed ``rows`` batch by batch, checking ``cancel`` in between, then save them together.

    Raises:
        RequestCancelledError: ``cancel`` was set; nothing was saved.
        ConflictError: A profile id is already used (from storage).
    """
    embedded: list[Learning] = []
    for start in range(0, len(rows), EMBED_BATCH):
        cancel.check()
        embedded.extend(with_current_vectors(rows[start : start + EMBED_BATCH], core.embedder))
    cancel.check()
    return core.storage.save_learnings(embedded, audit)
