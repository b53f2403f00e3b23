"""Judging a finished session: its success, each learning it was given, each shadow answer.

The session-idle job (``EVALUATE_SESSION``) runs ``judge`` and writes the result with ``write``
inside its effects transaction, so a worker killed mid-run leaves nothing behind and the next
worker's run is the one that counts: one verdict per session, one per injected learning, one
per shadow turn, however often the job was attempted. Grading on demand runs the same two
steps inside an HTTP request.

What decides each verdict:

* **Session.** A reported outcome (``POST /api/session_outcome``) outranks any judge: its
  success or failure is the session's, and the offline judge's opinion (corrections,
  escalation) is kept beside it; no model is paid to second-guess it. Without one, the org's
  LLM judges the share of sessions ``agent_success_config.sampling_rate`` picks (hashed, as
  Reflexio), and the offline judge the others. No ``agent_success_config``
  means evaluation is off for the org: nothing is judged.
* **Injected learnings.** The LLM judge for the share ``retrieved_learning_sampling_rate``
  picks (it inherits ``sampling_rate`` when unset), the offline judge otherwise. When the
  model judges the session too, its one call also judges the first 25 learnings; only the
  learnings beyond them cost further calls (25 per call).
* **Shadow turns** (only with ``shadow_mode_enabled``): the LLM judge when the session was
  picked for it, the offline judge otherwise.

A model that fails leaves its part to the offline judge, so a provider outage never loses a
session's verdicts.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reflexio.errors import ReflexioError
from reflexio.filters import InteractionFilter, LearningFilter, RequestFilter
from reflexio.learn import attribution, evaluate, shadow
from reflexio.learn.llm_extract import is_user
from reflexio.learn.usage import metered
from reflexio.llm import LLM
from reflexio.models.org_config import Config
from reflexio.records import EvaluationRecord, InteractionRecord, Learning, LearningKind, OutcomeRecord
from reflexio.service.core import Core
from reflexio.service.learners import org_llm
from reflexio.storage import Storage

__all__ = ["KINDS", "Judged", "judge", "learnings_of", "write"]

log = logging.getLogger(__name__)

#: The evaluation kinds one judgement replaces.
KINDS = ("session", "learning", "shadow")


@dataclass(slots=True)
class Judged:
    """Everything one judgement of a session produced (not yet stored)."""

    org_id: str
    user_id: str
    session_id: str
    agent_version: str
    session: EvaluationRecord | None
    learnings: list[EvaluationRecord] = field(default_factory=list)
    shadows: list[EvaluationRecord] = field(default_factory=list)
    verdicts: list[attribution.Verdict] = field(default_factory=list)
    retrieved_learning_status: str = "not_applicable"

    def record(
        self,
        kind: str,
        result: dict[str, Any],
        *,
        learning: tuple[str, str] | None = None,
        interaction_id: int | None = None,
    ) -> EvaluationRecord:
        """A verdict of this session, ready to store."""
        return EvaluationRecord(
            org_id=self.org_id,
            kind=kind,
            result=result,
            user_id=self.user_id,
            session_id=self.session_id,
            agent_version=self.agent_version,
            learning_kind=learning[0] if learning else None,
            learning_id=learning[1] if learning else None,
            interaction_id=interaction_id,
        )

    @property
    def rows(self) -> list[EvaluationRecord]:
        """Every record to store, session first."""
        return ([self.session] if self.session else []) + self.learnings + self.shadows


def learnings_of(
    storage: Storage, org_id: str, refs: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], Learning]:
    """The learnings that (kind, wire id) refs name, in any status (deleted ones are absent)."""
    numeric = [int(i) for k, i in refs if k != "profile" and i.isdigit()]
    profiles = [i for k, i in refs if k == "profile"]
    rows: list[Learning] = []
    if numeric:
        rows += storage.get_learnings(org_id, LearningFilter(ids=tuple(numeric)))
    if profiles:
        rows += storage.get_learnings(
            org_id, LearningFilter(kinds=(LearningKind.PROFILE,), profile_ids=tuple(profiles))
        )
    return {(row.kind.value, row.wire_id): row for row in rows}


def _latest_outcome(storage: Storage, org_id: str, user_id: str, session_id: str) -> OutcomeRecord | None:
    found = storage.list_outcomes(org_id, session_ids=[session_id], user_id=user_id, limit=1)
    return found[0] if found and found[0].outcome != "unknown" else None


def _judged_together(
    turns: list[InteractionRecord], found: Mapping[tuple[str, str], Learning], llm: LLM, config: Config
) -> tuple[dict[str, Any], Mapping[str, Any] | None]:
    """One call for the session and its first learnings; on failure, the rules' session verdict
    and ``None`` (its learnings go to the offline judge: the provider just failed)."""
    try:
        verdict, first = attribution.judge_session_with_learnings(llm, config, turns, found)
    except ReflexioError as exc:
        log.warning("LLM session evaluation failed, judging by rules: %s", exc)
        return evaluate.judge_turns(turns), None
    return {**verdict.model_dump(mode="json"), "evaluation_name": "llm"}, first


def _session_result(
    turns: list[InteractionRecord], judged: Mapping[str, Any], outcome: OutcomeRecord | None
) -> dict[str, Any]:
    result = dict(judged)
    result["user_turns"] = sum(1 for t in turns if is_user(t))
    if outcome is not None:
        result["judged_success"] = judged["is_success"]
        result["judged_by"] = judged["evaluation_name"]
        result["is_success"] = outcome.outcome == "success"
        result["evaluation_name"] = "outcome"
        result["outcome_revision"] = outcome.revision
        if result["is_success"]:
            result["failure_type"] = result["failure_reason"] = None
        elif judged["is_success"]:
            result["failure_type"] = "wrong_answer"
            result["failure_reason"] = (
                f"reported as a failure{f' ({outcome.label})' if outcome.label else ''}"
            )
    return result


def _learning_verdicts(
    turns: list[InteractionRecord],
    found: Mapping[tuple[str, str], Learning],
    llm: LLM | None,
    config: Config,
    session: Mapping[str, Any],
    first: Mapping[str, Any] | None,
) -> tuple[list[attribution.Verdict], str]:
    success = bool(session["is_success"])
    try:
        wanted = attribution.injections(turns)
    except attribution.TooManyLearnings as exc:
        log.warning("%s", exc)
        return [], "failed"
    if not wanted:
        return [], "not_applicable"
    if llm is not None:
        try:
            verdicts = attribution.judge_with_llm(llm, config, turns, found, session, first=first)
            return verdicts, "complete"
        except ReflexioError as exc:
            log.warning("LLM learning judgement failed, judging by evidence: %s", exc)
    return attribution.judge_offline(turns, found, success, wanted), "complete"


def _shadow_verdicts(
    turns: list[InteractionRecord], llm: LLM | None, config: Config
) -> list[shadow.ShadowVerdict]:
    if not config.shadow_mode_enabled or not shadow.shadow_turns(turns):
        return []
    if llm is not None:
        try:
            return shadow.compare_with_llm(llm, config, turns)
        except ReflexioError as exc:
            log.warning("LLM shadow comparison failed, comparing by evidence: %s", exc)
    return shadow.compare_offline(turns)


def _regular_vs_shadow(verdicts: Sequence[shadow.ShadowVerdict]) -> str | None:
    """Reflexio's session-level comparison from the per-turn verdicts."""
    if not verdicts:
        return None
    wins = sum(v.winner == "regular" for v in verdicts)
    losses = sum(v.winner == "shadow" for v in verdicts)
    strong = any(v.is_significantly_better for v in verdicts if v.winner != "tie")
    if wins == losses:
        return "tied"
    side = "regular" if wins > losses else "shadow"
    return f"{side}_is_better" if strong else f"{side}_is_slightly_better"


def _picked(org_id: str, user_id: str, session_id: str, rate: float | None) -> bool:
    return rate is not None and evaluate.sampled(org_id, user_id, session_id, rate)


def judge(
    core: Core,
    org_id: str,
    user_id: str,
    session_id: str,
    *,
    job_id: int | None = None,
    force_llm: bool = False,
) -> Judged:
    """Judge a session from its stored turns (no write; see ``write``).

    Args:
        force_llm: Use the org's LLM (when it has one) whatever the sampling says (grading
            on demand).
    """
    storage, config = core.storage, core.org_config(org_id)
    turns = storage.list_interactions(org_id, InteractionFilter(user_id=user_id, session_id=session_id))
    requests = storage.list_requests(org_id, RequestFilter(session_id=session_id, user_id=user_id), limit=1)
    agent_version = requests[0].agent_version if requests else ""
    source = requests[0].source if requests else ""
    out = Judged(org_id, user_id, session_id, agent_version, None)
    success = config.agent_success_config
    if success is None or not turns:
        return out
    if success.request_sources_enabled and source not in success.request_sources_enabled:
        return out
    raw = org_llm(core, config)
    llm = metered(raw, storage, org_id, job_id) if raw is not None else None
    rl_rate = success.retrieved_learning_sampling_rate
    picked_llm = llm if (force_llm or _picked(org_id, user_id, session_id, success.sampling_rate)) else None
    rl_picked = _picked(
        org_id, user_id, session_id, rl_rate if rl_rate is not None else success.sampling_rate
    )
    rl_llm = llm if (force_llm or rl_picked) else None
    outcome = _latest_outcome(storage, org_id, user_id, session_id)
    found = learnings_of(storage, org_id, [(i.kind, i.learning_id) for i in _safe_injections(turns)])
    # A reported outcome already decides success: the model is not paid to second-guess it
    # (the evidence rules still count corrections and escalations).
    session_llm = None if outcome is not None else picked_llm
    first: Mapping[str, Any] | None = None
    if session_llm is not None and rl_llm is not None and found:
        judged, first = _judged_together(turns, found, session_llm, config)
        rl_llm = rl_llm if first is not None else None
    else:
        judged = evaluate.judged(turns, session_llm, config)
    result = _session_result(turns, judged, outcome)
    verdicts, status = _learning_verdicts(turns, found, rl_llm, config, result, first)
    shadows = _shadow_verdicts(turns, picked_llm, config)
    result["regular_vs_shadow"] = _regular_vs_shadow(shadows)
    result.update(
        {
            "user_id": user_id,
            "session_id": session_id,
            "agent_version": agent_version,
            "source": source,
            "last_interaction_id": max(t.id for t in turns),  # what a later turn is newer than
        }
    )
    out.session = out.record("session", result)
    times = {t.id: t.created_at for t in turns}
    out.learnings = [
        out.record(
            "learning",
            {**v.result(), "interaction_created_at": times.get(v.injection.interaction_id)},
            learning=(v.injection.kind, v.injection.learning_id),
            interaction_id=v.injection.interaction_id,
        )
        for v in verdicts
    ]
    version = config.shadow_comparison_judge_prompt_version
    out.shadows = [
        out.record("shadow", {**v.result(), "judge_prompt_version": version}, interaction_id=v.interaction_id)
        for v in shadows
    ]
    out.verdicts, out.retrieved_learning_status = verdicts, status
    return out


def _safe_injections(turns: Sequence[InteractionRecord]) -> list[attribution.Injection]:
    try:
        return attribution.injections(turns)
    except attribution.TooManyLearnings:
        return []


def write(tx: Storage, judged: Judged) -> list[EvaluationRecord]:
    """Store a judgement, replacing the session's earlier verdicts (inside the caller's tx)."""
    return tx.replace_evaluations(judged.org_id, judged.user_id, judged.session_id, KINDS, judged.rows)
