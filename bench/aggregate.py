"""Aggregation benchmark: clustering quality on a labelled set, full and incremental run times.

``python -m bench.aggregate [--out bench/results/aggregate.json] [--embedder auto] [--quick]``

1. **Quality** on the labelled synthetic set (bench/aggregate_set.py: >= 1,000 user playbooks,
   24 lessons in many wordings by different users, plus one-off noise), for both clustering
   methods over a sweep of similarity thresholds: adjusted Rand index against the labels, the
   share of agent playbooks (clusters past the ``min_users`` gate) that mix two lessons, and
   the share of lessons that got a pure agent playbook.
2. **Full aggregation** of 10,000 user playbooks with the offline aggregator: clustering every
   member from scratch, planning, and writing one draft per cluster past the gate.
3. **Incremental run** after one new user playbook: centroid assignment, planning, and the
   aggregator calls made (only the changed cluster may cost one).

Vectors are what storage would hold: the chosen embedder's, computed once and cached under
``.tmp/`` (embedding is paid at write time, not by aggregation).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.aggregate_set import LESSONS, Row, make_set
from reflexio.embed import Embedder, open_embedder
from reflexio.learn.aggregate import CentralAggregator, Draft, Evidence
from reflexio.learn.cluster import Cluster, Member, Method, default_similarity, merge_on_instructions, regroup
from reflexio.learn.generalize import Policy, Stored, Verdict, plan, short_of_gate
from reflexio.service.aggregation import DIRECTION_MARGIN

RESULTS = Path(__file__).parent / "results" / "aggregate.json"
CACHE = Path(__file__).parent.parent / ".tmp" / "bench-aggregate"
SIMILARITIES = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
MIN_USERS = 2


def vectors_of(rows: Sequence[Row], embedder: Embedder) -> np.ndarray:
    """The rows' vectors, from the cache when this embedder already embedded these texts."""
    digest = hashlib.sha256("\n\x00".join(r.text for r in rows).encode()).hexdigest()[:16]
    path = CACHE / f"{embedder.name.replace('/', '_')}-{digest}.npy"
    if path.exists():
        return np.asarray(np.load(path), dtype=np.float32)
    vectors = np.asarray(embedder.embed([r.text for r in rows], kind="document"), dtype=np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def members_of(rows: Sequence[Row], vectors: np.ndarray) -> list[Member]:
    return [Member(r.id, r.user_id, v) for r, v in zip(rows, vectors, strict=True)]


def quality(rows: Sequence[Row], clusters: Sequence[Cluster]) -> dict[str, Any]:
    """How well clusters recover the lessons, and what becomes an agent playbook.

    ``adjusted_rand_index`` is over every row (each noise row its own class);
    ``adjusted_rand_index_lessons`` over lesson rows only. An agent playbook is a cluster with
    at least ``MIN_USERS`` distinct authors; it *mixes two lessons* when it holds rows of two
    or more lessons (the goal is none), and it *absorbed noise* when a lesson's playbook also
    holds one-off noise rows.
    """
    from sklearn.metrics import adjusted_rand_score

    label = {r.id: r.label for r in rows}
    author = {r.id: r.user_id for r in rows}
    predicted = {i: n for n, c in enumerate(clusters) for i in c.member_ids}
    ids = [r.id for r in rows]
    lesson_ids = [i for i in ids if not label[i].startswith("noise")]
    passing = [c for c in clusters if len({author[i] for i in c.member_ids}) >= MIN_USERS]
    lessons_in = [{label[i] for i in c.member_ids if not label[i].startswith("noise")} for c in passing]
    mixed = [c for c, ls in zip(passing, lessons_in, strict=True) if len(ls) > 1]
    absorbed = sum(
        sum(1 for i in c.member_ids if label[i].startswith("noise"))
        for c, ls in zip(passing, lessons_in, strict=True)
        if ls
    )
    pure = [next(iter(ls)) for ls in lessons_in if len(ls) == 1]
    return {
        "adjusted_rand_index": round(
            float(adjusted_rand_score([label[i] for i in ids], [predicted[i] for i in ids])), 4
        ),
        "adjusted_rand_index_lessons": round(
            float(adjusted_rand_score([label[i] for i in lesson_ids], [predicted[i] for i in lesson_ids])), 4
        ),
        "agent_playbooks": len(passing),
        "mixing_two_lessons": len(mixed),
        "mixing_share": round(len(mixed) / len(passing), 4) if passing else 0.0,
        "noise_rows_absorbed_into_lessons": absorbed,
        "noise_only_playbooks": sum(1 for ls in lessons_in if not ls),
        "lessons_generalised": round(len(set(pure)) / len(LESSONS), 4),
        "playbooks_per_lesson": round(len(pure) / max(len(set(pure)), 1), 2),
    }


def sweep(rows: Sequence[Row], vectors: np.ndarray) -> list[dict[str, Any]]:
    members = members_of(rows, vectors)
    out = []
    for method in ("agglomerative", "hdbscan"):
        for similarity in SIMILARITIES:
            started = time.perf_counter()
            clusters = regroup([], members, similarity, method=method).clusters
            seconds = time.perf_counter() - started
            out.append(
                {
                    "method": method,
                    "similarity": similarity,
                    "seconds": round(seconds, 3),
                    **quality(rows, clusters),
                }
            )
            print(f"  {method:<13} s={similarity:.2f}  {json.dumps(out[-1])}", flush=True)
    return out


def aggregate_all(
    rows: Sequence[Row],
    vectors: np.ndarray,
    previous: Sequence[Cluster],
    stored: dict[int, Stored],
    similarity: float,
    method: Method,
    *,
    full: bool,
    aggregator: CentralAggregator,
    embed: Callable[[Sequence[str]], Any],
) -> tuple[list[Cluster], dict[Verdict, int], list[Draft], dict[str, float]]:
    """One aggregation run as the service does it, minus storage: regroup, merge the clusters
    short of the gate on their instructions, plan, draft."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    members = members_of(rows, vectors)
    regrouped = regroup(previous, members, similarity, method=method, full=full)
    authors = {r.id: r.user_id for r in rows}
    policy = Policy(min_users=MIN_USERS, trigger_count=1)
    short = short_of_gate(regrouped.clusters, stored, authors, policy)
    if len(short) > 1:
        content = {r.id: r.content for r in rows}
        ids = [i for n in short for i in regrouped.clusters[n].member_ids]
        instructions = dict(zip(ids, embed([content[i] for i in ids]), strict=True))
        regrouped = merge_on_instructions(regrouped.clusters, short, instructions, similarity)
    timings["cluster_s"] = time.perf_counter() - started
    started = time.perf_counter()
    works = plan(regrouped.clusters, stored, authors, policy)
    timings["plan_s"] = time.perf_counter() - started
    started = time.perf_counter()
    evidence = {
        r.id: Evidence(r.id, r.user_id, r.content, r.trigger, vector=v)
        for r, v in zip(rows, vectors, strict=True)
    }
    drafts = []
    for work in works:
        if work.verdict.needs_text:
            draft = aggregator.aggregate([evidence[i] for i in work.cluster.member_ids], min_users=MIN_USERS)
            if draft is not None:
                drafts.append(draft)
    timings["aggregate_s"] = time.perf_counter() - started
    verdicts = Counter(w.verdict for w in works)
    return regrouped.clusters, dict(verdicts), drafts, timings


def scale(
    embedder: Embedder, similarity: float, method: Method, per_lesson: int, noise: int
) -> dict[str, Any]:
    """Full aggregation of a big set, then an incremental run after one new user playbook."""
    rows = make_set(per_lesson, noise, users=per_lesson * 2, seed=11)
    extra = make_set(1, 0, users=per_lesson * 2, seed=12)[0]
    newcomer = Row(len(rows) + 1, extra.label, "newcomer", extra.trigger, extra.content)
    vectors = vectors_of([*rows, newcomer], embedder)
    base, new_vector = vectors[:-1], vectors[-1:]
    embedded: list[int] = []

    def embed(texts: Sequence[str]) -> Any:
        embedded.append(len(texts))
        return embedder.embed(texts, kind="document")

    # the service's offline aggregator: paraphrases linked by vector, instructions embedded
    # alone when words and stored vectors leave a cluster in several directions
    aggregator = CentralAggregator(
        link_similarity=similarity + DIRECTION_MARGIN, instruction_similarity=similarity, embed=embed
    )
    embedder.embed(["warm-up"], kind="document")  # a server loads its model at start, not per run
    started = time.perf_counter()
    clusters, verdicts, drafts, timings = aggregate_all(
        rows, base, [], {}, similarity, method, full=True, aggregator=aggregator, embed=embed
    )
    full_embedded, embedded[:] = sum(embedded), []
    full_seconds = time.perf_counter() - started
    keyed = [Cluster(n, c.member_ids) for n, c in enumerate(clusters, 1)]
    stored = {c.key: Stored(c.key, aggregated=c.fingerprint) for c in keyed}
    started = time.perf_counter()
    _, inc_verdicts, inc_drafts, inc_timings = aggregate_all(
        [*rows, newcomer],
        np.concatenate([base, new_vector]),
        keyed,
        stored,
        similarity,
        method,
        full=False,
        aggregator=aggregator,
        embed=embed,
    )
    inc_seconds = time.perf_counter() - started
    aggregated = sum(n for v, n in inc_verdicts.items() if v.needs_text)
    return {
        "user_playbooks": len(rows),
        "full": {
            "seconds": round(full_seconds, 3),
            **{k: round(v, 3) for k, v in timings.items()},
            "clusters": len(clusters),
            "agent_playbooks": len(drafts),
            "instructions_embedded": full_embedded,
            "verdicts": {v.value: n for v, n in sorted(verdicts.items())},
            **quality(rows, clusters),
        },
        "incremental_after_one": {
            "seconds": round(inc_seconds, 3),
            **{k: round(v, 3) for k, v in inc_timings.items()},
            "clusters_changed": sum(n for v, n in inc_verdicts.items() if v is not Verdict.UNCHANGED),
            "aggregator_calls": aggregated,
            "instructions_embedded": sum(embedded),
            "aggregator_calls_for_unchanged_clusters": 0 if aggregated <= 1 else aggregated - 1,
            "verdicts": {v.value: n for v, n in sorted(inc_verdicts.items())},
            "drafts": len(inc_drafts),
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument(
        "--embedder", default="auto", help="auto, minilm, wordllama, ... (as REFLEXIO_EMBEDDER)"
    )
    parser.add_argument("--similarity", type=float, default=None, help="threshold for the scale runs")
    parser.add_argument("--method", default="agglomerative", choices=["agglomerative", "hdbscan"])
    parser.add_argument(
        "--quick", action="store_true", help="2,000 rows for the scale runs instead of 10,000"
    )
    args = parser.parse_args(argv)
    embedder = open_embedder(args.embedder)
    rows = make_set(per_lesson=45, noise=120)
    print(f"labelled set: {len(rows)} user playbooks, {len(LESSONS)} lessons, embedder {embedder.name}")
    vectors = vectors_of(rows, embedder)
    swept = sweep(rows, vectors)
    similarity = args.similarity or default_similarity(embedder.name)
    per_lesson, noise = (80, 80) if args.quick else (400, 400)
    print(f"scale: {per_lesson * len(LESSONS) + noise} user playbooks, {args.method} at s={similarity}")
    scaled = scale(embedder, similarity, args.method, per_lesson, noise)
    print(json.dumps(scaled, indent=1))
    results = {
        "labelled_set": {"user_playbooks": len(rows), "lessons": len(LESSONS), "min_users": MIN_USERS},
        "quality": swept,
        "chosen": {
            "method": args.method,
            "similarity": similarity,
            "best_without_mixing": _best(swept, args.method),
        },
        "scale": scaled,
        "meta": _meta(embedder.name),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _best(swept: Sequence[dict[str, Any]], method: str) -> float:
    """Highest lesson ARI among thresholds that mix no lessons (the goal), for the method."""
    clean = [q for q in swept if q["method"] == method and q["mixing_two_lessons"] == 0]
    pool = clean or [q for q in swept if q["method"] == method]
    return float(max(pool, key=lambda q: q["adjusted_rand_index_lessons"])["similarity"])


def _meta(embedder: str) -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "src", "bench"], capture_output=True, text=True, check=False
    )
    return {
        "embedder": embedder,
        "commit": commit.stdout.strip() or None,
        "uncommitted_changes": bool(dirty.stdout.strip()),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "date": time.strftime("%Y-%m-%d"),
    }


if __name__ == "__main__":
    sys.exit(main())
