"""The SQLite engine: the embedded default (one file, WAL, FTS5), and ``memory://``.

Each thread has its own connection; writes run in ``BEGIN IMMEDIATE`` transactions, which
serialise writers across threads *and processes* sharing the file, queued on locks that wake
the next writer at once (see ``SqliteConnector.transaction``). Learning search is served by an
in-memory ``LearningIndex`` per org (``storage.sqlite_search``; ``storage.index`` says why),
kept current from the ``learning_changes`` log that every learning write appends to.

``memory://`` is this engine on a throwaway file, removed on close, in ``/dev/shm`` where there
is one: the same code, SQL and locking as a real file, so the contract suite's SQLite results
hold for it, and no second implementation to keep in step. On tmpfs the file costs no disk
I/O; elsewhere WAL with NORMAL sync writes it at checkpoints only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import numpy as np

from reflexio import ranking
from reflexio.errors import ConflictError, StorageError
from reflexio.filters import Candidate, CandidateQuery
from reflexio.records import Vector
from reflexio.storage import rows
from reflexio.storage.connector import Params, Row
from reflexio.storage.queries import Dialect, migrations, queries
from reflexio.storage.sqlite_search import SearchIndexes

if sys.platform != "win32":
    import fcntl

__all__ = ["SQLITE", "SqliteConnector"]

log = logging.getLogger(__name__)


def _blob(vector: Vector) -> bytes:
    return vector.astype(np.float32).tobytes()


def _json_list(values: Sequence[Any]) -> str | None:
    return rows.dumps(list(values))


#: Lists travel as JSON text, read in SQL with ``json_each``; vectors as float32 BLOBs.
SQLITE: Final = Dialect("sqlite", ":{}", bind_list=_json_list, bind_vector=_blob)
_Q = queries("sqlite")
#: Seconds between background checkpoints and full-text indexing rounds.
_HOUSEKEEPING_SECONDS: Final = 1.0
#: Driver error names of a UNIQUE (or primary key) violation.
_UNIQUE: Final = frozenset({"SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"})


@contextmanager
def _file_lock(fd: int) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``fd``; the kernel wakes the next waiter on release.

    Where there is no ``flock`` (Windows), processes fall back on SQLite's busy handler,
    which is correct, only slower under contention.
    """
    if sys.platform == "win32":
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)  # blocks without holding the GIL
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextmanager
def _driver_errors() -> Iterator[None]:
    """A UNIQUE violation surfaces as ``ConflictError`` (the shared code words the message)."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        if exc.sqlite_errorname in _UNIQUE:
            raise ConflictError(str(exc)) from exc
        raise


class SqliteConnector:
    """The ``Connector`` over one SQLite file.

    Args:
        path: The database file (created with its folder when missing).
        name: The storage's backend name ("memory" for a throwaway file).
        snapshots: Keep search-index snapshots in ``<path>.search/`` (``storage.index_file``),
            so that a restart loads the indexes instead of rebuilding them.
    """

    dialect = SQLITE

    def __init__(self, path: str | Path, *, name: str = "sqlite", snapshots: bool = True) -> None:
        self.name = name
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._remove: Callable[[], object] | None = None
        self._all_conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        # Search-index snapshots live beside the file (a throwaway store has no restarts).
        self.search = SearchIndexes(self, Path(f"{self.path}.search") if snapshots else None)
        self._write_lock = threading.Lock()
        self._lock_fd = os.open(f"{self.path}.write-lock", os.O_RDWR | os.O_CREAT, 0o600)
        self._migrate()
        self.search.open()
        self._stop = threading.Event()
        self._housekeeper = threading.Thread(
            target=self._housekeeping_loop, name="sqlite-housekeeping", daemon=True
        )
        self._housekeeper.start()

    @classmethod
    def temporary(cls) -> SqliteConnector:
        """A database in a fresh folder that is removed on close (``memory://``)."""
        shm = Path("/dev/shm")
        parent = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
        folder = tempfile.mkdtemp(prefix="reflexio-memory-", dir=parent)
        db = cls(Path(folder) / "reflexio.db", name="memory", snapshots=False)
        db._remove = weakref.finalize(db, shutil.rmtree, folder, ignore_errors=True)
        return db

    # -- connections and transactions -----------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            for pragma in _statements(_Q["connection_pragmas"]):
                conn.execute(pragma)
            self._local.conn = conn
            self._local.depth = 0
            with self._conns_lock:
                self._all_conns.append(conn)
        return conn

    @contextmanager
    def transaction(self, *, savepoint: bool = True) -> Iterator[SqliteConnector]:
        """A write transaction on this thread's connection; calls inside join it.

        SQLite needs no savepoints: a failed statement leaves its transaction usable.

        SQLite admits one writer; a second one polls with sleeps of 1 ms and more (its busy
        handler), which under concurrent publishes costs far more than the writes themselves.
        Writers therefore wait on locks that wake them the moment the writer before them is
        done: threads of this process on a ``threading.Lock``, and Reflexio processes sharing
        the file (API, ``reflexio worker``) on an ``flock`` of ``<db>.write-lock``. Only foreign
        writers (say, the ``sqlite3`` shell) meet the busy handler. ``bench/results/ingest.json``
        measures publish latency under a concurrent worker process.
        """
        conn = self._conn()
        if self._local.depth:
            yield self
            return
        lock_fd = self._lock_fd
        if lock_fd < 0:
            raise StorageError("the SQLite storage is closed")
        with self._write_lock, _file_lock(lock_fd):
            conn.execute(_Q["begin_write"])
            self._local.depth = 1
            try:
                yield self
            except BaseException:
                conn.execute(_Q["rollback"])
                self.search.forget()  # a rollback may un-do sequence numbers an index consumed
                raise
            else:
                conn.execute(_Q["commit"])
            finally:
                self._local.depth = 0

    def _migrate(self) -> None:
        with self.transaction():
            self.execute("create_migrations")
            done = {r["version"] for r in self.all("applied_migrations")}
            for version, script in migrations("sqlite"):
                if version in done:
                    continue
                for statement in _statements(script):
                    self._conn().execute(statement)
                self.execute("record_migration", {"version": version})

    # -- primitives -------------------------------------------------------------------------------
    def _run(self, query: str, params: Params | None, parts: dict[str, str]) -> sqlite3.Cursor:
        try:  # not _driver_errors(): this runs for every read, and a context manager costs more
            return self._conn().execute(_Q.render(query, parts), params or {})
        except sqlite3.IntegrityError as exc:
            if exc.sqlite_errorname in _UNIQUE:
                raise ConflictError(str(exc)) from exc
            raise

    def execute(self, query: str, params: Params | None = None, **parts: str) -> int:
        return self._run(query, params, parts).rowcount

    def one(self, query: str, params: Params | None = None, **parts: str) -> Row | None:
        cur = self._run(query, params, parts)
        row = cur.fetchone()
        return None if row is None else dict(zip(_names(cur), row, strict=True))

    def all(self, query: str, params: Params | None = None, **parts: str) -> list[Row]:
        # Plain dicts: reading a column by name is ~3x faster than from an sqlite3.Row.
        cur = self._run(query, params, parts)
        names = _names(cur)
        return [dict(zip(names, row, strict=True)) for row in cur]

    def tuples(self, query: str, params: Params) -> list[tuple[Any, ...]]:
        """Rows as tuples, for the search index's bulk load (read by position)."""
        return self._run(query, params, {}).fetchall()

    def many(self, query: str, rows: Sequence[Params]) -> None:
        if rows:
            with _driver_errors():
                self._conn().executemany(_Q[query], rows)

    def insert(self, query: str, rows: Sequence[Params]) -> list[int]:
        sql, conn = _Q[query], self._conn()
        with _driver_errors():
            return [int(conn.execute(sql, row).fetchone()[0]) for row in rows]

    def ping(self) -> None:
        try:
            self.one("ping")
        except sqlite3.Error as exc:
            raise StorageError(f"SQLite is not answering: {exc}") from exc

    def close(self) -> None:
        self._stop.set()
        if self._housekeeper is not threading.current_thread():
            self._housekeeper.join(timeout=5.0)
        with contextlib.suppress(sqlite3.Error, StorageError):  # a snapshot is only a cache
            self.search.close()  # writes the snapshots that are due, through this connector
        fd, self._lock_fd = self._lock_fd, -1  # a straggling writer fails instead of locking a reused fd
        if fd >= 0:
            os.close(fd)
        with self._conns_lock:
            for conn in self._all_conns:
                with contextlib.suppress(sqlite3.ProgrammingError):  # from a finished thread
                    conn.close()
            self._all_conns.clear()
        self._local = threading.local()
        if self._remove is not None:
            self._remove()

    # -- hooks ------------------------------------------------------------------------------------
    def bulk_insert(self, table: str, rows: Sequence[Params], *, returning_ids: bool) -> list[int]:
        """One INSERT per row on the open transaction: SQLite runs them in-process, so a loop
        costs no round trips."""
        if returning_ids:
            return self.insert(f"insert_{table}", rows)
        self.many(f"insert_{table}", rows)
        return []

    def text_query(self, text: str) -> str | None:
        """An FTS5 OR query of the text's words, each quoted; interactions stored since the
        last housekeeping round are indexed first, so a search never misses a turn."""
        words = ranking.raw_words(text)
        if not words:
            return None
        self.index_new_interactions()
        return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)

    def search_candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate]:
        """From the org's in-process index (``storage.sqlite_search``)."""
        return self.search.candidates(org_id, query)

    def warm_search(self) -> None:
        """Load (or build) every org's in-process index now (``SearchIndexes.warm``)."""
        self.search.warm()

    # -- housekeeping -----------------------------------------------------------------------------
    def _housekeeping_loop(self) -> None:
        """Off the request path, every second: index new interactions, fold the WAL back.

        Both steps are skipped on error (busy or closing) and retried the next round.
        """
        while not self._stop.wait(_HOUSEKEEPING_SECONDS):
            try:
                self.index_new_interactions()
                self.execute("checkpoint")
            except (sqlite3.Error, StorageError) as exc:
                log.debug("background housekeeping skipped: %s", exc)

    def index_new_interactions(self) -> None:
        """Add interactions stored since the last call to the full-text index, in one batch.

        Publishing does not index (migration 004 says why); the housekeeping thread of every
        process sharing the file calls this each second and a full-text search calls it first.
        """
        behind = self.one("interaction_fts_behind")
        if not (behind and behind["behind"]):
            return
        with self.transaction():
            self.execute("index_new_interactions")
            self.execute("advance_interaction_fts")


def _names(cur: sqlite3.Cursor) -> list[str]:
    return [d[0] for d in cur.description]


def _statements(script: str) -> list[str]:
    """Split a script into statements (triggers contain semicolons inside BEGIN...END)."""
    out, buf = [], []
    for line in script.splitlines():
        buf.append(line)
        if sqlite3.complete_statement("\n".join(buf)):
            statement = "\n".join(buf).strip()
            if statement and statement != ";":
                out.append(statement)
            buf = []
    return out
