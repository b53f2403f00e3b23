"""Two source trees, one workload, in alternating batches: a before/after that load cannot skew.

Run: ``python -m bench.interleaved --base DIR --what search|publish --backend sqlite|postgres
[--n 10000] [--rounds 30] [--batch 20] [--postgres-url URL] --out RESULTS.json``

``DIR`` is the tree to compare with (``git archive <commit> | tar -x -C DIR``). One process runs
this tree's code and one ``DIR``'s, each holding its store open; they take turns, a batch of
``--batch`` operations each, the order swapped every round, so both meet the same load on a
shared machine. Reported per operation: wall and CPU time (this thread's, which other work on
the machine disturbs far less) of the whole service call and, for searches, of
``search_candidates`` alone (the storage's share).

* ``search``: the service's searches of every kind over bench/search's seeded corpus of ``--n``
  learnings per kind (seed it first with ``python -m bench.search --sizes N``); distinct
  queries throughout, as in bench/search.
* ``publish``: service-layer publishes of two turns (bench/ingest's body) into a fresh store
  per side, no workers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import corpus
from bench.ingest import body
from bench.search import CACHE, KINDS, open_bench_core, requests, storage_url

ROOT = Path(__file__).resolve().parents[1]


def child(what: str, backend: str, n: int, url: str, home: str, offset: int) -> None:
    """Serve batches on stdin ("<size>" lines); answer each with a JSON list of samples."""
    if what == "search":
        cache = Path(home).resolve()
        core = open_bench_core(storage_url(backend, n, "spread", url, cache), cache)
        queries = corpus.queries(n, "spread", count=100_000)
        for q in queries[:40]:
            for kind in KINDS:
                requests(kind, q)(core)
        storage = core.storage
        inner, last = storage.search_candidates, [0.0, 0.0]

        def timed(org_id: str, query: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return inner(org_id, query)
            finally:
                last[:] = [time.perf_counter() - wall, time.thread_time() - cpu]

        storage.search_candidates = timed  # type: ignore[method-assign]
        position = 40
    else:
        from reflexio.config import Settings
        from reflexio.models import PublishUserInteractionRequest
        from reflexio.service import publish
        from reflexio.service.core import open_core

        env = {"REFLEXIO_STORAGE_URL": url, "HOME": home, "REFLEXIO_WORKERS": "0"}
        core, position = open_core(Settings.from_env(env)), offset
    print("ready", flush=True)
    for line in sys.stdin:
        samples = []
        for i in range(position, position + int(line)):
            wall, cpu = time.perf_counter(), time.thread_time()
            if what == "search":
                for kind in KINDS:
                    wall, cpu = time.perf_counter(), time.thread_time()
                    requests(kind, queries[i])(core)
                    samples.append([kind, time.perf_counter() - wall, time.thread_time() - cpu, *last])
            else:
                req = PublishUserInteractionRequest.model_validate(body(i, 2))
                publish.publish(core, "self-host-org", req)
                samples.append(["publish", time.perf_counter() - wall, time.thread_time() - cpu])
        position += int(line)
        print(json.dumps(samples), flush=True)
    core.close()


def _store(args: argparse.Namespace, side: str) -> tuple[str, str]:
    """(storage URL or PostgreSQL server URL, home folder) for one side."""
    if args.what == "search":
        return args.postgres_url, str(args.cache.resolve())
    home = tempfile.mkdtemp(prefix=f"interleaved-{side}-")
    if args.backend == "sqlite":
        return f"sqlite:///{home}/publish.db", home
    import psycopg

    schema = f"interleaved_{side}_{os.getpid()}"
    with psycopg.connect(args.postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in args.postgres_url else "?"
    return f"{args.postgres_url}{sep}options=-csearch_path%3D{schema},public", home


def _start(args: argparse.Namespace, side: str, tree: Path) -> subprocess.Popen[str]:
    url, home = _store(args, side)
    offset = 0 if side == "base" else 50_000_000  # distinct request bodies per side
    # This file drives both sides; each imports its own tree's reflexio and bench helpers.
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", args.what, args.backend]
    argv += [str(args.n), url, home, str(offset)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "src"), str(tree)])}
    proc = subprocess.Popen(argv, cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _percentiles(values: list[float]) -> dict[str, float]:
    ms = np.asarray(values) * 1000
    return {
        "p50": round(float(np.percentile(ms, 50)), 3),
        "p95": round(float(np.percentile(ms, 95)), 3),
        "mean": round(float(ms.mean()), 3),
        "n": len(values),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Alternate the two sides; per side and operation, percentiles of each measure."""
    procs = {"base": _start(args, "base", args.base.resolve()), "new": _start(args, "new", ROOT)}
    samples: dict[str, list[list[Any]]] = {side: [] for side in procs}
    for r in range(args.rounds):
        for side in ("base", "new") if r % 2 == 0 else ("new", "base"):
            proc = procs[side]
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(f"{args.batch}\n")
            proc.stdin.flush()
            samples[side] += json.loads(proc.stdout.readline())
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    return {side: _summary(rows) for side, rows in samples.items()}


def _summary(rows: list[list[Any]]) -> dict[str, dict[str, dict[str, float]]]:
    measures = ["wall", "cpu", "storage_wall", "storage_cpu"][: len(rows[0]) - 1]
    out = {}
    for op in sorted({s[0] for s in rows}):
        mine = [s for s in rows if s[0] == op]
        out[op] = {m: _percentiles([s[i + 1] for s in mine]) for i, m in enumerate(measures)}
    return out


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        what, backend, n, url, home, offset = sys.argv[2:8]
        child(what, backend, int(n), url, home, int(offset))
        return
    parser = argparse.ArgumentParser(prog="python -m bench.interleaved", description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the source tree to compare with")
    parser.add_argument("--what", choices=["search", "publish"], required=True)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--n", type=int, default=10_000, help="search: learnings per kind (seeded)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--postgres-url", default=os.environ.get("REFLEXIO_TEST_POSTGRES_URL", ""))
    parser.add_argument("--cache", type=Path, default=CACHE, help="bench/search's seeded corpora")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    report = {
        "benchmark": "interleaved",
        "what": args.what,
        "backend": args.backend,
        "n_per_kind": args.n if args.what == "search" else None,
        "rounds": args.rounds,
        "batch": args.batch,
        "new": commit.stdout.strip(),
        "base": str(args.base),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "results": run(args),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["results"], indent=1))


if __name__ == "__main__":
    main()
