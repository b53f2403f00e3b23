"""An in-memory full-text (BM25) and vector index over one org's learnings.

Why hand-written: SQLite FTS5 was measured at 18 ms (agent-version scope of 10k rows) to
43 ms (unified query) p50 for scoped BM25 queries at 100k rows per kind, because it scores
every full-text match before the scope filter can apply; sqlite-vec cannot be loaded by this
Python's sqlite3. Keeping metadata, postings and vectors as numpy arrays lets every filter
(org is implicit: one index per org) apply *before* ranking, for both arms.

Speed at scale (``python -m bench.search``): a search costs what its scope holds, not what
the org holds. Each row is listed under its kind, user and agent version, so a filter starts
from the narrowest list and checks its other conditions on those rows only; BM25 meets each
term's postings with the scope by binary search; and rows are clustered by (kind, user, agent
version) on bulk load and compaction, so a scope's vectors are one contiguous block that the
cosine arm reads in place instead of gathering.

The index is a cache: the SQLite backend (``memory://`` included) bulk-loads it from the
database, or from a snapshot (``index_file``), and then applies changes incrementally (see
``storage.sqlite_search``). Positions
are append-only; an update marks the old position dead and appends a new one, and the arrays
are compacted (and re-clustered) when too many positions are dead or unclustered.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from reflexio import ranking
from reflexio.filters import CandidateQuery, LearningFilter, SearchMode
from reflexio.records import Approval, LearningKind, LearningStatus, Vector
from reflexio.storage.coarse import Cosines, Quantized, first_pass_cosines, scope_dot, with_rows, worth_it
from reflexio.storage.index_rows import Hit, IndexRow
from reflexio.storage.postings import Codes, Forward, Positions, Postings, Selection, isin, top

__all__ = ["LearningIndex"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.floating[Any]]
FloatArray32 = npt.NDArray[np.float32]
FloatArray64 = npt.NDArray[np.float64]

_EMPTY: IntArray = np.empty(0, dtype=np.int64)
#: Column combinations with a position list per value, so a filter can start from its
#: narrowest scope: one user's profiles, one agent version's playbooks, ...
_SCOPES: tuple[tuple[str, ...], ...] = (
    ("kind",),
    ("user",),
    ("version",),
    ("kind", "user"),
    ("kind", "version"),
)
#: Batches at least this big fill an empty index with the vectorised bulk load.
_BULK_MIN = 256

#: Metadata columns: one numpy array each, indexed by position; (dtype, fill for unused slots).
_COLUMNS: dict[str, tuple[type, float]] = {
    "ids": (np.int64, 0),
    "live": (np.bool_, 0),
    "kind": (np.int8, -1),
    "user": (np.int32, -1),
    "version": (np.int32, -1),
    "name": (np.int32, -1),
    "request": (np.int32, -1),
    "status": (np.int8, -1),
    "approval": (np.int8, -1),
    "source": (np.int32, -1),
    "created": (np.int64, 0),
    "updated": (np.int64, 0),
    "expires": (np.int64, 0),
    "model": (np.int32, -1),
    "doc_len": (np.float32, 0),
    "has_vec": (np.bool_, 0),
    "dim": (np.int32, 0),
}

_KINDS = {k: i for i, k in enumerate(LearningKind)}
_STATUSES = {s: i for i, s in enumerate(LearningStatus)}
_APPROVALS = {a: i for i, a in enumerate(Approval)}


@dataclass(frozen=True, slots=True)
class _Floor:
    """What a search will drop anyway (``CandidateQuery.floor``, ``weights`` and ``pool``)."""

    score: float
    weights: ranking.FusionWeights
    pool: int | None


_Term = tuple[IntArray, FloatArray32, float]


class LearningIndex:
    """BM25 + cosine candidates for one org, filtered before ranking.

    Layout, for speed at 100k+ rows per kind: every row's position is listed under its kind,
    user and agent version, so a search starts from the narrowest of those lists and checks
    the remaining conditions on that scope only; and positions are clustered by (kind, user,
    agent version) when the index is bulk-loaded or compacted, so the vectors of one scope are
    one contiguous block, read in place instead of gathered row by row.
    """

    def __init__(self, capacity: int = 1024) -> None:
        self._n = 0
        self._cap = 0
        self._live_count = 0
        self._total_len = 0.0
        self._clustered = 0  # positions below this are in clustered order
        self._pos_of: dict[int, int] = {}
        self._profile_pos: dict[str, int] = {}
        self._terms: dict[str, Postings] = {}
        self._df: dict[str, int] = {}
        self._forward = Forward()
        self._tag_pos: dict[str, list[int]] = {}
        self._scoped: dict[tuple[str, ...], dict[int, Positions]] = {cols: {} for cols in _SCOPES}
        self._users, self._versions, self._names = Codes(), Codes(), Codes()
        self._requests, self._sources, self._models = Codes(), Codes(), Codes()
        #: One matrix per vector width: after an embedder change both models' vectors are kept
        #: until the old ones are re-embedded; a query compares only its own model's.
        self._vectors: dict[int, npt.NDArray[np.float32]] = {}
        #: Each matrix's int8 copy, for the first pass over a big scope (``storage.coarse``).
        self._coarse: dict[int, Quantized] = {}
        self._c: dict[str, npt.NDArray[Any]] = {}
        self._grow(capacity)

    # -- size management ------------------------------------------------------------------
    def _grow(self, capacity: int) -> None:
        for name, (dtype, fill) in _COLUMNS.items():
            grown: npt.NDArray[Any] = np.full(capacity, fill, dtype=dtype)
            old = self._c.get(name)
            if old is not None:
                grown[: self._n] = old[: self._n]
            self._c[name] = grown
        for dim, old_vectors in self._vectors.items():
            vectors = np.zeros((capacity, dim), dtype=np.float32)
            vectors[: self._n] = old_vectors[: self._n]
            self._vectors[dim] = vectors
        self._coarse = {dim: q.grown(capacity, self._n) for dim, q in self._coarse.items()}
        self._cap = capacity

    def __len__(self) -> int:
        return self._live_count

    # -- writes -----------------------------------------------------------------------------
    def upsert(self, rows: Iterable[IndexRow]) -> None:
        """Add rows, replacing earlier versions of the same ids."""
        batch = list(rows)
        if self._n == 0 and len(batch) >= _BULK_MIN and len({r.id for r in batch}) == len(batch):
            batch.sort(key=lambda r: (_KINDS[r.kind], r.user_id or "", r.agent_version, r.id))
            self.load(batch, len(batch))
            return
        for row in batch:
            self.remove([row.id])
            self._append(row)
        dead = self._n - self._live_count
        if self._n > 1024 and (dead > self._live_count or self._n - self._clustered > self._n // 2):
            self.compact()

    def remove(self, ids: Iterable[int]) -> None:
        """Forget rows by id (unknown ids are ignored)."""
        for learning_id in ids:
            pos = self._pos_of.pop(learning_id, None)
            if pos is None or not self._c["live"][pos]:
                continue
            self._c["live"][pos] = False
            self._live_count -= 1
            self._total_len -= float(self._c["doc_len"][pos])
            for term in self._forward[pos]:
                self._df[term] -= 1

    def _append(self, row: IndexRow) -> None:
        if self._n == self._cap:
            self._grow(self._cap * 2)
        p = self._n
        self._n += 1
        self._set_meta(p, row)
        self._set_vector(p, row.vector)
        self._set_tokens(p, row.tokens)
        self._pos_of[row.id] = p
        if row.profile_id is not None:
            self._profile_pos[row.profile_id] = p
        for tag in row.tags:
            self._tag_pos.setdefault(tag, []).append(p)
        for cols in _SCOPES:
            key = _scope_key(*(int(self._c[col][p]) for col in cols))
            self._scoped[cols].setdefault(key, Positions()).add(p)
        self._c["live"][p] = True
        self._live_count += 1

    def _set_meta(self, p: int, row: IndexRow) -> None:
        for name, value in self._meta(row).items():
            self._c[name][p] = value

    def _meta(self, row: IndexRow) -> dict[str, int]:
        return {
            "ids": row.id,
            "kind": _KINDS[row.kind],
            "user": self._users.code(row.user_id),
            "version": self._versions.code(row.agent_version),
            "name": self._names.code(row.playbook_name),
            "request": self._requests.code(row.request_id),
            "status": _STATUSES[row.status],
            "approval": -1 if row.approval is None else _APPROVALS[row.approval],
            "source": self._sources.code(None if row.source is None else row.source.lower()),
            "created": row.created_at,
            "updated": row.updated_at,
            "expires": row.expires_at,
            "model": self._models.code(row.embed_model or None),
        }

    def _set_vector(self, p: int, vector: Vector | None) -> None:
        self._c["has_vec"][p] = vector is not None
        self._c["dim"][p] = 0 if vector is None else vector.shape[0]
        if vector is not None:
            self._matrix(vector.shape[0])[p] = vector
            self._coarse[vector.shape[0]].set(p, vector)

    def _matrix(self, dim: int) -> npt.NDArray[np.float32]:
        if dim not in self._vectors:
            self._vectors[dim] = np.zeros((self._cap, dim), dtype=np.float32)
            self._coarse[dim] = Quantized.empty(self._cap, dim)
        return self._vectors[dim]

    def _set_tokens(self, p: int, tokens: Sequence[str]) -> None:
        counts: dict[str, int] = {}
        for token in tokens:
            counts[token] = counts.get(token, 0) + 1
        for term, tf in counts.items():
            postings = self._terms.get(term)
            if postings is None:
                postings = self._terms[term] = Postings()
            postings.add(p, float(tf))
            self._df[term] = self._df.get(term, 0) + 1
        self._forward.append(tuple(counts))
        self._c["doc_len"][p] = len(tokens)
        self._total_len += len(tokens)

    # -- bulk load ----------------------------------------------------------------------------
    def load(self, rows: Iterable[IndexRow], count: int) -> None:
        """Fill an empty index with ``count`` rows (fewer if ``rows`` runs out), in bulk.

        Rows keep their order, which should group each scope's rows together (order them by
        kind, user and agent version, as ``upsert`` does), so that a scope's vectors form one
        contiguous block. Rows are consumed as a stream, so the caller need not hold them all
        in memory. Ids must be unique.
        """
        if self._n:
            raise ValueError("load() fills an empty index")
        self._grow(count + max(1024, count // 8))
        terms: dict[str, int] = {}
        flat: list[npt.NDArray[np.int32]] = []
        p = 0
        for chunk in _batched(rows, 4096):
            self._load_chunk(p, chunk, terms, flat)
            p += len(chunk)
        self._n = self._live_count = self._clustered = p
        self._c["live"][:p] = True
        self._load_postings(terms, np.concatenate(flat) if flat else np.empty(0, dtype=np.int32))
        self._index_scopes()

    def _load_chunk(
        self, p: int, chunk: list[IndexRow], terms: dict[str, int], flat: list[npt.NDArray[np.int32]]
    ) -> None:
        metas = [self._meta(row) for row in chunk]
        end = p + len(chunk)
        for name in metas[0]:
            self._c[name][p:end] = [m[name] for m in metas]
        self._load_vectors(p, chunk)
        lengths = [len(row.tokens) for row in chunk]
        self._c["doc_len"][p:end] = lengths
        self._total_len += sum(lengths)
        ids: list[int] = []
        for q, row in enumerate(chunk, start=p):
            doc = [terms.setdefault(t, len(terms)) for t in row.tokens]
            ids.extend(doc)
            self._forward.append(tuple(dict.fromkeys(row.tokens)))
            self._pos_of[row.id] = q
            if row.profile_id is not None:
                self._profile_pos[row.profile_id] = q
            for tag in row.tags:
                self._tag_pos.setdefault(tag, []).append(q)
        flat.append(np.asarray(ids, dtype=np.int32))

    def _load_vectors(self, p: int, chunk: list[IndexRow]) -> None:
        by_dim: dict[int, list[int]] = {}
        for i, row in enumerate(chunk):
            if row.vector is not None:
                by_dim.setdefault(row.vector.shape[0], []).append(i)
        for dim, ok in by_dim.items():  # stacked per block: far fewer numpy calls than per row
            at = p + np.asarray(ok, dtype=np.int64)
            block = np.stack([chunk[i].vector for i in ok])  # type: ignore[misc]
            self._matrix(dim)[at] = block
            self._coarse[dim].set(at, block)
            self._c["has_vec"][at] = True
            self._c["dim"][at] = dim

    def _load_postings(self, terms: dict[str, int], flat: npt.NDArray[np.int32]) -> None:
        """Postings of every term from the term ids of all rows, in row order."""
        n = self._n
        docs = np.repeat(np.arange(n, dtype=np.int64), self._c["doc_len"][:n].astype(np.int64))
        keys, tf = np.unique(flat.astype(np.int64) * n + docs, return_counts=True)  # by (term, position)
        term_of, pos = np.divmod(keys, max(n, 1))
        bounds = np.flatnonzero(np.diff(term_of)) + 1
        starts = np.concatenate([[0], bounds]).astype(np.int64)
        ends = np.concatenate([bounds, [len(keys)]]).astype(np.int64)
        names = list(terms)
        tf32 = tf.astype(np.float32)
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            if a == b:
                continue
            term = names[int(term_of[a])]
            self._terms[term] = Postings(pos[a:b], tf32[a:b])
            self._df[term] = b - a

    def _index_scopes(self) -> None:
        """Rebuild the per-value position lists of the scope columns from the arrays."""
        n = self._n
        for cols in _SCOPES:
            keys = _scope_key(*(self._c[col][:n].astype(np.int64) for col in cols))
            order = np.argsort(keys, kind="stable")
            bounds = np.flatnonzero(np.diff(keys[order])) + 1
            lists = np.split(order.astype(np.int64), bounds) if n else []
            self._scoped[cols] = {int(keys[part[0]]): Positions(part) for part in lists}

    def compact(self) -> None:
        """Drop dead positions and re-cluster live ones by scope (after many writes)."""
        live = np.flatnonzero(self._c["live"][: self._n])
        c = self._c
        order = live[_cluster_order({name: c[name][live] for name in ("ids", "kind", "user", "version")})]
        remap = np.full(self._n, -1, dtype=np.int64)
        remap[order] = np.arange(len(order))
        for arr in c.values():
            arr[: len(order)] = arr[order]
        live_dims = set(np.unique(c["dim"][order]).tolist())
        self._vectors = {  # new arrays, not permuted in place: a frozen state may refer to these
            dim: with_rows(v, order, self._cap) for dim, v in self._vectors.items() if dim in live_dims
        }
        self._coarse = {
            dim: Quantized(with_rows(q.codes, order, self._cap), with_rows(q.scales, order, self._cap))
            for dim, q in self._coarse.items()
            if dim in live_dims
        }
        self._forward = self._forward.reordered(order.tolist())
        for term in list(self._terms):
            pos, tf = self._terms[term].arrays()
            new = remap[pos]
            keep = new >= 0
            if not keep.any():
                del self._terms[term]
                self._df.pop(term, None)
                continue
            new, tf = new[keep], tf[keep]
            by_pos = np.argsort(new, kind="stable")
            self._terms[term] = Postings(new[by_pos], tf[by_pos])
        self._tag_pos = {
            t: sorted(int(remap[p]) for p in ps if remap[p] >= 0) for t, ps in self._tag_pos.items()
        }
        self._pos_of = {int(c["ids"][i]): i for i in range(len(order))}
        self._profile_pos = {k: int(remap[p]) for k, p in self._profile_pos.items() if remap[p] >= 0}
        self._n = self._clustered = len(order)
        self._index_scopes()

    # -- snapshots ----------------------------------------------------------------------------
    def state(self) -> dict[str, npt.NDArray[Any]]:
        """Everything the index holds, as flat arrays that ``from_state`` rebuilds it from.

        For snapshots on disk (``storage.index_file``): arrays only, strings as JSON bytes,
        so a snapshot loads without unpickling anything.
        """
        return self.freeze()()

    def freeze(self) -> Callable[[], dict[str, npt.NDArray[Any]]]:
        """``state()`` as of now, to be computed later without holding the index still.

        What changes in place (the columns, the tag and profile maps) is copied here, which is
        cheap; the rest (vectors, postings, term lists) is never changed in place below the
        current size, compaction included, so it is only referenced. A snapshot taken in the
        background thus holds the caller's lock for milliseconds, not for the whole write.
        """
        n = self._n
        columns = {f"col.{name}": arr[:n].copy() for name, arr in self._c.items()}
        vectors: dict[str, npt.NDArray[Any]] = {f"vec.{dim}": m[:n] for dim, m in self._vectors.items()}
        for dim, q in self._coarse.items():
            vectors[f"q8.{dim}"], vectors[f"q8scale.{dim}"] = q.codes[:n], q.scales[:n]
        postings = {term: p.arrays() for term, p in self._terms.items()}
        df = [self._df.get(term, 0) for term in postings]
        forward = self._forward
        tags = {t: list(positions) for t, positions in self._tag_pos.items()}
        profiles = dict(self._profile_pos)
        codes = [codes.values() for codes in self._codes()]
        sizes = np.asarray([n, self._live_count, self._clustered], dtype=np.int64)
        total_len = np.asarray([self._total_len], dtype=np.float64)

        def arrays() -> dict[str, npt.NDArray[Any]]:
            names = list(postings)
            out: dict[str, npt.NDArray[Any]] = {**columns, **vectors}
            out["terms"] = _json_bytes(names)
            out["term.df"] = np.asarray(df, dtype=np.int64)
            out["term.ends"] = np.cumsum([len(pos) for pos, _ in postings.values()], dtype=np.int64)
            out["term.pos"] = np.concatenate([pos for pos, _ in postings.values()]) if names else _EMPTY
            out["term.tf"] = (
                np.concatenate([tf for _, tf in postings.values()]) if names else np.empty(0, np.float32)
            )
            number = {term: i for i, term in enumerate(names)}
            out["forward.terms"], out["forward.ends"] = forward.packed(number, n)
            out["tags"] = _json_bytes(list(tags))
            out["tag.ends"] = np.cumsum([len(p) for p in tags.values()], dtype=np.int64)
            out["tag.pos"] = np.asarray([p for ps in tags.values() for p in ps], dtype=np.int64)
            out["profiles"] = _json_bytes(list(profiles))
            out["profile.pos"] = np.asarray(list(profiles.values()), dtype=np.int64)
            out["codes"] = _json_bytes(codes)
            out["sizes"], out["total_len"] = sizes, total_len
            return out

        return arrays

    @classmethod
    def from_state(cls, state: dict[str, npt.NDArray[Any]]) -> LearningIndex:
        """The index ``state()`` was taken of."""
        n, live_count, clustered = (int(x) for x in state["sizes"])
        index = cls()
        if n:  # the arrays are taken over as they are: the first append grows them
            index._c = {name: state[f"col.{name}"] for name in _COLUMNS}
            index._vectors = {int(key[4:]): m for key, m in state.items() if key.startswith("vec.")}
            index._coarse = {
                dim: Quantized(state[f"q8.{dim}"], state[f"q8scale.{dim}"]) for dim in index._vectors
            }
            index._cap = n
        index._n, index._live_count, index._clustered = n, live_count, clustered
        index._total_len = float(state["total_len"][0])
        names = _from_json_bytes(state["terms"])
        pos, tf = state["term.pos"], state["term.tf"]
        bounds = np.concatenate([[0], state["term.ends"]]).astype(np.int64).tolist()  # [0] with no terms
        for term, a, b, df in zip(names, bounds[:-1], bounds[1:], state["term.df"].tolist(), strict=True):
            index._terms[term] = Postings(pos[a:b], tf[a:b])
            if df:
                index._df[term] = df
        index._forward = Forward(state["forward.terms"], state["forward.ends"], names)
        tags = _from_json_bytes(state["tags"])
        tagged = np.split(state["tag.pos"], state["tag.ends"][:-1]) if tags else []
        index._tag_pos = {t: p.tolist() for t, p in zip(tags, tagged, strict=True)}
        index._profile_pos = dict(
            zip(_from_json_bytes(state["profiles"]), state["profile.pos"].tolist(), strict=True)
        )
        for codes, values in zip(index._codes(), _from_json_bytes(state["codes"]), strict=True):
            codes.restore(values)
        live = np.flatnonzero(index._c["live"][:n])
        index._pos_of = dict(zip(index._c["ids"][live].tolist(), live.tolist(), strict=True))
        index._index_scopes()
        return index

    def _codes(self) -> tuple[Codes, ...]:
        return self._users, self._versions, self._names, self._requests, self._sources, self._models

    # -- reads ------------------------------------------------------------------------------
    def search(self, query: CandidateQuery, now: int) -> list[list[Hit]]:
        """Candidates per filter of ``query``; each list holds the union of both arms."""
        terms, ceiling = self._query_terms(query)
        model = self._models.lookup(query.embed_model) if query.embed_model else None
        vector = query.vector if query.mode is not SearchMode.FTS else None
        floor = None if query.floor is None else _Floor(query.floor, query.weights, query.pool)
        return [
            self._search_one(f, terms, ceiling, vector, model, query.limit, now, floor) for f in query.filters
        ]

    def _query_terms(self, query: CandidateQuery) -> tuple[list[_Term], float]:
        """The query's terms that some row holds, and the query's BM25 ceiling.

        The ceiling counts every term, those no row holds as much as the rarest term a row
        could hold (a document frequency of one): a query matched on one common word of three
        shares a third of its weight, not all of it.
        """
        if query.mode is SearchMode.VECTOR:
            return [], 0.0
        n_docs = max(self._live_count, 1)
        unseen = ranking.bm25_idf(1, n_docs)
        out, idfs = [], []
        for term in ranking.query_terms(query.text):
            postings = self._terms.get(term)
            df = self._df.get(term, 0)
            if postings is None or df <= 0:
                idfs.append(unseen)
                continue
            pos, tf = postings.arrays()
            idf = ranking.bm25_idf(df, n_docs)
            out.append((pos, tf, idf))
            idfs.append(idf)
        return out, ranking.bm25_ceiling(idfs)

    def _search_one(
        self,
        where: LearningFilter,
        terms: list[_Term],
        ceiling: float,
        vector: Vector | None,
        model: int | None,
        limit: int,
        now: int,
        floor: _Floor | None = None,
    ) -> list[Hit]:
        scope, eligible = self._select(where, now)
        if not len(scope):
            return []
        raw = self._bm25(scope, eligible, terms)
        sims, valid = self._cosine(scope, eligible, vector, model, limit)
        return self._hits(scope, raw, ceiling, sims, valid, limit, floor)

    def rows(self, where: LearningFilter, now: int) -> IntArray:
        """The live positions ``where`` selects, ascending."""
        scope, eligible = self._select(where, now)
        return scope.positions if eligible is None else scope.positions[eligible]

    def _select(self, where: LearningFilter, now: int) -> tuple[Selection, BoolArray | None]:
        """The positions a search of ``where`` reads, and which of them it selects (None: all).

        Starts from the narrowest position list among the filter's kind, user and agent
        version, so the cost follows the size of the scope, not of the org. When the filter
        keeps most of that list (live, current rows of one user), the list is searched as it
        is with the rest masked out, so a clustered scope is read in place; otherwise only the
        kept positions are.
        """
        base, done = self._base(where)
        scope = Selection(base, self._clustered)
        if not len(scope):
            return scope, None
        keep = self._keep(where, scope, done)
        kept = int(np.count_nonzero(keep))
        if kept == len(scope):
            return scope, None
        if 2 * kept >= len(scope):
            return scope, keep
        return scope.subset(keep, self._clustered), None

    def _base(self, where: LearningFilter) -> tuple[IntArray, tuple[str, ...]]:
        """The narrowest position list that holds every row ``where`` selects, and its columns."""
        codes: dict[str, int] = {}
        if len(where.kinds) == 1:
            codes["kind"] = _KINDS[where.kinds[0]]
        for col, value, known in (
            ("user", where.user_id, self._users),
            ("version", where.agent_version, self._versions),
        ):
            if value is not None:
                code = known.lookup(value)
                if code is None:
                    return _EMPTY, ()
                codes[col] = code
        # A (kind, x) list is never longer than the kind list: only fall back to the latter.
        usable = [cols for cols in _SCOPES if set(cols) <= codes.keys()]
        usable = [cols for cols in usable if len(cols) == len(usable[-1])] if usable else []
        lists = {cols: self._scope_list(cols, codes) for cols in usable}
        done = min(lists, key=lambda cols: len(lists[cols]), default=())
        return (lists[done] if done else np.arange(self._n, dtype=np.int64)), done

    def _scope_list(self, cols: tuple[str, ...], codes: dict[str, int]) -> IntArray:
        positions = self._scoped[cols].get(_scope_key(*(codes[col] for col in cols)))
        return _EMPTY if positions is None else positions.array()

    def _keep(self, where: LearningFilter, scope: Selection, done: tuple[str, ...] = ()) -> BoolArray:
        """Which of ``scope`` are live and pass every condition of ``where`` not already in ``done``."""
        c, take = self._c, scope.take
        keep: BoolArray = np.array(take(c["live"]), dtype=np.bool_)  # a copy: take() may be a view
        if where.kinds and "kind" not in done:
            keep &= isin(take(c["kind"]), [_KINDS[k] for k in where.kinds])
        for value, codes, col in (
            (where.user_id, self._users, "user"),
            (where.agent_version, self._versions, "version"),
            (where.playbook_name, self._names, "name"),
            (where.request_id, self._requests, "request"),
            (None if where.source is None else where.source.lower(), self._sources, "source"),
        ):
            if value is not None and col not in done:
                code = codes.lookup(value)
                if code is None:
                    return np.zeros(len(scope), dtype=np.bool_)
                keep &= take(c[col]) == code
        if where.statuses is not None:
            keep &= isin(take(c["status"]), [_STATUSES[s] for s in where.statuses])
        if where.approvals is not None:
            agent = take(c["kind"]) == _KINDS[LearningKind.AGENT_PLAYBOOK]
            keep &= ~agent | isin(take(c["approval"]), [_APPROVALS[a] for a in where.approvals])
        for col, bound, lower in (
            ("created", where.created_after, True),
            ("created", where.created_before, False),
            ("updated", where.updated_after, True),
            ("updated", where.updated_before, False),
        ):
            if bound is not None:
                keep &= take(c[col]) >= bound if lower else take(c[col]) <= bound
        if where.active_at is not None:
            keep &= take(c["expires"]) > where.active_at
        if where.expired_at is not None:
            keep &= take(c["expires"]) <= where.expired_at
        return self._keep_ids(where, scope, keep)

    def _keep_ids(self, where: LearningFilter, scope: Selection, keep: BoolArray) -> BoolArray:
        if where.tags is not None:
            tagged = [p for tag in where.tags for p in self._tag_pos.get(tag, ())]
            keep &= np.isin(scope.positions, np.asarray(tagged, dtype=np.int64))
        if where.ids is not None:
            keep &= np.isin(scope.take(self._c["ids"]), np.asarray(where.ids, dtype=np.int64))
        if where.profile_ids is not None:
            chosen = [self._profile_pos[p] for p in where.profile_ids if p in self._profile_pos]
            keep &= np.isin(scope.positions, np.asarray(chosen, dtype=np.int64))
        return keep

    def _bm25(self, scope: Selection, eligible: BoolArray | None, terms: list[_Term]) -> FloatArray64:
        """Raw BM25 of each of ``scope`` (0 where no query term occurs or the row is not selected)."""
        if not terms:
            return np.zeros(len(scope), dtype=np.float64)
        avgdl = self._total_len / max(self._live_count, 1) or 1.0
        k1, b = ranking.BM25_K1, ranking.BM25_B
        local, weights = [], []
        doc_len = scope.take(self._c["doc_len"])
        for pos, tf, idf in terms:
            at, t = scope.meet(pos, tf)
            if eligible is not None:
                selected = eligible[at]
                at, t = at[selected], t[selected]
            norm = k1 * (1.0 - b + b * doc_len[at] / avgdl)
            local.append(at)
            weights.append(idf * t * (k1 + 1.0) / (t + norm))
        raw = np.bincount(np.concatenate(local), weights=np.concatenate(weights), minlength=len(scope))
        return raw.astype(np.float64, copy=False)

    def _cosine(
        self,
        scope: Selection,
        eligible: BoolArray | None,
        vector: Vector | None,
        model: int | None,
        limit: int,
    ) -> tuple[Cosines | None, BoolArray | None]:
        """Cosine of each of ``scope`` with the query, and which rows it is valid for (None: all).

        A row's cosine is valid when the row is selected and has a vector of the query's model
        and width; it is computed for the whole scope either way (a masked-out row costs less
        to compute than to gather around).
        """
        matrix = None if vector is None else self._vectors.get(vector.shape[0])
        if vector is None or matrix is None or model is None:
            return None, None
        c = self._c
        ok = (scope.take(c["model"]) == model) & (scope.take(c["dim"]) == vector.shape[0])
        ok &= scope.take(c["has_vec"])
        if eligible is not None:
            ok &= eligible
        valid = None if ok.all() else ok
        if worth_it(scope.run, limit):
            coarse = self._coarse[vector.shape[0]]
            return first_pass_cosines(matrix, coarse, scope, vector, valid, limit), valid
        return Cosines(scope_dot(matrix, scope, vector)), valid

    def _hits(
        self,
        scope: Selection,
        raw: FloatArray64,
        ceiling: float,
        cosines: Cosines | None,
        valid: BoolArray | None,
        limit: int,
        floor: _Floor | None = None,
    ) -> list[Hit]:
        """The top ``limit`` of each arm, merged, with both arms' scores for every hit.

        With a ``floor``, hits the caller would drop (fused score under the floor, or under
        the pool's last) are left out here, so it loads only rows it may serve.
        """
        sims = None if cosines is None else cosines.values
        matched = np.flatnonzero(raw > 0)
        fts_rank = {int(matched[i]): r + 1 for r, i in enumerate(top(raw[matched], limit))}
        vec_rank: dict[int, int] = {}
        if cosines is not None:
            nearest = cosines.nearest(valid, limit)
            vec_rank = {i: r + 1 for r, i in enumerate(nearest.tolist())}
        fts_on = ceiling > 0
        best, least = ranking.fts_spread(raw[matched] / ceiling) if fts_on else (0.0, 0.0)
        chosen = np.asarray(list(dict.fromkeys([*fts_rank, *vec_rank])), dtype=np.int64)
        if cosines is not None:
            cosines.refine(chosen)
        has_sim = (
            None if sims is None else (np.ones(len(chosen), np.bool_) if valid is None else valid[chosen])
        )
        if floor is not None and len(chosen):
            fused = ranking.fused_scores(
                None if sims is None or has_sim is None else np.where(has_sim, sims[chosen], np.nan),
                np.minimum(raw[chosen] / ceiling, 1.0) if fts_on else None,
                floor.weights,
                fts_best=best,
                fts_floor=least,
            )
            cut = floor.score
            if floor.pool is not None and len(fused) > floor.pool > 0:
                cut = max(cut, float(np.partition(fused, len(fused) - floor.pool)[len(fused) - floor.pool]))
            keep = fused >= cut - 1e-9  # rounding must not cost a borderline hit
            leads = np.asarray([vec_rank.get(i) == 1 for i in chosen.tolist()], dtype=np.bool_)
            keep |= leads & (fused >= floor.score - 1e-9)  # the vector arm's first is never pooled out
            chosen = chosen[keep]
            has_sim = None if has_sim is None else has_sim[keep]
        ids = self._c["ids"][scope.positions[chosen]].tolist()
        scores = raw[chosen].tolist()
        scored: list[float | None] = [None] * len(chosen)
        if sims is not None and has_sim is not None:
            scored = [
                s if ok else None for s, ok in zip(sims[chosen].tolist(), has_sim.tolist(), strict=True)
            ]
        return [
            Hit(
                id=ids[j],
                fts_score=score if fts_on else None,
                fts_norm=ranking.normalise_bm25(score, ceiling) if fts_on else None,
                fts_rank=fts_rank.get(i),
                vector_score=sim,
                vector_rank=vec_rank.get(i),
                fts_best=best if fts_on else None,
                fts_floor=least,
            )
            for j, (i, score, sim) in enumerate(zip(chosen.tolist(), scores, scored, strict=True))
        ]

    def vector_of(self, learning_id: int) -> Vector | None:
        """The stored vector of a live row (used for near-duplicate checks)."""
        pos = self._pos_of.get(learning_id)
        if pos is None or not self._c["has_vec"][pos]:
            return None
        vector: Vector = self._vectors[int(self._c["dim"][pos])][pos]
        return vector


def _json_bytes(values: Any) -> npt.NDArray[np.uint8]:
    return np.frombuffer(json.dumps(values).encode(), dtype=np.uint8)


def _from_json_bytes(data: npt.NDArray[np.uint8]) -> Any:
    return json.loads(data.tobytes().decode())


def _batched(rows: Iterable[IndexRow], size: int) -> Iterator[list[IndexRow]]:
    chunk: list[IndexRow] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _scope_key(*codes: Any) -> Any:
    """One number for a combination of column codes (ints or int64 arrays; codes are >= -1)."""
    key = codes[0]
    for code in codes[1:]:
        key = key * (1 << 32) + (code + 1)
    return key


def _cluster_order(meta: dict[str, npt.NDArray[Any]]) -> IntArray:
    """Order rows by (kind, user, agent version, id), so each scope's rows sit together."""
    order: IntArray = np.lexsort((meta["ids"], meta["version"], meta["user"], meta["kind"]))
    return order
