"""Publish throughput and acknowledgement latency, on SQLite and PostgreSQL.

``python -m bench.ingest --out bench/results/ingest.json [--backend sqlite,postgres]``

For each backend a real server (API + job workers, as ``reflexio services start`` runs it: the
workers in their own supervised, lower-priority process) is started on a loopback port and
driven over HTTP with keep-alive connections:

* **ack latency**: one client publishing sequentially (one user turn + one agent turn per
  request, the common shape), p50/p95/p99 of the time until the acknowledgement arrives,
  pooled over ``--rounds`` runs (each run's own percentiles are kept beside them);
* **sustained throughput**: several clients publishing concurrently for a fixed time, in
  interactions per second, for requests of 2 and of 10 turns.

The same measurements are taken at the service layer (no HTTP) to show where time goes. Job
workers run throughout (learning competes with ingest, as in production); ``--no-workers``
measures ingest alone, ``--worker-threads`` runs the workers as threads of the API process.
``--workers 1,2,4`` repeats everything per count of job workers (``REFLEXIO_WORKERS``) and
reports, for each, ``drain_s``: how long the learning the publishes queued takes to finish
once publishing stops. ``bench/learning`` measures learning throughput alone, per worker
*process*.

The clients use the standard library's ``http.client`` over one keep-alive connection each:
the clients share the server's two cores, and httpx spends ~0.7 ms of CPU per call more
(measured here), which would be charged to the server's latency and take CPU from it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from reflexio.config import Settings
from reflexio.models import PublishUserInteractionRequest
from reflexio.records import JobStatus
from reflexio.service import publish as pub
from reflexio.service.core import Core, open_core

ROOT = Path(__file__).resolve().parents[1]


def body(i: int, turns: int) -> dict[str, Any]:
    """A realistic publish: alternating user and agent turns of a support conversation."""
    items = []
    for t in range(turns):
        role = "User" if t % 2 == 0 else "Assistant"
        text = f"Request {i}.{t}: my order {1000 + i} arrived damaged, can I get a replacement?"
        if role == "Assistant":
            text = f"Sorry about order {1000 + i}. I've started a replacement; it ships in 2 days."
        items.append({"role": role, "content": text})
    return {
        "user_id": f"user{i % 200}",
        "session_id": f"s{i % 500}",
        "agent_version": "bench@1",
        "interaction_data_list": items,
    }


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99/mean of milliseconds."""
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "p50": round(at(0.50), 3),
        "p95": round(at(0.95), 3),
        "p99": round(at(0.99), 3),
        "mean": round(statistics.fmean(ordered), 3),
    }


class Publisher:
    """A keep-alive HTTP connection that publishes (or posts to another route) and checks the answer."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)

    def publish(self, payload: dict[str, Any]) -> None:
        """POST one publish and read the whole response; raise on anything but 200."""
        self.post("/api/publish_interaction", payload)

    def post(self, path: str, payload: dict[str, Any]) -> None:
        """POST ``payload`` to ``path`` and read the whole response; raise on anything but 200."""
        data = json.dumps(payload).encode()
        self._conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        response = self._conn.getresponse()
        answer = response.read()
        if response.status != 200:
            raise RuntimeError(f"{path} answered {response.status}: {answer[:200]!r}")

    def close(self) -> None:
        self._conn.close()


def ack_latency(url: str, n: int, rounds: int) -> dict[str, Any]:
    """Sequential publishes over one keep-alive connection, ``rounds`` times ``n``.

    ``ack_ms`` pools every round (the first tenth of each dropped as warm-up); ``rounds``
    gives each round's own percentiles, to show how much a tail moves between runs on a
    shared machine.
    """
    per_round = [_ack_round(url, n, first=k * n) for k in range(rounds)]
    return {
        "ack_ms": percentiles([t for times in per_round for t in times]),
        "ack_ms_rounds": [percentiles(times) for times in per_round],
    }


def _ack_round(url: str, n: int, first: int) -> list[float]:
    times = []
    client = Publisher(url)
    try:
        for i in range(first, first + n):
            payload = body(i, 2)
            started = time.perf_counter()
            client.publish(payload)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        client.close()
    return times[n // 10 :]


def _publisher(url: str, seconds: float, turns: int, first: int) -> int:
    """One client process: publish for ``seconds``; returns interactions sent."""
    sent, i = 0, first
    stop = time.monotonic() + seconds
    client = Publisher(url)
    try:
        while time.monotonic() < stop:
            client.publish(body(i, turns))
            sent += turns
            i += 1
    finally:
        client.close()
    return sent


def throughput(url: str, clients: int, seconds: float, turns: int, offset: int) -> dict[str, float]:
    """Interactions per second from ``clients`` concurrent publisher *processes*.

    Separate processes, because client threads in one interpreter share its GIL and would
    measure the client instead of the server.
    """
    with ProcessPoolExecutor(clients) as pool:
        started = time.monotonic()
        futures = [
            pool.submit(_publisher, url, seconds, turns, offset + k * 1_000_000) for k in range(clients)
        ]
        sent = sum(f.result() for f in futures)
        elapsed = time.monotonic() - started
    return {
        "interactions_per_s": round(sent / elapsed, 1),
        "requests_per_s": round(sent / turns / elapsed, 1),
    }


def service_layer(core: Core, n: int, turns: int) -> dict[str, Any]:
    """The same publishes without HTTP: what the core itself costs."""
    times = []
    started = time.perf_counter()
    for i in range(n):
        req = PublishUserInteractionRequest.model_validate(body(10_000_000 + i, turns))
        t = time.perf_counter()
        pub.publish(core, "self-host-org", req)
        times.append((time.perf_counter() - t) * 1000)
    elapsed = time.perf_counter() - started
    return {"ack_ms": percentiles(times[n // 10 :]), "interactions_per_s": round(n * turns / elapsed, 1)}


@contextmanager
def backend_url(name: str, home: Path) -> Iterator[str]:
    """A storage URL for the backend (PostgreSQL via scripts/pg.py unless a URL is given)."""
    if name == "sqlite":
        yield f"sqlite:///{home}/ingest.db"
        return
    url = os.environ.get("REFLEXIO_BENCH_POSTGRES_URL")
    if url:
        yield url
        return
    pgdir = home / "pg"
    url = subprocess.run(
        [sys.executable, str(ROOT / "scripts/pg.py"), "start", str(pgdir)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        yield url
    finally:
        subprocess.run(
            [sys.executable, str(ROOT / "scripts/pg.py"), "stop", str(pgdir)],
            capture_output=True,
            check=False,
        )


@contextmanager
def server_process(env: dict[str, str], pids: list[int] | None = None) -> Iterator[str]:
    """The API server in its own process (as deployed), so clients do not share its GIL.

    ``pids``, when given, receives the server's process id (to read its CPU time).
    """
    port = _free_port()
    full = {**os.environ, **env, "REFLEXIO_PORT": str(port), "REFLEXIO_LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen([sys.executable, "-m", "reflexio.api.server"], env=full, cwd=ROOT)
    if pids is not None:
        pids.append(proc.pid)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited during start-up")
        try:
            if httpx.get(url + "/health/ready", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the server did not become ready")


def measure(name: str, args: argparse.Namespace, workers: int) -> dict[str, Any]:
    """All measurements for one backend on a fresh store."""
    with tempfile.TemporaryDirectory(prefix=f"reflexio-ingest-{name}-") as tmp:
        home = Path(tmp)
        with backend_url(name, home) as url:
            env = {
                "HOME": str(home),
                "REFLEXIO_STORAGE_URL": url,
                "REFLEXIO_WORKERS": "0" if args.no_workers else str(workers),
                "REFLEXIO_WORKER_PROCESS": "0" if args.worker_threads else "1",
            }
            core = open_core(Settings.from_env(env))
            service = service_layer(core, args.requests, 2)
            with server_process(env) as base:
                result = {
                    "service_layer": service,
                    **ack_latency(base, args.requests, args.rounds),
                    "throughput_2_turns": throughput(base, args.clients, args.seconds, 2, 1),
                    "throughput_10_turns": throughput(base, args.clients, args.seconds, 10, 2),
                }
                if not args.no_workers:
                    result["drain_s"] = _drain(core)
            core.close()
    return result


def _drain(core: Core, timeout: float = 600.0) -> float:
    """Seconds until no job is due or running, once publishing has stopped."""
    stopped = time.monotonic()
    while time.monotonic() - stopped < timeout:
        stats = core.storage.job_stats()
        busy = any(
            s.status is JobStatus.RUNNING or (s.status is JobStatus.QUEUED and s.oldest_due is not None)
            for s in stats
        )
        if not busy:
            break
        time.sleep(0.2)
    return round(time.monotonic() - stopped, 2)


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False, cwd=ROOT
    ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Publish ack latency and sustained ingest throughput.")
    parser.add_argument("--out", required=True)
    parser.add_argument("--backend", default="sqlite,postgres")
    parser.add_argument(
        "--requests", type=int, default=2000, help="sequential publishes for the latency runs"
    )
    parser.add_argument("--rounds", type=int, default=3, help="sequential latency runs, pooled")
    parser.add_argument("--clients", type=int, default=4, help="concurrent publishers for throughput")
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of each throughput run")
    parser.add_argument("--no-workers", action="store_true", help="measure ingest without learning running")
    parser.add_argument(
        "--worker-threads", action="store_true", help="run the workers as threads of the API process"
    )
    parser.add_argument("--workers", default="2", help="job worker counts, comma-separated (one run each)")
    args = parser.parse_args(argv)
    workers = "none" if args.no_workers else "threads" if args.worker_threads else "process"
    counts = [0] if args.no_workers else [int(c) for c in args.workers.split(",")]
    results: dict[str, Any] = {"machine": machine(), "workers": counts[0], "backends": {}}
    results["worker_mode"] = workers
    for name in args.backend.split(","):
        runs = {count: measure(name.strip(), args, count) for count in counts}
        results["backends"][name] = dict(runs[counts[0]])
        if len(counts) > 1:
            results["backends"][name]["by_workers"] = {str(c): run for c, run in runs.items()}
        print(name, json.dumps(results["backends"][name], indent=1))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
