"""Closed-loop simulator: does the agent stop repeating mistakes users already corrected?

``python -m bench.loop --scenarios PATH --out RESULTS.json [--extractor rules|llm] [--url URL]``

Each scenario (format: ../shared/data/scenarios/README.md) is played through the public API
with the real SDK: before each agent answer the simulator searches Reflexio, decides whether
the agent "has" each lesson it needs from what search returned, answers with the scripted
answer, publishes the turn with ``retrieved_learnings``, then the user's feedback; after each
session it finalises the session and waits until learning has caught up. With ``--url`` it
drives a running server; without it, an in-process server on a temporary SQLite file (and, for
``--extractor llm``, a ScriptedLLM through the same seam production uses).

Metric details (where the format leaves room):

* the agent keeps what it retrieved earlier in the same session in its context, so a lesson
  served in turn 1 still counts in turn 3 (search does not serve it twice in a session);
* a lesson counts as "taught before" a turn when an earlier *session* (learning runs between
  sessions) had a turn needing it that ended with feedback or an expert answer — for the same
  user with profile/user-playbook keys, for any user with agent-playbook keys;
* a retrieved learning that matches a needed key of its turn serves that need; it is a stale
  injection only when it matches a forbidden key and none of the turn's needs (lesson texts
  overlap: "stop asking for confirmation on routine tasks" serves the new lesson even though it
  contains "confirmation").
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

KIND_OF = {"profiles": "profile", "user_playbooks": "user_playbook", "agent_playbooks": "agent_playbook"}
ACCEPTS = {
    "profile": {"profile"},
    "user_playbook": {"user_playbook", "agent_playbook"},
    "agent_playbook": {"agent_playbook"},
}


@dataclass(frozen=True, slots=True)
class Served:
    """A learning search returned: its kind, id and the text that decides what it matches."""

    kind: str
    learning_id: str
    text: str


class Reflexio(Protocol):
    """What the simulator needs from Reflexio (implemented over the SDK below)."""

    def search(self, *, query: str, user_id: str, session_id: str, agent_version: str) -> list[Served]: ...
    def publish(
        self, *, user_id: str, session_id: str, agent_version: str, source: str, turns: list[dict[str, Any]]
    ) -> str: ...
    def finish_session(self, *, user_id: str, session_id: str, last_request_id: str | None) -> None: ...
    def llm_usage(self) -> tuple[int, int]: ...


@dataclass
class Tally:
    """Counters behind the metrics of one scenario (or of all of them)."""

    turns: int = 0
    interactions: int = 0
    mistakes_first: int = 0
    repeat_opportunities: int = 0
    repeat_misses: int = 0
    agent_repeat_opportunities: int = 0
    agent_repeat_misses: int = 0
    stale_injections: int = 0
    retrieved: int = 0
    retrieved_matching: int = 0
    injected_chars: int = 0
    llm_calls: int = 0
    llm_tokens: int = 0

    def add(self, other: Tally) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def metrics(self) -> dict[str, float | int | None]:
        return {
            "repeat_mistake_rate": _ratio(self.repeat_misses, self.repeat_opportunities),
            "stale_injections": self.stale_injections,
            "context_precision": _ratio(self.retrieved_matching, self.retrieved, empty=1.0),
            "tokens_injected_per_turn": round(self.injected_chars / 4 / max(self.turns, 1), 2),
            "llm_calls_per_interaction": round(self.llm_calls / max(self.interactions, 1), 4),
            "llm_tokens_per_interaction": round(self.llm_tokens / max(self.interactions, 1), 2),
            "mistakes_first": self.mistakes_first,
            "repeat_opportunities": self.repeat_opportunities,
            "agent_playbook_repeat_mistake_rate": _ratio(
                self.agent_repeat_misses, self.agent_repeat_opportunities
            ),
            "agent_playbook_repeat_opportunities": self.agent_repeat_opportunities,
            "turns": self.turns,
            "interactions": self.interactions,
        }


def _ratio(num: int, den: int, empty: float | None = None) -> float | None:
    return round(num / den, 4) if den else empty


def matches(served: Served, key: dict[str, Any]) -> bool:
    """A served learning matches a lesson key by kind and by any of its strings."""
    if served.kind not in ACCEPTS[key["kind"]]:
        return False
    text = served.text.lower()
    return any(s.lower() in text for s in key["match_any"])


@dataclass
class Player:
    """Plays one scenario against Reflexio and keeps its tally."""

    api: Reflexio
    scenario: dict[str, Any]
    namespace: str = ""
    source: str = "bench-loop"
    tally: Tally = field(default_factory=Tally)
    taught: dict[str, set[str]] = field(default_factory=dict)
    trace: list[dict[str, Any]] = field(default_factory=list)

    def play(self) -> Tally:
        for session in self.scenario["sessions"]:
            newly = self.play_session(session)
            for key, users in newly.items():
                self.taught.setdefault(key, set()).update(users)
        return self.tally

    def play_session(self, session: dict[str, Any]) -> dict[str, set[str]]:
        user, sid = session["user_id"], self.namespace + session["session_id"]
        context: dict[str, Served] = {}
        newly: dict[str, set[str]] = {}
        last_request = None
        for turn in session["turns"]:
            last_request = self.play_turn(user, sid, turn, context)
            if turn.get("feedback") or turn.get("expert"):
                for key in turn.get("needs", []):
                    newly.setdefault(key, set()).add(user)
        self.api.finish_session(user_id=self.namespace + user, session_id=sid, last_request_id=last_request)
        return newly

    def play_turn(self, user: str, sid: str, turn: dict[str, Any], context: dict[str, Served]) -> str:
        version = self.namespace + self.scenario["agent_version"]
        ns_user = self.namespace + user
        served = self.api.search(query=turn["user"], user_id=ns_user, session_id=sid, agent_version=version)
        for item in served:
            context[f"{item.kind}:{item.learning_id}"] = item
        self.score(user, turn, served, list(context.values()))
        met = all(self.has(key, context.values()) for key in turn.get("needs", []))
        self.trace.append(
            {
                "session": sid,
                "user": turn["user"],
                "needs": turn.get("needs", []),
                "met": met,
                "served": [f"{s.kind}: {s.text}" for s in served],
            }
        )
        answer = turn["agent_with"] if met else turn["agent_without"]
        agent: dict[str, Any] = {
            "role": "Agent",
            "content": answer,
            "retrieved_learnings": [{"kind": s.kind, "learning_id": s.learning_id} for s in served],
        }
        if turn.get("expert"):
            agent["expert_content"] = turn["expert"]
        if turn.get("tools"):
            agent["tools_used"] = turn["tools"]
        turns = [{"role": "User", "content": turn["user"]}, agent]
        if turn.get("feedback"):
            turns.append({"role": "User", "content": turn["feedback"]})
        self.tally.interactions += len(turns)
        return self.api.publish(
            user_id=ns_user, session_id=sid, agent_version=version, source=self.source, turns=turns
        )

    def has(self, key_name: str, context: Any) -> bool:
        return any(matches(item, self.scenario["learnings"][key_name]) for item in context)

    def score(
        self, user: str, turn: dict[str, Any], served: Sequence[Served], context: Sequence[Served]
    ) -> None:
        t = self.tally
        t.turns += 1
        keys = self.scenario["learnings"]
        needs = [k for k in turn.get("needs", []) if k in keys]
        forbids = [k for k in turn.get("forbids", []) if k in keys]
        for name in needs:
            key = keys[name]
            audience = self.taught.get(name, set())
            taught = bool(audience) if key["kind"] == "agent_playbook" else user in audience
            missed = not any(matches(s, key) for s in context)
            if not taught:
                t.mistakes_first += int(missed)
            elif key["kind"] == "agent_playbook":
                t.agent_repeat_opportunities += 1
                t.agent_repeat_misses += int(missed)
            else:
                t.repeat_opportunities += 1
                t.repeat_misses += int(missed)
        for item in served:
            serves_need = any(matches(item, keys[k]) for k in needs)
            t.retrieved += 1
            t.retrieved_matching += int(serves_need)
            t.injected_chars += len(item.text)
            if not serves_need and any(matches(item, keys[k]) for k in forbids):
                t.stale_injections += 1


def load_scenarios(path: Path) -> list[dict[str, Any]]:
    """One scenario file, or every ``*.json`` in a folder (sorted)."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    return [json.loads(f.read_text()) for f in files]


# -- driving Reflexio through the SDK -------------------------------------------------------


class SdkReflexio:
    """The simulator's view of Reflexio, over the real ``ReflexioClient``."""

    def __init__(self, url: str, api_key: str = "", org_usage: Any = None) -> None:
        from reflexio import ReflexioClient

        self.client = ReflexioClient(api_key=api_key, url_endpoint=url)
        self._usage = org_usage

    def search(self, *, query: str, user_id: str, session_id: str, agent_version: str) -> list[Served]:
        result = self.client.search(
            query=query, user_id=user_id, session_id=session_id, agent_version=agent_version, top_k=5
        )
        out = [Served("profile", p.profile_id, p.content) for p in result.profiles]
        out += [
            Served("user_playbook", str(p.user_playbook_id), _rule_text(p)) for p in result.user_playbooks
        ]
        out += [
            Served("agent_playbook", str(p.agent_playbook_id), _rule_text(p)) for p in result.agent_playbooks
        ]
        return out

    def publish(
        self, *, user_id: str, session_id: str, agent_version: str, source: str, turns: list[dict[str, Any]]
    ) -> str:
        from reflexio import InteractionData

        response = self.client.publish_interaction(
            user_id=user_id,
            interactions=[InteractionData(**t) for t in turns],
            source=source,
            session_id=session_id,
            agent_version=agent_version,
        )
        return str(getattr(response, "request_id", "") or "")

    def finish_session(self, *, user_id: str, session_id: str, last_request_id: str | None) -> None:
        self.client.finalize_session(user_id=user_id, session_id=session_id)
        if last_request_id:
            _wait_done(self.client, last_request_id)

    def llm_usage(self) -> tuple[int, int]:
        return self._usage() if self._usage else (0, 0)


def _rule_text(p: Any) -> str:
    return "\n".join(x for x in (p.trigger, p.content) if x)


def _wait_done(client: Any, request_id: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get_learning_status(request_id)
        if str(getattr(status, "status", status)) in {"done", "failed"}:
            return
        time.sleep(0.05)
    raise TimeoutError(f"learning for request {request_id} did not finish within {timeout} s")


# -- entry point ------------------------------------------------------------------------------


def run(scenarios: Sequence[dict[str, Any]], api_for: Any, *, trace: bool = False) -> dict[str, Any]:
    """Play every scenario and collect the metrics.

    Users, sessions and agent versions are namespaced per run and scenario, so scenarios that
    reuse ids never see each other's learnings, even against a long-running server.
    """
    run_id = time.strftime("%Y%m%d%H%M%S")
    per: dict[str, Any] = {}
    total = Tally()
    for scenario in scenarios:
        api = api_for(scenario["name"])
        before = api.llm_usage()
        player = Player(api, scenario, namespace=f"{run_id}:{scenario['name']}:")
        tally = player.play()
        after = api.llm_usage()
        tally.llm_calls, tally.llm_tokens = after[0] - before[0], after[1] - before[1]
        per[scenario["name"]] = tally.metrics()
        if trace:
            per[scenario["name"]]["trace"] = player.trace
        total.add(tally)
    return {"overall": total.metrics(), "scenarios": per}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    scenarios = load_scenarios(Path(args.scenarios))
    started = time.perf_counter()
    if args.url:
        results = run(scenarios, lambda name: SdkReflexio(args.url, args.api_key), trace=args.trace)
    else:
        with _local_server(args.extractor) as (url, usage_of):
            results = run(scenarios, lambda name: SdkReflexio(url, "", usage_of), trace=args.trace)
    results["meta"] = _meta(args, time.perf_counter() - started)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    _print(results)
    return 0


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenarios", required=True, help="a scenario file or a folder of them")
    parser.add_argument("--out", required=True, help="where to write the metrics JSON")
    parser.add_argument("--extractor", choices=["rules", "llm"], default="rules")
    parser.add_argument("--url", help="drive a running server instead of an in-process one")
    parser.add_argument("--api-key", default="", help="API key for --url")
    parser.add_argument(
        "--trace", action="store_true", help="record every turn (what was served) in the JSON"
    )
    return parser.parse_args(argv)


def _local_server(extractor: str) -> Any:
    from bench.loop_server import local_server

    return local_server(extractor)


def _meta(args: argparse.Namespace, seconds: float) -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return {
        "extractor": args.extractor if not args.url else f"server at {args.url}",
        "scenarios": str(args.scenarios),
        "seconds": round(seconds, 2),
        "commit": commit.stdout.strip() or None,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%d"),
    }


def _print(results: dict[str, Any]) -> None:
    cols = [
        "repeat_mistake_rate",
        "stale_injections",
        "context_precision",
        "tokens_injected_per_turn",
        "llm_calls_per_interaction",
    ]
    rows = [("overall", results["overall"]), *results["scenarios"].items()]
    width = max(len(name) for name, _ in rows)
    print(f"{'scenario':<{width}}  " + "  ".join(f"{c:>24}" for c in cols))
    for name, m in rows:
        cells = [
            "-" if m[c] is None else (f"{m[c]:.3f}" if isinstance(m[c], float) else str(m[c])) for c in cols
        ]
        print(f"{name:<{width}}  " + "  ".join(f"{c:>24}" for c in cells))


if __name__ == "__main__":
    sys.exit(main())
