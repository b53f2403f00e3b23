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
  contains "confirmation");
* format version 2: ``seed`` learnings are added through the public API before the first
  session (users and agent version namespaced like everything else); a turn is *harmed* when a
  ``harms`` key is in the agent's context, whatever was met; a session fails when a turn missed
  a need, or had a ``forbids`` or ``harms`` key in its context, and with ``report_outcomes`` the
  outcome is sent to ``POST /api/session_outcome`` — a server without that route is reported in
  the results (``outcomes_not_reported``) and on stderr, never skipped silently;
* after each session the simulator waits for learning from its last request and then for the
  org's queued aggregation jobs, so "learning runs between sessions" includes Generalize.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
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
    def reflection_action_ids(self) -> set[int]: ...
    def reflection_evidence(self, known: set[int]) -> list[dict[str, Any]]: ...
    def llm_usage(self) -> dict[str, int]: ...
    def seed(self, item: dict[str, Any], *, user_id: str | None, agent_version: str) -> None: ...
    def report_outcome(self, *, user_id: str, session_id: str, outcome: str) -> str | None: ...
    def set_min_users(self, min_users: int) -> None: ...


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
    transfer_opportunities: int = 0
    transfer_hits: int = 0
    harmful_injections: int = 0
    false_retirements: int = 0
    sessions: int = 0
    failed_sessions: int = 0
    outcomes_reported: int = 0
    outcomes_not_reported: int = 0
    harm_served_after: int = 0  # the maximum over harms keys (see Player.harm_sessions)
    judge_calls: int = 0
    judged_sessions: int = 0
    learning_judge_calls: int = 0

    def add(self, other: Tally) -> None:
        for name in self.__dataclass_fields__:
            combine = max if name == "harm_served_after" else int.__add__
            setattr(self, name, combine(getattr(self, name), getattr(other, name)))

    def metrics(self) -> dict[str, float | int | None]:
        return {
            "repeat_mistake_rate": _ratio(self.repeat_misses, self.repeat_opportunities),
            "stale_injections": self.stale_injections,
            "context_precision": _ratio(self.retrieved_matching, self.retrieved, empty=1.0),
            "tokens_injected_per_turn": round(self.injected_chars / 4 / max(self.turns, 1), 2),
            "llm_calls_per_interaction": round(self.llm_calls / max(self.interactions, 1), 4),
            # The learning pipeline's own calls (the judges' cost has its own budget, below).
            "extraction_calls_per_interaction": round(
                (self.llm_calls - self.judge_calls) / max(self.interactions, 1), 4
            ),
            "llm_tokens_per_interaction": round(self.llm_tokens / max(self.interactions, 1), 2),
            "mistakes_first": self.mistakes_first,
            "repeat_opportunities": self.repeat_opportunities,
            "agent_playbook_repeat_mistake_rate": _ratio(
                self.agent_repeat_misses, self.agent_repeat_opportunities
            ),
            "agent_playbook_repeat_opportunities": self.agent_repeat_opportunities,
            "turns": self.turns,
            "interactions": self.interactions,
            "transfer_rate": _ratio(self.transfer_hits, self.transfer_opportunities),
            "transfer_opportunities": self.transfer_opportunities,
            "harmful_injections": self.harmful_injections,
            "harm_served_after": self.harm_served_after,
            "false_retirements": self.false_retirements,
            "sessions": self.sessions,
            "failed_sessions": self.failed_sessions,
            "outcomes_reported": self.outcomes_reported,
            "outcomes_not_reported": self.outcomes_not_reported,
            **self.judge_metrics(),
        }

    def judge_metrics(self) -> dict[str, float | int | None]:
        """LLM judge cost: calls per LLM-judged session, against the budget of 2 per session
        plus 1 per 25 injected learnings (``retrieved`` is what was injected)."""
        budget = 2 * self.judged_sessions + self.retrieved / 25
        return {
            "judge_calls": self.judge_calls,
            "judged_sessions": self.judged_sessions,
            "learning_judge_calls": self.learning_judge_calls,
            "judge_calls_per_judged_session": _ratio(self.judge_calls, self.judged_sessions),
            "learning_judge_calls_per_injected_learning": _ratio(self.learning_judge_calls, self.retrieved),
            "judge_call_budget": round(budget, 2) if self.judged_sessions else None,
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
    """Plays one scenario against Reflexio and keeps its tally.

    ``taught`` maps a key to the users who received its feedback (or expert answer) in an
    earlier session; ``seen`` maps a key to the users it was served to in an earlier session
    (for false retirements); ``harm_sessions`` counts, per harms key, the sessions that still
    served it after the first one it harmed.
    """

    api: Reflexio
    scenario: dict[str, Any]
    namespace: str = ""
    source: str = "bench-loop"
    tally: Tally = field(default_factory=Tally)
    taught: dict[str, set[str]] = field(default_factory=dict)
    seen: dict[str, set[str]] = field(default_factory=dict)
    harm_sessions: dict[str, int] = field(default_factory=dict)
    trace: list[dict[str, Any]] = field(default_factory=list)
    outcome_problem: str | None = None

    @property
    def min_users(self) -> int:
        return int(self.scenario.get("min_users", DEFAULT_MIN_USERS))

    @property
    def version(self) -> str:
        return self.namespace + str(self.scenario["agent_version"])

    def play(self) -> Tally:
        self.api.set_min_users(self.min_users)
        for item in self.scenario.get("seed", []):
            user = item.get("user_id")
            self.api.seed(item, user_id=self.namespace + user if user else None, agent_version=self.version)
        for session in self.scenario["sessions"]:
            newly, served_keys = self.play_session(session)
            for key, users in newly.items():
                self.taught.setdefault(key, set()).update(users)
            for key in served_keys:
                self.seen.setdefault(key, set()).add(session["user_id"])
        self.tally.harm_served_after = max(self.harm_sessions.values(), default=0)
        return self.tally

    def play_session(self, session: dict[str, Any]) -> tuple[dict[str, set[str]], set[str]]:
        user, sid = session["user_id"], self.namespace + session["session_id"]
        context: dict[str, Served] = {}
        newly: dict[str, set[str]] = {}
        last_request = None
        failed = False
        harmed_keys: set[str] = set()
        for turn in session["turns"]:
            last_request, turn_failed, harmed = self.play_turn(user, sid, turn, context)
            failed = failed or turn_failed
            harmed_keys |= harmed
            if turn.get("feedback") or turn.get("expert"):
                for key in turn.get("needs", []):
                    newly.setdefault(key, set()).add(user)
        served_keys = {name for name in self.scenario["learnings"] if self.has(name, context.values())}
        self._count_harm_sessions(served_keys, harmed_keys)
        self.tally.sessions += 1
        self.tally.failed_sessions += int(failed)
        if self.scenario.get("report_outcomes"):
            self._report(user, sid, "failure" if failed else "success")
        self.api.finish_session(user_id=self.namespace + user, session_id=sid, last_request_id=last_request)
        return newly, served_keys

    def _count_harm_sessions(self, served_keys: set[str], harmed_keys: set[str]) -> None:
        """A harms key served in a session after the first session it harmed counts once."""
        for key in served_keys & set(self.harm_sessions):
            self.harm_sessions[key] += 1
        for key in harmed_keys:
            self.harm_sessions.setdefault(key, 0)

    def _report(self, user: str, sid: str, outcome: str) -> None:
        problem = self.api.report_outcome(user_id=self.namespace + user, session_id=sid, outcome=outcome)
        if problem is None:
            self.tally.outcomes_reported += 1
            return
        self.tally.outcomes_not_reported += 1
        if self.outcome_problem is None:
            self.outcome_problem = problem
            print(
                f"warning: {self.scenario['name']}: session outcomes not reported: {problem}", file=sys.stderr
            )

    def play_turn(
        self, user: str, sid: str, turn: dict[str, Any], context: dict[str, Served]
    ) -> tuple[str, bool, set[str]]:
        """Search, answer, publish; returns (request id, turn failed, harms keys it suffered)."""
        ns_user = self.namespace + user
        served = self.api.search(
            query=turn["user"], user_id=ns_user, session_id=sid, agent_version=self.version
        )
        for item in served:
            context[f"{item.kind}:{item.learning_id}"] = item
        self.score(user, turn, served, list(context.values()))
        met = all(self.has(key, context.values()) for key in turn.get("needs", []))
        harmed = {key for key in turn.get("harms", []) if self.has(key, context.values())}
        stale = any(self.has(key, context.values()) for key in turn.get("forbids", []))
        self.trace.append(
            {
                "session": sid,
                "user": turn["user"],
                "needs": turn.get("needs", []),
                "met": met,
                "harmed": sorted(harmed),
                "served": [f"{s.kind}: {s.text}" for s in served],
            }
        )
        if harmed:
            answer = turn.get("agent_harmed") or turn["agent_without"]
        else:
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
        request_id = self.api.publish(
            user_id=ns_user, session_id=sid, agent_version=self.version, source=self.source, turns=turns
        )
        return request_id, (not met) or stale or bool(harmed), harmed

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
            self._score_need(user, name, keys[name], missed=not any(matches(s, keys[name]) for s in context))
        if any(matches(item, keys[k]) for k in turn.get("harms", []) if k in keys for item in context):
            t.harmful_injections += 1
        for item in served:
            serves_need = any(matches(item, keys[k]) for k in needs)
            t.retrieved += 1
            t.retrieved_matching += int(serves_need)
            t.injected_chars += len(item.text)
            if not serves_need and any(matches(item, keys[k]) for k in forbids):
                t.stale_injections += 1

    def _score_need(self, user: str, name: str, key: dict[str, Any], *, missed: bool) -> None:
        t = self.tally
        agent_key = key["kind"] == "agent_playbook"
        audience = self.taught.get(name, set())
        taught = bool(audience) if agent_key else user in audience
        if not taught:
            t.mistakes_first += int(missed)
        elif agent_key:
            t.agent_repeat_opportunities += 1
            t.agent_repeat_misses += int(missed)
        else:
            t.repeat_opportunities += 1
            t.repeat_misses += int(missed)
        if agent_key and user not in audience and len(audience) >= self.min_users:
            t.transfer_opportunities += 1
            t.transfer_hits += int(not missed)
        seen = self.seen.get(name, set())
        was_served = bool(seen) if agent_key else user in seen
        if was_served and missed and name not in self._named_stale():
            t.false_retirements += 1

    def _named_stale(self) -> set[str]:
        """Keys some turn of the scenario names in ``forbids`` or ``harms``."""
        named: set[str] = set()
        for session in self.scenario["sessions"]:
            for turn in session["turns"]:
                named.update(turn.get("forbids", []), turn.get("harms", []))
        return named


def load_scenarios(path: Path) -> list[dict[str, Any]]:
    """One scenario file, every ``*.json`` in a folder, or the files a pattern names
    (``bench/scenarios/standing-*.json``), sorted."""
    if "*" in path.name:
        files = sorted(path.parent.glob(path.name))
    else:
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    return [json.loads(f.read_text()) for f in files]


# -- driving Reflexio through the SDK -------------------------------------------------------


class SdkReflexio:
    """The simulator's view of Reflexio, over the real ``ReflexioClient``."""

    def __init__(self, url: str, api_key: str = "", org_usage: Any = None) -> None:
        from reflexio import ReflexioClient

        self.client = ReflexioClient(api_key=api_key, url_endpoint=url)
        self._usage = org_usage
        self._url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

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
        _wait_jobs(self.client, EVALUATION_TASK)
        if last_request_id:
            _wait_done(self.client, last_request_id)
        _wait_jobs(self.client, AGGREGATION_TASK)
        _wait_jobs(self.client, REVISION_TASK)

    def reflection_action_ids(self) -> set[int]:
        """Ids of every reflection action so far."""
        return {a.action_id for a in self.client.get_reflection_actions(limit=1000).actions}

    def reflection_evidence(self, known: set[int]) -> list[dict[str, Any]]:
        """Each reflection action not in ``known``, with its learning's impact now (the worked example)."""
        out = []
        for action in self.client.get_reflection_actions(limit=1000).actions:
            if action.action_id in known:
                continue
            impact = self.client.get_learning_impact(action.kind, [action.learning_id]).impacts
            out.append(
                {
                    **action.model_dump(mode="json", exclude_none=True),
                    "impact": impact[0].model_dump(mode="json", exclude_none=True) if impact else None,
                    "verdicts": self._verdicts_on(action.kind, action.learning_id),
                }
            )
        return out

    def _verdicts_on(self, kind: str, learning_id: str) -> list[dict[str, Any]]:
        """The judge's verdicts on one learning in the sessions it was injected into, oldest first."""
        import httpx

        response = httpx.post(
            f"{self._url}/api/get_retrieved_learning_evaluation_results",
            json={"limit": 1000},
            headers=self._headers,
            timeout=30,
        )
        response.raise_for_status()
        keep = ("session_id", "user_id", "is_relevant", "impact", "impact_reason", "diagnosis")
        found = [
            {k: v.get(k) for k in keep}
            for v in response.json().get("results", [])
            if (v.get("kind"), v.get("learning_id")) == (kind, learning_id)
        ]
        return list(reversed(found))

    def llm_usage(self) -> dict[str, int]:
        return dict(self._usage()) if self._usage else {}

    def configure(self, *, holdout_rate: float | None, judge_sampling: float | None) -> None:
        """Set the org's holdout rate and LLM judge sampling rate, when asked."""
        update: dict[str, Any] = {}
        if holdout_rate is not None:
            update["holdout_rate"] = holdout_rate
        if judge_sampling is not None:
            success = self.client.get_config().model_dump(mode="json").get("agent_success_config") or {}
            update["agent_success_config"] = {**success, "sampling_rate": judge_sampling}
        if update:
            self.client.update_config(update)

    def seed(self, item: dict[str, Any], *, user_id: str | None, agent_version: str) -> None:
        """Add a ``seed`` learning through the public API, as a team or an old system would."""
        kind = item["kind"]
        if kind == "profile":
            self.client.add_user_profile(
                [{"profile_id": "", "user_id": user_id or "", "content": item["content"],
                  "last_modified_timestamp": int(time.time()), "generated_from_request_id": "seed"}]
            )  # fmt: skip
        elif kind == "user_playbook":
            self.client.add_user_playbook(
                [{"user_id": user_id, "agent_version": agent_version, "request_id": "seed",
                  "content": item["content"], "trigger": item.get("trigger")}]
            )  # fmt: skip
        else:
            self.client.add_agent_playbooks(
                [{"agent_version": agent_version, "content": item["content"], "trigger": item.get("trigger"),
                  "playbook_status": item.get("status", "pending")}]
            )  # fmt: skip

    def report_outcome(self, *, user_id: str, session_id: str, outcome: str) -> str | None:
        """Send a session outcome; returns why it could not be, or None when it was recorded."""
        import httpx

        body = {
            "session_id": session_id,
            "user_id": user_id,
            "outcome": outcome,
            "occurred_at": int(time.time()),
        }
        response = httpx.post(
            f"{self._url}/api/session_outcome", json=body, headers=self._headers, timeout=30
        )
        if response.status_code == 404 and response.json().get("detail", response.text) in (
            "Not Found",
            None,
        ):
            return "the server has no POST /api/session_outcome route (404 Not Found)"
        if response.status_code >= 400:
            return f"POST /api/session_outcome answered {response.status_code}: {response.text[:200]}"
        return None

    def set_min_users(self, min_users: int) -> None:
        """Make the org generalise a lesson once ``min_users`` distinct users taught it, with no
        debounce (``delay_seconds`` 0): the simulator waits for aggregation between sessions,
        and a debounce would only make it wait longer, not change what is learned."""
        config = self.client.get_config().model_dump(mode="json")
        extractor = config.get("user_playbook_extractor_config") or {}
        aggregation = extractor.get("aggregation_config") or {}
        wanted = {"min_users": min_users, "delay_seconds": 0.0}
        if all(aggregation.get(k) == v for k, v in wanted.items()):
            return
        if "min_users" not in aggregation:
            if min_users == DEFAULT_MIN_USERS:  # an older server: its behaviour is the default
                return
            raise RuntimeError(
                f"this server has no aggregation_config.min_users; cannot set it to {min_users}"
            )
        aggregation.update({k: v for k, v in wanted.items() if k in aggregation})
        self.client.set_config(config)


def _rule_text(p: Any) -> str:
    return "\n".join(x for x in (p.trigger, p.content) if x)


#: The scenario format's default for ``min_users``, which is also the server's.
DEFAULT_MIN_USERS = 2

#: The job task that turns user playbooks into agent playbooks (service.aggregation).
AGGREGATION_TASK = "aggregate"
#: The session-idle job that judges a finished session and reflects on its learnings.
EVALUATION_TASK = "evaluate_session"
#: The job that asks a model for a revision of a hurting agent playbook.
REVISION_TASK = "propose_revision"


def _wait_jobs(client: Any, task: str, timeout: float = 120.0) -> None:
    """Wait until the org has no queued or running job of ``task`` (debounce included)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = [
            job
            for status in ("queued", "running")
            for job in client.list_jobs(status=status, task=task, limit=10).jobs
        ]
        if not busy:
            return
        time.sleep(0.05)
    raise TimeoutError(f"{task} jobs did not finish within {timeout} s")


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
        actions_before = api.reflection_action_ids()
        player = Player(api, scenario, namespace=f"{run_id}:{scenario['name']}:")
        tally = player.play()
        actions = api.reflection_evidence(actions_before)
        after = api.llm_usage()
        spent = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        tally.llm_calls, tally.llm_tokens = spent.get("calls", 0), spent.get("tokens", 0)
        tally.judge_calls = spent.get("judge_calls", 0)
        tally.judged_sessions = spent.get("judged_sessions", 0)
        tally.learning_judge_calls = spent.get("learning_judge_calls", 0)
        per[scenario["name"]] = tally.metrics()
        per[scenario["name"]]["harm_served_after_by_key"] = dict(player.harm_sessions)
        per[scenario["name"]]["reflection_actions"] = actions
        if player.outcome_problem:
            per[scenario["name"]]["outcomes_problem"] = player.outcome_problem
        if trace:
            per[scenario["name"]]["trace"] = player.trace
        total.add(tally)
    return {"overall": total.metrics(), "scenarios": per}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    scenarios = load_scenarios(Path(args.scenarios))
    started = time.perf_counter()

    def configured(api: SdkReflexio) -> SdkReflexio:
        api.configure(holdout_rate=args.holdout_rate, judge_sampling=args.judge_sampling)
        return api

    if args.url:
        results = run(
            scenarios, lambda name: configured(SdkReflexio(args.url, args.api_key)), trace=args.trace
        )
    else:
        with _local_server(args.extractor) as (url, usage_of):
            results = run(
                scenarios, lambda name: configured(SdkReflexio(url, "", usage_of)), trace=args.trace
            )
    results["meta"] = _meta(args, time.perf_counter() - started)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    _print(results)
    return 0


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenarios", required=True, help="a scenario file, a folder of them or a glob")
    parser.add_argument("--out", required=True, help="where to write the metrics JSON")
    parser.add_argument("--extractor", choices=["rules", "llm"], default="rules")
    parser.add_argument("--url", help="drive a running server instead of an in-process one")
    parser.add_argument("--api-key", default="", help="API key for --url")
    parser.add_argument(
        "--trace", action="store_true", help="record every turn (what was served) in the JSON"
    )
    parser.add_argument(
        "--holdout-rate",
        type=float,
        default=0.0,
        help="the org's per-learning holdout rate (default 0: the loop measures learning and "
        "reflection with every eligible learning served; pass the product default, 0.05, to see "
        "what the holdout costs)",
    )
    parser.add_argument(
        "--judge-sampling",
        type=float,
        default=None,
        help="share of sessions the LLM judges (agent_success_config.sampling_rate; default: the "
        "org's, 0.05); 1.0 measures the judges' cost on every session",
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
        "holdout_rate": args.holdout_rate,
        "judge_sampling": args.judge_sampling,
        "scenarios": str(args.scenarios),
        "seconds": round(seconds, 2),
        "commit": commit.stdout.strip() or None,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "date": time.strftime("%Y-%m-%d"),
        # A shared machine slows the run (``seconds``), not its metrics: they are counts.
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }


def _print(results: dict[str, Any]) -> None:
    cols = [
        "repeat_mistake_rate",
        "agent_playbook_repeat_mistake_rate",
        "transfer_rate",
        "stale_injections",
        "context_precision",
        "harmful_injections",
        "harm_served_after",
        "false_retirements",
        "llm_calls_per_interaction",
        "extraction_calls_per_interaction",
        "judge_calls_per_judged_session",
    ]
    rows = [("overall", results["overall"]), *results["scenarios"].items()]
    width = max(len(name) for name, _ in rows)
    print(f"{'scenario':<{width}}  " + "  ".join(f"{c[:14]:>14}" for c in cols))
    for name, m in rows:
        cells = [
            "-" if m[c] is None else (f"{m[c]:.3f}" if isinstance(m[c], float) else str(m[c])) for c in cols
        ]
        print(f"{name:<{width}}  " + "  ".join(f"{c:>14}" for c in cells))


if __name__ == "__main__":
    sys.exit(main())
