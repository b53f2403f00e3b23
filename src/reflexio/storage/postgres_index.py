"""Learning search on PostgreSQL from the in-process index SQLite uses, within a memory budget.

Why: ranking in SQL costs what a query *matches*, not what it returns. ``ts_rank`` has to read
and score every row of the scope the GIN bitmap finds (a common word matches most of a scope),
so at 100k learnings per kind a unified search cost 86 ms p95 and one scope of 100k rows 322 ms
(``bench/results/search.md``), while the in-process index (``storage.index``) meets each term's
postings with the scope and keeps the top few: its cost follows the top-k. It also ranks with
the same BM25 and fusion inputs as SQLite, so the two backends give the same fused scores.

Kept exact across processes: every learning write bumps its org's ``learning_seq`` and logs the
changed ids in ``learning_changes`` inside its transaction, and the row lock ``bump_seq`` takes
makes sequence order commit order. A search reads the org's committed sequence (one row) and
catches up on the changed rows first (``storage.sqlite_search.SearchIndexes``, unchanged), so a
learning rejected or deleted through one API process is not served by another's next search.

The budget: each process keeps the indexes of the orgs it serves, each estimated as its row
count times ``BYTES_PER_ROW`` plus its vectors. An org is admitted while the estimates fit the
budget; one that does not is searched in SQL (``storage.postgres_search``: correct, filtered
before ranking, only slower), which is logged once. Admitted orgs are re-counted every
``RECOUNT_SECONDS``, and one that grew past the budget is dropped back to SQL. Cold behaviour:
a server builds every admitted org's index before it says ready (``warm``); an org first
searched later (say, one created through another process) builds its index on that search,
which costs what loading its rows costs, as on SQLite.

A search inside an open transaction is answered in SQL on that transaction's connection: it
must see the transaction's own writes, which no other connection sees yet.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Final

from reflexio.filters import Candidate, CandidateQuery
from reflexio.storage.sqlite_search import SearchIndexes, TupleConnector

__all__ = ["BYTES_PER_ROW", "IndexBudget", "PostgresIndexes"]

log = logging.getLogger(__name__)

#: What one learning costs an index besides its vector (metadata arrays, postings of its
#: words, a share of the decoded-row cache), rounded up: bench/search's peak RSS with the
#: index, less without it, was 565 MB for 300k learnings with 256-d vectors, ~0.9 KB a row
#: besides its 1 KB vector (``bench/results/search-postgres.json``).
BYTES_PER_ROW: Final = 1200
#: How often an admitted org is re-counted against the budget.
RECOUNT_SECONDS: Final = 60.0


@dataclass(frozen=True, slots=True)
class IndexBudget:
    """How much memory this process's search indexes may take.

    Attributes:
        max_bytes: The budget over all orgs; 0 searches every org in SQL.
        dim: The embedder's dimension (a row's vector costs ``5 * dim`` bytes: float32 and
            the int8 copy of ``storage.coarse``).
    """

    max_bytes: int
    dim: int

    def cost(self, rows: int) -> int:
        """The estimated bytes of an index over ``rows`` learnings."""
        return rows * (BYTES_PER_ROW + 5 * self.dim)


@dataclass(slots=True)
class _Admitted:
    indexes: SearchIndexes
    cost: int
    counted_at: float


class PostgresIndexes:
    """The in-process indexes of the orgs that fit the budget (one ``SearchIndexes`` each)."""

    def __init__(self, db: TupleConnector, budget: IndexBudget) -> None:
        self._db = db
        self._budget = budget
        self._lock = threading.Lock()
        self._admitted: dict[str, _Admitted] = {}
        #: Orgs that did not fit, with when they were counted (re-counted like admitted ones).
        self._refused: dict[str, float] = {}

    def indexes(self, org_id: str) -> SearchIndexes | None:
        """The org's index, or None when the org is searched in SQL (it does not fit)."""
        if self._budget.max_bytes <= 0:
            return None
        at = time.monotonic()
        with self._lock:
            entry = self._admitted.get(org_id)
            if entry is not None and at - entry.counted_at < RECOUNT_SECONDS:
                return entry.indexes
            refused = self._refused.get(org_id)
            if entry is None and refused is not None and at - refused < RECOUNT_SECONDS:
                return None
        return self._admit(org_id, at)

    def _admit(self, org_id: str, at: float) -> SearchIndexes | None:
        row = self._db.one("org_rows", {"org_id": org_id})
        cost = self._budget.cost(int(row["n"]) if row else 0)
        with self._lock:
            entry = self._admitted.pop(org_id, None)
            used = sum(e.cost for e in self._admitted.values())
            if used + cost > self._budget.max_bytes:
                if org_id not in self._refused:
                    log.warning(
                        "searching org %s in SQL: its index (~%d MB) does not fit the %d MB left of "
                        "the search-index budget (REFLEXIO_SEARCH_INDEX_MB)",
                        org_id,
                        cost >> 20,
                        max(0, self._budget.max_bytes - used) >> 20,
                    )
                self._refused[org_id] = at
                return None
            self._refused.pop(org_id, None)
            indexes = entry.indexes if entry is not None else SearchIndexes(self._db)
            self._admitted[org_id] = _Admitted(indexes, cost, at)
            return indexes

    def candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate] | None:
        """Candidates from the org's index, or None when the org is searched in SQL."""
        indexes = self.indexes(org_id)
        return None if indexes is None else indexes.candidates(org_id, query)

    def warm(self) -> None:
        """Build the index of every org that fits, busiest first, before requests come."""
        for row in self._db.all("indexed_orgs"):
            org_id = str(row["org_id"])
            indexes = self.indexes(org_id)
            if indexes is not None:
                # A query with no filters returns nothing, but first brings the index current.
                indexes.candidates(org_id, CandidateQuery(filters=(), text=""))

    def orgs(self) -> list[str]:
        """The orgs whose searches this process answers from its index."""
        with self._lock:
            return sorted(self._admitted)
