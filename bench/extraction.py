"""Extraction quality of the offline rule extractor on a labelled corpus, per category.

``python -m bench.extraction --out bench/results/extraction.json [--compare REF]``

The corpus (``bench/data/extraction/*.jsonl``, one category per file; format below) holds short
conversations, each with what a careful reader would learn from it: factual corrections of the
agent, reversed and terse preferences, expert answers, success recipes, compound facts that are
partly superseded, standing preferences, instructions, tool failures, stated facts, and
negatives that must teach nothing. Every item is played through the service as an agent would
send it (each user turn that answers the agent opens a new publish, as the seed's "one User +
Agent pair per publish" pattern does), learned by the job worker on a fresh in-memory store,
and the user's current learnings are then compared with the labels:

* **recall**: expected learnings present afterwards (kind and words);
* **precision**: learnings the item wrote that match an expectation, over all it wrote;
* **stale cleared**: seeded learnings that the conversation overturns (named by ``gone``)
  are no longer current, or no longer say what was overturned;
* **item accuracy**: items with everything expected, nothing wrong written, nothing stale;
* **standing**: expected standing preferences carrying the ``standing`` tag (recall) and tagged
  learnings that are expected to be standing (precision; a tagged learning that only meets
  labels silent about standing is left out);
* **expedited**: whether the user's batched extraction job (the one a publish schedules
  ``EXTRACTION_BATCH_SECONDS`` ahead) learns from the item's turns without waiting for a full
  stride or the session's end (for items that teach something: recall; for negatives: the
  false-alarm rate).

Every category is split into ``dev`` items (used while tuning the extractor) and ``heldout``
items (written with the dev items, before any tuning, and never looked at one by one); both are
reported. ``--compare REF`` runs the same corpus in the same run against the extractor at a git
revision (its ``src/`` exported to a temporary folder), so before/after numbers share a machine
and a moment.

Item format (one JSON object per line)::

    {"id": "fc-01", "split": "dev",
     "existing": [{"kind": "profile", "content": "Prefers metric units"}],   # optional
     "turns": ["U: ...", "A: ...", {"role": "A", "content": "...", "expert": "...",
               "tools": [{"tool_name": ..., "tool_data": {...}, "status": ...}]}, "U: ..."],
     "expect": [{"kind": "profile|user_playbook|any", "all": ["30 days", ["receipt", "proof"]],
                 "standing": true}],
     "gone": ["metric"]}                                                       # optional

``all`` lists groups that must all occur (case-insensitively) in one learning's trigger or
content; a group given as a list is satisfied by any of its strings. ``gone`` names what of the
``existing`` learnings the conversation overturns: no seeded learning that is still current may
contain it afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "bench" / "data" / "extraction"
ORG = "self-host-org"
AGENT_VERSION = "bench-extraction@1"
STANDING_TAG = "standing"


def load_corpus(folder: Path = CORPUS) -> list[dict[str, Any]]:
    """Every item of every category file, with its category taken from the file name."""
    items = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                items.append({**json.loads(line), "category": path.stem})
    return items


# -- playing the corpus (runs against whichever ``reflexio`` is importable) -----------------------


def _turn(spec: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(spec, str):
        role, _, text = spec.partition(": ")
        return {"role": "User" if role == "U" else "Assistant", "content": text}
    out = {"role": "User" if spec["role"] == "U" else "Assistant", "content": spec.get("content", "")}
    if spec.get("expert"):
        out["expert_content"] = spec["expert"]
    if spec.get("tools"):
        out["tools_used"] = spec["tools"]
    return out


def publishes(item: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The item's turns cut as an agent publishes them: a user turn after an agent turn starts a
    new publish (it reacts to an answer already stored)."""
    out: list[list[dict[str, Any]]] = []
    for spec in item["turns"]:
        turn = _turn(spec)
        if not out or (turn["role"] == "User" and out[-1][-1]["role"] != "User"):
            out.append([])
        out[-1].append(turn)
    return out


@contextmanager
def _core(embedder: str) -> Iterator[Any]:
    from reflexio.config import Settings
    from reflexio.service.core import open_core

    with tempfile.TemporaryDirectory(prefix="reflexio-extraction-") as home:
        env = {"HOME": home, "REFLEXIO_HOME": f"{home}/.reflexio", "REFLEXIO_STORAGE_URL": "memory://"}
        env["REFLEXIO_EMBEDDER"] = embedder
        core = open_core(Settings.from_env(env))
        try:
            yield core
        finally:
            core.close()


def play_all(items: Sequence[dict[str, Any]], embedder: str = "auto") -> dict[str, Any]:
    """Play each item for its own user on one store; what each user holds afterwards."""
    from reflexio.jobs import Worker
    from reflexio.service import workers

    out: dict[str, Any] = {}
    with _core(embedder) as core:
        worker = Worker(core.storage, workers.handlers(core), poll_seconds=0.0)
        for item in items:
            out[item["id"]] = _play(core, worker, item)
    return out


def _play(core: Any, worker: Any, item: dict[str, Any]) -> dict[str, Any]:
    from reflexio.filters import LearningFilter
    from reflexio.models import FinalizeSessionRequest, PublishUserInteractionRequest
    from reflexio.records import Audit, Learning, LearningKind, LearningStatus
    from reflexio.service import publish as pub

    user, session = f"user-{item['id']}", f"session-{item['id']}"
    seeded = [
        Learning(
            org_id=ORG,
            kind=LearningKind(row["kind"]),
            user_id=user,
            content=row["content"],
            trigger=row.get("trigger"),
            agent_version=AGENT_VERSION if row["kind"] != "profile" else "",
            playbook_name="playbook" if row["kind"] != "profile" else "",
            tags=list(row.get("tags", [])),
        )
        for row in item.get("existing", [])
    ]
    saved = core.storage.save_learnings(seeded, Audit(actor="bench"))
    before, seeded_ids = {(r.id, r.content) for r in saved}, {r.id for r in saved}
    for turns in publishes(item):
        req = PublishUserInteractionRequest.model_validate(
            {
                "user_id": user,
                "session_id": session,
                "agent_version": AGENT_VERSION,
                "interaction_data_list": turns,
            }
        )
        pub.publish(core, ORG, req)
    expedited = _learned_by_the_batch(core, worker, user)
    pub.finalize_session(core, ORG, FinalizeSessionRequest(user_id=user, session_id=session))
    while worker.run_once():
        pass
    rows = core.storage.list_learnings(
        ORG, LearningFilter(user_id=user, statuses=(LearningStatus.CURRENT,)), limit=100
    )
    return {
        "expedited": expedited,
        "learnings": [
            {
                "kind": row.kind.value,
                "text": "\n".join(p for p in (row.trigger, row.content) if p),
                "tags": list(row.tags),
                "written": (row.id, row.content) not in before,
                "seeded": row.id in seeded_ids,
            }
            for row in rows
        ],
    }


def _learned_by_the_batch(core: Any, worker: Any, user: str) -> bool:
    """Run the user's batched extraction job now (as its due time would) and say whether every
    extractor's bookmark passed the user's last turn, i.e. nothing waits for a stride."""
    from reflexio.filters import InteractionFilter
    from reflexio.service import publish as pub

    core.storage.expedite_job(ORG, pub.EXTRACT, user)
    while worker.run_once():
        pass
    last = core.storage.list_interactions(ORG, InteractionFilter(user_id=user), limit=1, newest_first=True)
    marks = [core.storage.get_bookmark(ORG, user, e.name) for e in pub.extractors_of(core.org_config(ORG))]
    return bool(last) and all(m is not None and m.last_interaction_id >= last[0].id for m in marks)


# -- scoring ------------------------------------------------------------------------------------


def _matches(learning: dict[str, Any], expect: dict[str, Any]) -> bool:
    if expect["kind"] != "any" and learning["kind"] != expect["kind"]:
        return False
    text = learning["text"].lower()
    groups = [g if isinstance(g, list) else [g] for g in expect["all"]]
    return all(any(s.lower() in text for s in group) for group in groups)


def score(items: Sequence[dict[str, Any]], played: dict[str, Any]) -> dict[str, Any]:
    """Metrics per category and split, per split overall, and for the standing tag."""
    tallies: dict[str, dict[str, int]] = {}
    for item in items:
        result = played[item["id"]]
        category, split = item["category"], item["split"]
        for key in (f"{category}/{split}", f"{category}/all", f"all/{split}", "all/all"):
            _tally(tallies.setdefault(key, {}), item, result)
    return {key: _metrics(t) for key, t in sorted(tallies.items())}


def _tally(t: dict[str, int], item: dict[str, Any], result: dict[str, Any]) -> None:
    def add(name: str, n: int = 1) -> None:
        t[name] = t.get(name, 0) + n

    learnings = result["learnings"]
    expects = item.get("expect", [])
    add("items")
    add("expected", len(expects))
    found = [e for e in expects if any(_matches(row, e) for row in learnings)]
    add("found", len(found))
    written = [row for row in learnings if row["written"]]
    right = [row for row in written if any(_matches(row, e) for e in expects)]
    add("written", len(written))
    add("written_right", len(right))
    gone = item.get("gone", [])
    seeded = [row for row in learnings if row.get("seeded")]
    stale = [g for g in gone if any(g.lower() in row["text"].lower() for row in seeded)]
    add("stale", len(gone))
    add("stale_cleared", len(gone) - len(stale))
    add("exact", int(len(found) == len(expects) and len(right) == len(written) and not stale))
    standing_expects = [e for e in found if e.get("standing") is True]
    add("standing_expected", len([e for e in expects if e.get("standing") is True]))
    add(
        "standing_tagged",
        sum(
            1
            for e in standing_expects
            if any(_matches(row, e) and STANDING_TAG in row["tags"] for row in learnings)
        ),
    )
    # A tagged learning counts for precision unless it only meets labels silent about standing.
    tagged = [
        row
        for row in written
        if STANDING_TAG in row["tags"]
        and not (
            any(_matches(row, e) for e in expects)
            and all("standing" not in e for e in expects if _matches(row, e))
        )
    ]
    add("tagged", len(tagged))
    add(
        "tagged_right",
        sum(1 for row in tagged if any(e.get("standing") is True and _matches(row, e) for e in expects)),
    )
    teaches = bool(expects) or bool(gone)
    add("teaching_items", int(teaches))
    add("expedited_teaching", int(teaches and result["expedited"]))
    add("expedited_negative", int(not teaches and result["expedited"]))


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def _metrics(t: dict[str, int]) -> dict[str, Any]:
    negatives = t["items"] - t["teaching_items"]
    return {
        "items": t["items"],
        "recall": _ratio(t["found"], t["expected"]),
        "precision": _ratio(t["written_right"], t["written"]),
        "false_learnings": t["written"] - t["written_right"],
        "stale_cleared": _ratio(t["stale_cleared"], t["stale"]),
        "item_accuracy": _ratio(t["exact"], t["items"]),
        "standing_recall": _ratio(t["standing_tagged"], t["standing_expected"]),
        "standing_precision": _ratio(t["tagged_right"], t["tagged"]),
        "expedited_recall": _ratio(t["expedited_teaching"], t["teaching_items"]),
        "expedited_false_rate": _ratio(t["expedited_negative"], negatives),
        "counts": t,
    }


# -- the comparison run and the entry point -------------------------------------------------------


def _run_at(ref: str, corpus: Path, embedder: str) -> dict[str, Any]:
    """Play the corpus with the extractor of git revision ``ref`` (in a subprocess)."""
    with tempfile.TemporaryDirectory(prefix="reflexio-extraction-ref-") as tmp:
        archive = subprocess.run(["git", "archive", ref, "src"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        out = Path(tmp) / "played.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([f"{tmp}/src", str(ROOT)])}
        subprocess.run(
            [
                *(sys.executable, "-m", "bench.extraction", "--corpus", str(corpus)),
                *("--embedder", embedder, "--played-out", str(out)),
            ],
            cwd=tmp,
            env=env,
            check=True,
        )
        played: dict[str, Any] = json.loads(out.read_text())
        return played


def _commit(ref: str = "HEAD") -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rule extractor precision/recall per category.")
    parser.add_argument("--out", help="where to write the metrics JSON")
    parser.add_argument("--corpus", default=str(CORPUS), help="folder of category .jsonl files")
    parser.add_argument("--compare", help="also measure the extractor at this git revision (e.g. main)")
    parser.add_argument(
        "--embedder", default="auto", help="REFLEXIO_EMBEDDER for the run (auto = the product default)"
    )
    parser.add_argument("--played-out", help=argparse.SUPPRESS)  # raw results, for --compare
    parser.add_argument("-v", "--verbose", action="store_true", help="print every dev item that fails")
    args = parser.parse_args(argv)
    items = load_corpus(Path(args.corpus))
    started = time.perf_counter()
    played = play_all(items, args.embedder)
    if args.played_out:
        Path(args.played_out).write_text(json.dumps(played))
        return 0
    results: dict[str, Any] = {"current": score(items, played)}
    if args.compare:
        results["baseline"] = score(items, _run_at(args.compare, Path(args.corpus), args.embedder))
    results["meta"] = {
        "commit": _commit(),
        "baseline": f"{args.compare} ({_commit(args.compare)})" if args.compare else None,
        "items": len(items),
        "embedder": args.embedder,
        "seconds": round(time.perf_counter() - started, 1),
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    if args.verbose:
        _print_failures(items, played)
    _print(results)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _print_failures(items: Sequence[dict[str, Any]], played: dict[str, Any]) -> None:
    """Dev items whose result differs from their labels (held-out items stay unread)."""
    for item in items:
        if item["split"] != "dev":
            continue
        t: dict[str, int] = {}
        _tally(t, item, played[item["id"]])
        standing_ok = t["standing_tagged"] == t["standing_expected"] and t["tagged"] == t["tagged_right"]
        if t["exact"] and standing_ok:
            continue
        print(f"-- {item['id']} ({item['category']}): expect {item.get('expect')} gone {item.get('gone')}")
        print(f"   turns: {item['turns']}")
        for row in played[item["id"]]["learnings"]:
            mark = "+" if row["written"] else " "
            print(f"   {mark} {row['kind']} {row['tags']}: {row['text']!r}")


def _print(results: dict[str, Any]) -> None:
    cols = [
        "recall",
        "precision",
        "stale_cleared",
        "item_accuracy",
        "expedited_recall",
        "expedited_false_rate",
    ]
    for name in ("baseline", "current"):
        if name not in results:
            continue
        print(f"== {name}")
        print(f"{'category/split':32s} {'items':>5s} " + " ".join(f"{c[:14]:>14s}" for c in cols))
        for key, m in results[name].items():
            cells = ["-" if m[c] is None else f"{m[c]:.3f}" for c in cols]
            print(f"{key:32s} {m['items']:5d} " + " ".join(f"{c:>14s}" for c in cells))
        overall = results[name]["all/all"]
        print(f"standing: recall {overall['standing_recall']} precision {overall['standing_precision']}")


if __name__ == "__main__":
    sys.exit(main())
