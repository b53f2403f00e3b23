"""Clustering user playbooks: full, incremental, fingerprints, and both methods."""

from __future__ import annotations

import numpy as np
import pytest

from reflexio.learn.cluster import (
    Cluster,
    Member,
    Method,
    fingerprint,
    group,
    merge_on_instructions,
    regroup,
)


def _unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v / np.linalg.norm(v), dtype=np.float32)


def _members(
    centers: list[int], per: int, *, start: int = 1, noise: float = 0.05, seed: int = 0
) -> list[Member]:
    """``per`` members around each of the given axis directions (one user each)."""
    rng = np.random.default_rng(seed)
    out = []
    next_id = start
    for axis in centers:
        for _ in range(per):
            base = np.zeros(32)
            base[axis] = 1.0
            out.append(Member(next_id, f"u{next_id}", _unit(base + rng.normal(scale=noise, size=32))))
            next_id += 1
    return out


def test_fingerprint_depends_on_members_only() -> None:
    assert fingerprint([3, 1, 2]) == fingerprint([1, 2, 3]) == Cluster(9, (1, 2, 3)).fingerprint
    assert fingerprint([1, 2]) != fingerprint([1, 2, 3])
    assert len(fingerprint([1])) == 16


@pytest.mark.parametrize("method", ["agglomerative", "hdbscan"])
def test_group_separates_lessons(method: Method) -> None:
    members = _members([0, 5, 9], per=6)
    groups = group(np.stack([m.vector for m in members]), 0.6, method)
    assert sorted(map(len, groups)) == [6, 6, 6]
    assert all(len({members[i].vector.argmax() for i in g}) == 1 for g in groups)


def test_group_keeps_isolated_rows_alone() -> None:
    members = _members([0], per=4) + _members([7], per=1, start=50)
    groups = group(np.stack([m.vector for m in members]), 0.6)
    assert sorted(map(len, groups)) == [1, 4]
    assert group(np.zeros((0, 3), dtype=np.float32), 0.6) == []
    assert group(np.ones((1, 3), dtype=np.float32), 0.6) == [[0]]


def test_component_split_equals_plain_average_linkage() -> None:
    """Splitting by similarity-graph components never changes average linkage's answer."""
    from sklearn.cluster import AgglomerativeClustering

    rng = np.random.default_rng(3)
    vectors = np.stack([_unit(rng.normal(size=16)) for _ in range(120)])
    for similarity in (0.2, 0.4, 0.6):
        ours = group(vectors, similarity)
        plain = AgglomerativeClustering(
            n_clusters=None, metric="cosine", linkage="average", distance_threshold=1 - similarity
        ).fit_predict(vectors)
        expected: dict[int, list[int]] = {}
        for row, label in enumerate(plain.tolist()):
            expected.setdefault(label, []).append(row)
        assert sorted(ours) == sorted(expected.values())


def test_first_run_clusters_everything_as_residual() -> None:
    members = _members([0, 4], per=3)
    out = regroup([], members, 0.6)
    assert out.residual == 6 and out.joined == 0 and out.removed == []
    assert sorted(len(c.member_ids) for c in out.clusters) == [3, 3]
    assert all(c.key == 0 for c in out.clusters)


def test_new_member_joins_by_centroid_and_others_stay_identical() -> None:
    members = _members([0, 4], per=3)
    first = regroup([], members, 0.6)
    stored = [Cluster(key, c.member_ids) for key, c in enumerate(first.clusters, 1)]
    newcomer = _members([4], per=1, start=100, seed=9)
    second = regroup(stored, members + newcomer, 0.6)
    assert second.joined == 1 and second.residual == 0
    changed = [c for c in second.clusters if c not in stored]
    assert len(changed) == 1 and 100 in changed[0].member_ids
    assert {c.key for c in second.clusters} == {1, 2}
    unchanged = [c for c in second.clusters if c in stored]
    assert [c.fingerprint for c in unchanged] == [s.fingerprint for s in stored if s in unchanged]


def test_residual_far_from_every_centroid_forms_new_clusters() -> None:
    members = _members([0], per=3)
    stored = [Cluster(1, tuple(m.id for m in members))]
    fresh = _members([8], per=2, start=200, seed=5)
    out = regroup(stored, members + fresh, 0.6)
    assert out.residual == 2 and out.joined == 0
    assert Cluster(1, stored[0].member_ids) in out.clusters
    assert Cluster(0, (200, 201)) in out.clusters


def test_members_that_left_are_dropped_and_empty_clusters_removed() -> None:
    members = _members([0, 4], per=2)
    stored = [Cluster(1, (1, 2)), Cluster(2, (3, 4))]
    out = regroup(stored, [m for m in members if m.id != 2 and m.id not in (3, 4)], 0.6)
    assert out.removed == [2]
    assert out.clusters == [Cluster(1, (1,))]


def test_full_rebuild_keeps_keys_of_clusters_mostly_kept() -> None:
    members = _members([0, 4], per=4)
    stored = [Cluster(7, (1, 2, 3, 4)), Cluster(8, (5, 6)), Cluster(9, (7, 8))]
    out = regroup(stored, members, 0.6, full=True)
    keys = {c.member_ids: c.key for c in out.clusters}
    assert keys == {(1, 2, 3, 4): 7, (5, 6, 7, 8): 8}  # 8 and 9 tie on shared members: lowest key
    assert out.removed == [9]


def test_default_threshold_follows_the_embedder() -> None:
    from reflexio.learn.cluster import DEFAULT_SIMILARITY, default_similarity

    assert default_similarity("all-minilm-l6-v2") == 0.45
    assert default_similarity("wordllama-l2-supercat-256") == 0.40
    assert default_similarity("litellm/text-embedding-3-small") == DEFAULT_SIMILARITY


def test_a_big_rebuild_runs_in_batches_and_finds_the_same_lessons(monkeypatch: pytest.MonkeyPatch) -> None:
    import reflexio.learn.cluster as cluster

    members = _members([0, 4, 9], per=10, seed=2)
    exact = sorted(c.member_ids for c in regroup([], members, 0.6, full=True).clusters)
    monkeypatch.setattr(cluster, "EXACT_LIMIT", 7)  # batches of 7 instead of one pass
    batched = sorted(c.member_ids for c in regroup([], members, 0.6, full=True).clusters)
    assert batched == exact and len(exact) == 3


def _axis(n: int, dims: int = 8) -> np.ndarray:
    v = np.zeros(dims, dtype=np.float32)
    v[n] = 1.0
    return v


def test_short_clusters_whose_instructions_mean_the_same_merge_under_the_largest_key() -> None:
    clusters = [Cluster(4, (1, 2)), Cluster(7, (3,)), Cluster(0, (5,)), Cluster(9, (6,)), Cluster(2, (8,))]
    same = _unit(_axis(0) + 0.1 * _axis(1))
    instructions = {1: same, 2: _axis(0), 3: _unit(_axis(0) + 0.2 * _axis(2)), 5: _axis(0), 6: _axis(3)}
    out = merge_on_instructions(clusters, [1, 2, 3, 0, 4], instructions, 0.8)
    # 8 has no instruction vector: it stays as it was; 6 means something else
    assert out.clusters == [Cluster(4, (1, 2, 3, 5)), Cluster(9, (6,)), Cluster(2, (8,))]
    assert out.removed == [7]


def test_clusters_not_short_never_merge_and_nothing_is_split() -> None:
    clusters = [Cluster(1, (1, 2)), Cluster(2, (3,)), Cluster(3, (4,))]
    vectors = {1: _axis(0), 2: _axis(1), 3: _axis(0), 4: _axis(1)}
    out = merge_on_instructions(clusters, [1, 2], vectors, 0.5)
    assert out.clusters == clusters and out.removed == []  # 3 and 4 differ; 1 and 2 stay together
    out = merge_on_instructions(clusters, [1], vectors, 0.5)
    assert out.clusters == clusters  # 3 is like 1, but cluster 1 is not short


def test_merging_is_average_linkage_over_whole_clusters() -> None:
    # 3 is like 1 but not like 2: the average over the cluster {1, 2} decides
    clusters = [Cluster(1, (1, 2)), Cluster(0, (3,))]
    vectors = {1: _axis(0), 2: _axis(1), 3: _axis(0)}
    assert merge_on_instructions(clusters, [0, 1], vectors, 0.6).clusters == clusters
    assert merge_on_instructions(clusters, [0, 1], vectors, 0.5).clusters == [Cluster(1, (1, 2, 3))]
