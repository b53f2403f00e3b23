"""Throughput of the offline rule extractor: windows per second of ``RuleProposer.propose``.

``python -m bench.rules --out bench/results/rules.json [--scenarios DIR] [--rounds N]``

The embedded default learns with these rules on every window, in the job workers, before any
LLM is configured; they must stay cheap next to storage and embedding. The windows are the
sessions of the closed-loop scenarios (``tests/data/scenarios_heldout`` by default; format:
../shared/data/scenarios/README.md), published as the simulator publishes them: the user's
message, the agent's answer (``agent_without``, with its tools and expert answer) and the
user's feedback. One window per session, every turn new, nothing known yet. Each round
proposes every window once, in one thread (the rules are pure Python); the report has the
median round's windows per second (and the best round's: on a shared machine the least
disturbed) and the per-window latency over all timed rounds. The first round warms up and is
not timed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.ingest import percentiles
from bench.search import commit, machine
from reflexio.learn.pipeline import LearnContext
from reflexio.learn.rules import RuleProposer
from reflexio.learn.windows import Window
from reflexio.models.org_config import Config
from reflexio.records import InteractionRecord, LearningKind

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tests" / "data" / "scenarios_heldout"
KINDS = (LearningKind.PROFILE, LearningKind.USER_PLAYBOOK)


def session_turns(session: dict[str, Any]) -> list[InteractionRecord]:
    """A scenario session as published: user message, agent answer, feedback when there is one."""
    out: list[InteractionRecord] = []

    def add(role: str, content: str, **extra: Any) -> None:
        turn_id = len(out) + 1
        out.append(
            InteractionRecord(
                org_id="bench",
                request_id=f"{session['session_id']}-{turn_id}",
                user_id=session["user_id"],
                session_id=session["session_id"],
                id=turn_id,
                role=role,
                content=content,
                **extra,
            )
        )

    for turn in session["turns"]:
        add("User", turn["user"])
        add(
            "Assistant",
            turn["agent_without"],
            expert_content=turn.get("expert") or "",
            tools_used=turn.get("tools") or [],
        )
        if turn.get("feedback"):
            add("User", turn["feedback"])
    return out


def windows(scenarios: Path) -> list[Window]:
    """One window per session of every scenario in ``scenarios``, sorted by file name."""
    found = []
    for path in sorted(scenarios.glob("*.json")):
        for session in json.loads(path.read_text())["sessions"]:
            turns = tuple(session_turns(session))
            found.append(Window("bench", session["user_id"], ("profile", "playbook"), turns, 0))
    return found


def measure(batch: Sequence[Window], rounds: int) -> dict[str, Any]:
    """Propose every window of ``batch`` once per round; time each window and each round."""
    proposer = RuleProposer()
    context = LearnContext(config=Config(), existing={kind: [] for kind in KINDS}, requests={})
    proposals = sum(len(proposer.propose(w, KINDS, context)) for w in batch)  # warm-up, not timed
    per_window_ms: list[float] = []
    per_round_s: list[float] = []
    for _ in range(rounds):
        round_started = time.perf_counter()
        for w in batch:
            started = time.perf_counter()
            proposer.propose(w, KINDS, context)
            per_window_ms.append((time.perf_counter() - started) * 1000)
        per_round_s.append(time.perf_counter() - round_started)
    return {
        "windows_per_s": round(len(batch) / statistics.median(per_round_s), 1),
        "windows_per_s_best_round": round(len(batch) / min(per_round_s), 1),  # the least disturbed
        "ms_per_window": percentiles(per_window_ms),
        "proposals_per_round": proposals,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.rules", description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", type=Path, default=SCENARIOS, help="a folder of scenario files")
    parser.add_argument("--rounds", type=int, default=200, help="timed passes over every window")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "rules.json")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    batch = windows(args.scenarios)
    if not batch:
        raise SystemExit(f"no scenario files in {args.scenarios}")
    report = {
        "benchmark": "rules",
        "commit": commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {**machine(), "load_average_1m_at_start": round(os.getloadavg()[0], 2)},
        "method": __doc__,
        "corpus": {
            "scenarios": args.scenarios.resolve().relative_to(ROOT).as_posix()
            if args.scenarios.resolve().is_relative_to(ROOT)
            else str(args.scenarios),
            "windows": len(batch),
            "turns": sum(len(w.turns) for w in batch),
        },
        "rounds": args.rounds,
        **measure(batch, args.rounds),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({key: report[key] for key in ("windows_per_s", "ms_per_window")}))


if __name__ == "__main__":
    main()
