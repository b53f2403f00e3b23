"""The in-memory search indexes of a SQLite file: one ``LearningIndex`` per org, kept exact.

Learning writes bump a per-org sequence and log the changed ids (``learning_changes``) inside
their transaction, so a search asks one tiny query whether its org's index is current, and
catches up on just the changed rows when it is not (rebuilding only when the log was pruned
past it). Candidate rows are decoded once and kept in a small per-org cache, evicted by the
same log.

With a snapshot folder (``storage.index_file``), an org's index starts from its snapshot on
disk and catches up on the changes since (a restart is then not a rebuild from every row), and
snapshots are written in the background after a build and as the index moves on. ``warm()``
does this for every org before a server takes requests.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from reflexio.filters import Candidate, CandidateQuery
from reflexio.records import Approval, Learning, LearningKind, LearningStatus, now
from reflexio.storage import index_file, rows
from reflexio.storage.connector import Connector, Params
from reflexio.storage.index import LearningIndex
from reflexio.storage.index_rows import Hit, IndexRow
from reflexio.storage.protocol import iter_chunks

__all__ = ["SearchIndexes", "TupleConnector"]

log = logging.getLogger(__name__)

#: Decoded candidate rows kept per org for search (about 1.5 KB each).
_ROW_CACHE = 8192


class TupleConnector(Connector, Protocol):
    """A connector that also returns rows as tuples (the bulk load reads 300k rows by position)."""

    def tuples(self, query: str, params: Params) -> list[tuple[Any, ...]]:
        """Every row a query returns, as a tuple."""
        ...


@dataclass
class _OrgIndex:
    index: LearningIndex = field(default_factory=LearningIndex)
    seq: int = -1
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Recently returned candidate rows, decoded (an LRU). Fetching and decoding the rows is
    #: a large share of a search, and most candidates are rows that recent searches returned
    #: too (an agent version's rules are shared by all its users). Kept exact by the change
    #: log: ids the index catches up on are evicted, a rebuild clears it.
    rows: OrderedDict[int, Learning] = field(default_factory=OrderedDict)


class SearchIndexes:
    """Every org's index over one SQLite file, shared by the storage's threads."""

    def __init__(self, db: TupleConnector, snapshot_folder: Path | None = None) -> None:
        """Read the change log and the rows through ``db``; keep snapshots of the indexes in
        ``snapshot_folder`` (None: build every index from rows)."""
        self._db = db
        self._indexes: dict[str, _OrgIndex] = {}
        self._lock = threading.Lock()
        self._snapshot_folder = snapshot_folder
        self._snapshots: index_file.Snapshots | None = None

    def open(self) -> None:
        """Start keeping snapshots (once the database is migrated: it names the database)."""
        if self._snapshot_folder is not None:
            row = self._db.tuples("database_name", {})
            self._snapshots = index_file.Snapshots(self._snapshot_folder, str(row[0][0]))

    def warm(self) -> None:
        """Bring every org's index up to date now (from its snapshot where there is a good
        one), so that no search waits for it: what a server does before it says ready."""
        for (org_id,) in self._db.tuples("indexed_orgs", {}):
            self._fresh_entry(str(org_id))

    def close(self) -> None:
        """Write the snapshots of indexes that moved on since their last one, then stop."""
        snapshots, self._snapshots = self._snapshots, None
        if snapshots is None:
            return
        with self._lock:
            entries = list(self._indexes.items())
        for org_id, entry in entries:
            with entry.lock:
                if entry.seq >= 0 and snapshots.wants(org_id, entry.seq, built=True):
                    snapshots.queue(entry.index, self._snapshot(snapshots, org_id, entry.seq))
        snapshots.close()

    def forget(self) -> None:
        """Make every index catch up from scratch at its next search (after a rollback)."""
        with self._lock:
            for entry in self._indexes.values():
                entry.seq = -1

    def candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate]:
        """Candidates for ``query`` from the org's index, with their rows.

        One statement when nothing changed: the index is searched as it stands, then a single
        statement reads the org's committed sequence and the rows of the hits not cached, from
        one snapshot. If that sequence is the one the index is at, no write committed since
        the index caught up and the answer is exact; otherwise (or before the first build) the
        index catches up first and the search runs again. On PostgreSQL each statement is a
        round trip, which on a busy machine costs more than the search itself.
        """
        entry = self._entry(org_id)
        found = self._search_as_is(org_id, entry, query)
        if found is not None:
            return found
        entry, seq = self._fresh_entry(org_id)
        with entry.lock:  # a catch-up on another thread must not change the index mid-search
            per_filter = entry.index.search(query, int(now()))
        by_id = self._candidate_rows(org_id, entry, seq, {hit.id for hits in per_filter for hit in hits})
        return _assemble(per_filter, by_id)

    def _search_as_is(self, org_id: str, entry: _OrgIndex, query: CandidateQuery) -> list[Candidate] | None:
        """The search on the index as it stands, or None when a write committed since it
        caught up (or it was never built)."""
        with entry.lock:
            seq = entry.seq
            if seq < 0:
                return None
            per_filter = entry.index.search(query, int(now()))
            cached = self._cached_rows(entry, {hit.id for hits in per_filter for hit in hits})
        missing = sorted({hit.id for hits in per_filter for hit in hits} - cached.keys())
        params = {"org_id": org_id, "ids": self._db.dialect.bind_list(missing)}
        found = self._db.all("seq_and_learnings", params, columns=rows.LEARNING_COLUMNS)
        if int(found[0]["state_seq"] or 0) != seq:
            return None
        fetched = [rows.learning_from(r) for r in found if r["id"] is not None]
        self._cache_rows(entry, seq, fetched)
        return _assemble(per_filter, {**cached, **{r.id: r for r in fetched}})

    def _candidate_rows(self, org_id: str, entry: _OrgIndex, seq: int, ids: set[int]) -> dict[int, Learning]:
        """Rows by id, from the org's row cache where possible."""
        with entry.lock:
            cached = self._cached_rows(entry, ids)
        fetched = rows.learnings_by_ids(self._db, org_id, sorted(ids - cached.keys()))
        self._cache_rows(entry, seq, fetched)
        return {r.id: r for r in (*cached.values(), *fetched)}

    @staticmethod
    def _cached_rows(entry: _OrgIndex, ids: set[int]) -> dict[int, Learning]:
        """The rows of ``ids`` in the org's row cache (the caller holds ``entry.lock``).

        The rows are shared with the cache, not copied (a copy costs a third of a fetch): like
        every ``Learning``, they are values, changed only through ``copy()``.
        """
        cached = {i: entry.rows[i] for i in ids if i in entry.rows}
        for i in cached:
            entry.rows.move_to_end(i)
        return cached

    @staticmethod
    def _cache_rows(entry: _OrgIndex, seq: int, fetched: list[Learning]) -> None:
        """Keep rows read at ``seq`` unless the index caught up meanwhile (they may be stale)."""
        with entry.lock:
            if entry.seq == seq:
                for row in fetched:
                    entry.rows[row.id] = row
                while len(entry.rows) > _ROW_CACHE:
                    entry.rows.popitem(last=False)

    def _entry(self, org_id: str) -> _OrgIndex:
        with self._lock:
            entry = self._indexes.get(org_id)
            if entry is None:  # not setdefault: building an empty index costs ~70 us
                entry = self._indexes[org_id] = _OrgIndex()
            return entry

    def _fresh_entry(self, org_id: str) -> tuple[_OrgIndex, int]:
        """The org's index entry, caught up with the change log, and the sequence it is at."""
        entry = self._entry(org_id)
        with entry.lock:
            state = self._db.tuples("get_seq", {"org_id": org_id})  # on every search: no dict
            seq, pruned = (int(state[0][0]), int(state[0][1])) if state else (0, 0)
            if entry.seq == seq:
                return entry, seq
            snapshots = self._snapshots
            built = False
            if entry.seq < 0 and snapshots is not None:
                self._load_snapshot(snapshots, org_id, entry, seq, pruned)
            if entry.seq < 0 or entry.seq < pruned:
                entry.rows.clear()
                entry.index = self._build_index(org_id)
                built = True
            else:
                since = {"org_id": org_id, "seq": entry.seq}
                changed = [int(r["learning_id"]) for r in self._db.all("changed_since", since)]
                for learning_id in changed:
                    entry.rows.pop(learning_id, None)
                entry.index.remove(changed)
                entry.index.upsert(IndexRow.of(r) for r in rows.learnings_by_ids(self._db, org_id, changed))
            entry.seq = seq
            if snapshots is not None and snapshots.wants(org_id, seq, built=built, rows=len(entry.index)):
                snapshots.queue(entry.index, self._snapshot(snapshots, org_id, seq))
            return entry, seq

    def _load_snapshot(
        self, snapshots: index_file.Snapshots, org_id: str, entry: _OrgIndex, seq: int, pruned: int
    ) -> None:
        """Start ``entry`` from the org's snapshot if the database's history since it is in
        the change log and is the history the snapshot saw; else leave it to be built."""
        found = snapshots.load(org_id)
        if found is None:
            return
        snapshot, index = found
        if not pruned <= snapshot.seq <= seq:
            log.info(
                "not using the search snapshot of org %s: at %s, the log holds %s..%s",
                org_id,
                snapshot.seq,
                pruned,
                seq,
            )
            return
        if not index_file.same_history(snapshot.tail, self._tail(org_id, snapshot.seq)):
            log.info("not using the search snapshot of org %s: the database has another history", org_id)
            return
        entry.rows.clear()
        entry.index, entry.seq = index, snapshot.seq
        log.info(
            "search index of org %s from its snapshot at %s (the log is at %s)", org_id, snapshot.seq, seq
        )

    def _snapshot(self, snapshots: index_file.Snapshots, org_id: str, seq: int) -> index_file.Snapshot:
        return index_file.Snapshot(org_id, seq, self._tail(org_id, seq), snapshots.database)

    def _tail(self, org_id: str, seq: int) -> index_file.Tail:
        found = self._db.tuples("changes_at", {"org_id": org_id, "seq": seq})
        return tuple((int(i), str(h), int(t)) for i, h, t in found)

    def _build_index(self, org_id: str) -> LearningIndex:
        """Bulk-load an org's index, streaming rows grouped by scope (see ``LearningIndex.load``)."""
        ids = [int(r[0]) for r in self._db.tuples("index_order", {"org_id": org_id})]
        index = LearningIndex()
        index.load(self._index_rows(org_id, ids), len(ids))
        return index

    def _index_rows(self, org_id: str, ids: list[int]) -> Iterator[IndexRow]:
        """The rows of ``ids`` in that order, reading only the columns the index keeps."""
        for chunk in iter_chunks(ids, 500):
            params = {"org_id": org_id, "ids": self._db.dialect.bind_list(chunk)}
            found = {r[0]: r for r in self._db.tuples("index_rows", params)}
            yield from (_index_row(org_id, found[i]) for i in chunk if i in found)


def _assemble(per_filter: list[list[Hit]], by_id: dict[int, Learning]) -> list[Candidate]:
    """Each filter's hits with their rows, in filter order."""
    out = []
    for i, hits in enumerate(per_filter):
        for hit in hits:
            row = by_id.get(hit.id)
            if row is None:
                continue  # deleted since the index caught up
            out.append(hit.candidate(row, i))
    return out


_KIND_OF = {k.value: k for k in LearningKind}
_STATUS_OF = {s.value: s for s in LearningStatus}
_APPROVAL_OF = {a.value: a for a in Approval}


def _index_row(org_id: str, r: tuple[Any, ...]) -> IndexRow:
    """What the index keeps of a row of the ``index_rows`` query (columns by position).

    A lean twin of ``rows.learning_from`` for the bulk load (300k rows must load in seconds):
    it decodes only what ``IndexRow.of`` reads; the search text comes from ``Learning`` itself.
    """
    tags, features, blob = r[11], r[12], r[17]
    learning = Learning(
        org_id=org_id,
        kind=_KIND_OF[r[1]],
        id=r[0],
        profile_id=r[2],
        user_id=r[3],
        agent_version=r[4],
        playbook_name=r[5],
        content=r[6],
        trigger=r[7],
        status=_STATUS_OF[r[8]],
        approval=_APPROVAL_OF[r[9]] if r[9] else None,
        source=r[10],
        tags=[] if tags == "[]" else rows.loads(tags) or [],
        custom_features=None if features is None else rows.loads(features),
        expires_at=r[13],
        request_id=r[14],
        created_at=r[15],
        updated_at=r[16],
        embedding=None if blob is None else np.frombuffer(blob, dtype=np.float32),
        embed_model=r[18],
    )
    return IndexRow.of(learning)
