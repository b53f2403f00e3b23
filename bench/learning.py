"""Learning throughput with 1, 2 and 4 worker processes on one PostgreSQL, with lock sampling.

``python -m bench.learning --postgres-url URL --workers 1,2,4 --llm-ms 0,200
--out bench/results/learning-postgres.json``

For each extractor and worker count, a fresh schema is filled through the service layer with
``--users`` users' conversations (``--publishes`` requests of four turns each, one extraction
job per user, due at once) while no worker runs; then that many worker processes start (each
one job thread, as ``reflexio worker --concurrency 1`` runs it; timing starts once every one
has opened its storage) and the queue is timed until every extraction job is done:
learned/s = interactions learned / seconds to drain. The
extractors are the offline rule extractor (CPU-bound: its scaling is bounded by the machine's
cores) and ``reflexio.testing.rules_script()``, a ScriptedLLM giving the same answers, behind
an injected per-call latency that models a real provider (``--llm-ms``; 0 skips it).

While the workers run, a sampler polls ``pg_stat_activity`` every 20 ms: how many of the
workers' sessions were running a statement, how many of those waited on a lock and on which
(``wait_event`` and the waiting statement), and which relations the ungranted ``pg_locks`` were
on. Serialisation shows
up as lock waits; their share of the samples is reported beside the throughput, and
``EXPLAIN`` of the claim statement shows it skips locked rows instead of waiting.

Worker counts run in turn for each extractor, so a 1 → 2 comparison is measured side by side.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg

from reflexio.config import DEFAULT_ORG_ID, Settings
from reflexio.llm import LLMCall, LLMResult
from reflexio.models import PublishUserInteractionRequest
from reflexio.records import JobStatus
from reflexio.service import publish as pub
from reflexio.service.core import Core, open_core
from reflexio.testing import rules_script

ROOT = Path(__file__).resolve().parents[1]
APP = "reflexio_bench_learning"
TURNS = (
    ("User", "I'm vegetarian, so please never suggest meat dishes to me."),
    ("Assistant", "Noted: vegetarian options only from now on."),
    ("User", "Also I prefer trains over flights when I travel in Europe."),
    ("Assistant", "Got it, I'll look at train routes first."),
)


class SlowLLM:
    """A scripted model behind a fixed per-call latency (a provider's round trip)."""

    model = "scripted"

    def __init__(self, seconds: float) -> None:
        self._inner = rules_script()
        self._seconds = seconds

    def complete(self, call: LLMCall[Any]) -> LLMResult[Any]:
        time.sleep(self._seconds)
        return self._inner.complete(call)


def schema_url(pg_url: str, schema: str) -> str:
    sep = "&" if "?" in pg_url else "?"
    return f"{pg_url}{sep}options=-csearch_path%3D{schema},public&application_name={APP}"


def open_bench_core(url: str, home: Path, llm_ms: float | None) -> Core:
    env = {
        "REFLEXIO_STORAGE_URL": url,
        "REFLEXIO_EMBEDDER": "wordllama",
        "HOME": str(home),
        "REFLEXIO_HOME": str(home / ".reflexio"),
        "REFLEXIO_WORKERS": "1",
        "REFLEXIO_JOB_POLL_SECONDS": "0.02",
    }
    core = open_core(Settings.from_env(env))
    if llm_ms is not None:
        core.llm = SlowLLM(llm_ms / 1000)
    return core


def fill(core: Core, users: int, publishes: int) -> int:
    """Publish every user's conversation with no worker running; the interactions stored."""
    stored = 0
    for p in range(publishes):
        for u in range(users):
            items = [{"role": role, "content": f"{text} (turn {p})"} for role, text in TURNS]
            req = PublishUserInteractionRequest.model_validate(
                {
                    "user_id": f"user{u}",
                    "session_id": f"s{u}",
                    "agent_version": "bench@1",
                    "interaction_data_list": items,
                }
            )
            pub.publish(core, DEFAULT_ORG_ID, req, flush=p == publishes - 1)
            stored += len(items)
    return stored


def open_extraction_jobs(core: Core) -> int:
    return sum(
        s.count
        for s in core.storage.job_stats()
        if s.task == pub.EXTRACT and s.status in (JobStatus.QUEUED, JobStatus.RUNNING)
    )


class Sampler(threading.Thread):
    """Polls the workers' sessions in ``pg_stat_activity`` and the locks they wait for."""

    def __init__(self, url: str, period: float = 0.02) -> None:
        super().__init__(daemon=True)
        self._url, self._period = url, period
        self.stop = threading.Event()
        self.samples = 0
        self.active = 0
        self.waits: Counter[str] = Counter()
        self.blocked_on: Counter[str] = Counter()

    def run(self) -> None:
        with psycopg.connect(self._url, autocommit=True) as conn:
            while not self.stop.wait(self._period):
                rows = conn.execute(
                    "SELECT a.wait_event_type, a.wait_event, l.locktype, l.relation::regclass::text, "
                    "left(regexp_replace(a.query, '\\s+', ' ', 'g'), 90) "
                    "FROM pg_stat_activity a LEFT JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted "
                    "WHERE a.application_name = %s AND a.state = 'active' AND a.pid <> pg_backend_pid()",
                    (f"{APP}-worker",),
                ).fetchall()
                self.samples += 1
                for wait_type, wait, locktype, relation, query in rows:
                    self.active += 1
                    if wait_type == "Lock":
                        self.waits[f"{wait}: {query}"] += 1
                        self.blocked_on[f"{locktype}:{relation or '-'}"] += 1

    def report(self) -> dict[str, Any]:
        waited = sum(self.waits.values())
        return {
            "samples": self.samples,
            "active_statements_per_sample": round(self.active / max(1, self.samples), 3),
            "lock_waits_share_of_active": round(waited / max(1, self.active), 4),
            "lock_waits": dict(self.waits.most_common()),
            "blocked_on": dict(self.blocked_on.most_common()),
        }


def claim_plan(url: str) -> list[str]:
    """``EXPLAIN`` of the claim statement: a worker skips rows others hold (no lock queue)."""
    from reflexio.storage.queries import queries

    sql = queries("postgres")["claim_jobs"]
    params = {"worker": "w", "until": 0.0, "now": 0.0, "tasks": None, "org_id": None, "limit": 1}
    with psycopg.connect(url, autocommit=True) as conn:
        return [str(r[0]) for r in conn.execute(f"EXPLAIN {sql}", params).fetchall()]


def run_once(pg_url: str, workers: int, llm_ms: float | None, users: int, publishes: int) -> dict[str, Any]:
    """One (extractor, worker count) measurement on a fresh schema."""
    schema = f"bench_learn_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = schema_url(pg_url, schema)
    home = ROOT / ".tmp" / "bench-learning" / schema
    try:
        core = open_bench_core(url, home, None)
        interactions = fill(core, users, publishes)
        queued = open_extraction_jobs(core)
        sampler = Sampler(url)
        spec = {"url": url.replace(APP, f"{APP}-worker"), "home": str(home), "llm_ms": llm_ms}
        home.mkdir(parents=True, exist_ok=True)
        log = (home / "workers.log").open("wb")
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "bench.learning", "--child", json.dumps(spec)],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
            for _ in range(workers)
        ]
        deadline = time.monotonic() + 300
        while len(list(home.glob("ready-*"))) < workers:  # every worker opened: timing starts
            if time.monotonic() > deadline or any(proc.poll() is not None for proc in procs):
                raise SystemExit(f"the workers did not start:\n{(home / 'workers.log').read_text()}")
            time.sleep(0.05)
        started = time.perf_counter()
        (home / "go").touch()
        sampler.start()
        while open_extraction_jobs(core):
            if any(proc.poll() is not None for proc in procs):
                raise SystemExit(f"a worker died:\n{(home / 'workers.log').read_text()}")
            time.sleep(0.05)
        drained = time.perf_counter() - started
        sampler.stop.set()
        sampler.join()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=60)
        log.close()
        learned = core.storage.count_learnings(DEFAULT_ORG_ID, _any())
        plan = claim_plan(url)
        core.close()
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    return {
        "workers": workers,
        "extractor": "rules" if llm_ms is None else f"scripted-llm-{llm_ms:g}ms",
        "interactions": interactions,
        "extraction_jobs": queued,
        "learnings": learned,
        "drain_s": round(drained, 2),
        "learned_interactions_per_s": round(interactions / drained, 1),
        "locks": sampler.report(),
        "claim_plan": plan,
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def _any() -> Any:
    from reflexio.filters import LearningFilter

    return LearningFilter()


def child(spec: dict[str, Any]) -> None:
    """One worker process: one job thread until SIGTERM (what ``reflexio worker`` runs)."""
    import signal

    from reflexio.service.workers import start_pool

    home = Path(spec["home"])
    core = open_bench_core(spec["url"], home, spec["llm_ms"])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    (home / f"ready-{os.getpid()}").touch()
    while not (home / "go").exists():  # all start together, once every one has opened
        time.sleep(0.01)
    pool = start_pool(core, 1)
    stop.wait()
    pool.stop()
    core.close()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(json.loads(argv[1]))
        return
    parser = argparse.ArgumentParser(prog="python -m bench.learning", description=__doc__.split("\n")[0])
    parser.add_argument("--postgres-url", default=os.environ.get("REFLEXIO_BENCH_POSTGRES_URL", ""))
    parser.add_argument("--workers", default="1,2,4", help="worker process counts, comma-separated")
    parser.add_argument(
        "--llm-ms",
        default="0,200",
        help="extractors: 0 = rule extractor, N = scripted LLM with N ms per call",
    )
    parser.add_argument(
        "--users", type=int, default=240, help="one extraction job each (fewer drain too fast to time)"
    )
    parser.add_argument("--publishes", type=int, default=4, help="requests of four turns per user")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "learning-postgres.json")
    args = parser.parse_args(argv)
    if not args.postgres_url:
        raise SystemExit("--postgres-url (or REFLEXIO_BENCH_POSTGRES_URL) is required")
    runs = []
    for ms in (float(x) for x in args.llm_ms.split(",")):
        for k in (int(x) for x in args.workers.split(",")):
            run = run_once(args.postgres_url, k, None if ms == 0 else ms, args.users, args.publishes)
            print(
                f"{run['extractor']} x{k}: {run['learned_interactions_per_s']} interactions/s, "
                f"lock waits {run['locks']['lock_waits_share_of_active']:.1%} of active",
                file=sys.stderr,
                flush=True,
            )
            runs.append(run)
    report = {
        "benchmark": "learning",
        "commit": _commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg": [round(x, 2) for x in os.getloadavg()],
        },
        "method": __doc__,
        "users": args.users,
        "publishes_per_user": args.publishes,
        "runs": runs,
        "speedup_1_to_2": _speedups(runs),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


def _speedups(runs: list[dict[str, Any]]) -> dict[str, float]:
    out = {}
    for extractor in dict.fromkeys(r["extractor"] for r in runs):
        by = {r["workers"]: r["learned_interactions_per_s"] for r in runs if r["extractor"] == extractor}
        for k in (2, 4):
            if 1 in by and k in by:
                out[f"{extractor} 1->{k}"] = round(by[k] / by[1], 2)
    return out


def _commit() -> str:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


if __name__ == "__main__":
    main()
