"""Publish → searchable: how soon a correction published without waiting is served by search.

``python -m bench.live --out bench/results/live.json [--trials 40] [--compare REF]``

A real server runs as ``reflexio services start`` runs it (API plus the job workers in their
own supervised process, SQLite under a private home) on a loopback port. Each trial is a new
user following the seed's pattern, one publish per User + Agent pair and no
``wait_for_response``:

1. publish the request and the agent's answer;
2. publish the user's correction (with the agent's apology) and start the clock when the
   acknowledgement arrives;
3. search every 50 ms, as a new session and in other words than the correction, until a
   learning holding the lesson comes back; that moment is the trial's latency.

Trials run one after another while a background client publishes ordinary turns for other
users, so the workers are never idle only for the probe. One uncounted trial first loads the
embedder in both processes. A trial that is not served within ``--timeout`` seconds counts as a
timeout (its latency is reported as missing, and the percentiles count it as infinite).
``--compare REF`` measures a git revision the same way in the same run (its ``src/`` exported
to a temporary folder) for a before/after.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.ingest import Publisher, body, machine, server_process

ROOT = Path(__file__).resolve().parents[1]
POLL_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class Lesson:
    """One correction: the turn it corrects, the correction, a probe in other words, the key."""

    request: str
    answer: str
    correction: str
    probe: str
    key: str


LESSONS = (
    Lesson(
        "Recommend a laptop for me.",
        "The MacBook Air is a great all-round choice.",
        "I only ever use Linux. Please don't suggest Macs.",
        "Which notebook should I take on my trip?",
        "linux",
    ),
    Lesson(
        "When is my call with the Osaka team?",
        "Your call is at 02:00 UTC on Thursday.",
        "Please always give me times in JST.",
        "Remind me about the quarterly review.",
        "jst",
    ),
    Lesson(
        "I want a refund for my headphones.",
        "Done, I refunded order 1182.",
        "You refunded the wrong order! Always confirm the order ID with me before you issue a refund.",
        "Can I get my money back for the blender?",
        "order id",
    ),
    Lesson(
        "Suggest a quick dinner.",
        "Steak frites would be quick.",
        "I'm vegetarian, no meat for me.",
        "What should I cook tonight?",
        "vegetarian",
    ),
    Lesson(
        "How far is the hike?",
        "The trail is 8 miles long.",
        "I prefer metric units.",
        "How long is the cycling route to the lake?",
        "metric",
    ),
)


def _probe(client: httpx.Client, user: str, lesson: Lesson, n: int) -> bool:
    """One search as a fresh session; whether a served learning holds the lesson."""
    found = client.post(
        "/api/search",
        json={"query": lesson.probe, "user_id": user, "session_id": f"probe-{user}-{n}", "top_k": 5},
    ).json()
    texts = [p["content"] for p in found.get("profiles", [])]
    texts += [f"{p.get('trigger') or ''} {p['content']}" for p in found.get("user_playbooks", [])]
    return any(lesson.key in t.lower() for t in texts)


def trial(url: str, k: int, timeout: float, name: str = "live") -> float | None:
    """Seconds from the correction's acknowledgement until search serves it (None: timed out)."""
    lesson = LESSONS[k % len(LESSONS)]
    user, session = f"{name}-{k}", f"{name}-{k}-s1"
    with httpx.Client(base_url=url, timeout=30) as client:

        def publish(turns: list[dict[str, str]]) -> None:
            payload = {"user_id": user, "session_id": session, "interaction_data_list": turns}
            client.post("/api/publish_interaction", json=payload).raise_for_status()

        publish(
            [{"role": "User", "content": lesson.request}, {"role": "Assistant", "content": lesson.answer}]
        )
        publish([{"role": "User", "content": lesson.correction}, {"role": "Assistant", "content": "Noted."}])
        started = time.perf_counter()
        n = 0
        while time.perf_counter() - started < timeout:
            if _probe(client, user, lesson, n):
                return time.perf_counter() - started
            n += 1
            time.sleep(POLL_SECONDS)
    return None


@contextmanager
def background_traffic(url: str, per_second: float) -> Iterator[None]:
    """Ordinary two-turn publishes for other users while the trials run."""
    stop = threading.Event()

    def run() -> None:
        client = Publisher(url)
        i = 0
        try:
            while not stop.wait(1 / per_second):
                client.publish(body(i, 2))
                i += 1
        finally:
            client.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def summary(latencies: Sequence[float | None]) -> dict[str, Any]:
    """p50/p95/max in seconds, timeouts counted as infinite."""
    ordered = sorted(math.inf if x is None else x for x in latencies)

    def at(q: float) -> float | None:
        value = ordered[min(len(ordered) - 1, int(q * len(ordered)))]
        return None if math.isinf(value) else round(value, 3)

    return {
        "trials": len(ordered),
        "timeouts": sum(1 for x in latencies if x is None),
        "p50_s": at(0.50),
        "p95_s": at(0.95),
        "max_s": at(1.0),
    }


def measure(src: Path | None, args: argparse.Namespace) -> dict[str, Any]:
    """All trials against one server (the working tree's code, or ``src`` when given)."""
    with tempfile.TemporaryDirectory(prefix="reflexio-live-") as tmp:
        env = {
            "HOME": tmp,
            "REFLEXIO_HOME": f"{tmp}/.reflexio",
            "REFLEXIO_STORAGE_URL": f"sqlite:///{tmp}/live.db",
            "REFLEXIO_WORKER_PROCESS": "1",
        }
        if src is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(src), str(ROOT)])
        with server_process(env) as url:
            _warm_up(url, args.timeout)
            with background_traffic(url, args.background_rate):
                latencies = [trial(url, k, args.timeout) for k in range(args.trials)]
    return {**summary(latencies), "latencies_s": [None if x is None else round(x, 3) for x in latencies]}


def _warm_up(url: str, timeout: float) -> None:
    """One uncounted trial, so both processes have loaded the embedder before the clock runs
    (a server's first correction after start also pays for loading the model)."""
    trial(url, 0, timeout, name="warm-up")


@contextmanager
def exported(ref: str) -> Iterator[Path]:
    """The ``src/`` of a git revision, in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="reflexio-live-ref-") as tmp:
        archive = subprocess.run(["git", "archive", ref, "src"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        yield Path(tmp) / "src"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Publish → searchable latency of a correction.")
    parser.add_argument("--out", required=True)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before a trial times out")
    parser.add_argument("--background-rate", type=float, default=5.0, help="ordinary publishes per second")
    parser.add_argument("--compare", help="also measure this git revision (e.g. main) in the same run")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"machine": machine(), "worker_mode": "process", "goal_p95_s": 5.0}
    results["current"] = measure(None, args)
    print("current", json.dumps({k: v for k, v in results["current"].items() if k != "latencies_s"}))
    if args.compare:
        with exported(args.compare) as src:
            results["baseline"] = {"ref": args.compare, **measure(src, args)}
        print("baseline", json.dumps({k: v for k, v in results["baseline"].items() if k != "latencies_s"}))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
