"""Retrieval quality on LoCoMo: can profile search find the facts a question needs?

Run: ``python -m bench.locomo --data PATH --out RESULTS.json [--embedder wordllama|minilm]``

Protocol (issue 2). LoCoMo (Maharana et al., 2024; CC BY-NC, never shipped with the package)
holds long two-person conversations, each with ``observation`` facts per session -- short
statements such as "Caroline attended an LGBTQ support group" tagged with the dialogue turn(s)
they came from (``dia_id``, e.g. ``D1:3``) -- and questions whose ``evidence`` names the turns
that answer them.

* Each conversation is one user. Its observation facts become that user's profiles, saved
  through ``Storage.save_learnings`` (so they are embedded and indexed exactly as in
  production); the session's date is indexed with each fact unless ``--no-date``. The
  ``dia_id`` provenance is kept out of the indexed text, in the row's ``metadata``; a
  session is recorded the way extraction records one, as the facts' shared ``request_id``
  (which the search's cohesion lift reads; ``--cohesion 0`` turns the lift off).
* Each question is asked as a profile search for its user through the service's ``rank``
  (the function behind every search route), with threshold 0 so that ranking, not the
  cut-off, is measured, and ``top_k`` 20, once per mode: full-text only, vector only, hybrid.
* Scoring. Category 5 (adversarial, unanswerable) is skipped. A question's gold set is its
  evidence ids that at least one fact carries (facts cover ~80% of evidence turns); questions
  with an empty gold set are skipped. Recall@k = |gold ∩ dia_ids of the top-k facts| / |gold|;
  the reciprocal rank is 1/rank of the first fact carrying a gold id (0 if none in the top
  20). Both are averaged over questions, per category and overall, and for a "tune" and a
  "held-out" split of the conversations (``--split``: the first N conversations tune), so a
  ranking change tuned on one part can be checked on the other.
* Robustness: a ``dia_id`` may be a string, a list, or malformed ("D8:6; D9:17",
  "D:11:26"); every ``D<session>:<turn>`` found in it counts, on facts and evidence alike.

Options: ``--fusion calibrated|rrf`` and ``--cohesion W`` (default: the service's),
``--modes``, ``--no-date``, and
``--storage URL`` to measure another backend (default ``memory://``; the SQLite backend ranks
identically, PostgreSQL uses ``ts_rank`` for its full-text arm; a persistent store is cleared
of the ``bench-locomo`` org before and after). On a busy machine, ``OPENBLAS_NUM_THREADS=1``
keeps MiniLM's many small matrix products from fighting over cores.

Output: one summary table on stdout and a JSON file whose keys are the modes (``fts``,
``vector``, ``hybrid``), each mapping to ``recall@5``, ``recall@10``, ``recall@20``, ``mrr``
and ``questions``, plus ``by_category`` and ``by_split`` breakdowns of the same shape; the
key ``run`` records the data file's hash, commit, machine, date, embedder, fusion and timings.
Committed results live in ``bench/results/locomo-<embedder>[-rrf].json``.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reflexio.config import Settings
from reflexio.filters import LearningFilter
from reflexio.models import SearchMode
from reflexio.records import Audit, Learning, LearningKind, LearningStatus
from reflexio.service.core import Core, open_core
from reflexio.service.search import Plan, rank

MODES = ("fts", "vector", "hybrid")
CUTOFFS = (5, 10, 20)
TOP_K = max(CUTOFFS)
SKIPPED_CATEGORY = "5"
ORG = "bench-locomo"

_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SESSION = re.compile(r"session_(\d+)")


@dataclass(frozen=True, slots=True)
class Fact:
    """One observation: its text, the turns it came from, its session and the session's date."""

    text: str
    dia_ids: tuple[str, ...]
    date: str
    session: str = ""


@dataclass(frozen=True, slots=True)
class Question:
    """A scored question: its text, category and gold turn ids (never empty)."""

    text: str
    category: str
    gold: frozenset[str]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One LoCoMo sample, reduced to what the benchmark needs."""

    user_id: str
    facts: tuple[Fact, ...]
    questions: tuple[Question, ...]


# -- loading --------------------------------------------------------------------------------


def dia_ids(value: Any) -> tuple[str, ...]:
    """Every ``D<session>:<turn>`` in a dia_id field, normalised, in order, without repeats."""
    if isinstance(value, list | tuple):
        found = [i for v in value for i in dia_ids(v)]
    elif isinstance(value, str):
        found = [f"D{s}:{t}" for s, t in _DIA_ID.findall(value)]
    else:
        found = []
    return tuple(dict.fromkeys(found))


def _fact(entry: Any, date: str, session: str) -> Fact | None:
    """A fact from ``[text, dia_id, ...]`` (or a bare string); None when there is no text."""
    ids: tuple[str, ...] = ()
    if isinstance(entry, str):
        text = entry
    elif isinstance(entry, list | tuple) and entry and isinstance(entry[0], str):
        text, ids = entry[0], dia_ids(list(entry[1:]))
    else:
        return None
    return Fact(text.strip(), ids, date, session) if text.strip() else None


def _session_facts(key: str, observation: Any, dates: dict[str, Any]) -> Iterator[Fact]:
    """Facts of one session's observation (a speaker -> entries mapping, or a bare list)."""
    number = _SESSION.search(key)
    date = str(dates.get(f"session_{number.group(1)}_date_time", "")) if number else ""
    groups = observation.values() if isinstance(observation, dict) else [observation]
    for entries in groups:
        for entry in entries if isinstance(entries, list) else []:
            fact = _fact(entry, date, key)
            if fact is not None:
                yield fact


def _questions(qa: Iterable[Any], covered: set[str]) -> Iterator[Question]:
    """Scored questions: not category 5, with at least one evidence id some fact carries."""
    for item in qa:
        if not isinstance(item, dict) or not str(item.get("question", "")).strip():
            continue
        category = str(item.get("category", ""))
        gold = frozenset(dia_ids(item.get("evidence", []))) & covered
        if category != SKIPPED_CATEGORY and gold:
            yield Question(str(item["question"]), category, gold)


def conversation(sample: dict[str, Any], position: int) -> Conversation:
    """Parse one sample of a LoCoMo-format file."""
    dates = sample.get("conversation") or {}
    observations = sample.get("observation") or {}
    facts = tuple(f for key, obs in observations.items() for f in _session_facts(key, obs, dates))
    covered = {i for f in facts for i in f.dia_ids}
    questions = tuple(_questions(sample.get("qa") or [], covered))
    return Conversation(str(sample.get("sample_id") or f"conv-{position}"), facts, questions)


def samples(path: Path) -> list[dict[str, Any]]:
    """The samples of a LoCoMo-format JSON file (a list of them, or one alone)."""
    found = json.loads(path.read_text(encoding="utf-8"))
    return [s for s in ([found] if isinstance(found, dict) else found) if isinstance(s, dict)]


def load(path: Path) -> list[Conversation]:
    """All conversations of a LoCoMo-format JSON file."""
    return [conversation(s, i) for i, s in enumerate(samples(path))]


# -- indexing and asking --------------------------------------------------------------------


def open_bench_core(embedder: str, folder: str, storage_url: str = "memory://") -> Core:
    """A core with the chosen embedder and storage (``folder`` is only its home)."""
    env = {"REFLEXIO_HOME": folder, "REFLEXIO_STORAGE_URL": storage_url, "REFLEXIO_EMBEDDER": embedder}
    return open_core(Settings.from_env(env))


def clear(core: Core) -> None:
    """Delete the benchmark org's learnings (a persistent store may hold an earlier run's)."""
    core.storage.delete_learnings(ORG, LearningFilter(), Audit(actor="bench"))


def profile_rows(conv: Conversation, with_date: bool) -> list[Learning]:
    """One profile per fact; provenance goes to ``metadata``, which is not indexed."""
    return [
        Learning(
            org_id=ORG,
            kind=LearningKind.PROFILE,
            user_id=conv.user_id,
            content=fact.text,
            custom_features={"date": fact.date} if with_date and fact.date else None,
            metadata=json.dumps({"dia_ids": list(fact.dia_ids)}),
            request_id=f"{conv.user_id}/{fact.session}" if fact.session else "",
        )
        for fact in conv.facts
    ]


def index(core: Core, conversations: Sequence[Conversation], with_date: bool) -> None:
    """Save every conversation's facts as its user's profiles."""
    for conv in conversations:
        if conv.facts:
            core.storage.save_learnings(profile_rows(conv, with_date), Audit(actor="bench"))


def plan(user_id: str, question: str, mode: str, fusion: str, cohesion: float) -> Plan:
    """A profile search for the user's top-20 facts, ranked with threshold 0."""
    where = LearningFilter(kinds=(LearningKind.PROFILE,), user_id=user_id, statuses=(LearningStatus.CURRENT,))
    return Plan(
        text=question,
        filters=(where,),
        top_k=TOP_K,
        threshold=0.0,
        mode=SearchMode(mode),
        fusion=fusion,
        cohesion=cohesion,
    )


def ask(
    core: Core, user_id: str, question: str, mode: str, fusion: str, cohesion: float
) -> list[tuple[str, ...]]:
    """The dia_ids of each of the top-20 facts a profile search returns, best first."""
    hits = rank(core, ORG, plan(user_id, question, mode, fusion, cohesion)).hits[0]
    return [tuple(json.loads(row.metadata)["dia_ids"]) for row, _ in hits]


# -- metrics --------------------------------------------------------------------------------


def recall_at(gold: frozenset[str], ranked: Sequence[tuple[str, ...]], k: int) -> float:
    """Share of the gold ids carried by at least one of the top-k facts."""
    found = {i for ids in ranked[:k] for i in ids}
    return len(gold & found) / len(gold)


def reciprocal_rank(gold: frozenset[str], ranked: Sequence[tuple[str, ...]]) -> float:
    """1/rank of the first fact carrying a gold id, or 0 when none does."""
    for rank_, ids in enumerate(ranked, start=1):
        if gold.intersection(ids):
            return 1.0 / rank_
    return 0.0


def score(gold: frozenset[str], ranked: Sequence[tuple[str, ...]]) -> dict[str, float]:
    """Every metric of one question."""
    out = {f"recall@{k}": recall_at(gold, ranked, k) for k in CUTOFFS}
    out["mrr"] = reciprocal_rank(gold, ranked)
    return out


def mean(scores: Sequence[dict[str, float]]) -> dict[str, float]:
    """Average each metric over questions (an empty slice gives zeros and ``questions: 0``)."""
    keys = [*(f"recall@{k}" for k in CUTOFFS), "mrr"]
    out = {key: round(float(np.mean([s[key] for s in scores])), 4) if scores else 0.0 for key in keys}
    out["questions"] = len(scores)
    return out


@dataclass(frozen=True, slots=True)
class Scored:
    """One question's metrics with the slices it belongs to."""

    category: str
    split: str
    metrics: dict[str, float]


def summarise(rows: Sequence[Scored]) -> dict[str, Any]:
    """Overall metrics plus ``by_category`` and ``by_split`` breakdowns."""
    out: dict[str, Any] = mean([r.metrics for r in rows])
    categories = sorted({r.category for r in rows}, key=lambda c: (len(c), c))
    out["by_category"] = {c: mean([r.metrics for r in rows if r.category == c]) for c in categories}
    splits = [s for s in ("tune", "held_out") if any(r.split == s for r in rows)]
    out["by_split"] = {s: mean([r.metrics for r in rows if r.split == s]) for s in splits}
    return out


def evaluate(
    core: Core, conversations: Sequence[Conversation], mode: str, args: argparse.Namespace
) -> dict[str, Any]:
    """Ask every question in one mode and summarise the metrics."""
    rows = []
    for position, conv in enumerate(conversations):
        part = "tune" if position < args.split else "held_out"
        for q in conv.questions:
            ranked = ask(core, conv.user_id, q.text, mode, args.fusion, args.cohesion)
            rows.append(Scored(q.category, part, score(q.gold, ranked)))
    return summarise(rows)


# -- reporting ------------------------------------------------------------------------------


def commit() -> str:
    """The checked-out commit, marked ``-dirty`` when the tree has changes."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=Path(__file__).parent)
        return done.stdout.strip()

    head = git("rev-parse", "HEAD") or "unknown"
    return f"{head}-dirty" if git("status", "--porcelain", "--untracked-files=no") else head


def run_info(
    args: argparse.Namespace, embed_name: str, seconds: dict[str, float], load: float
) -> dict[str, Any]:
    """What produced a result: data, code, machine (and how busy it was), settings, timings."""
    return {
        "data": {"file": args.data.name, "sha256": hashlib.sha256(args.data.read_bytes()).hexdigest()},
        "commit": commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
            "load_average_1m_at_start": round(load, 2),
        },
        "storage": args.storage.split(":", 1)[0],
        "embedder": args.embedder,
        "embed_model": embed_name,
        "fusion": args.fusion,
        "cohesion": args.cohesion,
        "date_indexed": not args.no_date,
        "top_k": TOP_K,
        "threshold": 0.0,
        "split": f"conversations [0, {args.split}) tune, the rest held out",
        "seconds": seconds,
    }


def table(results: dict[str, Any]) -> str:
    """The summary: one line per mode and slice (overall, categories, splits)."""
    head = f"{'mode':<7} {'slice':<12} {'n':>5} {'R@5':>6} {'R@10':>6} {'R@20':>6} {'MRR':>6}"
    lines = [head, "-" * len(head)]
    for mode in MODES:
        if mode not in results:
            continue
        summary = results[mode]
        slices = [("overall", summary)]
        slices += [(f"cat {c}", m) for c, m in summary["by_category"].items()]
        slices += list(summary["by_split"].items())
        for name, m in slices:
            values = " ".join(f"{m[key]:>6.3f}" for key in ("recall@5", "recall@10", "recall@20", "mrr"))
            lines.append(f"{mode:<7} {name:<12} {m['questions']:>5} {values}")
    return "\n".join(lines)


def report(out: Path, results: dict[str, Any], summary: str) -> None:
    """Print the summary and write the results as JSON (making the folder if needed)."""
    print(summary)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog="python -m bench.locomo", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo-format JSON file")
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON results")
    parser.add_argument("--embedder", default=Settings.from_env({}).embedder, help="wordllama or minilm")
    parser.add_argument(
        "--fusion", default=Plan.__dataclass_fields__["fusion"].default, help="calibrated|rrf"
    )
    parser.add_argument(
        "--cohesion",
        type=float,
        default=Plan.__dataclass_fields__["cohesion"].default,
        help="how far a strong hit lifts facts of its session (0: off)",
    )
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument(
        "--storage", default="memory://", help="storage URL; a persistent one is cleared of the bench org"
    )
    parser.add_argument("--split", type=int, default=3, help="conversations before this one are 'tune'")
    parser.add_argument("--no-date", action="store_true", help="do not index the session date")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the table, write the JSON; returns the results."""
    args = parse_args(argv)
    conversations = load(args.data)
    busy = os.getloadavg()[0]
    seconds: dict[str, float] = {}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as home:
        core = open_bench_core(args.embedder, home, args.storage)
        clear(core)
        started = time.perf_counter()
        index(core, conversations, with_date=not args.no_date)
        seconds["index"] = round(time.perf_counter() - started, 2)
        for mode in args.modes:
            started = time.perf_counter()
            results[mode] = evaluate(core, conversations, mode, args)
            seconds[mode] = round(time.perf_counter() - started, 2)
        results["run"] = run_info(args, core.embedder.name, seconds, busy)
        clear(core)
        core.close()
    report(args.out, results, table(results))
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
