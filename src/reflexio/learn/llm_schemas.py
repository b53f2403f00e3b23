"""The shapes LLM answers must have, one pydantic model per prompt.

Live and scripted models are validated against the same classes, so a scripted test cannot
pass with an answer a real model would be refused for. Field order is the order a model
writes them: a playbook's rationale comes before its instruction, so the instruction is
conditioned on the reason (as Reflexio's prompts found). Unknown keys are ignored rather than
refused: a model adding a harmless field should not cost a repair call.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from reflexio.models.entities import BlockingIssueKind

__all__ = [
    "AggregateOutput",
    "AggregatedPlaybook",
    "BlockingIssueItem",
    "DiagnosisItem",
    "ExtractOutput",
    "GateOutput",
    "LearningVerdictItem",
    "LearningVerdictsOutput",
    "MergeDecisionItem",
    "MergeOutput",
    "PlaybookItem",
    "ProfileItem",
    "RevisionOutput",
    "RewriteOutput",
    "SessionEvaluationOutput",
    "SessionJudgementOutput",
    "ShadowComparisonOutput",
    "ShadowVerdictItem",
]

TTL = Literal["one_day", "one_week", "one_month", "one_quarter", "one_year", "infinity"]
#: How an extracted item relates to the learnings already known about the user.
Relation = Literal["new", "same", "refines", "contradicts"]
Track = Literal["correction", "tool_failure", "recipe", "expert"]


class GateOutput(BaseModel):
    """Whether a window holds anything worth an extraction call."""

    learnable: bool
    reason: str = ""


class ProfileItem(BaseModel):
    """A fact or preference about the user."""

    content: str = Field(min_length=1, max_length=2000)
    type: Literal["fact", "preference"] = "fact"
    ttl: TTL = "infinity"
    features: dict[str, str] = Field(default_factory=dict)
    evidence: list[int] = Field(default_factory=list)
    relation: Relation = "new"
    existing_id: int | None = None
    #: Applies to every answer for the user (language, units, time zone, length, tone,
    #: format, accessibility): served whatever the query (extract prompt 1.1).
    standing: bool = False


class BlockingIssueItem(BaseModel):
    """Why the agent could not do what the user asked."""

    kind: BlockingIssueKind
    details: str = Field(min_length=1)


class PlaybookItem(BaseModel):
    """A behaviour rule for the agent, from one of the four tracks."""

    track: Track
    rationale: str = ""
    trigger: str = Field(min_length=1, max_length=1000)
    content: str = Field(min_length=1, max_length=4000)
    pitfall: str | None = None
    blocking_issue: BlockingIssueItem | None = None
    evidence: list[int] = Field(default_factory=list)
    relation: Relation = "new"
    existing_id: int | None = None
    standing: bool = False


class ExtractOutput(BaseModel):
    """Everything one window teaches (either list may be empty)."""

    profiles: list[ProfileItem] = Field(default_factory=list)
    playbooks: list[PlaybookItem] = Field(default_factory=list)


class MergeDecisionItem(BaseModel):
    """The verdict on one new learning (``item`` is its number in the prompt)."""

    item: int
    verdict: Literal["add", "update", "supersede", "keep"]
    existing_id: int | None = None
    content: str | None = None
    reason: str = ""


class MergeOutput(BaseModel):
    """One decision per new learning."""

    decisions: list[MergeDecisionItem]


class SessionEvaluationOutput(BaseModel):
    """Did the agent succeed in a session (Reflexio's agent-success schema)."""

    is_success: bool
    failure_type: (
        Literal["system_error", "missing_tool", "wrong_tool", "insufficient_info_from_tool", "wrong_answer"]
        | None
    ) = None
    failure_reason: str | None = None
    is_escalated: bool = False
    number_of_correction_per_session: int = Field(default=0, ge=0)


class DiagnosisItem(BaseModel):
    """Why an injected playbook helped or hurt (Reflexio's diagnosis)."""

    category: Literal["content_defect", "application_failure", "external_failure", "no_issue", "unknown"]
    reason: str = Field(min_length=1, max_length=4000)
    evidence_interaction_ids: list[int] = Field(default_factory=list, max_length=20)


class LearningVerdictItem(BaseModel):
    """Relevance and impact of one learning given to one turn, by its ``learning_ref``."""

    learning_ref: str = Field(min_length=1, max_length=2100)
    is_relevant: bool
    relevance_reason: str = Field(default="", max_length=2000)
    impact: Literal["positive", "negative", "neutral"]
    impact_reason: str = Field(default="", max_length=2000)
    diagnosis: DiagnosisItem | None = None


class LearningVerdictsOutput(BaseModel):
    """One verdict per learning listed in the prompt."""

    verdicts: list[LearningVerdictItem]


class SessionJudgementOutput(SessionEvaluationOutput):
    """The session verdict and, in the same answer, one verdict per learning it was given.

    One call judges both (``evaluate_session`` 1.1), so a judged session costs one call up to
    ``attribution.CHUNK_SIZE`` learnings; a version 1.0 answer (no ``verdicts``) still fits.
    """

    verdicts: list[LearningVerdictItem] = Field(default_factory=list)


class ShadowVerdictItem(BaseModel):
    """Which of two answers to one turn is better (Reflexio's shadow comparison output)."""

    interaction_id: int
    better_request: Literal["1", "2", "tie"]
    is_significantly_better: bool = False
    comparison_reason: str | None = Field(default=None, max_length=2000)


class ShadowComparisonOutput(BaseModel):
    """One comparison per turn listed in the prompt."""

    comparisons: list[ShadowVerdictItem]


class RevisionOutput(BaseModel):
    """A rewritten playbook that no longer fails the way its failure cases show (or none)."""

    trigger: str | None = Field(default=None, max_length=1000)
    content: str | None = Field(default=None, max_length=4000)
    rationale: str = Field(default="", max_length=2000)


class RewriteOutput(BaseModel):
    """A standalone search query (validated further by ``learn.reformulate``)."""

    query: str = Field(min_length=1, max_length=500)


class AggregatedPlaybook(BaseModel):
    """One agent-wide rule generalised from a cluster of users' playbooks.

    ``member_ids`` cites the user playbooks it generalises (numbers shown in the prompt);
    members it leaves out (a minority that says something else) are simply not cited.
    """

    rationale: str = ""
    trigger: str = Field(min_length=1, max_length=1000)
    content: str = Field(min_length=1, max_length=4000)
    pitfall: str | None = None
    blocking_issue: BlockingIssueItem | None = None
    member_ids: list[int] = Field(min_length=1)


class AggregateOutput(BaseModel):
    """The cluster's generalised rule, or null when its members share no rule for everyone."""

    playbook: AggregatedPlaybook | None = None
