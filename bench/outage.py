"""PostgreSQL stopped under load, then started again: fail fast, recover, lose nothing.

``python -m bench.outage --out bench/results/outage.json [--before 10 --outage 15 --after 20]``

A throwaway PostgreSQL (``scripts/pg.py``) backs a real server (API + job workers in their
process). Clients publish and search throughout; a prober asks ``/health/ready`` and
``/health/live`` twice a second. ``--before`` seconds in, PostgreSQL is stopped; ``--outage``
seconds later it is started again; the clients go on ``--after`` seconds more. Measured:

* during the outage: the slowest answer (the goal: a 503 with ``Retry-After`` within ~2 s),
  whether every failure was a 503 with ``Retry-After``, how soon readiness said "not ready",
  whether liveness stayed up;
* after the restart: how soon the first request and readiness succeeded, with no restart of
  the server;
* then the audit of ``bench.load``: every acknowledged publish stored exactly once, learning
  finished (the workers backed off during the outage and resumed), no job dead.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.ingest import ROOT, machine, server_process
from bench.load import audit, learning_settled, next_request, nothing_lost
from reflexio.config import Settings


@dataclass
class Event:
    """One answer (or failure to answer) seen by a client or the prober."""

    at: float
    took: float
    what: str
    status: int | None
    retry_after: bool = False


@dataclass
class Timeline:
    """Everything the clients and the prober saw, with when PostgreSQL went down and up."""

    events: list[Event] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, event: Event, request_id: str = "") -> None:
        with self.lock:
            self.events.append(event)
            if request_id:
                self.acknowledged.append(request_id)


def _pg(command: str, data: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "pg.py"), command, str(data)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _client(url: str, name: str, until: float, timeout: float, timeline: Timeline) -> None:
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
            response.read()
        except (OSError, http.client.HTTPException):  # a timeout or a dropped connection
            conn.close()
            timeline.add(Event(started, time.monotonic() - started, op, None))
            continue
        ok = response.status == 200
        retry = response.getheader("retry-after") is not None
        event = Event(started, time.monotonic() - started, op, response.status, retry)
        timeline.add(event, request_id if ok and op == "publish" else "")
        if not ok:
            time.sleep(0.2)  # a well-behaved client backs off a little
    conn.close()


def _prober(url: str, until: float, timeline: Timeline) -> None:
    while time.monotonic() < until:
        for path in ("/health/ready", "/health/live"):
            started = time.monotonic()
            try:
                status: int | None = httpx.get(url + path, timeout=10).status_code
            except httpx.HTTPError:
                status = None
            timeline.add(Event(started, time.monotonic() - started, path, status))
        time.sleep(0.5)


def _first(events: Sequence[Event], after: float, match: Any) -> float | None:
    found = [e.at + e.took for e in events if e.at >= after and match(e)]
    return round(min(found) - after, 2) if found else None


def summarise(timeline: Timeline, down: float, stopped: float, up: float) -> dict[str, Any]:
    """The outage's numbers from the timeline (times in seconds after the stop / the start).

    ``down`` is when the stop was asked for, ``stopped`` when ``pg_ctl stop`` returned (the
    database is certainly down): readiness is timed from the latter, as a fast shutdown of a
    loaded database can itself take seconds, during which it may still answer.
    """
    requests = [e for e in timeline.events if e.what in ("publish", "search")]
    during = [e for e in requests if down + 0.5 <= e.at < up]  # answers about the outage itself
    failures = [e for e in during if e.status != 200]
    probes = [e for e in timeline.events if e.what == "/health/ready"]
    lives = [e for e in timeline.events if e.what == "/health/live"]
    return {
        "requests_during_outage": len(during),
        "failed_during_outage": len(failures),
        "slowest_answer_during_outage_s": round(max((e.took for e in during), default=0.0), 2),
        "failures_without_503_retry_after": sum(1 for e in failures if e.status != 503 or not e.retry_after),
        "failure_statuses": dict(Counter(str(e.status) for e in failures)),
        "stop_took_s": round(stopped - down, 2),
        "timeouts_or_dropped": sum(1 for e in requests if e.status is None),
        "readiness_not_ready_after_s": _first(probes, stopped, lambda e: e.status == 503),
        "readiness_slowest_s": round(max((e.took for e in probes), default=0.0), 2),
        "liveness_failures": sum(1 for e in lives if e.status != 200),
        "first_success_after_restart_s": _first(requests, up, lambda e: e.status == 200),
        "ready_again_after_restart_s": _first(probes, up, lambda e: e.status == 200),
        "failures_after_recovery": sum(1 for e in requests if e.at >= up + 5.0 and e.status != 200),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole scenario on a fresh PostgreSQL; the summary and the audit."""
    with tempfile.TemporaryDirectory(prefix="reflexio-outage-") as tmp:
        home = Path(tmp)
        data = home / "pg"
        url = _pg("start", data)
        try:
            env = {
                "HOME": str(home),
                "REFLEXIO_HOME": str(home / ".reflexio"),
                "REFLEXIO_STORAGE_URL": url,
                "REFLEXIO_WORKERS": "2",
            }
            timeline = Timeline()
            with server_process(env) as base:
                httpx.post(f"{base}/api/update_config", json={"session_idle_seconds": 5}, timeout=30)
                start = time.monotonic()
                until = start + args.before + args.outage + args.after
                threads = [
                    threading.Thread(target=_client, args=(base, f"o{k}", until, args.timeout, timeline))
                    for k in range(args.clients)
                ]
                threads.append(threading.Thread(target=_prober, args=(base, until, timeline)))
                for thread in threads:
                    thread.start()
                time.sleep(args.before)
                down = time.monotonic()
                _pg("stop", data)
                stopped = time.monotonic()
                time.sleep(max(0.0, args.outage - (stopped - down)))
                up = time.monotonic()
                _pg("start", data)
                for thread in threads:
                    thread.join()
                settled = learning_settled(base, time.monotonic() + args.settle_seconds)
            result = summarise(timeline, down, stopped, up)
            result["learning_settled"] = settled
            result["audit"] = audit(Settings.from_env(env), timeline.acknowledged)
        finally:
            _pg("stop", data)
    return result


def passed(result: dict[str, Any]) -> bool:
    """The issue's bar for an outage."""
    checks = result["audit"]
    ready_after = result["readiness_not_ready_after_s"]
    return (
        result["slowest_answer_during_outage_s"] <= 3.0
        and result["failures_without_503_retry_after"] == 0
        and result["timeouts_or_dropped"] == 0
        and ready_after is not None
        and ready_after <= 3.0
        and result["liveness_failures"] == 0
        and result["first_success_after_restart_s"] is not None
        and result["failures_after_recovery"] == 0
        and result["learning_settled"]
        and nothing_lost(checks)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Stop PostgreSQL under load, start it again.")
    parser.add_argument("--out", required=True)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--before", type=float, default=10.0, help="seconds of load before the stop")
    parser.add_argument("--outage", type=float, default=15.0, help="seconds PostgreSQL is down")
    parser.add_argument("--after", type=float, default=20.0, help="seconds of load after the start")
    parser.add_argument("--timeout", type=float, default=10.0, help="client timeout per request")
    parser.add_argument("--settle-seconds", type=float, default=300.0)
    args = parser.parse_args(argv)
    result = run(args)
    result["passed"] = passed(result)
    out = {
        "machine": machine(),
        "clients": args.clients,
        "before": args.before,
        "outage": args.outage,
        **result,
    }
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2), file=sys.stderr)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
