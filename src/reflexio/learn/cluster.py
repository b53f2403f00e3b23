"""Group user playbooks that teach the same lesson, by their stored vectors, incrementally.

A cluster is a set of user playbooks of one scope (org, agent version, playbook name). Its
*centroid* is the mean of its members' unit vectors, so a vector's dot product with it is the
average cosine similarity to the members: joining the nearest centroid above the threshold is
exactly average linkage's merge rule, applied to one new member at a time. A run therefore
costs little: members already placed stay where they are, new members join an existing cluster
by centroid first, and only the *residual* (those near no cluster) is clustered among itself.

Full clustering is average-linkage agglomerative with a cosine distance threshold (scikit-learn)
or HDBSCAN (scikit-learn). Agglomerative is made fast without changing its answer: two clusters
that average linkage merges at distance ``d`` always have a pair of members closer than ``d``,
so every cluster lies inside one connected component of the graph "cosine similarity >= s".
The components are found from a thresholded similarity matrix in blocks, and the O(n^2)
linkage runs per component instead of over everything. Past ``EXACT_LIMIT`` members (where
chaining makes one giant component) a scope clustered from nothing is processed in batches in
member order, as if it had grown run by run. HDBSCAN is available as the other method;
bench/aggregate measures both (agglomerative recovers the lessons far better there).

A stored vector holds a member's trigger as well as its instruction, and users teach one
lesson on different requests: "run the relevant tests before saying a fix works", taught on a
CSV export bug, and "verify with the test suite before claiming it's fixed", taught on a date
parser crash, are further apart than the threshold although the instructions mean the same.
``merge_on_instructions`` is the second look for such members: clusters that the stored vectors
leave short of the generalisation gate are merged, by average linkage at the same threshold,
on the vectors of their instructions alone. Only those clusters pay for an embedding, so a
scope whose lessons cluster on their stored vectors costs no more than before.

A cluster's *fingerprint* is derived from its member ids alone, so "this cluster changed" is a
string comparison and an unchanged cluster costs nothing downstream.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from reflexio.records import Vector

__all__ = [
    "DEFAULT_SIMILARITY",
    "SIMILARITY_BY_EMBEDDER",
    "Cluster",
    "Member",
    "Method",
    "Regrouping",
    "default_similarity",
    "fingerprint",
    "group",
    "merge_on_instructions",
    "regroup",
]

#: Cosine similarity above which a user playbook belongs to a cluster, per embedder (a prefix
#: of its name). Each is one step (0.05) above the threshold where bench/aggregate's labelled
#: set first showed a cluster mixing two lessons; results in bench/results/aggregate.json.
SIMILARITY_BY_EMBEDDER = {"all-minilm-l6-v2": 0.45, "wordllama": 0.40}
#: For embedders not measured here (hosted models).
DEFAULT_SIMILARITY = 0.45

Method = Literal["agglomerative", "hdbscan"]

Matrix = npt.NDArray[np.float32]

#: Rows of the similarity matrix computed at once when looking for components (memory bound).
_BLOCK = 2048
#: Largest set clustered in one exact pass; bigger rebuilds proceed in batches of this size in
#: member order (the first batch exactly, each next one by centroid and then its residual),
#: as the scope would have grown run by run. Average linkage is O(n^2): past a few thousand
#: members the similarity graph is one chained component and one pass takes a minute.
EXACT_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class Member:
    """One user playbook as clustering sees it: its id, its author and its stored vector."""

    id: int
    user_id: str
    vector: Vector


@dataclass(frozen=True, slots=True)
class Cluster:
    """A group of user playbooks; ``key`` is its stored id, 0 for one formed in this run."""

    key: int
    member_ids: tuple[int, ...]

    @property
    def fingerprint(self) -> str:
        """Derived from the members only: the same members always give the same fingerprint."""
        return fingerprint(self.member_ids)


def default_similarity(embed_model: str) -> float:
    """The clustering threshold for vectors of this embedder when the org sets none."""
    for prefix, similarity in SIMILARITY_BY_EMBEDDER.items():
        if embed_model.startswith(prefix):
            return similarity
    return DEFAULT_SIMILARITY


def fingerprint(member_ids: Iterable[int]) -> str:
    """16 hex digits of SHA-256 over the sorted member ids (order-independent)."""
    text = ",".join(str(i) for i in sorted(member_ids))
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


@dataclass(slots=True)
class Regrouping:
    """The clusters after a run, and what the run did to get there.

    Attributes:
        clusters: Every cluster of the scope after the run (kept ones keep their key).
        removed: Keys of stored clusters that no longer exist (all their members are gone,
            or a full rebuild dissolved them).
        joined: Members placed into an existing cluster by centroid.
        residual: Members clustered among themselves because no centroid was near enough.
    """

    clusters: list[Cluster] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    joined: int = 0
    residual: int = 0


def regroup(
    previous: Sequence[Cluster],
    members: Sequence[Member],
    similarity: float,
    *,
    method: Method = "agglomerative",
    full: bool = False,
) -> Regrouping:
    """Bring a scope's clusters up to date with its current members.

    Args:
        previous: The clusters stored after the last run (empty on the first run).
        members: Every current user playbook of the scope, with its vector.
        similarity: Minimum average cosine similarity for a member to belong to a cluster.
        method: How the residual (or, with ``full``, everything) is clustered.
        full: Cluster every member from scratch; clusters keep their key when most of their
            members stay together, so their agent playbooks keep their identity.

    Returns:
        The new clusters; members that left (deleted, superseded) are dropped from theirs.
    """
    by_id = {m.id: m for m in members}
    if full:
        return _rebuild(previous, members, similarity, method)
    out = Regrouping()
    kept: list[Cluster] = []
    for cluster in previous:
        alive = tuple(i for i in cluster.member_ids if i in by_id)
        if alive:
            kept.append(Cluster(cluster.key, alive))
        else:
            out.removed.append(cluster.key)
    placed = {i for c in kept for i in c.member_ids}
    fresh = [m for m in members if m.id not in placed]
    grown, residual = _join_by_centroid(kept, fresh, by_id, similarity)
    out.joined = len(fresh) - len(residual)
    out.residual = len(residual)
    out.clusters = grown + [Cluster(0, ids) for ids in _cold_groups(residual, similarity, method)]
    return out


def merge_on_instructions(
    clusters: Sequence[Cluster],
    short: Iterable[int],
    instructions: Mapping[int, Vector],
    similarity: float,
) -> Regrouping:
    """Merge the ``short`` clusters whose members' instructions mean the same.

    Average linkage over whole clusters (never splitting one): two clusters merge while the
    mean cosine similarity of their members' instruction vectors is at least ``similarity``,
    the best pair first. A merged cluster keeps the key of its largest stored part; the keys
    of the other stored parts are returned in ``removed``.

    Args:
        clusters: Every cluster of the scope, as ``regroup`` left them.
        short: Indices into ``clusters`` of those that may merge (the ones below the gate
            that produced no agent playbook).
        instructions: Unit vector of each short cluster's members' instruction text, by id.
        similarity: The clustering threshold.

    Returns:
        The clusters (merged ones at the place of their first part) and the removed keys.
    """
    units = sorted(set(short))
    units = [n for n in units if all(i in instructions for i in clusters[n].member_ids)]
    out = Regrouping(clusters=list(clusters))
    if len(units) < 2:
        return out
    sums = np.stack(
        [
            np.sum([np.asarray(instructions[i], dtype=np.float32) for i in clusters[n].member_ids], axis=0)
            for n in units
        ]
    )
    sizes = np.asarray([len(clusters[n].member_ids) for n in units], dtype=np.float32)
    parts = [[n] for n in units]
    gone = np.zeros(len(units), dtype=bool)
    linkage = (sums @ sums.T) / np.outer(sizes, sizes)
    np.fill_diagonal(linkage, -np.inf)
    while True:  # each pass merges two clusters or stops
        a, b = divmod(int(np.argmax(linkage)), len(units))
        if linkage[a, b] < similarity:
            break
        a, b = min(a, b), max(a, b)
        sums[a] += sums[b]
        sizes[a] += sizes[b]
        parts[a] += parts[b]
        parts[b] = []
        gone[b] = True
        row = (sums @ sums[a]) / (sizes * sizes[a])  # average linkage of the merged cluster
        row[gone] = -np.inf
        row[a] = -np.inf
        linkage[a, :] = linkage[:, a] = row
        linkage[b, :] = linkage[:, b] = -np.inf
    dropped: set[int] = set()
    for u in range(len(units)):
        if len(parts[u]) < 2:
            continue
        members = [clusters[n] for n in parts[u]]
        stored = [c for c in members if c.key]
        key = max(stored, key=lambda c: (len(c.member_ids), -c.key)).key if stored else 0
        out.removed += sorted(c.key for c in stored if c.key != key)
        ids = tuple(sorted(i for c in members for i in c.member_ids))
        out.clusters[parts[u][0]] = Cluster(key, ids)
        dropped.update(parts[u][1:])
    out.clusters = [c for n, c in enumerate(out.clusters) if n not in dropped]
    return out


def _join_by_centroid(
    clusters: list[Cluster], fresh: Sequence[Member], by_id: dict[int, Member], similarity: float
) -> tuple[list[Cluster], list[Member]]:
    """Each fresh member joins the cluster whose centroid (as the run began) is nearest."""
    if not clusters or not fresh:
        return clusters, list(fresh)
    placed = [i for c in clusters for i in c.member_ids]
    row_of = {i: n for n, i in enumerate(placed)}
    vectors = _stack([by_id[i] for i in placed])
    centroids = np.stack([vectors[[row_of[i] for i in c.member_ids]].mean(axis=0) for c in clusters])
    scores = _stack(fresh) @ centroids.T
    best = scores.argmax(axis=1)
    extra: dict[int, list[int]] = {}
    residual = []
    for row, member in enumerate(fresh):
        column = int(best[row])
        if scores[row, column] >= similarity:
            extra.setdefault(column, []).append(member.id)
        else:
            residual.append(member)
    grown = [
        Cluster(c.key, tuple(sorted((*c.member_ids, *extra[n])))) if n in extra else c
        for n, c in enumerate(clusters)
    ]
    return grown, residual


def _rebuild(
    previous: Sequence[Cluster], members: Sequence[Member], similarity: float, method: Method
) -> Regrouping:
    """Cluster everything anew; a new cluster inherits the key of the old one it mostly holds."""
    groups = _cold_groups(members, similarity, method)
    owner = {i: c.key for c in previous for i in c.member_ids}
    sizes = {c.key: len(c.member_ids) for c in previous}
    claimed: set[int] = set()
    out = Regrouping(residual=len(members))
    for ids in sorted(groups, key=len, reverse=True):
        votes: dict[int, int] = {}
        for i in ids:
            if i in owner:
                votes[owner[i]] = votes.get(owner[i], 0) + 1
        key = 0
        for candidate, shared in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
            if candidate not in claimed and 2 * shared > sizes[candidate]:
                key = candidate
                claimed.add(candidate)
                break
        out.clusters.append(Cluster(key, ids))
    out.removed = sorted(set(sizes) - claimed)
    return out


def _cold_groups(members: Sequence[Member], similarity: float, method: Method) -> list[tuple[int, ...]]:
    """Member-id groups of a scope clustered from nothing (in batches past ``EXACT_LIMIT``)."""
    if len(members) <= EXACT_LIMIT:
        return [
            tuple(sorted(members[i].id for i in idx)) for idx in group(_stack(members), similarity, method)
        ]
    ordered = sorted(members, key=lambda m: m.id)
    clusters: list[Cluster] = []
    keys = itertools.count(1)  # stand-in keys, so the next batch keeps what this one formed
    for end in range(EXACT_LIMIT, len(ordered) + EXACT_LIMIT, EXACT_LIMIT):
        step = regroup(clusters, ordered[:end], similarity, method=method)
        clusters = [c if c.key else Cluster(next(keys), c.member_ids) for c in step.clusters]
    return [c.member_ids for c in clusters]


def _stack(members: Sequence[Member]) -> Matrix:
    if not members:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([np.asarray(m.vector, dtype=np.float32) for m in members])


def group(vectors: Matrix, similarity: float, method: Method = "agglomerative") -> list[list[int]]:
    """Partition rows of ``vectors`` (unit length) into groups of the same lesson.

    Every row lands in exactly one group; a row near nothing is a group of one. Groups are
    returned with their row indices ascending, the groups ordered by their first row.
    """
    n = len(vectors)
    if n == 0:
        return []
    if n == 1:
        return [[0]]
    labels = _hdbscan(vectors, similarity) if method == "hdbscan" else _agglomerative(vectors, similarity)
    groups: dict[int, list[int]] = {}
    for row, label in enumerate(labels.tolist()):
        groups.setdefault(int(label), []).append(row)
    return sorted(groups.values(), key=lambda rows: rows[0])


def _agglomerative(vectors: Matrix, similarity: float) -> npt.NDArray[np.int64]:
    """Average linkage at distance ``1 - similarity``, run per similarity-graph component."""
    from sklearn.cluster import AgglomerativeClustering  # heavy import: only aggregation needs it

    n = len(vectors)
    components = _components(vectors, similarity)
    labels = np.empty(n, dtype=np.int64)
    order = np.argsort(components, kind="stable")
    bounds = np.flatnonzero(np.diff(components[order])) + 1
    next_label = 0
    for rows in np.split(order, bounds):
        if len(rows) == 1:
            labels[rows] = next_label
            next_label += 1
            continue
        model = AgglomerativeClustering(
            n_clusters=None, metric="cosine", linkage="average", distance_threshold=1.0 - similarity
        )
        local = model.fit_predict(vectors[rows])
        labels[rows] = local + next_label
        next_label += int(local.max()) + 1
    return labels


def _components(vectors: Matrix, similarity: float) -> npt.NDArray[np.int64]:
    """Connected components of the graph linking rows whose cosine similarity is >= ``similarity``."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(vectors)
    rows, cols = [], []
    for start in range(0, n, _BLOCK):
        block = vectors[start : start + _BLOCK] @ vectors.T
        r, c = np.nonzero(block >= similarity)
        rows.append(r + start)
        cols.append(c)
    r_all, c_all = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(r_all), dtype=np.int8), (r_all, c_all)), shape=(n, n)).tocsr()
    _, labels = connected_components(graph, directed=False)
    return np.asarray(labels, dtype=np.int64)


def _hdbscan(vectors: Matrix, similarity: float) -> npt.NDArray[np.int64]:
    """HDBSCAN's own cluster selection, each cluster then held to the similarity threshold.

    scikit-learn's ``cluster_selection_epsilon`` raises on NumPy 2.4+ (scikit-learn issue
    #33219), so the threshold is applied afterwards: each HDBSCAN cluster is split by average
    linkage at ``1 - similarity``, which never lets a cluster hold members less similar than
    the org asked for. HDBSCAN's noise points become groups of one.
    """
    from sklearn.cluster import HDBSCAN

    model = HDBSCAN(min_cluster_size=2, min_samples=1, metric="euclidean", copy=True)
    found = np.asarray(model.fit_predict(vectors.astype(np.float64)), dtype=np.int64)
    labels = np.empty(len(vectors), dtype=np.int64)
    next_label = 0
    for label in np.unique(found):
        rows = np.flatnonzero(found == label)
        if label < 0 or len(rows) == 1:
            labels[rows] = next_label + np.arange(len(rows))
            next_label += len(rows)
            continue
        local = _agglomerative(vectors[rows], similarity)
        labels[rows] = local + next_label
        next_label += int(local.max()) + 1
    return labels
