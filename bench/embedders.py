"""Measure each local embedder: cold start, one-query latency, and batch throughput.

Run: python bench/embedders.py   (writes bench/results/embedders.json and prints a table)

Cold start runs in a fresh interpreter (import + load + first embed) with the page cache warm,
so it is the cost a restarted server pays, not a first boot after reinstalling. Latency is for
one short sentence per call, uncached. Throughput is one call over many texts, best of three.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from reflexio.embed import Embedder

RESULTS = Path(__file__).parent / "results" / "embedders.json"

# label -> (module, class, constructor arguments)
EMBEDDERS: dict[str, tuple[str, str, tuple[int, ...]]] = {
    "wordllama-256": ("reflexio.embed", "WordLlamaEmbedder", (256,)),
    "wordllama-128": ("reflexio.embed", "WordLlamaEmbedder", (128,)),
    "minilm": ("reflexio.embed.minilm", "MiniLMEmbedder", ()),
}

WORDS = [
    "user",
    "prefers",
    "python",
    "tests",
    "deploy",
    "friday",
    "confirm",
    "delete",
    "files",
    "dark",
    "mode",
    "short",
    "answers",
    "weekly",
    "report",
    "customer",
    "berlin",
    "nurse",
    "always",
    "never",
    "before",
    "after",
    "review",
    "commit",
    "release",
]


def sentences(count: int, low: int, high: int, seed: int = 1) -> list[str]:
    """Template sentences of `low` to `high` words, the size of stored facts and rules."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, int(rng.integers(low, high)))) for _ in range(count)]


def cold_start(module: str, cls: str, args: tuple[int, ...], runs: int = 3) -> float:
    """Median seconds for a fresh process to import, load and embed one sentence."""
    script = (
        "import time; t = time.perf_counter()\n"
        f"from {module} import {cls}\n"
        f"{cls}(*{args!r}).embed(['hello world'])\n"
        "print(time.perf_counter() - t)"
    )
    timings = [
        float(
            subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(timings)


def latency_ms(embedder: Embedder, calls: int = 200) -> tuple[float, float]:
    """Median and 95th-percentile milliseconds to embed one short sentence per call."""
    queries = sentences(calls, 5, 10, seed=2)
    timings = []
    for query in queries:
        start = time.perf_counter()
        embedder.embed([query], kind="query")
        timings.append(time.perf_counter() - start)
    return statistics.median(timings) * 1000, float(np.percentile(timings, 95)) * 1000


def throughput(embedder: Embedder, texts: list[str]) -> float:
    """Texts per second for one call over all of `texts`, best of three."""
    embedder.embed(texts[:32])  # warm up BLAS threads and caches
    best = min(_timed(embedder, texts) for _ in range(3))
    return len(texts) / best


def _timed(embedder: Embedder, texts: list[str]) -> float:
    start = time.perf_counter()
    embedder.embed(texts)
    return time.perf_counter() - start


def measure(label: str, module: str, cls: str, args: tuple[int, ...]) -> dict[str, Any]:
    """All numbers for one embedder, as a row of the results file."""
    embedder: Embedder = getattr(importlib.import_module(module), cls)(*args)
    median, p95 = latency_ms(embedder)
    return {
        "embedder": label,
        "name": embedder.name,
        "dim": embedder.dim,
        "cold_start_s": round(cold_start(module, cls, args), 3),
        "query_latency_ms": round(median, 3),
        "query_latency_p95_ms": round(p95, 3),
        "sentences_per_s": round(throughput(embedder, sentences(1000, 6, 16))),
        "paragraphs_per_s": round(throughput(embedder, sentences(200, 90, 110))),
    }


def main() -> None:
    load_at_start = round(os.getloadavg()[0], 2)
    rows = [measure(label, *spec) for label, spec in EMBEDDERS.items()]
    report = {
        "measured": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
            # Other work on a 2-core machine skews BLAS-bound numbers (MiniLM) badly.
            "load_average_1m_at_start": load_at_start,
        },
        "notes": "sentences: 1000 texts of 6-15 words in one call; paragraphs: 200 texts of "
        "90-110 words; latency: one 5-9 word query per call, uncached; cold start: fresh "
        "process, warm page cache, import + load + one embed.",
        "results": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    for row in rows:
        print(" | ".join(f"{key}={value}" for key, value in row.items()))


if __name__ == "__main__":
    main()
