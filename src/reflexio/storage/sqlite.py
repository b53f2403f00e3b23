"""SQLite storage: the embedded default (one file, WAL, FTS5 for interactions).

Each thread has its own connection; writes run in ``BEGIN IMMEDIATE`` transactions, which
serialise writers across threads *and processes* sharing the file. Learning search is served
by an in-memory ``LearningIndex`` per org (``storage.sqlite_search``; ``storage.index`` says
why), kept current from the ``learning_changes`` log: learning writes bump a per-org sequence
inside the write transaction, so a search only needs one tiny query to know whether it must
catch up. The job queue lives in ``sqlite_jobs``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reflexio import ranking
from reflexio.embed import Embedder
from reflexio.errors import ConflictError, NotFoundError, StorageError
from reflexio.filters import (
    Candidate,
    CandidateQuery,
    InteractionFilter,
    LearningFilter,
    RequestFilter,
)
from reflexio.records import (
    ApiKeyRecord,
    Audit,
    Bookmark,
    EvaluationRecord,
    InteractionRecord,
    Learning,
    LearningEvent,
    LLMUsageRecord,
    RequestRecord,
    UsageSummary,
    now,
)
from reflexio.storage import common, rows
from reflexio.storage.base import iter_chunks
from reflexio.storage.sql import (
    SQLITE,
    migrations,
    queries,
    where_events,
    where_interactions,
    where_learnings,
    where_requests,
)
from reflexio.storage.sqlite_jobs import SqliteJobQueue
from reflexio.storage.sqlite_search import SearchIndexes

if sys.platform != "win32":
    import fcntl

__all__ = ["SqliteStorage"]

log = logging.getLogger(__name__)
_Q = queries("sqlite")
#: Keep this many sequence numbers of change log per org before pruning older entries.
_CHANGE_LOG_KEEP = 200_000


#: WAL with NORMAL sync (durable at checkpoints, never corrupt); automatic checkpoints are
#: off because they run inside whichever commit crosses the threshold, adding a multi-ms stall
#: to a publish: a background thread of each process checkpoints instead (see _housekeeping_loop).
_PRAGMAS = ("journal_mode = WAL", "synchronous = NORMAL", "busy_timeout = 30000", "wal_autocheckpoint = 0")
#: Seconds between background checkpoints and full-text indexing rounds.
_HOUSEKEEPING_SECONDS = 1.0


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


class SqliteStorage(SqliteJobQueue):
    """The ``Storage`` protocol over one SQLite file."""

    backend = "sqlite"

    def __init__(self, path: str | Path, embedder: Embedder) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self._local = threading.local()
        self._all_conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._search = SearchIndexes(self._by_ids)
        self._write_lock = threading.Lock()
        self._lock_fd = os.open(f"{self.path}.write-lock", os.O_RDWR | os.O_CREAT, 0o600)
        self._migrate()
        self._stop = threading.Event()
        self._housekeeper = threading.Thread(
            target=self._housekeeping_loop, name="sqlite-housekeeping", daemon=True
        )
        self._housekeeper.start()

    # -- connections and transactions ---------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            conn.row_factory = sqlite3.Row
            for pragma in _PRAGMAS:
                conn.execute(f"PRAGMA {pragma}")
            self._local.conn = conn
            self._local.depth = 0
            with self._conns_lock:
                self._all_conns.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; writers queue on a lock first.

        SQLite admits one writer; a second one polls with sleeps of 1 ms and more (its busy
        handler), which under concurrent publishes costs far more than the writes themselves
        (an API process beside a worker process had a publish p99 of 23 ms from those sleeps
        alone, 8 ms with the lock). Writers therefore wait on locks that wake them the moment
        the writer before them is done: threads of this process on a ``threading.Lock``, and
        Reflexio processes sharing the file (API, ``reflexio worker``) on an ``flock`` of
        ``<db>.write-lock``. Only foreign writers (say, the ``sqlite3`` shell) meet the busy
        handler.
        """
        conn = self._conn()
        if self._local.depth:
            yield conn
            return
        lock_fd = self._lock_fd
        if lock_fd < 0:
            raise StorageError("the SQLite storage is closed")
        with self._write_lock, _file_lock(lock_fd):
            conn.execute("BEGIN IMMEDIATE")
            self._local.depth = 1
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                self._search.forget()  # a rollback may un-do sequence numbers an index consumed
                raise
            else:
                conn.execute("COMMIT")
            finally:
                self._local.depth = 0

    @contextmanager
    def transaction(self) -> Iterator[SqliteStorage]:
        """A write transaction on this thread's connection; methods called inside join it."""
        with self._write():
            yield self

    def _migrate(self) -> None:
        with self._write() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)")
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            for version, script in migrations("sqlite"):
                if version in done:
                    continue
                for statement in _statements(script):
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations (version) VALUES (?)", (version,))

    def _housekeeping_loop(self) -> None:
        """Off the request path, every second: index new interactions, fold the WAL back.

        The checkpoint is PASSIVE (it never waits for readers or writers); both steps are
        skipped on error (busy or closing) and retried the next round.
        """
        while not self._stop.wait(_HOUSEKEEPING_SECONDS):
            try:
                self.index_new_interactions()
                self._conn().execute("PRAGMA wal_checkpoint(PASSIVE)")
            except (sqlite3.Error, StorageError) as exc:
                log.debug("background housekeeping skipped: %s", exc)

    def index_new_interactions(self) -> None:
        """Add interactions stored since the last call to the full-text index, in one batch.

        Publishing does not index (migration 004 says why); the housekeeping thread of every
        process sharing the file calls this each second and a full-text search calls it first,
        so search results never lag the log.
        """
        if not self._conn().execute(_Q["interaction_fts_behind"]).fetchone()[0]:
            return
        with self._write() as conn:
            conn.execute(_Q["index_new_interactions"])
            conn.execute(_Q["advance_interaction_fts"])

    def ping(self) -> None:
        try:
            self._conn().execute("SELECT 1").fetchone()
        except sqlite3.Error as exc:
            raise StorageError(f"SQLite is not answering: {exc}") from exc

    def close(self) -> None:
        self._stop.set()
        fd, self._lock_fd = self._lock_fd, -1  # a straggling writer fails instead of locking a reused fd
        if fd >= 0:
            os.close(fd)
        with self._conns_lock:
            for conn in self._all_conns:
                with contextlib.suppress(sqlite3.ProgrammingError):  # from a finished thread
                    conn.close()
            self._all_conns.clear()
        self._local = threading.local()

    # -- log ----------------------------------------------------------------------------------
    def insert_request(
        self, request: RequestRecord, interactions: Sequence[InteractionRecord]
    ) -> list[InteractionRecord]:
        with self._write() as conn:
            try:
                conn.execute(_Q["insert_request"], _request_params(request))
            except sqlite3.IntegrityError as exc:
                raise ConflictError(f"request {request.request_id!r} already exists") from exc
            stored = []
            for row in interactions:
                cur = conn.execute(_Q["insert_interaction"], rows.interaction_params(row))
                stored.append(_with_id(row, int(cur.lastrowid or 0)))
            return stored

    def get_request(self, org_id: str, request_id: str) -> RequestRecord | None:
        r = self._conn().execute(_Q["get_request"], (org_id, request_id)).fetchone()
        return rows.request_from(r) if r else None

    def list_requests(
        self, org_id: str, where: RequestFilter, *, limit: int, offset: int = 0
    ) -> list[RequestRecord]:
        sql, params = where_requests(where, SQLITE)
        found = self._conn().execute(
            f"SELECT * FROM requests WHERE org_id = ? AND {sql} "
            "ORDER BY created_at DESC, request_id DESC LIMIT ? OFFSET ?",
            [org_id, *params, limit, offset],
        )
        return [rows.request_from(r) for r in found]

    def list_interactions(
        self,
        org_id: str,
        where: InteractionFilter,
        *,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[InteractionRecord]:
        sql, params = where_interactions(where, SQLITE)
        order = "DESC" if newest_first else "ASC"
        found = self._conn().execute(
            f"SELECT * FROM interactions WHERE org_id = ? AND {sql} ORDER BY id {order} LIMIT ?",
            [org_id, *params, -1 if limit is None else limit],
        )
        return [rows.interaction_from(r) for r in found]

    def search_interactions(
        self, org_id: str, where: InteractionFilter, text: str, *, limit: int
    ) -> list[tuple[InteractionRecord, float]]:
        words = ranking.raw_words(text)
        if not words:
            return []
        self.index_new_interactions()
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        params: list[Any] = []
        found = self._conn().execute(
            "SELECT i.*, -bm25(interactions_fts) AS score FROM interactions_fts "
            "JOIN interactions i ON i.id = interactions_fts.rowid "
            f"WHERE interactions_fts MATCH ? AND i.org_id = ? AND {_qualify(where, params)} "
            "ORDER BY score DESC LIMIT ?",
            [match, org_id, *params, limit],
        )
        return [(rows.interaction_from(r), float(r["score"])) for r in found]

    def delete_log(
        self,
        org_id: str,
        *,
        requests: RequestFilter | None = None,
        interactions: InteractionFilter | None = None,
    ) -> tuple[int, int]:
        n_req = n_int = 0
        with self._write() as conn:
            if requests is not None:
                sql, params = where_requests(requests, SQLITE)
                ids = [
                    r[0]
                    for r in conn.execute(
                        f"SELECT request_id FROM requests WHERE org_id = ? AND {sql}",
                        [org_id, *params],
                    )
                ]
                for chunk in iter_chunks(ids, 500):
                    marks = SQLITE.params(len(chunk))
                    n_int += conn.execute(
                        f"DELETE FROM interactions WHERE org_id = ? AND request_id IN ({marks})",
                        [org_id, *chunk],
                    ).rowcount
                    n_req += conn.execute(
                        f"DELETE FROM requests WHERE org_id = ? AND request_id IN ({marks})",
                        [org_id, *chunk],
                    ).rowcount
            if interactions is not None:
                sql, params = where_interactions(interactions, SQLITE)
                n_int += conn.execute(
                    f"DELETE FROM interactions WHERE org_id = ? AND {sql}", [org_id, *params]
                ).rowcount
        return n_req, n_int

    # -- learnings ----------------------------------------------------------------------------
    def save_learnings(self, rows_in: Sequence[Learning], audit: Audit) -> list[Learning]:
        if not rows_in:
            return []
        prepared = common.prepare_learnings(rows_in, self.embedder)
        with self._write() as conn:
            org_id = prepared[0].org_id
            seq = self._bump_seq(conn, org_id)
            before = {r.id: r for r in self._by_ids(conn, org_id, [r.id for r in prepared if r.id])}
            saved = [self._save_one(conn, row, before, seq) for row in prepared]
            self._record(conn, seq, org_id, [r.id for r in saved], common.save_events(saved, before, audit))
            return saved

    def _save_one(
        self, conn: sqlite3.Connection, row: Learning, before: dict[int, Learning], seq: int
    ) -> Learning:
        try:
            if row.id:
                old = before.get(row.id)
                if old is None or old.org_id != row.org_id:
                    raise NotFoundError(f"{row.kind.value} {row.id} not found")
                row = row.copy(created_at=old.created_at)
                conn.execute(_Q["update_learning"], rows.learning_params(row, seq=seq))
                return row
            cur = conn.execute(_Q["insert_learning"], rows.learning_params(row, seq=seq))
            return row.copy(id=int(cur.lastrowid or 0))
        except sqlite3.IntegrityError as exc:
            raise ConflictError(f"profile_id {row.profile_id!r} is already used") from exc

    def _bump_seq(self, conn: sqlite3.Connection, org_id: str) -> int:
        seq = int(conn.execute(_Q["bump_seq"], (org_id,)).fetchone()[0])
        if seq % 1000 == 0 and seq > _CHANGE_LOG_KEEP:
            upto = {"org_id": org_id, "upto": seq - _CHANGE_LOG_KEEP}
            conn.execute(_Q["prune_changes"], upto)
            conn.execute(_Q["set_pruned"], upto)
        return seq

    def _record(
        self,
        conn: sqlite3.Connection,
        seq: int,
        org_id: str,
        ids: Sequence[int],
        events: Sequence[LearningEvent],
    ) -> None:
        conn.executemany(_Q["insert_change"], [(org_id, seq, i) for i in ids])
        conn.executemany(_Q["insert_event"], [rows.event_params(e) for e in events])

    def _by_ids(self, conn: sqlite3.Connection, org_id: str, ids: Sequence[int]) -> list[Learning]:
        out: list[Learning] = []
        cur = conn.cursor()
        cur.row_factory = _learning_dict  # a dict reads ~3x faster than sqlite3.Row by name
        for chunk in iter_chunks(list(ids), 500):
            marks = SQLITE.params(len(chunk))
            cur.execute(
                # "+org_id": with 20+ ids SQLite would otherwise walk the org's rows by an index
                # (O(org size) per call); the rowid lookups are what we want.
                f"SELECT {rows.LEARNING_COLUMNS} FROM learnings WHERE +org_id = ? AND id IN ({marks})",
                [org_id, *chunk],
            )
            out.extend(rows.learning_from(r) for r in cur)
        return out

    def _select(
        self,
        conn: sqlite3.Connection,
        org_id: str,
        where: LearningFilter,
        tail: str = "",
        extra: Sequence[Any] = (),
    ) -> list[Learning]:
        sql, params = where_learnings(where, SQLITE)
        found = conn.execute(
            f"SELECT {rows.LEARNING_COLUMNS} FROM learnings WHERE org_id = ? AND {sql} {tail}",
            [org_id, *params, *extra],
        )
        return [rows.learning_from(r) for r in found]

    def get_learnings(self, org_id: str, where: LearningFilter) -> list[Learning]:
        return self._select(self._conn(), org_id, where, "ORDER BY id")

    def list_learnings(
        self,
        org_id: str,
        where: LearningFilter,
        *,
        limit: int,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[Learning]:
        order = "DESC" if newest_first else "ASC"
        tail = f"ORDER BY updated_at {order}, id {order} LIMIT ? OFFSET ?"
        return self._select(self._conn(), org_id, where, tail, (limit, offset))

    def count_learnings(self, org_id: str, where: LearningFilter) -> int:
        sql, params = where_learnings(where, SQLITE)
        row = (
            self._conn()
            .execute(f"SELECT count(*) FROM learnings WHERE org_id = ? AND {sql}", [org_id, *params])
            .fetchone()
        )
        return int(row[0])

    def update_learnings(
        self, org_id: str, where: LearningFilter, changes: dict[str, Any], audit: Audit
    ) -> list[int]:
        common.check_changes(changes)
        with self._write() as conn:
            before = self._select(conn, org_id, where)
            if not before:
                return []
            seq = self._bump_seq(conn, org_id)
            params = rows.learning_params(before[0].copy(**changes), seq=seq)
            sets = ", ".join(f"{col} = :{col}" for col in changes)
            values = {col: params[col] for col in changes} | {
                "updated_at": int(now()),
                "seq": seq,
                "org_id": org_id,
            }
            ids = [r.id for r in before]
            for chunk in iter_chunks(ids, 500):
                marks = ", ".join(f":id{i}" for i in range(len(chunk)))
                conn.execute(
                    f"UPDATE learnings SET {sets}, updated_at = :updated_at, seq = :seq "
                    f"WHERE +org_id = :org_id AND id IN ({marks})",  # "+": look up by id, not by org
                    values | {f"id{i}": v for i, v in enumerate(chunk)},
                )
            self._record(conn, seq, org_id, ids, common.change_events(before, changes, audit))
            return sorted(ids)

    def delete_learnings(self, org_id: str, where: LearningFilter, audit: Audit) -> int:
        with self._write() as conn:
            doomed = self._select(conn, org_id, where)
            self._delete_rows(conn, org_id, doomed, common.delete_events(doomed, audit))
            return len(doomed)

    def _delete_rows(
        self,
        conn: sqlite3.Connection,
        org_id: str,
        doomed: Sequence[Learning],
        events: Sequence[LearningEvent],
    ) -> None:
        if not doomed:
            return
        seq = self._bump_seq(conn, org_id)
        ids = [r.id for r in doomed]
        for chunk in iter_chunks(ids, 500):
            conn.execute(
                f"DELETE FROM learnings WHERE +org_id = ? AND id IN ({SQLITE.params(len(chunk))})",
                [org_id, *chunk],
            )
        self._record(conn, seq, org_id, ids, events)

    # -- search -------------------------------------------------------------------------------
    def search_candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate]:
        return self._search.candidates(self._conn(), org_id, query)

    def list_events(
        self,
        org_id: str,
        *,
        learning_ids: Sequence[int] | None = None,
        user_id: str | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[LearningEvent]:
        where, params = where_events(SQLITE, learning_ids=learning_ids, user_id=user_id, kinds=kinds)
        found = self._conn().execute(
            f"SELECT * FROM learning_events WHERE org_id = ? AND {where} ORDER BY id DESC LIMIT ?",
            [org_id, *params, limit],
        )
        return [rows.event_from(r) for r in found]

    def add_exposures(self, org_id: str, session_id: str, refs: Sequence[tuple[str, str]]) -> None:
        if not refs:
            return
        with self._write() as conn:
            t = now()
            conn.executemany(_Q["add_exposure"], [(org_id, session_id, k, i, t) for k, i in refs])

    def list_exposures(self, org_id: str, session_id: str) -> set[tuple[str, str]]:
        found = self._conn().execute(_Q["list_exposures"], (org_id, session_id))
        return {(r[0], r[1]) for r in found}

    # -- evaluations, bookmarks, configs --------------------------------------------------
    def add_evaluations(self, rows_in: Sequence[EvaluationRecord]) -> list[EvaluationRecord]:
        out = []
        with self._write() as conn:
            for row in rows_in:
                t = row.created_at or now()
                cur = conn.execute(_Q["insert_evaluation"], rows.evaluation_params(row, t))
                out.append(rows.evaluation_from({**rows.evaluation_params(row, t), "id": cur.lastrowid}))
        return out

    def list_evaluations(
        self,
        org_id: str,
        *,
        kind: str,
        user_id: str | None = None,
        session_id: str | None = None,
        agent_version: str | None = None,
        created_after: float | None = None,
        created_before: float | None = None,
        limit: int = 100,
    ) -> list[EvaluationRecord]:
        clauses: list[str] = ["org_id = ?", "kind = ?"]
        params: list[Any] = [org_id, kind]
        for column, op, value in (
            ("user_id", "=", user_id),
            ("session_id", "=", session_id),
            ("agent_version", "=", agent_version),
            ("created_at", ">=", created_after),
            ("created_at", "<=", created_before),
        ):
            if value is not None:
                clauses.append(f"{column} {op} ?")
                params.append(value)
        found = self._conn().execute(
            f"SELECT * FROM evaluations WHERE {' AND '.join(clauses)} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )
        return [rows.evaluation_from(r) for r in found]

    def get_bookmark(self, org_id: str, user_id: str, extractor: str) -> Bookmark | None:
        r = self._conn().execute(_Q["get_bookmark"], (org_id, user_id, extractor)).fetchone()
        return rows.bookmark_from(r) if r else None

    def put_bookmark(self, bookmark: Bookmark) -> None:
        with self._write() as conn:
            conn.execute(
                _Q["put_bookmark"],
                {
                    "org_id": bookmark.org_id,
                    "user_id": bookmark.user_id,
                    "extractor": bookmark.extractor,
                    "last_interaction_id": bookmark.last_interaction_id,
                    "updated_at": now(),
                },
            )

    def get_org_config(self, org_id: str) -> dict[str, Any] | None:
        r = self._conn().execute(_Q["get_config"], (org_id,)).fetchone()
        return rows.loads(r[0]) if r else None

    def put_org_config(self, org_id: str, config: dict[str, Any]) -> None:
        with self._write() as conn:
            conn.execute(
                _Q["put_config"],
                {"org_id": org_id, "config": rows.dumps(config), "updated_at": now()},
            )

    def clear_user(self, org_id: str, user_id: str) -> dict[str, int]:
        with self._write() as conn:
            conn.execute(
                "DELETE FROM session_exposures WHERE org_id = ? AND session_id IN "
                "(SELECT session_id FROM requests WHERE org_id = ? AND user_id = ?)",
                (org_id, org_id, user_id),
            )
            n_req, n_int = self.delete_log(
                org_id,
                requests=RequestFilter(user_id=user_id),
                interactions=InteractionFilter(user_id=user_id),
            )
            doomed = self._select(conn, org_id, LearningFilter(user_id=user_id))
            self._delete_rows(conn, org_id, doomed, [])
            counts = {"requests": n_req, "interactions": n_int, **common.count_kinds(doomed)}
            for table, key in (
                ("learning_events", "events"),
                ("evaluations", "evaluations"),
                ("bookmarks", "bookmarks"),
            ):
                counts[key] = conn.execute(
                    f"DELETE FROM {table} WHERE org_id = ? AND user_id = ?", (org_id, user_id)
                ).rowcount
            return counts

    # -- api keys ---------------------------------------------------------------------------
    def add_api_key(self, key: ApiKeyRecord) -> ApiKeyRecord:
        with self._write() as conn:
            t = key.created_at or now()
            params = {
                "org_id": key.org_id,
                "key_hash": key.key_hash,
                "prefix": key.prefix,
                "name": key.name,
                "created_at": t,
            }
            key_id = int(conn.execute(_Q["insert_api_key"], params).fetchone()[0])
        return ApiKeyRecord(
            id=key_id,
            org_id=key.org_id,
            key_hash=key.key_hash,
            prefix=key.prefix,
            name=key.name,
            created_at=t,
        )

    def find_api_key(self, key_hash: str) -> ApiKeyRecord | None:
        r = self._conn().execute(_Q["find_api_key"], (key_hash,)).fetchone()
        return rows.api_key_from(r) if r else None

    def list_api_keys(self, org_id: str | None = None) -> list[ApiKeyRecord]:
        return [rows.api_key_from(r) for r in self._conn().execute(_Q["list_api_keys"], {"org_id": org_id})]

    def revoke_api_key(self, key_id: int) -> bool:
        with self._write() as conn:
            return conn.execute(_Q["revoke_api_key"], {"id": key_id, "now": now()}).rowcount > 0

    def has_api_keys(self) -> bool:
        return bool(self._conn().execute(_Q["has_api_keys"]).fetchone()[0])

    # -- vectors ----------------------------------------------------------------------------
    def orgs_with_stale_vectors(self) -> list[str]:
        found = self._conn().execute(_Q["orgs_with_stale_vectors"], {"model": self.embedder.name})
        return [str(r[0]) for r in found]

    def refresh_vectors(self, org_id: str, *, limit: int) -> int:
        with self._write() as conn:
            stale = conn.execute(
                f"SELECT {rows.LEARNING_COLUMNS} FROM learnings WHERE org_id = ? "
                "AND (embed_model <> ? OR embedding IS NULL) LIMIT ?",
                (org_id, self.embedder.name, limit),
            )
            refreshed = common.reembedded([rows.learning_from(r) for r in stale], self.embedder)
            if not refreshed:
                return 0
            seq = self._bump_seq(conn, org_id)
            conn.executemany(_Q["set_vector"], [_vector_params(r, seq) for r in refreshed])
            self._record(conn, seq, org_id, [r.id for r in refreshed], [])
            return len(refreshed)

    # -- LLM accounting ---------------------------------------------------------------------
    def add_llm_usage(self, rows_in: Sequence[LLMUsageRecord]) -> None:
        if not rows_in:
            return
        t = now()
        with self._write() as conn:
            conn.executemany(
                _Q["insert_llm_usage"], [rows.usage_params(r, r.created_at or t) for r in rows_in]
            )

    def llm_usage(
        self, org_id: str, *, job_id: int | None = None, since: float | None = None
    ) -> UsageSummary:
        found = self._conn().execute(
            _Q["llm_usage_by_role"], {"org_id": org_id, "job_id": job_id, "since": since}
        )
        return UsageSummary.of_roles({r["role"]: rows.usage_totals_from(r) for r in found})


_LEARNING_NAMES = tuple(c.strip().strip('"') for c in rows.LEARNING_COLUMNS.split(","))


def _learning_dict(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    """Row factory for ``SELECT LEARNING_COLUMNS``: the row as a dict."""
    return dict(zip(_LEARNING_NAMES, row, strict=True))


def _vector_params(row: Learning, seq: int) -> dict[str, Any]:
    params = rows.learning_params(row, seq=seq)
    keys = ("id", "org_id", "embedding", "embed_model", "embed_dim", "text_hash", "seq")
    return {k: params[k] for k in keys}


def _statements(script: str) -> list[str]:
    """Split a migration into statements (triggers contain semicolons inside BEGIN...END)."""
    out, buf = [], []
    for line in script.splitlines():
        buf.append(line)
        if sqlite3.complete_statement("\n".join(buf)):
            statement = "\n".join(buf).strip()
            if statement and statement != ";":
                out.append(statement)
            buf = []
    return out


def _request_params(r: RequestRecord) -> dict[str, Any]:
    return {
        "org_id": r.org_id,
        "request_id": r.request_id,
        "user_id": r.user_id,
        "session_id": r.session_id,
        "source": r.source,
        "agent_version": r.agent_version,
        "created_at": r.created_at,
        "payload_hash": r.payload_hash,
    }


def _with_id(row: InteractionRecord, new_id: int) -> InteractionRecord:
    from dataclasses import replace

    return replace(row, id=new_id)


def _qualify(where: InteractionFilter, params: list[Any]) -> str:
    """The interaction filter with its columns qualified by the ``i`` alias."""
    sql, fresh = where_interactions(where, SQLITE)
    params[:] = fresh
    return _COLUMN.sub(r"i.\1", sql)


_COLUMN = re.compile(r"\b(user_id|session_id|request_id|created_at|id)\b")
