"""Needles in haystacks: does hybrid search find every planted fact that one arm finds?

Run: ``python -m bench.needle --out bench/results/needle.json [--sizes 1000,10000,100000]
[--layouts one,spread] [--embedder minilm|wordllama] [--storage URL] [--threshold T]``

Protocol (issue 19). For each size n, n haystack profiles (``bench.haystack``: one user's
facts in many phrasings) and the 64 needles are saved through ``Storage.save_learnings``, the
needles first and dated a year before the oldest haystack row, so that they are the old rows a
search must dig out. Layout ``one`` gives every row to one user; ``spread`` deals the same
rows over 100 users (needle i to user i), so a needle's scope holds n/100 haystack rows while
the full-text statistics still cover the whole org.

Each needle's question is asked as a profile search of its user through the service's
``rank`` (what every search route calls), with the default threshold unless ``--threshold``,
once per mode: full text, vector, hybrid. A needle counts as found at k when it is among the
top k. Half the needles share a rare word with their question (``lexical``), half share no
content word (``paraphrase``); the benchmark checks both properties against the haystack it
built and stops if one does not hold.

The goal: hybrid finds, in its top 5, every needle that full text or vector finds in theirs.
``lost`` lists the needles that break it.

Output: a summary table on stdout and ``--out`` JSON with, per layout and size, each mode's
``top5``/``top10`` overall and by kind of needle, ``either_top5``, ``lost``, ``goal_met`` and
every needle's rank per mode; ``run`` records commit, machine, date, embedder and timings.
Haystack embeddings are cached in ``.tmp/bench-needle`` (the 100k haystack takes MiniLM
several minutes once).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import haystack
from reflexio.config import Settings
from reflexio.embed import Embedder
from reflexio.filters import LearningFilter
from reflexio.models import SearchMode
from reflexio.records import Audit, Learning, LearningKind, LearningStatus
from reflexio.service.core import Core, open_core
from reflexio.service.search import DEFAULT_THRESHOLD, Plan, rank

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".tmp" / "bench-needle"
ORG = "bench-needle"
MODES = ("fts", "vector", "hybrid")
LAYOUTS = ("one", "spread")
USERS = 100
TOP_K = 10
NOW = 1_760_000_000
DAY = 86_400


def user(k: int) -> str:
    """The id of user ``k``."""
    return f"user-{k:03d}"


def _row(text: str, user_id: str, at: int, vector: np.ndarray, model: str) -> Learning:
    row = Learning(
        org_id=ORG,
        kind=LearningKind.PROFILE,
        user_id=user_id,
        content=text,
        created_at=at,
        updated_at=at,
        embedding=np.asarray(vector, dtype=np.float32),
        embed_model=model,
    )
    row.text_hash = row.computed_text_hash()
    return row


def needle_rows(layout: str, vectors: np.ndarray, model: str) -> list[Learning]:
    """The needles, a year older than any haystack row (needle i belongs to user i)."""
    oldest = NOW - 3 * 365 * DAY
    return [
        _row(n.fact, user(0 if layout == "one" else i % USERS), oldest + i, vectors[i], model)
        for i, n in enumerate(haystack.NEEDLES)
    ]


def haystack_rows(
    layout: str, texts: Sequence[str], vectors: np.ndarray, model: str
) -> Iterator[list[Learning]]:
    """The haystack in batches, spread over two years, newest last."""
    start, step = NOW - 2 * 365 * DAY, max(1, 2 * 365 * DAY // max(len(texts), 1))
    batch: list[Learning] = []
    for j, text in enumerate(texts):
        batch.append(
            _row(text, user(0 if layout == "one" else j % USERS), start + j * step, vectors[j], model)
        )
        if len(batch) == 5000:
            yield batch
            batch = []
    if batch:
        yield batch


def haystack_vectors(embedder: Embedder, texts: Sequence[str], cache: Path) -> np.ndarray:
    """Embeddings of ``texts`` (a haystack prefix), cached on disk and extended as needed."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"haystack-{embedder.name.replace('/', '_')}-v{haystack.VERSION}.npy"
    have = np.load(path) if path.exists() else np.zeros((0, embedder.dim), dtype=np.float32)
    while len(have) < len(texts):
        chunk = list(texts[len(have) : len(have) + 5000])
        have = np.concatenate([have, embedder.embed(chunk, kind="document").astype(np.float32)])
        np.save(path, have)
        print(f"  embedded {len(have)}/{len(texts)} haystack rows", file=sys.stderr, flush=True)
    return have[: len(texts)]


def search_rank(
    core: Core, question: str, user_id: str, target: int, mode: str, threshold: float
) -> int | None:
    """Where the needle ``target`` ranks (1-based) in its user's profile search, or None."""
    where = LearningFilter(kinds=(LearningKind.PROFILE,), user_id=user_id, statuses=(LearningStatus.CURRENT,))
    plan = Plan(text=question, filters=(where,), top_k=TOP_K, threshold=threshold, mode=SearchMode(mode))
    for position, (row, _) in enumerate(rank(core, ORG, plan).hits[0], start=1):
        if row.id == target:
            return position
    return None


def _found(ranks: dict[str, dict[str, int | None]], mode: str, k: int, keys: Sequence[str]) -> int:
    return sum(1 for key in keys if (r := ranks[key][mode]) is not None and r <= k)


def summary(ranks: dict[str, dict[str, int | None]]) -> dict[str, Any]:
    """Per mode: needles in the top 5 and 10, overall and by kind; and what hybrid lost."""
    kinds = {
        "lexical": [n.key for n in haystack.NEEDLES if n.lexical],
        "paraphrase": [n.key for n in haystack.NEEDLES if not n.lexical],
    }
    every = [n.key for n in haystack.NEEDLES]
    modes: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        modes[mode] = {f"top{k}": _found(ranks, mode, k, every) for k in (5, 10)}
        for name, keys in kinds.items():
            modes[mode][name] = {f"top{k}": _found(ranks, mode, k, keys) for k in (5, 10)}

    def top5(key: str, mode: str) -> bool:
        r = ranks[key][mode]
        return r is not None and r <= 5

    either = [key for key in every if top5(key, "fts") or top5(key, "vector")]
    lost = [key for key in either if not top5(key, "hybrid")]
    return {"modes": modes, "either_top5": len(either), "lost": lost, "goal_met": not lost}


def measure(
    core: Core, layout: str, n: int, vectors: np.ndarray, needle_vectors: np.ndarray, threshold: float
) -> dict[str, Any]:
    """Seed one haystack of ``n`` rows, ask every needle's question in every mode."""
    model = core.embedder.name
    texts = haystack.rows(n)
    started = time.perf_counter()
    needles = core.storage.save_learnings(needle_rows(layout, needle_vectors, model), Audit(actor="bench"))
    for batch in haystack_rows(layout, texts, vectors[:n], model):
        core.storage.save_learnings(batch, Audit(actor="bench"))
    seeded = time.perf_counter() - started
    ranks: dict[str, dict[str, int | None]] = {}
    started = time.perf_counter()
    for needle, row in zip(haystack.NEEDLES, needles, strict=True):
        assert row.user_id is not None
        ranks[needle.key] = {
            mode: search_rank(core, needle.question, row.user_id, row.id, mode, threshold) for mode in MODES
        }
    asked = time.perf_counter() - started
    scope = n if layout == "one" else n // USERS
    return {
        "layout": layout,
        "n": n,
        "scope_haystack_rows": scope,
        **summary(ranks),
        "ranks": ranks,
        "seconds": {"seed": round(seeded, 1), "search": round(asked, 1)},
    }


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT).stdout.strip()

    head = git("rev-parse", "HEAD") or "unknown"
    return f"{head}-dirty" if git("status", "--porcelain", "--untracked-files=no") else head


def run_info(args: argparse.Namespace, core: Core, check: haystack.Check, seconds: float) -> dict[str, Any]:
    """What produced the results: code, machine, embedder, settings, the haystack check."""
    return {
        "commit": _commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
        },
        "storage": args.storage.split(":", 1)[0],
        "embedder": args.embedder,
        "embed_model": core.embedder.name,
        "threshold": args.threshold,
        "top_k": TOP_K,
        "needles": {"lexical": len(haystack.LEXICAL), "paraphrase": len(haystack.PARAPHRASE)},
        "haystack": {
            "version": haystack.VERSION,
            "templates": len(haystack.TEMPLATES),
            "distinct_rows_in_largest": check.distinct_rows,
            "question_terms_found_in_haystack": check.question_terms_in_haystack,
        },
        "seconds": round(seconds, 1),
    }


def table(results: list[dict[str, Any]]) -> str:
    """One line per layout, size and mode: found in top 5 / 10, by kind; then the goal."""
    head = (
        f"{'layout':<7} {'n':>7} {'mode':<7} {'top5':>5} {'top10':>6} "
        f"{'lex@5':>6} {'lex@10':>7} {'para@5':>7} {'para@10':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        for mode in MODES:
            m = r["modes"][mode]
            lex, para = m["lexical"], m["paraphrase"]
            lines.append(
                f"{r['layout']:<7} {r['n']:>7} {mode:<7} {m['top5']:>5} {m['top10']:>6} "
                f"{lex['top5']:>6} {lex['top10']:>7} {para['top5']:>7} {para['top10']:>8}"
            )
        verdict = "met" if r["goal_met"] else f"NOT met, lost: {', '.join(r['lost'])}"
        lines.append(f"{'':<7} {'':>7} either single mode top5: {r['either_top5']}; goal {verdict}")
    return "\n".join(lines)


def markdown(report: dict[str, Any]) -> str:
    """The results as a Markdown page: the run, then needles found per layout, size and mode."""
    run = report["run"]
    lines = [
        f"# Needles in haystacks ({run['date']}, {run['commit'][:12]})",
        "",
        f"Embedder {run['embed_model']}, storage {run['storage']}, threshold {run['threshold']}; "
        f"{run['needles']['lexical']} lexical and {run['needles']['paraphrase']} paraphrase needles. "
        "Goal: hybrid finds in its top 5 every needle that full text or vector finds in theirs.",
        "",
        "| layout | haystack rows | rows in a needle's scope | mode | top 5 | top 10 | lexical top 5 "
        "| paraphrase top 5 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        for mode in MODES:
            m = r["modes"][mode]
            lines.append(
                f"| {r['layout']} | {r['n']} | {r['scope_haystack_rows']} | {mode} | {m['top5']} "
                f"| {m['top10']} | {m['lexical']['top5']} | {m['paraphrase']['top5']} |"
            )
    lines += ["", "| layout | haystack rows | found by either single mode (top 5) | goal | lost by hybrid |"]
    lines.append("|---|---|---|---|---|")
    for r in report["results"]:
        goal = "met" if r["goal_met"] else "NOT met"
        lines.append(f"| {r['layout']} | {r['n']} | {r['either_top5']} | {goal} | {', '.join(r['lost'])} |")
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog="python -m bench.needle", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON results")
    parser.add_argument("--sizes", default="1000,10000,100000", help="haystack rows, comma-separated")
    parser.add_argument("--layouts", default=",".join(LAYOUTS), help="one and/or spread, comma-separated")
    parser.add_argument("--embedder", default=Settings.from_env({}).embedder, help="minilm or wordllama")
    parser.add_argument("--storage", default="memory://", help="storage URL; a persistent one is cleared")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, help="search threshold")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where haystack embeddings are kept")
    return parser.parse_args(argv)


def _open(args: argparse.Namespace, home: str) -> Core:
    env = {"REFLEXIO_HOME": home, "REFLEXIO_STORAGE_URL": args.storage, "REFLEXIO_EMBEDDER": args.embedder}
    core = open_core(Settings.from_env(env))
    core.storage.delete_learnings(ORG, LearningFilter(), Audit(actor="bench"))
    return core


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the table, write the JSON; returns the results."""
    args = parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    layouts = [layout for layout in args.layouts.split(",") if layout]
    if unknown := set(layouts) - set(LAYOUTS):
        raise SystemExit(f"unknown layout(s): {', '.join(sorted(unknown))}")
    started = time.perf_counter()
    texts = haystack.rows(max(sizes))
    check = haystack.check(haystack.NEEDLES, texts)
    if check.broken:
        raise SystemExit(f"needles that break their kind's rule against this haystack: {check.broken}")
    results = []
    with tempfile.TemporaryDirectory() as home:
        core = _open(args, home)
        vectors = haystack_vectors(core.embedder, texts, args.cache)
        facts = core.embedder.embed([n.fact for n in haystack.NEEDLES], kind="document")
        for layout in layouts:
            for n in sizes:
                print(f"{layout} n={n} ...", file=sys.stderr, flush=True)
                core.close()
                core = _open(args, home)
                results.append(measure(core, layout, n, vectors, facts, args.threshold))
        info = run_info(args, core, check, time.perf_counter() - started)
        core.storage.delete_learnings(ORG, LearningFilter(), Audit(actor="bench"))
        core.close()
    report = {"run": info, "results": results}
    print(table(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
