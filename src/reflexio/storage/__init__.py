"""Storage: the log, learnings, history, jobs and keys behind one protocol, written once in SQL.

``open_storage(url, embedder)`` picks the engine from the URL scheme:

* ``sqlite:////abs/path/reflexio.db`` (or ``sqlite:///relative.db``) — the embedded default;
* ``postgresql://user:password@host:5432/db`` — needs the pgvector extension;
* ``memory://`` — SQLite on a throwaway file, removed on close, for tests and demos.

Layout:

* ``protocol`` — the ``Storage`` protocol the service codes against (and ``JobQueue``, the
  part the worker loop needs);
* ``sql_storage``, ``job_queue`` — its one implementation, over a ``connector.Connector``;
* ``sqlite``, ``postgres`` — the two connectors: a few primitives (execute, one, all, many,
  insert, transaction) plus named hooks where the engines really differ; ``sqlite_search``
  and ``postgres_index``, ``postgres_search``, ``postgres_schema``, ``postgres_types`` are
  their own parts;
* ``queries`` — named SQL of each dialect and WHERE fragments compiled from filters;
  ``rows`` — records to and from rows; ``learning_writes`` — what a learning write means;
* ``sql/<dialect>/`` — numbered migrations, ``queries.sql`` (the same names in both
  dialects) and ``engine.sql`` (what only that engine's code runs);
* ``index``, ``index_rows``, ``postings`` — the in-process BM25 + vector index behind search
  on both engines (on PostgreSQL within a memory budget, ``postgres_index``); ``index_file`` —
  its snapshots on disk (SQLite), so a restart loads it instead of rebuilding.

How to add a table (say, ``verdicts``):

1. A migration per dialect, with the next free number in both folders:
   ``sql/sqlite/NNN_verdicts.sql`` and ``sql/postgres/NNN_verdicts.sql``. Every row carries
   ``org_id`` and every index starts with it.
2. Named queries under the same names in both ``queries.sql`` files (``insert_verdict``,
   ``list_verdicts``...); values are named parameters (``:name`` / ``%(name)s``), a filter is a
   ``{where}`` template compiled with ``queries.Where``, an id list is one parameter bound with
   ``Dialect.bind_list`` (``json_each`` on SQLite, ``= ANY`` on PostgreSQL).
3. The protocol methods in ``protocol.Storage``, and their one implementation in
   ``sql_storage.SqlStorage`` over ``self.db`` (writes inside ``with self.db.transaction() as
   db``); records to and from rows in ``rows``.
4. A contract test in ``tests/storage/`` taking the ``storage`` fixture, so it runs on SQLite,
   PostgreSQL and ``memory://``; ``tests/storage/test_queries.py`` already checks that both
   dialects define the same query names.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from reflexio.embed import Embedder
from reflexio.errors import ValidationError
from reflexio.storage.protocol import JobQueue, Storage

__all__ = ["JobQueue", "Storage", "open_storage"]


def open_storage(url: str, embedder: Embedder, *, search_index_mb: int = 1024) -> Storage:
    """Open (and migrate) the storage a URL names; on PostgreSQL, with ``search_index_mb`` of
    memory for the in-process search indexes (``Settings.search_index_mb``).

    Raises:
        ValidationError: The URL's scheme is not one we know.
    """
    from reflexio.storage.sql_storage import SqlStorage

    scheme = urlsplit(url).scheme
    if scheme == "memory":
        from reflexio.storage.sqlite import SqliteConnector

        return SqlStorage(SqliteConnector.temporary(), embedder)
    if scheme == "sqlite":
        from reflexio.storage.sqlite import SqliteConnector

        return SqlStorage(SqliteConnector(_sqlite_path(url)), embedder)
    if scheme in {"postgres", "postgresql", "postgresql+psycopg"}:
        from reflexio.storage.postgres import PostgresConnector

        db = PostgresConnector(
            url.replace("postgresql+psycopg://", "postgresql://"),
            dim=embedder.dim,
            search_index_bytes=max(0, search_index_mb) << 20,
        )
        return SqlStorage(db, embedder)
    raise ValidationError(
        f"unsupported storage URL {url!r}: use sqlite:///path, postgresql://... or memory://"
    )


def _sqlite_path(url: str) -> str:
    """SQLAlchemy's convention: ``sqlite:///rel.db`` is relative, ``sqlite:////abs.db`` absolute."""
    if not url.startswith("sqlite:///"):
        raise ValidationError(
            f"malformed SQLite URL {url!r}: use sqlite:///relative.db or sqlite:////absolute.db"
        )
    return url[len("sqlite:///") :]
