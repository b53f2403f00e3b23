"""Search latency at scale: seeded synthetic learnings, timed through the service layer.

Run: python -m bench.search --sizes 1000,10000,100000 --out bench/results/search.json
     [--backend sqlite,memory,postgres,postgres-sql] [--postgres-url URL] [--append]

``postgres`` searches from each process's in-process index (``storage.postgres_index``);
``postgres-sql`` is the same corpus searched in SQL (``REFLEXIO_SEARCH_INDEX_MB=0``: ts_rank
and pgvector), what every PostgreSQL search did before. Sizes run in turn and, within a size,
the backends in turn, so a before/after pair is measured side by side; PostgreSQL runs record
the server's ``shared_buffers`` and ``work_mem``.

For each size N the corpus holds N profiles and N user playbooks spread over 1,000 users (and
10 agent versions) and N agent playbooks spread over 10 agent versions, about a tenth of them
tombstoned, expired or rejected as in a deployment that has been learning for a while. A
"worst" corpus puts 100k rows of each kind in one scope (one user, one agent version).

Every measurement runs in a fresh child process (seeding in another one before it), so peak
RSS and the cold first search (which builds the SQLite backend's in-memory index) belong to
that size alone; on PostgreSQL the HNSW index is dropped first, so "open" includes its build.
Latency is measured through ``reflexio.service.search``, unified search with user_id and
agent_version set, each query a distinct (user, agent version, text) so no search repeats an
earlier one; the query vector is already cached and the query embedding is timed on its own,
uncached (a real first-time query costs both). Databases are seeded once into
``.tmp/bench-search`` and reused.

A restart follows every SQLite and PostgreSQL measurement: one more fresh process opens the
corpus the measuring process has just closed, runs what a server runs before it takes requests
(``create_app`` and ``Storage.warm_search``, timed as "ready": on SQLite it loads each org's
index from the snapshot the closed process left, or builds it when there is none), and times
its first search against the warm ones after it (issue 19: after a deploy or a crash the first
search should cost what the hundredth does, and readiness should not take long).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench import corpus
from reflexio.api import create_app
from reflexio.config import Settings
from reflexio.filters import LearningFilter
from reflexio.models import (
    SearchAgentPlaybookRequest,
    SearchUserPlaybookRequest,
    SearchUserProfileRequest,
    UnifiedSearchRequest,
)
from reflexio.records import Audit
from reflexio.service import search
from reflexio.service.core import Core, open_core
from reflexio.service.warmup import Warmup

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".tmp" / "bench-search"
ORG = "bench"
GOAL_MS = 5.0
#: Issue 19: a search of one scope of 100k rows (one kind of the "worst" corpus), p95.
GOAL_ONE_SCOPE_MS = 10.0
#: Issue 19: the first search after a restart, against a warm search's p50.
GOAL_RESTART_RATIO = 2.0
KINDS = ("unified", "profiles", "user_playbooks", "agent_playbooks")
#: The PostgreSQL backends: one corpus, searched from the in-process index or in SQL.
POSTGRES = ("postgres", "postgres-sql")
#: Issue 18: PostgreSQL at 100k per kind, unified p95, and the one-scope corpus' unified p95.
GOAL_PG_MS = 15.0
GOAL_PG_ONE_SCOPE_MS = 50.0
WARMUP = 20
RESTART_WARM = 100


# -- seeding ----------------------------------------------------------------------------------


def storage_url(backend: str, n: int, layout: str, pg_url: str, cache: Path = CACHE) -> str:
    """Where the corpus of size ``n`` lives (one SQLite file or PostgreSQL schema per corpus)."""
    if backend == "sqlite":
        return f"sqlite:///{cache / f'sqlite-{layout}-{n}-v{corpus.VERSION}.db'}"
    if backend in POSTGRES:
        schema = f"bench_{layout}_{n}_v{corpus.VERSION}"
        sep = "&" if "?" in pg_url else "?"
        return f"{pg_url}{sep}options=-csearch_path%3D{schema},public"
    return "memory://"


def open_bench_core(url: str, cache: Path = CACHE, backend: str = "") -> Core:
    """A core over ``url`` with the default offline embedder (``postgres-sql``: no in-process
    search index)."""
    env = {"REFLEXIO_STORAGE_URL": url, "REFLEXIO_EMBEDDER": "wordllama", "HOME": str(cache / "home")}
    if backend == "postgres-sql":
        env["REFLEXIO_SEARCH_INDEX_MB"] = "0"
    return open_core(Settings.from_env(env))


def postgres_settings(url: str) -> dict[str, str]:
    """The server settings PostgreSQL search latency depends on most."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        shown = {name: conn.execute(f"SHOW {name}").fetchone() for name in ("shared_buffers", "work_mem")}
    return {name: str(row[0]) if row else "?" for name, row in shown.items()}


def seed(core: Core, n: int, layout: str, cache: Path = CACHE) -> float:
    """Fill an empty org with the corpus; returns seconds spent saving (vectors precomputed)."""
    if core.storage.count_learnings(ORG, LearningFilter()) == 3 * n:
        return 0.0
    vectors = corpus.vectors(core.embedder, n, cache)
    started = time.perf_counter()
    for batch in corpus.learnings(ORG, n, layout, vectors, core.embedder.name, batch=5000):
        core.storage.save_learnings(batch, Audit(actor="bench"))
    return time.perf_counter() - started


def postgres_schema(url: str, *, drop_hnsw: bool = False) -> None:
    """Create the schema named in ``url``'s search_path; optionally drop its HNSW indexes, so
    that the next open rebuilds them and the open time includes the build."""
    import psycopg

    schema = url.rsplit("search_path%3D", 1)[1].split(",")[0]
    base = url.split("options=")[0].rstrip("?&")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        if drop_hnsw:
            found = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s "
                "AND indexname LIKE 'learnings_hnsw_%%'",
                (schema,),
            )
            for (name,) in found.fetchall():
                conn.execute(f"DROP INDEX {schema}.{name}")


# -- measuring --------------------------------------------------------------------------------


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50/p95/p99/mean of millisecond samples, rounded for the report."""
    arr = np.asarray(samples, dtype=np.float64)
    return {
        "p50": round(float(np.percentile(arr, 50)), 3),
        "p95": round(float(np.percentile(arr, 95)), 3),
        "p99": round(float(np.percentile(arr, 99)), 3),
        "mean": round(float(arr.mean()), 3),
        "n": len(samples),
    }


class TimedStorage:
    """Wraps a storage to time ``search_candidates`` (the backend's share of a search)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.last_ms = 0.0

    def search_candidates(self, org_id: str, query: Any) -> Any:
        started = time.perf_counter()
        try:
            return self._inner.search_candidates(org_id, query)
        finally:
            self.last_ms = (time.perf_counter() - started) * 1000

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def requests(kind: str, q: corpus.Query) -> Callable[[Core], object]:
    """One service call of ``kind`` for query ``q`` in its scope."""
    if kind == "unified":
        req: Any = UnifiedSearchRequest(query=q.text, user_id=q.user_id, agent_version=q.agent_version)
        return lambda core: search.search(core, ORG, req)
    if kind == "profiles":
        p = SearchUserProfileRequest(query=q.text, user_id=q.user_id)
        return lambda core: search.search_profiles(core, ORG, p)
    if kind == "user_playbooks":
        u = SearchUserPlaybookRequest(query=q.text, user_id=q.user_id)
        return lambda core: search.search_user_playbooks(core, ORG, u)
    a = SearchAgentPlaybookRequest(query=q.text, agent_version=q.agent_version)
    return lambda core: search.search_agent_playbooks(core, ORG, a)


def time_embedding(core: Core, queries: list[corpus.Query]) -> dict[str, float]:
    """Uncached query embedding, then warm the service's query cache with every query."""
    inner = getattr(core.embedder, "inner", core.embedder)
    samples = []
    for q in queries:
        started = time.perf_counter()
        inner.embed([q.text], kind="query")
        samples.append((time.perf_counter() - started) * 1000)
    for q in queries:
        core.embedder.embed([q.text], kind="query")
    return percentiles(samples)


def time_kinds(core: Core, timed: TimedStorage, queries: list[corpus.Query]) -> dict[str, Any]:
    """Latency per kind, one search of each kind per query, kinds interleaved so that
    background load hits them alike. CPU time (this thread's) is reported beside wall time
    because it is far less sensitive to other work on the machine."""
    total: dict[str, list[float]] = {k: [] for k in KINDS}
    cpu: dict[str, list[float]] = {k: [] for k in KINDS}
    backend: dict[str, list[float]] = {k: [] for k in KINDS}
    hits: dict[str, int] = dict.fromkeys(KINDS, 0)
    for q in queries:
        for kind in KINDS:
            call = requests(kind, q)
            started, started_cpu = time.perf_counter(), time.thread_time()
            out = call(core)
            cpu[kind].append((time.thread_time() - started_cpu) * 1000)
            total[kind].append((time.perf_counter() - started) * 1000)
            backend[kind].append(timed.last_ms)
            hits[kind] += _count(out)
    return {
        kind: {
            "service_ms": percentiles(total[kind]),
            "service_cpu_ms": percentiles(cpu[kind]),
            "candidates_ms": percentiles(backend[kind]),
            "mean_results": round(hits[kind] / len(queries), 2),
        }
        for kind in KINDS
    }


def _count(out: object) -> int:
    return sum(
        len(getattr(out, f, None) or [])
        for f in ("profiles", "user_playbooks", "agent_playbooks", "user_profiles")
    )


def time_concurrent(core: Core, queries: list[corpus.Query], threads: int) -> dict[str, Any]:
    """Unified searches from ``threads`` clients at once: latency and throughput."""
    samples: list[list[float]] = [[] for _ in range(threads)]

    def client(t: int) -> None:
        for q in queries[t::threads]:
            call = requests("unified", q)
            started = time.perf_counter()
            call(core)
            samples[t].append((time.perf_counter() - started) * 1000)

    workers = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - started
    flat = [s for per in samples for s in per]
    return {"threads": threads, "service_ms": percentiles(flat), "searches_per_s": round(len(flat) / elapsed)}


def prepare(backend: str, n: int, layout: str, pg_url: str = "", cache: Path = CACHE) -> float:
    """Seed a stored corpus unless it is there already (run in a process of its own, so that
    seeding counts neither in the timed process's peak RSS nor in its cold start)."""
    url = storage_url(backend, n, layout, pg_url, cache)
    if backend in POSTGRES:
        postgres_schema(url)
    seeder = open_bench_core(url, cache, backend)
    try:
        return seed(seeder, n, layout, cache)
    finally:
        seeder.close()


def measure(
    backend: str, n: int, layout: str, repeat: int, pg_url: str = "", cache: Path = CACHE
) -> dict[str, Any]:
    """Time one corpus in this process (seeded already unless in memory); the child's job."""
    url = storage_url(backend, n, layout, pg_url, cache)
    seeded_s = 0.0
    if backend in POSTGRES:
        postgres_schema(url, drop_hnsw=True)
    rss_before_open = _rss_mb()
    started = time.perf_counter()
    core = open_bench_core(url, cache, backend)  # PostgreSQL builds its HNSW index here (10k+ vectors)
    open_s = time.perf_counter() - started
    if backend == "memory":
        seeded_s = seed(core, n, layout, cache)
    timed = TimedStorage(core.storage)
    core.storage = timed
    # Distinct queries (user, agent version, text) throughout: nothing is timed twice.
    queries = corpus.queries(n, layout, count=WARMUP + 2 * repeat)
    embed = time_embedding(core, queries)
    load_before = os.getloadavg()
    started = time.perf_counter()
    requests("unified", queries[0])(core)
    cold_ms = (time.perf_counter() - started) * 1000
    for q in queries[1:WARMUP]:
        for kind in KINDS:
            requests(kind, q)(core)
    kinds = time_kinds(core, timed, queries[WARMUP : WARMUP + repeat])
    concurrent = time_concurrent(core, queries[WARMUP + repeat :], 2)
    load_after = os.getloadavg()
    core.close()
    return {
        **({"postgres": postgres_settings(url)} if backend in POSTGRES else {}),
        "backend": backend,
        "layout": layout,
        "n_per_kind": n,
        "rows": 3 * n,
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
        "seed_s": round(seeded_s, 2),
        "open_s": round(open_s, 2),
        "cold_first_search_ms": round(cold_ms, 1),
        "index_build_ms": round(cold_ms - kinds["unified"]["service_ms"]["p50"], 1),
        "peak_rss_mb": _rss_mb(),
        "rss_before_open_mb": rss_before_open,
        "load_avg_1m": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "load_avg_5m_after": round(load_after[1], 2),
        "query_embedding_ms": embed,
        "latency": kinds,
        "concurrent": concurrent,
    }


def measure_restart(
    backend: str,
    n: int,
    layout: str,
    repeat: int,
    pg_url: str = "",
    cache: Path = CACHE,
    rebuild: bool = False,
) -> dict[str, Any]:
    """A restart: a fresh process opens the corpus another process has just closed.

    As a server does before it takes requests, it first builds the app (which compiles the
    wire models) and runs the server's warm-up (``service.warmup``: the storage's search
    indexes, then one search an org; ``ready_ms``); then the first search is timed
    against the warm searches after it (queries embedded beforehand, none of them asked
    before). With ``rebuild``, SQLite's index snapshots are removed first: the restart as it
    was before they existed.
    """
    url = storage_url(backend, n, layout, pg_url, cache)
    if rebuild and backend == "sqlite":
        shutil.rmtree(f"{url.removeprefix('sqlite:///')}.search", ignore_errors=True)
    started = time.perf_counter()
    core = open_bench_core(url, cache, backend)
    open_s = time.perf_counter() - started
    fresh = corpus.queries(n, layout, count=WARMUP + 2 * repeat + 1 + RESTART_WARM)[WARMUP + 2 * repeat :]
    time_embedding(core, fresh)
    started = time.perf_counter()
    create_app(core)  # what a server builds before it listens: every wire model compiled
    Warmup().run(core)  # what it runs before its readiness says ready: indexes, one search an org
    ready_ms = (time.perf_counter() - started) * 1000
    wall: list[float] = []
    cpu: list[float] = []
    for q in fresh:
        started, started_cpu = time.perf_counter(), time.thread_time()
        requests("unified", q)(core)
        cpu.append((time.thread_time() - started_cpu) * 1000)
        wall.append((time.perf_counter() - started) * 1000)
    core.close()
    warm_p, warm_cpu = percentiles(wall[1:]), percentiles(cpu[1:])
    return {
        "open_s": round(open_s, 2),
        "ready_ms": round(ready_ms, 1),
        "first_search_ms": round(wall[0], 1),
        "first_search_cpu_ms": round(cpu[0], 1),
        "warm_ms": warm_p,
        "warm_cpu_ms": warm_cpu,
        "first_over_warm_p50": round(wall[0] / warm_p["p50"], 2),
        "first_over_warm_p50_cpu": round(cpu[0] / warm_cpu["p50"], 2),
    }


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


# -- orchestration ----------------------------------------------------------------------------


def child(spec: dict[str, Any], blas: str) -> dict[str, Any]:
    """Run ``measure(**spec)`` in a fresh interpreter (clean RSS, cold index, BLAS threads)."""
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    if blas != "default":
        env["OPENBLAS_NUM_THREADS"] = blas
    args = [sys.executable, "-m", "bench.search", "--child", json.dumps(spec)]
    done = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"child {spec} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def machine() -> dict[str, Any]:
    """Cores, CPU model, RAM and Python, for reading the numbers in context."""
    cpu = ""
    with open("/proc/cpuinfo") as f:  # noqa: PTH123 - Linux only, like the benchmark machine
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "ram_gb": round(ram, 1),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "sqlite": __import__("sqlite3").sqlite_version,
        "platform": platform.platform(),
    }


def commit() -> str:
    """The commit measured, with "-dirty" when the tree has uncommitted changes."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def plan(args: argparse.Namespace) -> Iterator[tuple[str, int, str, str]]:
    """(backend, n, layout, blas threads) of every child run; BLAS settings are compared on
    SQLite only (the backend the goal is about), the others run with the default."""
    corpora = [(int(s), "spread") for s in args.sizes.split(",")]
    corpora += [(args.worst, "worst")] if args.worst else []
    for n, layout in corpora:
        for backend in args.backend.split(","):
            for blas in args.blas.split(",") if backend == "sqlite" else ["default"]:
                yield backend, n, layout, blas


def table(report: dict[str, Any]) -> str:
    """The results as a Markdown table (service-layer p50/p95/p99, ms)."""
    lines = [
        f"# Search latency ({report['date']}, {report['commit'][:12]}; each run names its commit below)",
        "",
        f"Machine: {report['machine']['cores']} cores, {report['machine']['cpu']}, "
        f"{report['machine']['ram_gb']} GB, Python {report['machine']['python']}. "
        f"Goal: unified p95 <= {GOAL_MS} ms at 100k per kind (SQLite).",
        "",
        *_verdict(report["runs"]),
        "Service-layer latency in ms (query vector cached; its embedding is timed separately "
        "below). CPU = this thread's CPU time, which other work on the machine disturbs far "
        "less than wall time; backend = `search_candidates` (index + rows).",
        "",
        "| backend | layout | N/kind | BLAS | kind | p50 | p95 | p99 | CPU p50 | CPU p95 | backend p50 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        for kind in KINDS:
            lat = run["latency"][kind]
            s, cpu, c = lat["service_ms"], lat["service_cpu_ms"], lat["candidates_ms"]
            lines.append(
                f"| {run['backend']} | {run['layout']} | {run['n_per_kind']} | {run['blas_threads']} "
                f"| {kind} | {s['p50']} | {s['p95']} | {s['p99']} | {cpu['p50']} | {cpu['p95']} "
                f"| {c['p50']} |"
            )
    lines += [
        "",
        "Open = opening storage (on PostgreSQL it includes building the HNSW index, dropped before "
        "each run); cold first search = the first search after open (on SQLite it builds the "
        "in-memory index); restart = a fresh process opening the corpus the measuring process has "
        "just closed: ready = the warm-up a server runs before it says ready (its search indexes, "
        "then one search an org; on SQLite the indexes load from the snapshot the closed process "
        'left; "rebuild" is the same restart '
        "with the snapshot removed first), then its first search and the warm ones after it; peak RSS "
        "is the benchmark process's (PostgreSQL's server is not in it).",
        "",
        "| backend | layout | N/kind | BLAS | open s | cold first search ms | restart: open s "
        "| restart: ready ms (rebuild) | restart: first search ms (rebuild) | restart: warm p50/p95 ms "
        "| peak RSS MB "
        "| embed p50/p95 ms | 2 clients p95 ms | 2 clients searches/s | load 1m | commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        e, c = run["query_embedding_ms"], run["concurrent"]
        r = run.get("restart") or {}
        b = run.get("restart_rebuild") or {}
        ready = f"{r.get('ready_ms', '-')}" + (f" ({b['ready_ms']})" if b else "")
        first = f"{r.get('first_search_ms', '-')}" + (f" ({b['first_search_ms']})" if b else "")
        warm = f"{r['warm_ms']['p50']}/{r['warm_ms']['p95']}" if r else "-"
        lines.append(
            f"| {run['backend']} | {run['layout']} | {run['n_per_kind']} | {run['blas_threads']} "
            f"| {run['open_s']} | {run['cold_first_search_ms']} | {r.get('open_s', '-')} "
            f"| {ready} | {first} | {warm} | {run['peak_rss_mb']} "
            f"| {e['p50']}/{e['p95']} | {c['service_ms']['p95']} | {c['searches_per_s']} "
            f"| {run['load_avg_1m']} | {run.get('commit', report['commit'])[:7]} |"
        )
    return "\n".join(lines) + "\n"


def _verdict(runs: list[dict[str, Any]]) -> list[str]:
    """One line per goal whose deciding run is in the report: met or not, with the number."""
    lines = [_pg_verdict(run) for run in runs if run["backend"] in POSTGRES and run["n_per_kind"] == 100_000]
    for run in runs:
        if (run["backend"], run["n_per_kind"], run["blas_threads"]) != ("sqlite", 100_000, "default"):
            continue
        unified = run["latency"]["unified"]["service_ms"]["p95"]
        if run["layout"] == "spread":
            met = "met" if unified <= GOAL_MS else "NOT met"
            lines.append(
                f"**Goal {met}**: SQLite unified p95 at 100k per kind = {unified} ms (<= {GOAL_MS})."
            )
        else:
            worst = max(run["latency"][k]["service_ms"]["p95"] for k in KINDS if k != "unified")
            met = "met" if worst <= GOAL_ONE_SCOPE_MS else "NOT met"
            lines.append(
                f"**Goal {met}**: one scope of 100k rows (each kind of the one-scope corpus), SQLite p95 "
                f"<= {worst} ms (<= {GOAL_ONE_SCOPE_MS}); unified over its three 100k scopes {unified} ms."
            )
        restart = run.get("restart")
        if restart:
            ratio = restart["first_over_warm_p50"]
            met = "met" if ratio <= GOAL_RESTART_RATIO else "NOT met"
            lines.append(
                f"**Goal {met}**: first search after a restart ({run['layout']}, 100k per kind) "
                f"{restart['first_search_ms']} ms = {ratio}x a warm search's p50 "
                f"{restart['warm_ms']['p50']} ms (<= {GOAL_RESTART_RATIO}x; in this thread's CPU time "
                f"{restart.get('first_over_warm_p50_cpu', '-')}x), after the server's warm-up "
                f"(ready in {restart['ready_ms']} ms from the snapshot"
                + (
                    f"; {run['restart_rebuild']['ready_ms']} ms rebuilding without one)."
                    if "restart_rebuild" in run
                    else ")."
                )
            )
    return [*lines, ""] if lines else []


def _pg_verdict(run: dict[str, Any]) -> str:
    """Issue 18's goal for one PostgreSQL run at 100k per kind: unified p95, met or not."""
    unified = run["latency"]["unified"]["service_ms"]["p95"]
    goal = GOAL_PG_MS if run["layout"] == "spread" else GOAL_PG_ONE_SCOPE_MS
    corpus_name = (
        "100k per kind" if run["layout"] == "spread" else "the one-scope corpus (100k rows per kind)"
    )
    settings = run.get("postgres", {})
    return (
        f"**Goal {'met' if unified <= goal else 'NOT met'}** ({run['backend']}): unified p95 over "
        f"{corpus_name} = {unified} ms (<= {goal}); shared_buffers {settings.get('shared_buffers', '?')}, "
        f"work_mem {settings.get('work_mem', '?')}."
    )


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        spec = {**json.loads(argv[1]), "cache": Path(json.loads(argv[1])["cache"])}
        if spec.pop("prepare", False):
            spec.pop("repeat")
            print(json.dumps({"seed_s": prepare(**spec)}))
        elif spec.pop("restart", False):
            print(json.dumps(measure_restart(**spec)))
        else:
            print(json.dumps(measure(**spec)))
        return
    parser = argparse.ArgumentParser(prog="python -m bench.search", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="learnings per kind, comma-separated")
    parser.add_argument("--backend", default="sqlite", help="sqlite, postgres and/or memory, comma-separated")
    parser.add_argument("--worst", type=int, default=100_000, help="rows in the one-scope corpus (0: skip)")
    parser.add_argument("--repeat", type=int, default=400, help="timed searches per kind")
    parser.add_argument(
        "--blas", default="default", help="OPENBLAS_NUM_THREADS values to compare, e.g. default,1"
    )
    parser.add_argument("--postgres-url", default=os.environ.get("REFLEXIO_BENCH_POSTGRES_URL", ""))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "search.json")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where seeded databases are kept")
    parser.add_argument(
        "--append", action="store_true", help="add to the runs already in --out (same run: replaced)"
    )
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "benchmark": "search",
        "commit": commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "goal": {
            "unified_p95_ms": GOAL_MS,
            "one_scope_p95_ms": GOAL_ONE_SCOPE_MS,
            "restart_first_over_warm_p50": GOAL_RESTART_RATIO,
            "at_n_per_kind": 100_000,
            "backend": "sqlite",
        },
        "method": __doc__,
        "corpus": corpus.describe(),
        "runs": run_all(args),
    }
    if args.append and args.out.exists():
        earlier = json.loads(args.out.read_text())
        kept = [{"commit": earlier["commit"], **run} for run in earlier["runs"]]  # older files: one commit
        report["runs"] = merged(kept, report["runs"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(table(report))
    print(table(report))


def merged(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``old`` runs with ``new`` ones added, a new run replacing an old one of the same setup."""

    def key(run: dict[str, Any]) -> tuple[Any, ...]:
        return run["backend"], run["layout"], run["n_per_kind"], run["blas_threads"]

    fresh = {key(run) for run in new}
    return [run for run in old if key(run) not in fresh] + new


def run_all(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every planned measurement, each in its own child process, with progress on stderr."""
    runs = []
    for backend, n, layout, blas in plan(args):
        print(f"{backend} {layout} n={n} blas={blas} ...", file=sys.stderr, flush=True)
        spec = {"backend": backend, "n": n, "layout": layout, "repeat": args.repeat}
        spec |= {"pg_url": args.postgres_url, "cache": str(args.cache)}
        seeded = child({**spec, "prepare": True}, blas) if backend != "memory" else {}
        run = child(spec, blas) | seeded | {"commit": commit()}
        if backend == "sqlite":  # interleaved: the same restart without, then with, a snapshot
            run["restart_rebuild"] = child({**spec, "restart": True, "rebuild": True}, blas)
        if backend != "memory":  # a memory store does not outlive its process
            run["restart"] = child({**spec, "restart": True}, blas)
        u = run["latency"]["unified"]["service_ms"]
        print(
            f"  unified p50 {u['p50']} p95 {u['p95']} ms; cold {run['cold_first_search_ms']} ms; "
            f"rss {run['peak_rss_mb']} MB",
            file=sys.stderr,
            flush=True,
        )
        runs.append(run)
    return runs


if __name__ == "__main__":
    main()
