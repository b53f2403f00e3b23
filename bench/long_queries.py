"""Long queries: what embedding a window of a long query costs in retrieval, and saves in time.

Run: ``python -m bench.long_queries --data PATH --out RESULTS.json [--embedder minilm|wordllama]
[--questions N]``

Why. Agents send long queries: the Claude Code hook searches with the user's whole prompt,
which may be a request with a pasted log. A query is embedded while its asker waits, and
MiniLM's forward pass takes time in proportion to the tokens it reads, up to the model's 256;
WordLlama averages its tokens' vectors, so a paste outweighs the question. So both embed only
a window of a long query's tokens (``minilm.QUERY_TOKENS``, ``wordllama.WORDLLAMA_QUERY_TOKENS``:
its head and its tail) while full-text search reads all of it. This benchmark measures that
choice against the alternatives, per embedder, on questions whose answers are known.

Protocol. The LoCoMo facts and questions of ``bench.locomo`` (a conversation is a user, its
observation facts are its profiles, a question's gold is its evidence turns). Each question
is asked plainly (placement ``none``) and inside a long query: a paste of about
``--paste-chars`` characters (~350 tokens, past the model's 256) put after the question
(``head``: the question comes first, as in "fix this: <log>"), before it (``tail``: "<log>
why does this fail?") or around it (``middle``). A paste is either turns of another
conversation's dialogue (``dialogue``: chat like the facts, the hard case) or a traceback
(``log``: what a coding agent's user pastes). Pastes are drawn with a fixed seed, so every
window sees the same queries.

Windows (``Window(tokens, head)``; for MiniLM, [CLS] and [SEP] count):

* ``head-256`` (MiniLM): the model's 256 tokens from the head, as sentence-transformers
  truncates (what every query got before windows);
* ``all`` (WordLlama): every token, up to its cap of 8192, as documents are read (what every
  query got before windows);
* ``head-64``: the head only, to show what the tail brings;
* ``head+tail-N``: the first N/2 tokens and the last N/2 (MiniLM: N in 128, 64, 48, 32;
  WordLlama: 256, 128, 64, 32).

Each query is ranked through the service's ``rank`` in ``vector`` and ``hybrid`` modes
(threshold 0, top 20), scored with ``bench.locomo``'s recall@k and MRR. The query's
embedding time (``rank``'s own ``embed_ms``, a cache miss: every query differs) is reported
per window over the long queries. Set ``OPENBLAS_NUM_THREADS`` as the server would run.

Output: a table on stdout and a JSON file with ``windows`` (name -> paste -> placement ->
mode -> metrics), ``embed_ms`` (name -> p50/p95/mean over long queries) and ``run``.
Committed results: ``bench/results/long-queries.json`` (MiniLM) and
``bench/results/long-queries-wordllama.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import locomo
from bench.ingest import percentiles
from reflexio.embed import CachedEmbedder, WordLlamaEmbedder
from reflexio.embed.minilm import MiniLMEmbedder
from reflexio.embed.protocol import Embedder, Window
from reflexio.ranking import COHESION_WEIGHT
from reflexio.service.core import Core
from reflexio.service.search import rank

#: Each embedder's windows, by name (see the module docstring).
WINDOWS: dict[str, dict[str, Window]] = {
    "minilm": {
        "head-256": Window(256, 255),
        "head-64": Window(64, 63),
        "head+tail-128": Window(128, 64),
        "head+tail-64": Window(64, 32),
        "head+tail-48": Window(48, 24),
        "head+tail-32": Window(32, 16),
    },
    "wordllama": {
        "all": Window(8192, 8191),
        "head-64": Window(64, 63),
        "head+tail-256": Window(256, 128),
        "head+tail-128": Window(128, 64),
        "head+tail-64": Window(64, 32),
        "head+tail-32": Window(32, 16),
    },
}
#: How to build each embedder with a query window.
EMBEDDERS: dict[str, Callable[[Window], Embedder]] = {
    "minilm": lambda window: MiniLMEmbedder(query_window=window),
    "wordllama": lambda window: WordLlamaEmbedder(query_window=window),
}
PLACEMENTS = ("none", "head", "tail", "middle")
PASTES = ("dialogue", "log")
MODES = ("vector", "hybrid")
SEED = 20261207

_MODULES = ("billing", "checkout", "inventory", "reports", "search", "sync", "auth", "export")


def dialogue_turns(samples: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """Each sample's dialogue: its turn ids (``D1:3``) to ``Speaker: text`` lines, in order."""
    out = []
    for sample in samples:
        conversation = sample.get("conversation") or {}
        sessions = sorted(
            (key for key in conversation if key.startswith("session_") and key[8:].isdigit()),
            key=lambda key: int(key[8:]),
        )
        turns = (turn for key in sessions for turn in conversation[key] if isinstance(turn, dict))
        out.append({str(t.get("dia_id", "")): f"{t.get('speaker', '')}: {t.get('text', '')}" for t in turns})
    return out


def dialogue_paste(turns: Sequence[str], chars: int, rng: random.Random) -> str:
    """Consecutive turns from a random start (wrapping around), until about `chars` characters."""
    start = rng.randrange(len(turns))
    lines: list[str] = []
    for line in itertools.islice(itertools.cycle(turns), start, None):
        lines.append(line)
        if sum(len(x) + 1 for x in lines) >= chars:
            break
    return "\n".join(lines)


def log_paste(chars: int, rng: random.Random) -> str:
    """A traceback of about `chars` characters through made-up modules."""
    lines = ["Traceback (most recent call last):"]
    while sum(len(x) + 1 for x in lines) < chars:
        module = rng.choice(_MODULES)
        lines.append(f'  File "/srv/app/{module}/handlers.py", line {rng.randrange(20, 900)}, in handle')
        lines.append(f"    result = {module}_service.process(request, retries={rng.randrange(1, 6)})")
    lines.append(f"RuntimeError: upstream returned {rng.choice((500, 502, 503, 504))} after retries")
    return "\n".join(lines)


def place(question: str, paste: str, placement: str) -> str:
    """The query a user would send: the question alone, or with the paste around it."""
    if placement == "none":
        return question
    if placement == "head":
        return f"{question}\n{paste}"
    if placement == "tail":
        return f"{paste}\n{question}"
    half = len(paste) // 2
    return f"{paste[:half]}\n{question}\n{paste[half:]}"


@dataclasses.dataclass(frozen=True, slots=True)
class Query:
    """One question as asked: its user, gold, paste kind, placement and text."""

    user_id: str
    gold: frozenset[str]
    paste: str
    placement: str
    text: str


def queries(
    conversations: Sequence[locomo.Conversation],
    dialogues: Sequence[dict[str, str]],
    *,
    per_conversation: int | None,
    paste_chars: int,
) -> Iterator[Query]:
    """Every asked query: each question plainly, its evidence turns, then the question inside
    each paste at each placement."""
    rng = random.Random(SEED)
    for position, conv in enumerate(conversations):
        own = dialogues[position] if position < len(dialogues) else {}
        other = list(dialogues[(position + 1) % len(dialogues)].values()) if len(dialogues) > 1 else []
        for question in conv.questions[:per_conversation]:
            yield Query(conv.user_id, question.gold, "none", "none", question.text)
            evidence = [own[turn] for turn in sorted(question.gold) if turn in own]
            if evidence:
                yield Query(conv.user_id, question.gold, "none", "evidence", "\n".join(evidence))
            for paste_kind in PASTES:
                if paste_kind == "dialogue" and not other:
                    continue
                paste = (
                    dialogue_paste(other, paste_chars, rng)
                    if paste_kind == "dialogue"
                    else log_paste(paste_chars, rng)
                )
                for placement in PLACEMENTS[1:]:
                    text = place(question.text, paste, placement)
                    yield Query(conv.user_id, question.gold, paste_kind, placement, text)


def evaluate(core: Core, asked: Sequence[Query]) -> tuple[dict[str, Any], list[float]]:
    """Metrics per paste, placement and mode, and the long queries' embedding times (ms)."""
    scores: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    embed_ms: list[float] = []
    for query in asked:
        for mode in MODES:
            ranked, timings = ask(core, query, mode)
            if mode == "vector" and query.paste != "none":
                embed_ms.append(timings["embed_ms"])
            key = (query.paste, query.placement, mode)
            scores.setdefault(key, []).append(locomo.score(query.gold, ranked))
    out: dict[str, Any] = {}
    for (paste, placement, mode), rows in scores.items():
        out.setdefault(paste, {}).setdefault(placement, {})[mode] = locomo.mean(rows)
    return out, embed_ms


def ask(core: Core, query: Query, mode: str) -> tuple[list[tuple[str, ...]], dict[str, float]]:
    """The dia_ids of the top facts for one query, and the search's timings."""
    plan = locomo.plan(query.user_id, query.text, mode, fusion="calibrated", cohesion=COHESION_WEIGHT)
    ranked = rank(core, locomo.ORG, plan)
    return [tuple(json.loads(row.metadata)["dia_ids"]) for row, _ in ranked.hits[0]], ranked.timings


def table(results: dict[str, Any]) -> str:
    """Recall@10 (vector|hybrid) per window: plain queries, then one block per paste."""
    blocks = [
        ("no paste", "none", ("none", "evidence")),
        *((f"paste: {p}", p, PLACEMENTS[1:]) for p in PASTES),
    ]
    lines = ["recall@10 as vector|hybrid; none: the question; evidence: its evidence turns"]
    for title, paste, placements in blocks:
        head = f"{'window':<14}" + "".join(f" {p:>9}" for p in placements) + f" {'embed p95':>10}"
        lines += ["", title, head, "-" * len(head)]
        for name, by_paste in results["windows"].items():
            cells = []
            for placement in placements:
                modes = by_paste.get(paste, {}).get(placement, {})
                cells.append("|".join(f"{modes[m]['recall@10']:.2f}" for m in MODES) if modes else "-")
            embed = results["embed_ms"][name]["p95"]
            lines.append(f"{name:<14}" + "".join(f" {c:>9}" for c in cells) + f" {embed:>7.1f} ms")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog="python -m bench.long_queries", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo-format JSON file")
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON results")
    parser.add_argument("--questions", type=int, default=None, help="at most this many per conversation")
    parser.add_argument(
        "--paste-chars", type=int, default=1500, help="how long a paste is (~4 chars a token)"
    )
    parser.add_argument("--embedder", choices=list(WINDOWS), default="minilm")
    parser.add_argument("--windows", nargs="+", help="which of the embedder's windows (default: all of them)")
    args = parser.parse_args(argv)
    known = WINDOWS[args.embedder]
    args.windows = args.windows or list(known)
    unknown = [name for name in args.windows if name not in known]
    if unknown:
        parser.error(f"{args.embedder} has no window {', '.join(unknown)}: choose from {', '.join(known)}")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the table, write the JSON; returns the results."""
    args = parse_args(argv)
    samples = locomo.samples(args.data)
    conversations = [locomo.conversation(s, i) for i, s in enumerate(samples)]
    asked = list(
        queries(
            conversations,
            dialogue_turns(samples),
            per_conversation=args.questions,
            paste_chars=args.paste_chars,
        )
    )
    busy = os.getloadavg()[0]
    results: dict[str, Any] = {"windows": {}, "embed_ms": {}}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as home:
        core = locomo.open_bench_core(args.embedder, home)
        locomo.index(core, conversations, with_date=True)
        for name in args.windows:
            started = time.perf_counter()
            embedder = CachedEmbedder(EMBEDDERS[args.embedder](WINDOWS[args.embedder][name]))
            metrics, embed_ms = evaluate(dataclasses.replace(core, embedder=embedder), asked)
            results["windows"][name] = metrics
            results["embed_ms"][name] = percentiles(embed_ms) if embed_ms else {"p50": 0.0, "p95": 0.0}
            seconds[name] = round(time.perf_counter() - started, 1)
        embedder_name = core.embedder.name
        core.close()
    results["run"] = {
        "data": args.data.name,
        "commit": locomo.commit(),
        "questions": sum(1 for q in asked if q.placement == "none"),
        "evidence_queries": sum(1 for q in asked if q.placement == "evidence"),
        "evidence_chars": percentiles(
            [float(len(q.text)) for q in asked if q.placement == "evidence"] or [0.0]
        ),
        "long_queries": sum(1 for q in asked if q.paste != "none"),
        "paste_chars": args.paste_chars,
        "embedder": embedder_name,
        "windows": {name: dataclasses.asdict(WINDOWS[args.embedder][name]) for name in args.windows},
        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m_at_start": round(busy, 2),
            "numpy": np.__version__,
        },
        "seconds": seconds,
    }
    locomo.report(args.out, results, table(results))
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
