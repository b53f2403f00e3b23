"""How long ``reflexio`` commands take, as a person at a shell sees it (hyperfine-style).

``python -m bench.cli --out bench/results/cli.json [--baseline-src DIR] [--runs 20]``

Each command is run as a fresh process (``python -m reflexio ...``, what the ``reflexio``
script does), ``--runs`` times after ``--warmup`` runs, and timed from spawn to exit: wall
time (what a person waits), and the CPU time the process used (user + system, from the
kernel's accounting of children), which is what stays comparable on a busy machine. Measured:

* ``--help``, which should print at once;
* ``search``, a typical remote command, against a real server (started here on a free
  loopback port under a temporary home, with one learned profile to find);
* ``profiles list``, a second remote command with a table.

``--baseline-src DIR`` also runs every command from another checkout's ``src`` folder (same
interpreter and packages, ``PYTHONPATH=DIR``), interleaved run by run with the current code,
so "before" and "after" meet the same machine load. The machine's load average is recorded
before and after, since on a shared 2-core machine it decides the wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.ingest import machine

ROOT = Path(__file__).resolve().parents[1]
USER = "u-bench"
COMMANDS: dict[str, list[str]] = {
    "help": ["--help"],
    "search": ["search", "what should I pack for the trip", "--user", USER],
    "profiles_list": ["profiles", "list", "--user", USER],
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(home: Path) -> Iterator[str]:
    """A real server in its own process (as ``reflexio services start --foreground`` runs it)."""
    port = _free_port()
    env = {**os.environ, "REFLEXIO_HOME": str(home), "HOME": str(home), "REFLEXIO_PORT": str(port)}
    env.pop("REFLEXIO_STORAGE_URL", None)
    command = [sys.executable, "-m", "reflexio", "services", "start", "--foreground", "--port", str(port)]
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise RuntimeError("the server did not start")
        turns = [{"role": "User", "content": "I live in Oslo and I am flying to Lisbon next week."}]
        body = {"user_id": USER, "session_id": "s-bench", "interaction_data_list": turns}
        httpx.post(f"{url}/api/publish_interaction?wait_for_response=true", json=body, timeout=120)
        yield url
    finally:
        child.terminate()
        child.wait(60)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``python -m reflexio ...`` process."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "reflexio", *args], env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"reflexio {' '.join(args)} failed: {done.stderr[-500:]}")
    return wall, _children_cpu() - cpu_before


def _summary(samples: Sequence[tuple[float, float]]) -> dict[str, Any]:
    walls = sorted(wall for wall, _ in samples)
    cpus = sorted(cpu for _, cpu in samples)
    p95 = walls[min(len(walls) - 1, int(0.95 * len(walls)))]
    return {
        "runs": len(samples),
        "wall_s": {
            "min": round(walls[0], 3),
            "median": round(statistics.median(walls), 3),
            "p95": round(p95, 3),
            "mean": round(statistics.fmean(walls), 3),
        },
        "cpu_s": {"min": round(cpus[0], 3), "median": round(statistics.median(cpus), 3)},
    }


def measure(
    variants: dict[str, dict[str, str]], runs: int, warmup: int
) -> dict[str, dict[str, dict[str, Any]]]:
    """Every command under every variant, the variants interleaved run by run."""
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for name, args in COMMANDS.items():
        samples: dict[str, list[tuple[float, float]]] = {variant: [] for variant in variants}
        for index in range(warmup + runs):
            for variant, env in variants.items():
                sample = run_once(args, env)
                if index >= warmup:
                    samples[variant].append(sample)
        results[name] = {variant: _summary(found) for variant, found in samples.items()}
        print(name, json.dumps(results[name]), file=sys.stderr)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Wall and CPU time of reflexio commands.")
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--baseline-src", type=Path, help="another checkout's src folder, run interleaved")
    args = parser.parse_args(argv)
    at_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, server(Path(tmp)) as url:
        base = {**os.environ, "REFLEXIO_URL": url, "REFLEXIO_HOME": tmp, "COLUMNS": "100"}
        base.pop("REFLEXIO_API_KEY", None)
        variants = {"current": {**base, "PYTHONPATH": str(ROOT / "src")}}
        if args.baseline_src is not None:
            variants["baseline"] = {**base, "PYTHONPATH": str(args.baseline_src.resolve())}
        results = measure(variants, args.runs, args.warmup)
    report = {
        "machine": machine() | {"load_average_at_start": at_start, "load_average_at_end": os.getloadavg()},
        "baseline_src": str(args.baseline_src) if args.baseline_src else None,
        "goals": {"help_wall_s": 0.3, "remote_command_wall_s": 0.8},
        "commands": {name: " ".join(command) for name, command in COMMANDS.items()},
        "results": results,
    }
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
