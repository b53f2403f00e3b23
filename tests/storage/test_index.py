"""The in-memory search index answers the same however it was filled.

Bulk loading (clustered by scope, numpy-built postings), row-by-row upserts, updates, removals
and compaction must all give the same candidates and scores; the contract suite checks the
semantics of each filter on every backend, these tests check the index's own bookkeeping.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import numpy as np

from reflexio import ranking
from reflexio.filters import CandidateQuery, LearningFilter, SearchMode
from reflexio.records import Approval, LearningKind, LearningStatus
from reflexio.storage import coarse, index_file, postings
from reflexio.storage.index import LearningIndex
from reflexio.storage.index_rows import Hit, IndexRow

WORDS = [
    "coffee",
    "tea",
    "python",
    "deploy",
    "friday",
    "refund",
    "order",
    "berlin",
    "nurse",
    "dog",
    "cat",
    "tax",
    "report",
]
NOW = 1_700_000_000


def make_row(i: int, rng: random.Random, **changes: object) -> IndexRow:
    kind = rng.choice(list(LearningKind))
    vector = np.asarray([rng.gauss(0, 1) for _ in range(8)], dtype=np.float32)
    fields: dict[str, object] = {
        "id": i,
        "kind": kind,
        "user_id": None if kind is LearningKind.AGENT_PLAYBOOK else f"u{rng.randrange(5)}",
        "agent_version": f"v{rng.randrange(3)}",
        "playbook_name": rng.choice(["default", "other"]),
        "request_id": f"r{i % 7}",
        "profile_id": f"p{i}" if kind is LearningKind.PROFILE else None,
        "status": rng.choice([LearningStatus.CURRENT] * 4 + [LearningStatus.ARCHIVED]),
        "approval": rng.choice(list(Approval)) if kind is LearningKind.AGENT_PLAYBOOK else None,
        "source": rng.choice(["chat", "Email", None]),
        "tags": tuple(rng.sample(["a", "b", "c"], rng.randrange(3))),
        "created_at": NOW - rng.randrange(1000),
        "updated_at": NOW - rng.randrange(1000),
        "expires_at": NOW + rng.choice([-10, 10_000]),
        "embed_model": "m",
        "tokens": tuple(rng.choice(WORDS) for _ in range(rng.randrange(1, 8))),
        "vector": vector / np.linalg.norm(vector),
    }
    fields.update(changes)
    return IndexRow(**fields)  # type: ignore[arg-type]


FILTERS = [
    LearningFilter(),
    LearningFilter(
        kinds=(LearningKind.PROFILE,), user_id="u1", statuses=(LearningStatus.CURRENT,), active_at=NOW
    ),
    LearningFilter(kinds=(LearningKind.USER_PLAYBOOK,), user_id="u2", agent_version="v1"),
    LearningFilter(
        kinds=(LearningKind.AGENT_PLAYBOOK,),
        agent_version="v0",
        approvals=(Approval.APPROVED, Approval.PENDING),
    ),
    LearningFilter(kinds=(LearningKind.PROFILE, LearningKind.USER_PLAYBOOK), tags=("a",), source="CHAT"),
    LearningFilter(user_id="u3", playbook_name="other", created_after=NOW - 500, updated_before=NOW - 100),
    LearningFilter(ids=tuple(range(0, 400, 3)), request_id="r2"),
    LearningFilter(profile_ids=("p1", "p2", "p3", "p10", "p11", "p12", "p13"), agent_version="v2"),
    LearningFilter(user_id="nobody"),
]


def answers(index: LearningIndex) -> list[list[set[tuple[int, float | None, float | None]]]]:
    """Every candidate of every filter, for a few queries, as comparable sets."""
    out = []
    for text in ["coffee deploy", "refund order friday", "unknownword", "tax"]:
        vector = np.ones(8, dtype=np.float32) / np.sqrt(8)
        for mode in SearchMode:
            query = CandidateQuery(
                filters=tuple(FILTERS), text=text, vector=vector, embed_model="m", limit=10_000, mode=mode
            )
            out.append(
                [
                    {
                        (
                            h.id,
                            None if h.fts_score is None else round(h.fts_score, 9),
                            None if h.vector_score is None else round(h.vector_score, 5),
                        )
                        for h in hits
                    }
                    for hits in index.search(query, NOW)
                ]
            )
    return out


def test_bulk_load_answers_like_row_by_row_upserts() -> None:
    rng = random.Random(1)
    rows = [make_row(i, rng) for i in range(1, 400)]
    bulk, single = LearningIndex(), LearningIndex()
    bulk.upsert(rows)  # an empty index takes a big batch in bulk
    for row in rows:
        single.upsert([row])
    assert len(bulk) == len(single) == len(rows)
    assert answers(bulk) == answers(single)
    assert any(hits for per_query in answers(bulk) for hits in per_query)


def test_updates_removals_and_compaction_keep_answers_consistent() -> None:
    rng = random.Random(2)
    rows = [make_row(i, rng) for i in range(1, 1500)]
    bulk, single = LearningIndex(), LearningIndex()
    bulk.upsert(rows)
    for row in rows:
        single.upsert([row])
    for index in (bulk, single):
        change = random.Random(3)
        for i in change.sample(range(1, 1500), 600):  # moves rows between users, versions, kinds
            index.upsert([make_row(i, change)])
        index.remove(range(1, 1500, 11))
    assert answers(bulk) == answers(single)
    before = answers(bulk)
    bulk.compact()
    assert answers(bulk) == before


def test_a_moved_row_leaves_its_old_scope() -> None:
    rng = random.Random(4)
    index = LearningIndex()
    index.upsert([make_row(i, rng, kind=LearningKind.PROFILE, user_id="u1") for i in range(1, 300)])
    index.upsert([make_row(5, rng, kind=LearningKind.PROFILE, user_id="u9", tokens=("zebra",))])
    query = CandidateQuery(
        filters=(
            LearningFilter(kinds=(LearningKind.PROFILE,), user_id="u1"),
            LearningFilter(kinds=(LearningKind.PROFILE,), user_id="u9"),
        ),
        text="zebra",
        mode=SearchMode.FTS,
    )
    old_scope, new_scope = index.search(query, NOW)
    assert [h.id for h in new_scope] == [5]
    assert 5 not in {h.id for h in old_scope}


def test_rows_are_clustered_by_scope_after_a_bulk_load() -> None:
    rng = random.Random(5)
    index = LearningIndex()
    index.upsert([make_row(i, rng) for i in range(1, 500)])
    rows = index.rows(LearningFilter(kinds=(LearningKind.AGENT_PLAYBOOK,), agent_version="v1"), NOW)
    assert len(rows) > 10
    assert rows[-1] - rows[0] + 1 == len(rows)  # one contiguous block: read in place, not gathered


def test_vectors_of_two_widths_coexist_and_a_query_compares_only_its_own() -> None:
    rng = random.Random(6)
    index = LearningIndex()
    index.upsert([make_row(i, rng) for i in range(1, 300)])  # 8 wide, model "m"
    wide = np.full(16, 0.25, dtype=np.float32)
    index.upsert([make_row(7, rng, vector=wide, embed_model="m16"), make_row(8, rng, vector=wide)])
    query = CandidateQuery(filters=(LearningFilter(),), text="", vector=wide, embed_model="m16")
    assert [(h.id, round(h.vector_score or 0, 5)) for h in index.search(query, NOW)[0]] == [(7, 1.0)]
    index.compact()
    assert [h.id for h in index.search(query, NOW)[0]] == [7]
    assert index.vector_of(8) is not None and index.vector_of(8).shape == (16,)  # type: ignore[union-attr]


def test_a_floor_leaves_out_exactly_the_hits_the_caller_would_drop() -> None:
    rng = random.Random(4)
    index = LearningIndex()
    index.upsert([make_row(i, rng) for i in range(1, 800)])
    vector = np.ones(8, dtype=np.float32) / np.sqrt(8)
    base = CandidateQuery(filters=tuple(FILTERS), text="coffee tax order", vector=vector, embed_model="m")

    def fused(hit: Hit) -> float:
        return ranking.fused_score(
            hit.vector_score, hit.fts_norm, fts_best=hit.fts_best, fts_floor=hit.fts_floor
        )

    everything = index.search(base, NOW)
    floored = index.search(replace(base, floor=0.3), NOW)
    for all_hits, kept in zip(everything, floored, strict=True):
        assert {h.id for h in kept} == {h.id for h in all_hits if fused(h) >= 0.3}
    outside = 0  # filters whose vector arm's first hit is not among the pool's best
    for pool in (5, 1):
        pooled = index.search(replace(base, floor=0.0, pool=pool), NOW)
        for all_hits, kept in zip(everything, pooled, strict=True):
            scores = sorted((fused(h) for h in all_hits), reverse=True)
            last = scores[pool - 1] if len(scores) > pool else 0.0
            first = {h.id for h in all_hits if h.vector_rank == 1}  # never pooled out
            assert {h.id for h in kept} == {h.id for h in all_hits if fused(h) >= last - 1e-9} | first
            outside += any(h.vector_rank == 1 and fused(h) < last - 1e-9 for h in all_hits)
    assert any(len(hits) > 5 for hits in everything)  # the pool did cut somewhere
    assert outside  # and kept a vector arm's first hit it would have cut


def test_batch_fusion_agrees_with_one_at_a_time() -> None:
    rng = random.Random(5)
    vec = np.asarray([rng.uniform(-0.2, 1.1) for _ in range(50)] + [np.nan] * 5)
    fts = np.asarray([rng.uniform(0, 1) for _ in range(55)])
    weights = ranking.FusionWeights(vector=0.3, fts=0.5)
    for spread in ({}, {"fts_best": 0.8, "fts_floor": 0.2}, {"fts_best": 0.0, "fts_floor": 0.0}):
        batch = ranking.fused_scores(vec, fts, weights, **spread)  # type: ignore[arg-type]
        one = [
            ranking.fused_score(None if v != v else float(v), float(f), weights, **spread)  # type: ignore[arg-type]
            for v, f in zip(vec, fts, strict=True)
        ]
        assert np.allclose(batch, one)
    assert np.allclose(
        ranking.fused_scores(vec[:3], None), [ranking.fused_score(float(v), None) for v in vec[:3]]
    )


def test_an_index_rebuilt_from_its_state_answers_and_changes_alike(tmp_path: Path) -> None:
    rng = random.Random(7)
    index = LearningIndex()
    index.upsert([make_row(i, rng) for i in range(1, 900)])
    for i in rng.sample(range(1, 900), 200):  # appended, unclustered positions and dead ones
        index.upsert([make_row(i, rng)])
    index.remove(range(1, 900, 13))
    np.savez(tmp_path / "state.npz", **index.state())
    with np.load(tmp_path / "state.npz", allow_pickle=False) as saved:
        copy = LearningIndex.from_state({key: saved[key] for key in saved.files})
    assert len(copy) == len(index)
    assert answers(copy) == answers(index)
    for same in (index, copy):  # both go on changing the same way, compaction included
        change = random.Random(8)
        same.upsert([make_row(i, change) for i in change.sample(range(1, 1200), 400)])
        same.remove(range(2, 900, 7))
    assert answers(copy) == answers(index)
    index.compact()
    copy.compact()
    assert answers(copy) == answers(index)
    assert copy.vector_of(3) is not None and np.allclose(copy.vector_of(3), index.vector_of(3))  # type: ignore[arg-type]


def test_a_snapshot_file_loads_only_for_its_org_and_database_and_never_raises(tmp_path: Path) -> None:
    rng = random.Random(9)
    index = LearningIndex()
    index.upsert([make_row(i, rng) for i in range(1, 300)])
    path = index_file.path_for(tmp_path / "snapshots", "org/ü")
    index_file.write(
        path, index_file.Snapshot("org/ü", 41, ((7, "h7", 5), (9, "", 0)), "db-1"), index.state()
    )
    loaded = index_file.read(path, org_id="org/ü", database="db-1")
    assert loaded is not None and loaded[0] == index_file.Snapshot(
        "org/ü", 41, ((7, "h7", 5), (9, "", 0)), "db-1"
    )
    assert answers(loaded[1]) == answers(index)
    assert index_file.read(path, org_id="other", database="db-1") is None
    assert index_file.read(path, org_id="org/ü", database="db-2") is None
    assert index_file.read(tmp_path / "missing.npz", org_id="org/ü", database="db-1") is None
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # a torn or damaged file
    assert index_file.read(path, org_id="org/ü", database="db-1") is None
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary left behind


def test_snapshots_are_written_after_a_build_after_many_changes_and_on_close(tmp_path: Path) -> None:
    rng = random.Random(12)
    index = LearningIndex()
    index.upsert([make_row(i, rng) for i in range(1, 200)])
    snapshots = index_file.Snapshots(tmp_path, "db")
    assert snapshots.wants("o", 5, built=True)
    snapshots.queue(index, index_file.Snapshot("o", 5, (), "db"))
    index.upsert([make_row(300, rng)])  # changes after queueing are not in that snapshot
    assert not snapshots.wants("o", 5, built=True)  # written at that number already
    assert not snapshots.wants("o", 6, built=False, rows=len(index))  # one change: not worth it
    assert not snapshots.wants("o", 5 + index_file.REFRESH_CHANGES, built=False)  # nor so soon
    snapshots.close()  # waits for the queued write
    found = index_file.Snapshots(tmp_path, "db").load("o")
    assert found is not None and found[0].seq == 5 and len(found[1]) == 199  # a few changes: kept
    later = index_file.Snapshots(tmp_path, "db")
    later.close([(index, index_file.Snapshot("o", 6, ((300, "h", 1),), "db"))])  # closing writes the latest
    found = index_file.Snapshots(tmp_path, "db").load("o")
    assert found is not None and found[0].seq == 6 and answers(found[1]) == answers(index)


def test_a_frozen_state_is_the_index_as_it_was_though_it_changes_before_the_arrays_are_taken() -> None:
    rng = random.Random(10)
    index = LearningIndex()
    index.upsert([make_row(i, rng) for i in range(1, 700)])
    index.upsert([make_row(i, rng) for i in rng.sample(range(1, 700), 100)])
    expected = answers(LearningIndex.from_state(index.state()))
    frozen = index.freeze()
    change = random.Random(11)
    for i in change.sample(range(1, 900), 300):  # writes over old positions, new ones, removals
        index.upsert([make_row(i, change, tags=("a", "z"))])
    index.remove(range(1, 700, 3))
    index.compact()
    assert answers(LearningIndex.from_state(frozen())) == expected
    assert answers(index) != expected


def test_a_snapshot_belongs_to_a_history_whose_changes_at_its_number_match() -> None:
    saw = ((3, "a", 10), (4, "b", 10))
    assert index_file.same_history(saw, saw)
    assert index_file.same_history(saw, ((3, "", 0), (4, "b", 10)))  # 3 changed again since
    assert not index_file.same_history(saw, ((3, "c", 12), (4, "b", 10)))  # 3 is another write
    assert not index_file.same_history(saw, ((3, "a", 10),))  # another set of changes
    assert not index_file.same_history(((3, "", 0),), ((3, "a", 10),))  # deleted there, not here


def test_an_index_without_terms_survives_its_state() -> None:
    """No rows, rows whose text has no token, and rows all removed: none has a term to list."""
    rng = random.Random(13)
    tokenless = LearningIndex()
    tokenless.upsert([make_row(i, rng, tokens=()) for i in range(1, 5)])
    emptied = LearningIndex()
    emptied.upsert([make_row(i, rng, tokens=()) for i in range(1, 5)])
    emptied.remove(range(1, 5))
    for index in (LearningIndex(), tokenless, emptied):
        copy = LearningIndex.from_state(index.state())
        assert len(copy) == len(index) and answers(copy) == answers(index)
        copy.upsert([make_row(9, rng, tokens=("coffee",))])  # and it goes on taking rows
        assert 9 in {hit[0] for per_query in answers(copy) for hits in per_query for hit in hits}


def test_a_big_scope_ranks_and_scores_by_the_exact_cosine() -> None:
    """Over a big scope the int8 first pass only chooses candidates: the hits, their order and
    their cosines are the float32 ones, including rows found by the full-text arm alone and rows
    appended after the block (outside its contiguous run)."""
    vectors = np.random.default_rng(11).standard_normal((coarse.MIN_ROWS + 3000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rng = random.Random(12)
    rows = [
        make_row(
            i + 1,
            rng,
            kind=LearningKind.PROFILE,
            user_id="big",
            agent_version="v0",
            status=LearningStatus.CURRENT,
            expires_at=NOW + 10_000,
            vector=vectors[i],
            tokens=("rare",) if i % 997 == 0 else ("common",),
        )
        for i in range(len(vectors))
    ]
    index = LearningIndex()
    index.upsert(rows[:-200])  # a bulk load: one clustered block
    for row in rows[-200:]:
        index.upsert([row])  # appended one by one: outside the block
    assert coarse.worth_it(len(rows) - 200, 20)
    where = LearningFilter(kinds=(LearningKind.PROFILE,), user_id="big")
    query_vector = vectors[5] + 0.3 * vectors[9000]
    query_vector /= np.linalg.norm(query_vector)
    exact = vectors @ query_vector
    for mode in (SearchMode.VECTOR, SearchMode.HYBRID):
        query = CandidateQuery(
            filters=(where,), text="rare", vector=query_vector, embed_model="m", limit=20, mode=mode
        )
        (hits,) = index.search(query, NOW)
        by_vector = sorted((h for h in hits if h.vector_rank is not None), key=lambda h: h.vector_rank or 0)
        assert [h.id - 1 for h in by_vector] == np.argsort(-exact)[:20].tolist()
        for hit in hits:  # every hit's cosine is exact, the full-text arm's own finds included
            assert hit.vector_score is not None
            assert abs(hit.vector_score - float(exact[hit.id - 1])) < 1e-5
        if mode is SearchMode.HYBRID:
            assert any(h.vector_rank is None for h in hits)  # some came from the full-text arm only


def test_top_picks_the_highest_scores_of_long_arrays_ties_and_infinities_included() -> None:
    """``top`` cuts long arrays at a sampled threshold first; whatever the sample, the answer
    is the exact top (sorted, clustered, tied and mostly masked-out arrays included)."""
    rng = np.random.default_rng(3)
    for trial in range(60):
        n = int(rng.integers(postings._SAMPLED_MIN, 3 * postings._SAMPLED_MIN))
        limit = int(rng.integers(1, n // 64))
        scores = rng.standard_normal(n)
        if trial % 3 == 0:
            scores[rng.random(n) < 0.95] = -np.inf
        if trial % 4 == 0:
            scores = np.sort(scores)
        if trial % 5 == 0:
            scores = np.round(scores, 1)
        got = postings.top(scores, limit)
        assert len(got) == limit == len(set(got.tolist()))
        assert np.array_equal(scores[got], -np.sort(-scores)[:limit])
