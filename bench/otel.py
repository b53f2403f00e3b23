"""What OpenTelemetry export costs publish and search: an interleaved A/B of the same server.

``python -m bench.otel --out bench/results/otel.json [--rounds 4 --requests 400]``

Two stores (SQLite, the default embedder, 1,000 learnings), two ways of running the same
server (``python -m reflexio.api.server``, no workers, so only the request path is measured):

* **off**: no ``REFLEXIO_OTEL_ENDPOINT``: no tracer provider, spans are no-ops; metrics are
  recorded in process for ``/metrics`` (that is the default of an install with the extra);
* **on**: ``REFLEXIO_OTEL_ENDPOINT`` points at a local OTLP/HTTP sink (a loopback server that
  answers 200 to every export): every request is traced (FastAPI's spans and ours) and spans and
  metrics are exported in the background, as with a real collector.

* **sampled** (with ``--sampled RATIO``): as *on*, with the SDK's own standard sampler settings
  ``OTEL_TRACES_SAMPLER=parentbased_traceidratio`` and ``OTEL_TRACES_SAMPLER_ARG=RATIO``: a
  request whose caller sent no ``traceparent`` is traced with that probability, the way a busy
  production service traces.

Rounds rotate the order (off, on / on, off, ...) so drift on a shared machine hits every arm
alike; each round restarts the server. Besides latency, each round records the server
process's CPU time per request (user + system, all its threads, the exporting ones included):
on a shared machine latency is mostly waiting for a core, and CPU is what telemetry costs.
Publish and search run sequentially over one keep-alive connection each; the first tenth of
each round is warm-up. Goal: ``on`` p95 within 10 % of
``off`` for both (the *on* arm).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.ingest import _ack_round, machine, percentiles, server_process
from reflexio import ReflexioClient

QUERIES = [
    "my order arrived damaged, can I get a replacement?",
    "how do I change the delivery address",
    "refund for a late package",
    "the invoice shows the wrong amount",
    "cancel my subscription",
]


class _Sink(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that keeps nothing: 200 to every export."""

    received = 0

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        type(self).received += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


def seed(url: str, count: int) -> None:
    """Agent playbooks and user playbooks for the searches to find."""
    with ReflexioClient(url_endpoint=url) as api:
        for start in range(0, count, 100):
            api.add_user_playbook(
                [
                    {
                        "user_id": f"user{i % 50}",
                        "agent_version": "bench@1",
                        "request_id": f"seed-{i}",
                        "trigger": f"{QUERIES[i % len(QUERIES)]} ({i})",
                        "content": f"Check order {1000 + i} in the order tool before answering",
                    }
                    for i in range(start, min(count, start + 100))
                ]
            )


def timed_searches(url: str, n: int) -> list[float]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    times = []
    try:
        for i in range(n):
            payload = json.dumps({"query": QUERIES[i % len(QUERIES)], "user_id": f"user{i % 50}", "top_k": 5})
            started = time.perf_counter()
            conn.request("POST", "/api/search", body=payload, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            answer = response.read()
            times.append((time.perf_counter() - started) * 1000)
            if response.status != 200:
                raise RuntimeError(f"search answered {response.status}: {answer[:200]!r}")
    finally:
        conn.close()
    return times[n // 10 :]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_round(
    env: dict[str, str], n: int, first: int, seeded: bool, learnings: int
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Latencies of ``n`` searches then ``n`` publishes, and the server's CPU ms per request of each."""
    pids: list[int] = []
    with server_process(env, pids) as url:
        if not seeded:
            seed(url, learnings)
        started = cpu_seconds(pids[0])
        searches = timed_searches(url, n)
        between = cpu_seconds(pids[0])
        publishes = _ack_round(url, n, first)
        ended = cpu_seconds(pids[0])
    cpu = {"search": (between - started) * 1000 / n, "publish": (ended - between) * 1000 / n}
    return {"search": searches, "publish": publishes}, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--learnings", type=int, default=1000)
    parser.add_argument(
        "--sampled", type=float, default=0.0, help="also run a sampled arm tracing this share of requests"
    )
    args = parser.parse_args()
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{sink.server_address[1]}"
    arms = ["off", "on", *(["sampled"] if args.sampled else [])]
    pooled: dict[str, dict[str, list[float]]] = {name: {"search": [], "publish": []} for name in arms}
    cpu: dict[str, dict[str, list[float]]] = {name: {"search": [], "publish": []} for name in arms}
    with tempfile.TemporaryDirectory() as folder:
        homes = {name: Path(folder) / name for name in arms}
        for round_no in range(args.rounds):
            order = arms[round_no % len(arms) :] + arms[: round_no % len(arms)]
            for name in order:
                home = homes[name]
                env = {
                    "REFLEXIO_HOME": str(home),
                    "REFLEXIO_STORAGE_URL": f"sqlite:///{home}/db.sqlite",
                    "REFLEXIO_WORKERS": "0",
                    "REFLEXIO_OTEL_ENDPOINT": endpoint if name != "off" else "",
                    "OTEL_EXPORTER_OTLP_ENDPOINT": "",
                }
                if name == "sampled":
                    env |= {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio"}
                    env |= {"OTEL_TRACES_SAMPLER_ARG": str(args.sampled)}
                result, used = one_round(
                    env, args.requests, round_no * args.requests, round_no > 0, args.learnings
                )
                for op, times in result.items():
                    pooled[name][op].extend(times)
                    cpu[name][op].append(used[op])
    sink.shutdown()
    ms = {name: {op: percentiles(times) for op, times in ops.items()} for name, ops in pooled.items()}
    cpu_ms = {name: {op: round(sum(v) / len(v), 3) for op, v in ops.items()} for name, ops in cpu.items()}

    def over(arm: str) -> tuple[dict[str, float], dict[str, float]]:
        """p95 and CPU overhead of ``arm`` over ``off``, in percent, per operation."""
        p95 = {op: _percent(ms[arm][op]["p95"], ms["off"][op]["p95"]) for op in ("publish", "search")}
        used = {op: _percent(cpu_ms[arm][op], cpu_ms["off"][op]) for op in ("publish", "search")}
        return p95, used

    overhead, cpu_overhead = over("on")
    report = {
        "benchmark": "otel",
        "machine": machine(),
        "rounds": args.rounds,
        "requests_per_round": args.requests,
        "learnings": args.learnings,
        "otlp_exports_received": _Sink.received,
        "goal": "on p95 within 10% of off, for publish and search",
        "ms": ms,
        "p95_overhead_percent": overhead,
        "server_cpu_ms_per_request": cpu_ms,
        "server_cpu_per_round": cpu,
        "cpu_overhead_percent": cpu_overhead,
        "load_average": os.getloadavg(),
    }
    if args.sampled:
        sampled_p95, sampled_cpu = over("sampled")
        report |= {
            "sampled_ratio": args.sampled,
            "sampled_p95_overhead_percent": sampled_p95,
            "sampled_cpu_overhead_percent": sampled_cpu,
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    summary = {
        "ms": ms,
        "p95_overhead_percent": overhead,
        "cpu_ms": cpu_ms,
        "cpu_overhead_percent": cpu_overhead,
    }
    print(json.dumps(summary | {"exports": _Sink.received}, indent=2))


def _percent(value: float, base: float) -> float:
    return round(100 * (value - base) / base, 1)


if __name__ == "__main__":
    main()
