"""What an SQL engine gives the shared storage: a few primitives over named queries, and hooks.

The storage is written once (``sql_storage``, ``job_queue``) over this seam, as procrastinate
writes its job manager over a connector. A connector runs the named queries of its dialect
(``queries.Dialect``, ``sql/<dialect>/queries.sql``): the shared code never sees SQL text,
placeholders or driver types, only query names, parameter dicts and rows as mappings.

The hooks are the places where the engines really differ, each named for what it does:
the in-process search index of SQLite against pgvector SQL (``search_candidates``), a loop of
INSERTs against binary COPY (``bulk_insert``), and how a full-text query is spelled and made
current (``text_query``). Everything else an engine does differently (SQLite's flock write
queue and housekeeping thread, PostgreSQL's pool and savepoints) stays inside its connector.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from reflexio.filters import Candidate, CandidateQuery
from reflexio.storage.queries import Dialect

__all__ = ["Connector", "Params", "Row"]

#: Named parameters of a query.
Params = Mapping[str, Any]
#: A result row, by column name.
Row = Mapping[str, Any]


class Connector(Protocol):
    """One engine's connection to a database, for the shared storage.

    Every primitive takes a query name (of ``dialect``'s files), its named parameters and,
    for templates, the fixed SQL fragments that fill them (``where=``, ``order=``...).
    Unique-constraint violations surface as ``ConflictError``, lost connections as
    ``StorageError``.
    """

    #: The storage's backend name ("sqlite", "postgres"; "memory" for a throwaway SQLite).
    name: str
    dialect: Dialect

    # -- primitives ---------------------------------------------------------------------------
    def execute(self, query: str, params: Params | None = None, **parts: str) -> int:
        """Run a statement; how many rows it changed."""
        ...

    def one(self, query: str, params: Params | None = None, **parts: str) -> Row | None:
        """The first row a query returns, if any."""
        ...

    def all(self, query: str, params: Params | None = None, **parts: str) -> list[Row]:
        """Every row a query returns."""
        ...

    def many(self, query: str, rows: Sequence[Params]) -> None:
        """Run a statement once per parameter set (batched by the driver)."""
        ...

    def insert(self, query: str, rows: Sequence[Params]) -> list[int]:
        """Run an ``INSERT ... RETURNING id`` once per row; the new ids, in order."""
        ...

    def transaction(self, *, savepoint: bool = True) -> AbstractContextManager[Connector]:
        """A write transaction; the yielded connector runs on it.

        Called inside an open transaction it joins that one. ``savepoint=False`` lets it join
        without a savepoint, for statements whose failure no caller catches inside a
        transaction (a failed statement then aborts the whole transaction, which rolls back).
        """
        ...

    def ping(self) -> None:
        """Raise ``StorageError`` unless the database answers a trivial query."""
        ...

    def close(self) -> None:
        """Release connections, threads and files."""
        ...

    # -- hooks: where the engines differ ----------------------------------------------------
    def bulk_insert(self, table: str, rows: Sequence[Params], *, returning_ids: bool) -> list[int]:
        """Insert many rows of ``learnings`` or ``learning_events`` at once.

        Returns:
            The new ids in order with ``returning_ids``, else an empty list.
        """
        ...

    def text_query(self, text: str) -> str | None:
        """The engine's full-text query for ``text`` (None when it has no words to match),
        with the interactions' full-text index current."""
        ...

    def search_candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate]:
        """Full-text and vector candidates per filter of ``query``, filtered before ranking."""
        ...

    def warm_search(self) -> None:
        """Prepare whatever search needs in this process, so the first search costs what the
        hundredth does (a server calls it before it says ready)."""
        ...
