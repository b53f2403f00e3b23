"""Load: 64 clients for 60 s, a publish/search mix over 200 users, then an audit of what was stored.

``python -m bench.load --out bench/results/load.json [--backend sqlite,postgres]``

For each backend a real server (``python -m reflexio.api.server``, job workers in their own
process, as ``reflexio services start`` runs it) starts on a fresh store; the clients begin
the moment ``/health/ready`` says ready, so the cold start is measured too. Each client is a
thread with its own keep-alive connection (``http.client``, a 10 s timeout), in a few client
processes so the clients do not share one GIL; each request is a publish (one user turn with
a fact or an instruction, one agent turn, a unique ``request_id``) or a unified search for one
of the 200 users. Reported: errors (any status but 200), timeouts, latency p50/p95/p99 per
operation and overall, the first second's worst latency (cold start).

Then the audit: the server is left to finish learning (until no job is queued or running; the
org's ``session_idle_seconds`` is set to 5 so session judgements are part of it), stopped, and
the store opened directly: every acknowledged ``request_id`` must be stored
exactly once with its two turns, nothing unacknowledged may be stored twice, and no job may
be dead.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.ingest import backend_url, machine, percentiles, server_process
from reflexio.config import Settings
from reflexio.filters import InteractionFilter, RequestFilter
from reflexio.records import JobStatus
from reflexio.service.core import open_core

USERS = 200
ORG = "self-host-org"
FACTS = (
    "I live in {city} and I prefer answers in metric units.",
    "Please never suggest {brand} products to me again.",
    "I work as a {job}; keep explanations short.",
    "Always confirm the order number before refunding, I use {brand}.",
)
WORDS = {
    "city": ("Oslo", "Lyon", "Kyoto", "Lima", "Perth"),
    "brand": ("Apple", "Dell", "Lenovo", "Asus"),
    "job": ("nurse", "pilot", "teacher", "welder"),
}
QUERIES = ("what units should I use", "recommend a laptop", "how do I refund an order", "where do I live")


@dataclass
class Tally:
    """What one client saw."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {"publish": [], "search": []})
    first_second: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    timeouts: int = 0
    acknowledged: list[str] = field(default_factory=list)


def _fact(rng: random.Random) -> str:
    text = rng.choice(FACTS)
    return text.format(**{key: rng.choice(options) for key, options in WORDS.items()})


def next_request(rng: random.Random, name: str, i: int) -> tuple[str, str, dict[str, Any], str]:
    """The ``i``-th request of client ``name``: (operation, path, body, request_id or "")."""
    user = f"user{rng.randrange(USERS)}"
    if rng.random() < 0.5:
        request_id = f"{name}-{i}"
        payload: dict[str, Any] = {
            "request_id": request_id,
            "user_id": user,
            "session_id": f"{user}-s{i // 20}",
            "agent_version": "load@1",
            "interaction_data_list": [
                {"role": "User", "content": _fact(rng)},
                {"role": "Assistant", "content": "Noted, thank you."},
            ],
        }
        return "publish", "/api/publish_interaction", payload, request_id
    return "search", "/api/search", {"query": rng.choice(QUERIES), "user_id": user, "top_k": 5}, ""


def _client(url: str, name: str, until: float, opened: float, timeout: float, tally: Tally) -> None:
    rng = random.Random(name)
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    i = 0
    while time.monotonic() < until:
        i += 1
        op, path, payload, request_id = next_request(rng, name, i)
        started = time.monotonic()
        try:
            conn.request("POST", path, body=json.dumps(payload), headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            answer = response.read()
        except TimeoutError:
            tally.timeouts += 1
            conn.close()
            continue
        except (OSError, http.client.HTTPException) as exc:
            tally.errors.append(f"{op}: {type(exc).__name__}: {exc}")
            conn.close()
            continue
        took = (time.monotonic() - started) * 1000
        tally.latencies[op].append(took)
        if started - opened < 1.0:
            tally.first_second.append(took)
        if response.status != 200:
            tally.errors.append(f"{op}: {response.status} {answer[:200]!r}")
        elif op == "publish":
            tally.acknowledged.append(request_id)
    conn.close()


def _client_process(url: str, first: int, threads: int, seconds: float, timeout: float) -> dict[str, Any]:
    """One process of ``threads`` clients; returns their pooled tallies."""
    tallies = [Tally() for _ in range(threads)]
    opened = time.monotonic()
    until = opened + seconds
    workers = [
        threading.Thread(target=_client, args=(url, f"c{first + k}", until, opened, timeout, tallies[k]))
        for k in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return {
        "publish": [t for tally in tallies for t in tally.latencies["publish"]],
        "search": [t for tally in tallies for t in tally.latencies["search"]],
        "first_second": [t for tally in tallies for t in tally.first_second],
        "errors": [e for tally in tallies for e in tally.errors],
        "timeouts": sum(tally.timeouts for tally in tallies),
        "acknowledged": [r for tally in tallies for r in tally.acknowledged],
    }


def drive(url: str, clients: int, processes: int, seconds: float, timeout: float) -> dict[str, Any]:
    """Run ``clients`` clients in ``processes`` processes for ``seconds``; pooled results."""
    per = clients // processes
    with ProcessPoolExecutor(processes) as pool:
        futures = [
            pool.submit(_client_process, url, k * per, per, seconds, timeout) for k in range(processes)
        ]
        parts = [f.result() for f in futures]
    pooled: dict[str, Any] = {
        key: [v for part in parts for v in part[key]] for key in parts[0] if key != "timeouts"
    }
    pooled["timeouts"] = sum(part["timeouts"] for part in parts)
    return pooled


def learning_settled(url: str, deadline: float) -> bool:
    while time.monotonic() < deadline:
        busy = [
            httpx.get(f"{url}/api/jobs", params={"status": status, "limit": 1}, timeout=30).json()["jobs"]
            for status in ("queued", "running")
        ]
        if not any(busy):
            return True
        time.sleep(1.0)
    return False


def audit(settings: Settings, acknowledged: Sequence[str]) -> dict[str, Any]:
    """Every acknowledged publish stored exactly once, with its turns; no dead job."""
    core = open_core(settings)
    try:
        stored = core.storage.list_requests(ORG, RequestFilter(), limit=10_000_000)
        ids = [row.request_id for row in stored]
        acked = set(acknowledged)
        interactions = core.storage.list_interactions(ORG, InteractionFilter(), limit=None)
        per_request: dict[str, int] = {}
        for row in interactions:
            per_request[row.request_id] = per_request.get(row.request_id, 0) + 1
        dead = core.storage.list_jobs(ORG, statuses=[JobStatus.DEAD], limit=1_000)
        open_jobs = core.storage.list_jobs(ORG, statuses=[JobStatus.QUEUED, JobStatus.RUNNING], limit=1_000)
    finally:
        core.close()
    return {
        "acknowledged": len(acked),
        "stored": len(ids),
        "stored_twice": len(ids) - len(set(ids)),
        "acknowledged_missing": len(acked - set(ids)),
        "stored_unacknowledged": len(set(ids) - acked),
        "requests_without_both_turns": sum(1 for r in acked if per_request.get(r, 0) != 2),
        "dead_jobs": len(dead),
        "open_jobs": len(open_jobs),
    }


def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The load and the audit on one backend."""
    with tempfile.TemporaryDirectory(prefix=f"reflexio-load-{name}-") as tmp:
        home = Path(tmp)
        with backend_url(name, home) as url:
            env = {
                "HOME": str(home),
                "REFLEXIO_HOME": str(home / ".reflexio"),
                "REFLEXIO_STORAGE_URL": url,
                "REFLEXIO_WORKERS": "2",
            }
            with server_process(env) as base:
                # Sessions are judged once idle; a short idle time lets that learning finish too.
                idle = {"session_idle_seconds": args.session_idle_seconds}
                httpx.post(f"{base}/api/update_config", json=idle, timeout=30).raise_for_status()
                started = time.monotonic()
                seen = drive(base, args.clients, args.processes, args.seconds, args.timeout)
                elapsed = time.monotonic() - started
                settled = learning_settled(base, time.monotonic() + args.settle_seconds)
                settle_seconds = round(time.monotonic() - started - elapsed, 1)
            checks = audit(Settings.from_env(env), seen["acknowledged"])
    every = seen["publish"] + seen["search"]
    return {
        "requests": len(every),
        "requests_per_s": round(len(every) / elapsed, 1),
        "errors": len(seen["errors"]),
        "error_samples": seen["errors"][:10],
        "timeouts": seen["timeouts"],
        "latency_ms": percentiles(every) if every else {},
        "publish_ms": percentiles(seen["publish"]) if seen["publish"] else {},
        "search_ms": percentiles(seen["search"]) if seen["search"] else {},
        "cold_start_first_second_max_ms": round(max(seen["first_second"], default=0.0), 1),
        "learning_settled": settled,
        "learning_settle_seconds": settle_seconds,
        "audit": checks,
    }


def passed(result: dict[str, Any]) -> bool:
    """The issue's bar: no error, no timeout, every acknowledged publish stored once, learning done."""
    checks = result["audit"]
    return bool(
        result["errors"] == 0
        and result["timeouts"] == 0
        and result["learning_settled"]
        and nothing_lost(checks)
        and checks["open_jobs"] == 0
    )


def nothing_lost(checks: dict[str, Any]) -> bool:
    """What :func:`audit` found: every acknowledged publish stored once, whole, and no job dead."""
    return bool(
        checks["stored_twice"] == 0
        and checks["acknowledged_missing"] == 0
        and checks["requests_without_both_turns"] == 0
        and checks["dead_jobs"] == 0
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="64 clients for 60 s, then an audit of what was stored.")
    parser.add_argument("--out", required=True)
    parser.add_argument("--backend", default="sqlite,postgres")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--processes", type=int, default=4, help="client processes (clients split evenly)")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--timeout", type=float, default=10.0, help="client timeout per request")
    parser.add_argument(
        "--settle-seconds", type=float, default=600.0, help="how long learning may take after"
    )
    parser.add_argument(
        "--session-idle-seconds", type=int, default=5, help="org config: idle time before a session is judged"
    )
    args = parser.parse_args(argv)
    results: dict[str, Any] = {
        "machine": machine(),
        "clients": args.clients,
        "seconds": args.seconds,
        "timeout_s": args.timeout,
        "backends": {},
    }
    for name in args.backend.split(","):
        print(f"{name}: {args.clients} clients for {args.seconds:g}s ...", file=sys.stderr)
        results["backends"][name] = measure(name, args)
        results["backends"][name]["passed"] = passed(results["backends"][name])
        print(json.dumps(results["backends"][name], indent=2), file=sys.stderr)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(r["passed"] for r in results["backends"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
