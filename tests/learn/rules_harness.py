"""Play a closed-loop scenario at the service level with the offline rule extractor.

The lead's ``bench/loop`` simulator plays scenarios over the public API; this harness plays
the same files through the service functions in-process, so the rule extractor can be
measured while that simulator is being built. Per turn it searches (user, agent version,
session), decides from what came back whether the agent "has" each needed lesson, publishes
the user turn, the agent turn (with expert answer, tools and retrieved learnings) and the
feedback, and after each session finalises it and drains the extraction jobs.

Metrics follow shared/data/scenarios/README.md: ``repeat_mistake_rate`` over profile and
user-playbook keys already taught to the same user in an earlier session (and agent-playbook
keys taught to anyone), ``stale_injections``, ``context_precision``, ``mistakes_first`` and
``tokens_injected_per_turn``.

Run it directly to print a table: ``python -m tests.learn.rules_harness [files...]``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reflexio.config import Settings
from reflexio.jobs import JobContext, Worker
from reflexio.learn.pipeline import learn_window
from reflexio.learn.rules import RuleJudge, RuleProposer
from reflexio.learn.windows import Window, run_extraction
from reflexio.models import (
    FinalizeSessionRequest,
    InteractionData,
    PublishUserInteractionRequest,
    UnifiedSearchRequest,
)
from reflexio.models.entities import ToolUsed
from reflexio.service import publish as pub
from reflexio.service.core import Core, open_core
from reflexio.service.org_config import update_config
from reflexio.service.search import search

ORG = "harness"
DEV_SCENARIOS = Path("/work/shared/data/scenarios")
HELDOUT_SCENARIOS = Path(__file__).resolve().parents[1] / "data" / "scenarios_heldout"


@dataclass(slots=True)
class Retrieved:
    """One learning a search returned, as the scenario matcher sees it."""

    kind: str
    text: str


@dataclass(slots=True)
class Metrics:
    """Counts behind the scenario metrics."""

    name: str
    mistakes_first: int = 0
    repeat_needs: int = 0
    repeat_missed: int = 0
    agent_repeat_needs: int = 0
    agent_repeat_missed: int = 0
    stale_injections: int = 0
    retrieved: int = 0
    retrieved_matching: int = 0
    turns: int = 0
    chars_injected: int = 0
    log: list[str] = field(default_factory=list)

    @property
    def repeat_mistake_rate(self) -> float:
        """Missed needs among profile and user-playbook needs already taught to the same user."""
        return self.repeat_missed / self.repeat_needs if self.repeat_needs else 0.0

    @property
    def context_precision(self) -> float:
        """Retrieved learnings matching a need of their turn, over all retrieved."""
        return self.retrieved_matching / self.retrieved if self.retrieved else 1.0

    def row(self) -> str:
        """One line of the results table."""
        return (
            f"{self.name:28s} repeat={self.repeat_mistake_rate:.2f} "
            f"({self.repeat_missed}/{self.repeat_needs}) "
            f"stale={self.stale_injections} precision={self.context_precision:.2f} "
            f"({self.retrieved_matching}/{self.retrieved}) first={self.mistakes_first} "
            f"tokens/turn={self.chars_injected / 4 / max(self.turns, 1):.0f}"
            + (
                f" agent-repeat={self.agent_repeat_missed}/{self.agent_repeat_needs}"
                if self.agent_repeat_needs
                else ""
            )
        )


def matches(learning: Retrieved, key: dict[str, Any]) -> bool:
    """Whether a retrieved learning satisfies a scenario key (kind and text)."""
    kind = key["kind"]
    ok_kind = learning.kind == kind or (kind == "user_playbook" and learning.kind == "agent_playbook")
    text = learning.text.lower()
    return ok_kind and any(m.lower() in text for m in key["match_any"])


def open_harness(storage_url: str = "memory://", embedder: str = "wordllama") -> Core:
    """A core over a fresh store ("memory://" or "sqlite") with a bundled embedder."""
    home = tempfile.mkdtemp(prefix="rules-harness-")
    url = storage_url if storage_url != "sqlite" else f"sqlite:///{home}/reflexio.db"
    env = {"REFLEXIO_STORAGE_URL": url, "HOME": home, "REFLEXIO_EMBEDDER": embedder}
    return open_core(Settings.from_env(env))


def _worker(core: Core) -> Worker:
    config = core.org_config(ORG)

    def learn(window: Window) -> Any:
        return learn_window(core.storage, config, window, RuleProposer(), RuleJudge())

    def handler(ctx: JobContext) -> None:
        run_extraction(ctx, core.storage, config, learn)

    return Worker(core.storage, {pub.EXTRACT: handler}, poll_seconds=0.0)


def _search(core: Core, scenario: dict[str, Any], user: str, session: str, query: str) -> list[Retrieved]:
    req = UnifiedSearchRequest(
        query=query, user_id=user, agent_version=scenario["agent_version"], session_id=session
    )
    res = search(core, ORG, req)
    out = [Retrieved("profile", p.content) for p in res.profiles]
    out += [Retrieved("user_playbook", f"{p.content}\n{p.trigger or ''}") for p in res.user_playbooks]
    out += [Retrieved("agent_playbook", f"{p.content}\n{p.trigger or ''}") for p in res.agent_playbooks]
    return out


def play(
    scenario: dict[str, Any],
    *,
    feedback: str = "always",
    storage_url: str = "memory://",
    embedder: str = "wordllama",
) -> Metrics:
    """Play one scenario; ``feedback`` is "always" (whenever set) or "on_miss"."""
    core = open_harness(storage_url, embedder)
    # The harness measures learning, so nothing is withheld from a session by the holdout
    # (bench/loop --holdout-rate shows what the holdout costs).
    update_config(core, ORG, {"holdout_rate": 0})
    try:
        return _play(core, scenario, feedback)
    finally:
        core.close()


def _play(core: Core, scenario: dict[str, Any], feedback_mode: str) -> Metrics:
    keys: dict[str, dict[str, Any]] = scenario["learnings"]
    metrics = Metrics(scenario["name"])
    taught: set[tuple[str | None, str]] = set()
    worker = _worker(core)
    for n, session in enumerate(scenario["sessions"]):
        user, sid = session["user_id"], session["session_id"]
        lessons: set[tuple[str | None, str]] = set()
        for t, turn in enumerate(session["turns"]):
            got = _search(core, scenario, user, sid, turn["user"])
            met = _score_turn(metrics, keys, taught, user, turn, got)
            answer = turn["agent_with"] if met else turn["agent_without"]
            metrics.log.append(
                f"s{n}t{t} [{'ok' if met else 'MISS'}] {turn['user'][:50]!r} <- "
                + " | ".join(r.text.replace("\n", " / ")[:90] for r in got)
            )
            send_feedback = turn.get("feedback") and (feedback_mode == "always" or not met)
            _publish(core, scenario, user, sid, f"{sid}-{t}", turn, answer, send_feedback)
            lessons |= _taught_by(keys, user, turn)
        pub.finalize_session(core, ORG, FinalizeSessionRequest(user_id=user, session_id=sid))
        while worker.run_once():
            pass
        taught |= lessons
    metrics.log += [
        f"  stored[{row.status.value}] {row.kind.value}: {row.content!r} | {row.trigger!r} "
        f"| pitfall={row.pitfall!r}"
        for row in _all(core)
    ]
    return metrics


def _all(core: Core) -> list[Any]:
    from reflexio.filters import LearningFilter

    return list(core.storage.list_learnings(ORG, LearningFilter(), limit=500))


def _taught_by(
    keys: dict[str, dict[str, Any]], user: str, turn: dict[str, Any]
) -> set[tuple[str | None, str]]:
    """Keys a turn teaches: those it needed, if it had feedback or an expert answer, and any
    key whose words the feedback, expert answer or a failed tool call carries (a reversal
    teaches the new lesson before any turn needs it)."""
    evidence = " ".join(
        [turn.get("feedback") or "", turn.get("expert") or "", json.dumps(turn.get("tools") or [])]
    ).lower()
    out = {(_owner(keys[k], user), k) for k in turn["needs"] if evidence.strip(" []")}
    out |= {
        (_owner(key, user), k)
        for k, key in keys.items()
        if any(m.lower() in evidence for m in key["match_any"])
    }
    return out


def _owner(key: dict[str, Any], user: str) -> str | None:
    return None if key["kind"] == "agent_playbook" else user


def _score_turn(
    metrics: Metrics,
    keys: dict[str, dict[str, Any]],
    taught: set[tuple[str | None, str]],
    user: str,
    turn: dict[str, Any],
    got: Sequence[Retrieved],
) -> bool:
    metrics.turns += 1
    metrics.retrieved += len(got)
    metrics.chars_injected += sum(len(r.text) for r in got)
    metrics.retrieved_matching += sum(1 for r in got if any(matches(r, keys[k]) for k in turn["needs"]))
    if any(matches(r, keys[k]) for r in got for k in turn.get("forbids", [])):
        metrics.stale_injections += 1
    met_all = True
    for k in turn["needs"]:
        met = any(matches(r, keys[k]) for r in got)
        met_all = met_all and met
        if (_owner(keys[k], user), k) in taught and keys[k]["kind"] == "agent_playbook":
            metrics.agent_repeat_needs += 1
            metrics.agent_repeat_missed += 0 if met else 1
        elif (_owner(keys[k], user), k) in taught:
            metrics.repeat_needs += 1
            metrics.repeat_missed += 0 if met else 1
        elif not met:
            metrics.mistakes_first += 1
    return met_all


def _publish(
    core: Core,
    scenario: dict[str, Any],
    user: str,
    session: str,
    request_id: str,
    turn: dict[str, Any],
    answer: str,
    send_feedback: bool | str | None,
) -> None:
    agent = InteractionData(
        role="Agent",
        content=answer,
        expert_content=turn.get("expert") or "",
        tools_used=[ToolUsed(**t) for t in turn.get("tools") or []],
    )
    items = [InteractionData(role="User", content=turn["user"]), agent]
    if send_feedback:
        items.append(InteractionData(role="User", content=turn["feedback"]))
    req = PublishUserInteractionRequest(
        user_id=user,
        session_id=session,
        request_id=request_id,
        agent_version=scenario["agent_version"],
        interaction_data_list=items,
    )
    pub.publish(core, ORG, req)


def load(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Scenario files, parsed."""
    return [json.loads(p.read_text()) for p in sorted(paths)]


def main(argv: Sequence[str]) -> None:
    """Print a results table for the given scenario files (default: dev and held-out).

    Flags: ``-v`` prints each turn and the stored learnings; ``--minilm`` uses the quality-tier
    embedder instead of WordLlama.
    """
    verbose = "-v" in argv
    embedder = "minilm" if "--minilm" in argv else "wordllama"
    paths = [Path(a) for a in argv if not a.startswith("-")]
    if not paths:
        paths = [*DEV_SCENARIOS.glob("*.json"), *HELDOUT_SCENARIOS.glob("*.json")]
    for mode in ("always", "on_miss"):
        print(f"-- feedback: {mode}")
        for scenario in load(paths):
            m = play(scenario, feedback=mode, embedder=embedder)
            print(m.row())
            if verbose:
                print("\n".join("    " + line for line in m.log))


if __name__ == "__main__":
    main(sys.argv[1:])
