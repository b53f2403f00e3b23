"""The PostgreSQL engine: the server backend, for deployments that run several API processes.

Why it is built this way:

* **One connection per transaction.** Calls borrow from a ``psycopg_pool`` pool.
  ``transaction()`` binds one connection to the yielded connector and to the calling thread,
  so every call inside the block, nested ones included, runs on it; each nested call runs in
  a savepoint, so a caught error (a duplicate request id) leaves the transaction usable, as
  on SQLite. The publish path's job statements join without one (``savepoint=False``).
* **Search from the in-process index, within a budget.** Each process answers an org's
  searches from the same in-process index SQLite uses, kept exact across processes by the
  change log (``storage.postgres_index`` says why and how); orgs that do not fit the memory
  budget, and searches inside a transaction, are answered in SQL over pgvector and a
  generated ``tsvector`` (``storage.postgres_search``).
* **Bulk saves by binary COPY**, with ids drawn from the identity sequence beforehand.
* **Outages fail fast.** A call waits at most :data:`POOL_WAIT_SECONDS` for a connection and
  a new connection at most :data:`CONNECT_TIMEOUT_SECONDS` to open, then fails with a
  ``StorageError`` carrying ``retry_after`` (a 503 with ``Retry-After``): while PostgreSQL is
  down, callers get an answer in about two seconds instead of hanging for the pool's default
  30; once one call has found it down, the others fail at once while one at a time probes
  (``storage.breaker``), so a request that makes several calls does not wait for each. The
  pool keeps reconnecting in the background and checks each connection before lending it, so
  service resumes on its own when the database is back (a connection used within
  :data:`CHECK_IDLE_SECONDS` is lent without that check, which would cost every call a round
  trip); a reconnect attempt gives up after
  :data:`RECONNECT_SECONDS` (the next call starts a fresh one), so its backoff never grows to
  leave a recovered database unused for long.
* **Vector indexes only where they pay**: opening builds a kind's HNSW graph once it holds
  ``hnsw_min_rows`` vectors of the embedder's dimension (``storage.postgres_schema``); keeping
  a graph current makes every insert costlier, which buys nothing while exact scans are fast.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from copy import copy
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from pgvector.psycopg.vector import register_vector_info
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

from reflexio.errors import ConflictError, StorageError
from reflexio.filters import Candidate, CandidateQuery
from reflexio.records import Vector
from reflexio.storage.breaker import Breaker
from reflexio.storage.connector import Params, Row
from reflexio.storage.postgres_index import IndexBudget, PostgresIndexes
from reflexio.storage.postgres_schema import migrate
from reflexio.storage.postgres_search import PostgresSearch, tsquery
from reflexio.storage.postgres_types import Conn, VectorBinaryLoader, VectorTextLoader, copy_rows
from reflexio.storage.queries import Dialect, queries

__all__ = ["CONNECT_TIMEOUT_SECONDS", "POOL_WAIT_SECONDS", "POSTGRES", "PostgresConnector"]

#: The longest a call waits for a pooled connection: beyond it the database is down or the
#: pool is saturated, and an immediate 503 is more useful to a caller than a hung request.
POOL_WAIT_SECONDS: Final = 2.0
#: libpq's ``connect_timeout`` (whole seconds) unless the URL sets its own: an unreachable
#: host must not hold a reconnect attempt for the kernel's TCP timeout.
CONNECT_TIMEOUT_SECONDS: Final = 2
#: How long one background reconnect keeps retrying (with backoff) before it gives up.
RECONNECT_SECONDS: Final = 5.0
#: A pooled connection idle this long is checked (an empty query) before it is lent; one used
#: more recently is lent as is. Checking every loan cost each storage call a second round trip
#: (a search makes several calls), and a connection that broke since its last use fails its
#: next statement with the same ``StorageError`` an outage gives, tripping the breaker.
CHECK_IDLE_SECONDS: Final = 1.0
#: What a storage outage tells callers to wait before retrying (``Retry-After``).
OUTAGE_RETRY_AFTER_SECONDS: Final = 2.0


def _array(values: Sequence[Any]) -> list[Any]:
    return list(values)


def _vector(vector: Vector) -> Vector:
    return vector  # pgvector's dumper, registered on every connection, sends it


#: Lists travel as arrays, vectors as pgvector values; pooled connections are in autocommit.
POSTGRES: Final = Dialect("postgres", "%({})s", bind_list=_array, bind_vector=_vector, lone_writes=True)
_Q = queries("postgres")
#: Planned with their values on every call: a generic plan cannot weigh a filter's selectivity.
_PLAN_EACH_TIME: Final = frozenset({"search_interactions"})


def _connect_timeout(url: str) -> dict[str, Any]:
    """``connect_timeout`` for the pool's connections, unless the URL chose one."""
    return {} if "connect_timeout" in conninfo_to_dict(url) else {"connect_timeout": CONNECT_TIMEOUT_SECONDS}


def _has_rows(cur: psycopg.Cursor[Any]) -> bool:
    """Whether the statement returned a row set (``description`` would build every column's
    metadata just to answer that)."""
    result = cur.pgresult
    return result is not None and result.nfields > 0


@dataclass
class _Tx:
    """A borrowed connection inside an open transaction."""

    conn: Conn
    open: bool = True


class _DriverErrors:
    """Unique violations surface as ``ConflictError``, connection failures as ``StorageError``.

    A class rather than a ``@contextmanager`` generator: every statement passes through it,
    and a generator-based manager costs several times more per use.
    """

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, psycopg.errors.UniqueViolation):
            raise ConflictError(exc.diag.message_detail or str(exc)) from exc
        if isinstance(exc, psycopg.OperationalError):
            raise StorageError(f"PostgreSQL failed: {exc}", retry_after=OUTAGE_RETRY_AFTER_SECONDS) from exc


_driver_errors: Final = _DriverErrors()


class _Held:
    """The transaction's own connection for one statement (see ``_DriverErrors``: a class
    because this runs for every statement of every transaction)."""

    __slots__ = ("conn",)

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def __enter__(self) -> Conn:
        return self.conn

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        _driver_errors.__exit__(kind, exc, tb)


class _Lent:
    """How many pooled connections are borrowed now: a full pool's timeout is load, not an outage."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def add(self, n: int) -> None:
        with self._lock:
            self.count += n


class PostgresConnector:
    """The ``Connector`` over a PostgreSQL database with pgvector.

    Args:
        url: A libpq URL (``postgresql://user:password@host:5432/db``).
        dim: The embedder's vector dimension (which HNSW graphs to keep).
        pool_size: Most connections this process holds.
        hnsw_min_rows: Build a kind's HNSW index on open once this many vectors of ``dim``
            are stored; 0 builds it at once, None never.
        search_index_bytes: The memory budget of this process's in-process search indexes
            (``storage.postgres_index``); 0 answers every search in SQL.
    """

    name = "postgres"
    dialect = POSTGRES

    def __init__(
        self,
        url: str,
        *,
        dim: int,
        pool_size: int = 10,
        hnsw_min_rows: int | None = 10_000,
        search_index_bytes: int = 0,
    ) -> None:
        self.url = url
        self._local = threading.local()
        self._tx: _Tx | None = None
        self._breaker = Breaker(retry_after=OUTAGE_RETRY_AFTER_SECONDS)
        self._lent = _Lent()  # shared with the transaction views (``_bound``)
        #: When each pooled connection was last returned (``_check``).
        self._returned: weakref.WeakKeyDictionary[Conn, float] = weakref.WeakKeyDictionary()
        with _driver_errors:
            schema = migrate(url, dim, hnsw_min_rows)
            self._vector_type, self._iterative_scan = schema.vector_type, schema.iterative_scan
            self.search = PostgresSearch(POSTGRES, schema.hnsw)
            self.indexes = PostgresIndexes(self, IndexBudget(search_index_bytes, dim))
            self._pool: ConnectionPool[Conn] = ConnectionPool(
                url,
                min_size=1,
                max_size=pool_size,
                kwargs={"autocommit": True, "row_factory": dict_row, **_connect_timeout(url)},
                configure=self._configure,
                check=self._check,
                reconnect_timeout=RECONNECT_SECONDS,
                open=False,
                name="reflexio",
            )
            self._pool.open(wait=True, timeout=30.0)

    def _configure(self, conn: Conn) -> None:
        """Per new pooled connection: numpy vectors in and out, filtered HNSW scans."""
        register_vector_info(conn, self._vector_type)
        conn.adapters.register_loader(self._vector_type.oid, VectorTextLoader)
        conn.adapters.register_loader(self._vector_type.oid, VectorBinaryLoader)
        if self._iterative_scan:
            conn.execute(_Q["enable_iterative_scan"])

    def _check(self, conn: Conn) -> None:
        """Before a loan: check a connection idle for ``CHECK_IDLE_SECONDS`` or more (raises
        when it is broken, and the pool replaces it)."""
        returned = self._returned.get(conn)
        if returned is None or time.monotonic() - returned >= CHECK_IDLE_SECONDS:
            ConnectionPool.check_connection(conn)

    # -- connections and transactions -----------------------------------------------------------
    def _current(self) -> _Tx | None:
        tx = self._tx if self._tx is not None and self._tx.open else None
        tx = tx or getattr(self._local, "tx", None)
        return tx if tx is not None and tx.open else None

    def connection(self) -> AbstractContextManager[Conn]:
        """The open transaction's connection, or one borrowed for the block."""
        tx = self._current()
        return _Held(tx.conn) if tx is not None else self._borrow()

    @contextmanager
    def _borrow(self) -> Iterator[Conn]:
        with _driver_errors, self._pooled() as conn:
            yield conn

    @contextmanager
    def _pooled(self) -> Iterator[Conn]:
        """A connection from the pool, through the outage breaker (``storage.breaker``).

        No connection within the wait while the pool had room to open one means the database
        is down (a saturated pool is load, not an outage); so does a connection that broke
        under a statement. Either opens the breaker; the next connection lent closes it.
        """
        probe = self._breaker.admit()
        try:
            conn = self._pool.getconn(timeout=POOL_WAIT_SECONDS)
        except PoolTimeout as exc:
            if self._lent.count < self._pool.max_size:
                self._breaker.tripped(str(exc), probe)
            else:
                self._breaker.released(probe)
            raise
        except BaseException:
            self._breaker.released(probe)
            raise
        self._breaker.connected(probe)
        self._lent.add(1)
        try:
            with conn:
                yield conn
        except psycopg.OperationalError as exc:
            if conn.broken or conn.closed:
                self._breaker.tripped(str(exc), probe=False)
            raise
        finally:
            self._lent.add(-1)
            self._returned[conn] = time.monotonic()
            self._pool.putconn(conn)

    @contextmanager
    def transaction(self, *, savepoint: bool = True) -> Iterator[PostgresConnector]:
        """A transaction on one connection: a savepoint inside an open one (unless
        ``savepoint=False``), else a borrowed connection, bound to this thread and to the
        yielded connector (which other threads may use)."""
        tx = self._current()
        with _driver_errors:
            if tx is not None and not savepoint:
                yield self._bound(tx)
            elif tx is not None:
                with tx.conn.transaction():
                    yield self._bound(tx)
            else:
                with self._pooled() as conn, conn.transaction():
                    tx = self._local.tx = _Tx(conn)
                    try:
                        yield self._bound(tx)
                    finally:
                        tx.open = False
                        self._local.tx = None

    def _bound(self, tx: _Tx) -> PostgresConnector:
        if self._tx is tx:
            return self
        view = copy(self)
        view._tx = tx
        return view

    # -- primitives -------------------------------------------------------------------------------
    def execute(self, query: str, params: Params | None = None, **parts: str) -> int:
        with self.connection() as conn:
            return conn.execute(_Q.render(query, parts), params, prepare=self._prepare(query)).rowcount

    def one(self, query: str, params: Params | None = None, **parts: str) -> Row | None:
        with self.connection() as conn, conn.cursor(binary=True) as cur:
            cur.execute(_Q.render(query, parts), params, prepare=self._prepare(query))
            return cur.fetchone() if _has_rows(cur) else None

    def all(self, query: str, params: Params | None = None, **parts: str) -> list[Row]:
        # Binary results: vectors arrive as raw float4s instead of text to parse.
        with self.connection() as conn, conn.cursor(binary=True) as cur:
            cur.execute(_Q.render(query, parts), params, prepare=self._prepare(query))
            return list(cur.fetchall()) if _has_rows(cur) else []

    def tuples(self, query: str, params: Params) -> list[tuple[Any, ...]]:
        """Rows as tuples, for the search index's bulk load (read by position)."""
        with self.connection() as conn, conn.cursor(binary=True, row_factory=tuple_row) as cur:
            cur.execute(_Q[query], params, prepare=self._prepare(query))
            return cur.fetchall()

    def many(self, query: str, rows: Sequence[Params]) -> None:
        if rows:
            with self.connection() as conn, conn.cursor() as cur:
                cur.executemany(_Q[query], rows)

    def insert(self, query: str, rows: Sequence[Params]) -> list[int]:
        """Pipelined: one round trip for the batch, the ids read back in order."""
        if not rows:
            return []
        ids = []
        with self.connection() as conn, conn.cursor() as cur:
            cur.executemany(_Q[query], rows, returning=True)
            while True:
                row = cur.fetchone()
                assert row is not None
                ids.append(int(row["id"]))
                if not cur.nextset():
                    return ids

    @staticmethod
    def _prepare(query: str) -> bool | None:
        return False if query in _PLAN_EACH_TIME else None

    def ping(self) -> None:
        tx = self._current()
        try:
            if tx is not None:
                tx.conn.execute(_Q["ping"])
                return
            with self._pooled() as conn:
                conn.execute(_Q["ping"])
        except psycopg.Error as exc:
            raise StorageError(
                f"PostgreSQL is not answering: {exc}", retry_after=OUTAGE_RETRY_AFTER_SECONDS
            ) from exc

    def close(self) -> None:
        self._pool.close()

    # -- hooks ------------------------------------------------------------------------------------
    def bulk_insert(self, table: str, rows: Sequence[Params], *, returning_ids: bool) -> list[int]:
        """Binary COPY (ids drawn from the table's sequence first: COPY cannot return them)."""
        ids: list[int] = []
        with self.connection() as conn:
            if returning_ids:
                drawn = conn.execute(_Q["draw_ids"], {"table": table, "n": len(rows)}).fetchall()
                ids = [int(r["id"]) for r in drawn]
                rows = [{**row, "id": i} for row, i in zip(rows, ids, strict=True)]
            copy_rows(conn, table, rows)
        return ids

    def text_query(self, text: str) -> str | None:
        """An OR ``tsquery`` (the generated ``tsvector`` column is always current)."""
        return tsquery(text)

    def search_candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate]:
        """From the org's in-process index when it fits the budget and no transaction is
        open on this thread (``storage.postgres_index``), else in SQL (``storage.postgres_search``)."""
        if self._current() is None:
            found = self.indexes.candidates(org_id, query)
            if found is not None:
                return found
        with self.connection() as conn:
            return self.search.candidates(conn, org_id, query)

    def warm_search(self) -> None:
        """Build the in-process index of every org that fits the budget."""
        self.indexes.warm()
