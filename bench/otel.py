"""What OpenTelemetry export costs publish and search: the same server traced and not, side by side.

``python -m bench.otel --out bench/results/otel.json [--rounds 12 --batches 20 --batch 20]``

One store per arm (SQLite, the default embedder, 1,000 learnings), and these ways of running
the same server (``python -m reflexio.api.server``; by default without job workers, so only the
request path is measured: the worst case for a cost added to each request; ``--workers N``
runs them as bench/ingest does, learning from what is published while requests are timed):

* **off**: no ``REFLEXIO_OTEL_ENDPOINT``: no tracer provider, spans are no-ops; metrics are
  recorded in process for ``/metrics`` (that is the default of an install with the extra);
* **on**: ``REFLEXIO_OTEL_ENDPOINT`` points at a local OTLP/HTTP sink (a loopback server that
  answers 200 to every export, in a process of its own so that receiving exports never
  delays the bench's timed requests): every request is traced and spans and metrics are
  exported in the background, as with a real collector (spans by the server's exporting child
  process).
* **off-again**: *off* once more, in a process of its own: how far two identical servers
  differ here (an A/A test), the noise floor any overhead is read against;
* **sampled** (with ``--sampled RATIO``): as *on*, with the SDK's own standard sampler settings
  ``OTEL_TRACES_SAMPLER=parentbased_traceidratio`` and ``OTEL_TRACES_SAMPLER_ARG=RATIO``: a
  request whose caller sent no ``traceparent`` is traced with that probability, the way a busy
  production service traces.

The arms run side by side: each round starts one server per arm, then sends them batches of
``--batch`` requests in turn (searches first, then publishes), the order rotating every batch,
so that what else the machine is doing meets every arm alike within seconds; a server waits
idle while another is served. Each round restarts the servers (a process's memory layout
moves its timings too). Besides latency, each round records every server's CPU time per
request (user + system, all its threads and its child processes, the exporting ones included,
whenever they ran): on a shared machine latency is mostly waiting for a core, and CPU is what
telemetry costs. Requests go over one keep-alive connection per server; each round's first
batch per arm and operation is warm-up. Before a round's first request, every server waits
until it and its children have finished starting (``settle``): a traced server's exporting
child imports the OpenTelemetry SDK after the server is ready, a cost paid once per process
that would otherwise fall on the first requests' latency and CPU. Goal: ``on`` p95 within
10 % of ``off`` for both.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Any

from bench.ingest import Publisher, body, machine, percentiles, server_process
from reflexio import ReflexioClient

QUERIES = [
    "my order arrived damaged, can I get a replacement?",
    "how do I change the delivery address",
    "refund for a late package",
    "the invoice shows the wrong amount",
    "cancel my subscription",
]

#: What a run prints of its report.
_SHOWN = (
    "ms",
    "p95_overhead_percent",
    "a_a_p95_difference_percent",
    "server_cpu_ms_per_request",
    "cpu_overhead_percent",
    "a_a_cpu_difference_percent",
    "otlp_exports_received",
)


class _Sink(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that keeps nothing: 200 to every export, counted in ``received``."""

    received: Synchronized[int]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        with self.received.get_lock():
            self.received.value += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


def _serve_sink(port: Connection, received: Synchronized[int]) -> None:
    """The sink's process: serve until terminated, after sending the port it listens on."""
    _Sink.received = received
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    port.send(sink.server_address[1])
    sink.serve_forever()


@contextlib.contextmanager
def sink_process() -> Iterator[tuple[str, Synchronized[int]]]:
    """A sink in its own process: its endpoint, and how many exports it received so far."""
    spawn = multiprocessing.get_context("spawn")
    received: Synchronized[int] = spawn.Value("i", 0)
    ours, its = spawn.Pipe()
    process = spawn.Process(target=_serve_sink, args=(its, received), daemon=True)
    process.start()
    try:
        if not ours.poll(60):
            raise RuntimeError("the OTLP sink did not start in 60 s")
        yield f"http://127.0.0.1:{ours.recv()}", received
    finally:
        process.terminate()
        process.join(10)


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


def search_body(i: int) -> dict[str, Any]:
    """The ``i``-th search: one of a few queries (their vectors cached, as a repeated query's
    is), by one of 50 users."""
    return {"query": QUERIES[i % len(QUERIES)], "user_id": f"user{i % 50}", "top_k": 5}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process and its running children have used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    children: list[str] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended while we looked
            children += (task / "children").read_text().split()
    return own + sum(cpu_seconds(int(child)) for child in children)


def settle(pid: int, *, quiet_ms: float = 5.0, window: float = 0.25, timeout: float = 30.0) -> None:
    """Wait until a server and its children have finished starting: ``window`` seconds in which
    they use under ``quiet_ms`` of CPU (or ``timeout``).

    A server is ready before everything it started has: the exporting child of a traced one
    is still importing the OpenTelemetry SDK, and uses CPU for some tenths of a second more.
    That is paid once per process, not per request, so the timed requests wait for it.
    """
    deadline = time.monotonic() + timeout
    used = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(window)
        now = cpu_seconds(pid)
        if (now - used) * 1000 < quiet_ms:
            return
        used = now


@dataclass
class Arm:
    """One arm's server in a round: its process and its keep-alive connection."""

    pid: int
    client: Publisher


def one_round(
    envs: dict[str, dict[str, str]], batches: int, batch: int, first: int, seeded: bool, learnings: int
) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, float]]]:
    """Every arm's latencies (ms) of interleaved searches then publishes, and its CPU ms per request.

    The first batch of each arm and operation is warm-up (not kept, but its CPU is counted:
    it is a request's like any other).
    """
    times: dict[str, dict[str, list[float]]] = {name: {"search": [], "publish": []} for name in envs}
    cpu: dict[str, dict[str, float]] = {name: {} for name in envs}
    with ExitStack() as stack:
        arms: dict[str, Arm] = {}
        for name, env in envs.items():
            pids: list[int] = []
            url = stack.enter_context(server_process(env, pids))
            if not seeded:
                seed(url, learnings)
            arms[name] = Arm(pids[0], Publisher(url))
            stack.callback(arms[name].client.close)
        names = list(arms)
        for arm in arms.values():
            settle(arm.pid)
        for op in ("search", "publish"):
            started = {name: cpu_seconds(arm.pid) for name, arm in arms.items()}
            for b in range(batches):
                for name in names[b % len(names) :] + names[: b % len(names)]:
                    arm, kept = arms[name], times[name][op]
                    for k in range(batch):
                        i = first + b * batch + k
                        t = time.perf_counter()
                        if op == "search":
                            arm.client.post("/api/search", search_body(i))
                        else:
                            arm.client.publish(body(i, 2))
                        if b > 0:
                            kept.append((time.perf_counter() - t) * 1000)
            for name, arm in arms.items():
                cpu[name][op] = (cpu_seconds(arm.pid) - started[name]) * 1000 / (batches * batch)
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=12, help="server restarts")
    parser.add_argument("--batches", type=int, default=20, help="batches per arm and operation, per round")
    parser.add_argument("--batch", type=int, default=20, help="requests in a batch")
    parser.add_argument("--learnings", type=int, default=1000)
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="job workers per server (their own process, as bench/ingest runs them): learning competes",
    )
    parser.add_argument(
        "--sampled", type=float, default=0.0, help="also run a sampled arm tracing this share of requests"
    )
    args = parser.parse_args()
    with sink_process() as (endpoint, received):
        report = run(args, endpoint)
        report["otlp_exports_received"] = received.value
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({key: report[key] for key in _SHOWN}, indent=2))


def run(args: argparse.Namespace, endpoint: str) -> dict[str, Any]:
    """Every round of every arm, with the sink at ``endpoint``; the report without the sink's count."""
    arms = ["off", "on", "off-again", *(["sampled"] if args.sampled else [])]
    pooled: dict[str, dict[str, list[float]]] = {name: {"search": [], "publish": []} for name in arms}
    cpu: dict[str, dict[str, list[float]]] = {name: {"search": [], "publish": []} for name in arms}
    per_round = args.batches * args.batch
    with tempfile.TemporaryDirectory() as folder:
        envs: dict[str, dict[str, str]] = {}
        for name in arms:
            home = Path(folder) / name
            envs[name] = {
                "REFLEXIO_HOME": str(home),
                "REFLEXIO_STORAGE_URL": f"sqlite:///{home}/db.sqlite",
                "REFLEXIO_WORKERS": str(args.workers),
                "REFLEXIO_WORKER_PROCESS": "1",
                "REFLEXIO_OTEL_ENDPOINT": "" if name.startswith("off") else endpoint,
                "OTEL_EXPORTER_OTLP_ENDPOINT": "",
            }
            if name == "sampled":
                envs[name] |= {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio"}
                envs[name] |= {"OTEL_TRACES_SAMPLER_ARG": str(args.sampled)}
        for round_no in range(args.rounds):
            order = arms[round_no % len(arms) :] + arms[: round_no % len(arms)]  # who starts first
            result, used = one_round(
                {name: envs[name] for name in order},
                args.batches,
                args.batch,
                round_no * per_round,
                round_no > 0,
                args.learnings,
            )
            for name in arms:
                for op in ("search", "publish"):
                    pooled[name][op].extend(result[name][op])
                    cpu[name][op].append(used[name][op])
    ms = {name: {op: percentiles(times) for op, times in ops.items()} for name, ops in pooled.items()}
    cpu_ms = {name: {op: round(sum(v) / len(v), 3) for op, v in ops.items()} for name, ops in cpu.items()}

    def over(arm: str) -> tuple[dict[str, float], dict[str, float]]:
        """p95 and CPU overhead of ``arm`` over ``off``, in percent, per operation."""
        p95 = {op: _percent(ms[arm][op]["p95"], ms["off"][op]["p95"]) for op in ("publish", "search")}
        used = {op: _percent(cpu_ms[arm][op], cpu_ms["off"][op]) for op in ("publish", "search")}
        return p95, used

    overhead, cpu_overhead = over("on")
    noise, cpu_noise = over("off-again")
    report = {
        "benchmark": "otel",
        "machine": machine(),
        "rounds": args.rounds,
        "requests_per_round": per_round,
        "batch": args.batch,
        "learnings": args.learnings,
        "workers": args.workers,
        "goal": "on p95 within 10% of off, for publish and search",
        "ms": ms,
        "p95_overhead_percent": overhead,
        "server_cpu_ms_per_request": cpu_ms,
        "server_cpu_per_round": cpu,
        "cpu_overhead_percent": cpu_overhead,
        "a_a_p95_difference_percent": noise,
        "a_a_cpu_difference_percent": cpu_noise,
        "load_average": os.getloadavg(),
    }
    if args.sampled:
        sampled_p95, sampled_cpu = over("sampled")
        report |= {
            "sampled_ratio": args.sampled,
            "sampled_p95_overhead_percent": sampled_p95,
            "sampled_cpu_overhead_percent": sampled_cpu,
        }
    return report


def _percent(value: float, base: float) -> float:
    return round(100 * (value - base) / base, 1)


if __name__ == "__main__":
    main()
