"""Wire shapes of evaluation: session outcomes, shadow comparisons, the overview, grading on
demand, application stats, retrieval experiments, and (our additions) learning impact and the
reflection actions taken on it.

Field names, defaults and limits are Reflexio 0.2.32's. Our additions are marked: a learning's
``impact`` (exposures, outcome counts and intervals), ``reflection_actions`` and the optional
``user_id`` of an outcome (a session id alone is ambiguous when two users share it).
"""

import json
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from reflexio.models.entities import EffectInterval, LearningImpactView
from reflexio.models.fields import (
    CapturesUnknownFields,
    Epoch,
    Id,
    Name,
    NonEmptyStr,
    PageSize,
    RequestModel,
    RowId,
    SessionOutcomeSource,
    WireModel,
)
from reflexio.models.org_config import RetrievalExperimentRecord

__all__ = [
    "ContextTile",
    "EffectInterval",
    "GetEvaluationOverviewRequest",
    "GetEvaluationOverviewResponse",
    "GetLearningImpactRequest",
    "GetLearningImpactResponse",
    "GetPlaybookApplicationStatsRequest",
    "GetPlaybookApplicationStatsResponse",
    "GetRecentShadowComparisonsResponse",
    "GetSessionOutcomesRequest",
    "GetSessionOutcomesResponse",
    "GradeOnDemandRequest",
    "GradeOnDemandResponse",
    "HeroBlock",
    "HeroBucket",
    "LearningImpactView",
    "ListReflectionActionsRequest",
    "ListReflectionActionsResponse",
    "NumberWithDelta",
    "PercentWithDelta",
    "PlaybookApplicationStat",
    "RecentResult",
    "ReflectionActionView",
    "RetrievalExperimentArmMetrics",
    "RetrievalExperimentListResponse",
    "RetrievalExperimentResultsResponse",
    "RevertReflectionActionRequest",
    "RevertReflectionActionResponse",
    "RuleAttributionRow",
    "ScoreDistribution",
    "SessionOutcomeKind",
    "SessionOutcomeRecord",
    "SetSessionOutcomeRequest",
    "SetSessionOutcomeResponse",
    "ShadowComparisonOutput",
    "ShadowComparisonVerdict",
    "ShadowWinRateTrend",
    "ShadowWinRateTrendPoint",
    "ShadowWinRateTrendWindowTotal",
    "SourceSet",
    "SourceSetRow",
    "StartRetrievalExperimentRequest",
    "StopRetrievalExperimentRequest",
]

#: Most bytes of outcome metadata (compact JSON), as Reflexio.
METADATA_BYTES = 16 * 1024


# -- session outcomes ----------------------------------------------------------------------------


class SessionOutcomeKind(StrEnum):
    """What the agent's own systems say about a session."""

    SUCCESS = "success"
    FAILURE = "failure"
    UNKNOWN = "unknown"


class SetSessionOutcomeRequest(CapturesUnknownFields):
    """A session's outcome from the agent's systems (ticket closed, escalated...).

    A reported outcome outranks any judge. Reporting again records a new revision; the latest
    wins and the earlier ones stay in the history.
    """

    session_id: Id
    outcome: SessionOutcomeKind
    occurred_at: Epoch
    label: NonEmptyStr | None = Field(default=None, max_length=128)
    value: float | None = Field(default=None, allow_inf_nan=False)
    metadata: dict[str, Any] | None = None
    user_id: Id | None = None  # addition: disambiguates a shared id

    @field_validator("label")
    @classmethod
    def _label_not_blank(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("metadata")
    @classmethod
    def _metadata_bounded(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        try:
            encoded = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
        except (TypeError, ValueError) as exc:
            raise ValueError("metadata must contain only valid JSON values") from exc
        if len(encoded) > METADATA_BYTES:
            raise ValueError(f"metadata must encode to at most {METADATA_BYTES} bytes")
        return value


class SetSessionOutcomeResponse(WireModel):
    """The recorded revision (``outcome_revision`` counts from 1 per session)."""

    success: bool
    recorded: bool = False
    reason: str | None = None
    message: str = ""
    user_id: str | None = None
    source: str | None = None
    outcome_id: str | None = None
    outcome_revision: int | None = Field(default=None, ge=1)
    outcome_contract_digest: str | None = None
    finalized_trajectory_digest: str | None = None


class SessionOutcomeRecord(WireModel):
    """One revision of a session's outcome; ``superseded`` marks revisions a later one replaced."""

    outcome_id: str | None = None
    outcome_revision: int | None = Field(default=None, ge=1)
    user_id: str
    session_id: str
    outcome: SessionOutcomeKind
    occurred_at: int = Field(ge=0)
    source: str = "reported"
    label: str | None = None
    value: float | None = None
    metadata: dict[str, Any] | None = None
    outcome_contract_digest: str | None = None
    finalized_trajectory_digest: str | None = None
    created_at: int = Field(ge=0)
    superseded: bool = False  # addition


class GetSessionOutcomesRequest(CapturesUnknownFields):
    """Outcomes by session, user, label or time (epoch seconds of ``occurred_at``)."""

    session_ids: list[Id] | None = Field(default=None, max_length=100)
    user_id: Id | None = None
    source: SessionOutcomeSource | None = None
    outcome: SessionOutcomeKind | None = None
    label: str | None = Field(default=None, max_length=128)
    start_time: Epoch | None = None
    end_time: Epoch | None = None
    top_k: PageSize = 100
    offset: int = Field(default=0, ge=0, le=1_000_000)
    include_history: bool = False  # addition: every revision, not only the latest

    @model_validator(mode="after")
    def _window(self) -> Self:
        if self.start_time is not None and self.end_time is not None and self.start_time > self.end_time:
            raise ValueError("start_time must be less than or equal to end_time")
        if self.session_ids:
            self.session_ids = list(dict.fromkeys(self.session_ids))
        return self


class GetSessionOutcomesResponse(WireModel):
    """The latest outcome of each matching session (every revision with ``include_history``)."""

    success: bool
    session_outcomes: list[SessionOutcomeRecord] = Field(default_factory=list)
    message: str = ""


# -- shadow comparisons --------------------------------------------------------------------------


class ShadowComparisonOutput(WireModel):
    """A judge's verdict on one turn: which request (shown blind) is better."""

    better_request: Literal["1", "2", "tie"]
    is_significantly_better: bool
    comparison_reason: str | None = None


class ShadowComparisonVerdict(WireModel):
    """One turn's stored comparison; ``reflexio_is_request_1`` unscrambles the positions."""

    verdict_id: int
    interaction_id: str
    session_id: str
    agent_version: str
    reflexio_is_request_1: bool
    output: ShadowComparisonOutput
    judge_prompt_version: NonEmptyStr
    created_at: int
    winner: Literal["regular", "shadow", "tie"] = "tie"  # addition: the side the verdict favours


class GetRecentShadowComparisonsResponse(WireModel):
    """Recent verdicts, newest first (``limit`` 10 by default, at most 100)."""

    verdicts: list[ShadowComparisonVerdict] = Field(default_factory=list)


# -- overview ------------------------------------------------------------------------------------


class SourceSet(RequestModel):
    """A labelled group of publish sources compared in the overview."""

    label: NonEmptyStr = Field(max_length=128)
    sources: list[NonEmptyStr] = Field(min_length=1, max_length=50)


class GetEvaluationOverviewRequest(RequestModel):
    """The evaluation page in one round trip, for sessions judged in [from_ts, to_ts]."""

    from_ts: Epoch
    to_ts: Epoch
    bucket: Literal["day", "week"] = "week"
    include_shadow: bool = True
    source_sets: list[SourceSet] = Field(default_factory=list, max_length=10)

    @model_validator(mode="after")
    def _window(self) -> Self:
        if self.to_ts < self.from_ts:
            raise ValueError("to_ts must be greater than or equal to from_ts")
        return self


class HeroBucket(WireModel):
    """One point of the trend: success rates regular vs shadow, corrections, escalations."""

    ts: int
    regular_rate: float
    shadow_rate: float | None = None
    regular_n: int
    shadow_n: int
    avg_corrections: float = 0.0
    escalation_rate: float = 0.0


class HeroBlock(WireModel):
    """The headline: success rate, with and without Reflexio (shadow), and its trend."""

    state: Literal["full", "early", "shadow_off", "empty"]
    regular_success_rate_pp: float
    shadow_success_rate_pp: float | None = None
    delta_pp: float | None = None
    buckets: list[HeroBucket] = Field(default_factory=list)


class NumberWithDelta(WireModel):
    """A count this window and its change against the previous window of the same length."""

    current: float
    delta: float


class PercentWithDelta(WireModel):
    """A percentage this window and its change in percentage points."""

    current: float
    delta_pp: float


class ContextTile(WireModel):
    """The mini tiles: success, behaviour success (without system errors), corrections, turns,
    escalation."""

    success: PercentWithDelta
    behavior_success: PercentWithDelta
    corrections: NumberWithDelta
    turns: NumberWithDelta
    escalation: PercentWithDelta


class RuleAttributionRow(WireModel):
    """A rule the agent cited: sessions with it that succeeded and failed."""

    rule_id: str
    kind: Literal["playbook", "profile"]
    title: str = ""
    successes_with: int = Field(ge=0)
    failures_with: int = Field(ge=0)
    net_sessions: int
    cited_session_ids: list[str] = Field(default_factory=list)


class ScoreDistribution(WireModel):
    """Corrections per session: this window and the previous one."""

    current_bins: list[int]
    baseline_bins: list[int]
    labels: list[str]


class ShadowWinRateTrendPoint(WireModel):
    """Shadow verdicts of one UTC day: Reflexio's wins, losses and ties."""

    date: str
    n: int = Field(ge=0)
    wins: int = Field(ge=0)
    losses: int = Field(ge=0)
    ties: int = Field(ge=0)


class ShadowWinRateTrendWindowTotal(WireModel):
    """Every shadow verdict of the window."""

    n: int = Field(default=0, ge=0)
    wins: int = Field(default=0, ge=0)
    losses: int = Field(default=0, ge=0)
    ties: int = Field(default=0, ge=0)
    win_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    net_win: float = Field(default=0.0, ge=-1.0, le=1.0)


class ShadowWinRateTrend(WireModel):
    """Daily shadow win rates under the org's pinned judge prompt version."""

    daily: list[ShadowWinRateTrendPoint] = Field(default_factory=list)
    window_total: ShadowWinRateTrendWindowTotal = Field(default_factory=ShadowWinRateTrendWindowTotal)
    judge_prompt_version: str = "v1.0.0"


class RecentResult(WireModel):
    """One recently judged session."""

    session_id: str
    user_id: str
    agent_version: str
    is_success: bool
    failure_type: str | None = None
    evaluation_name: str | None = None
    number_of_correction_per_session: int = 0
    is_escalated: bool = False
    created_at: int


class SourceSetRow(WireModel):
    """The success rate of one labelled group of sources."""

    label: str
    sources: list[str]
    sessions: int
    success_rate: float | None = None


class GetEvaluationOverviewResponse(WireModel):
    """Everything the evaluation page shows (the page renders, it never computes)."""

    hero: HeroBlock
    context_tiles: ContextTile
    rule_attribution: list[RuleAttributionRow]
    score_distribution: ScoreDistribution
    braintrust_tiles: list[dict[str, Any]] = Field(default_factory=list)
    shadow_win_rate_trend: ShadowWinRateTrend = Field(default_factory=ShadowWinRateTrend)
    recent_results: list[RecentResult] = Field(default_factory=list)
    source_set_comparison: list[SourceSetRow] = Field(default_factory=list)


# -- grading on demand ---------------------------------------------------------------------------


class GradeOnDemandRequest(RequestModel):
    """Judge one session now (again), whatever its sampling said."""

    session_id: Id
    agent_version: NonEmptyStr = Field(max_length=1000)
    evaluation_name: Name | None = None


class GradeOnDemandResponse(WireModel):
    """Where the verdict is; ``cached`` when the session was graded less than 24 h ago."""

    session_id: str
    result_id: int | None = None
    cached: bool = False
    skipped_reason: str | None = None
    retrieved_learning_status: str | None = None


# -- learning impact -----------------------------------------------------------------------------


class GetLearningImpactRequest(RequestModel):
    """Impact of learnings by (kind, id); all kinds' most served when no id is given."""

    kind: Literal["profile", "user_playbook", "agent_playbook"] | None = None
    learning_ids: list[Id] | None = Field(default=None, max_length=1000)
    limit: PageSize = 100


class GetLearningImpactResponse(WireModel):
    """Impact per learning."""

    success: bool = True
    impacts: list[LearningImpactView] = Field(default_factory=list)
    msg: str | None = None


class PlaybookApplicationStat(WireModel):
    """How often a learning was applied (cited) and, our addition, how it fared."""

    real_id: str
    kind: Literal["playbook", "profile", "user_playbook", "agent_playbook"]
    title: str = ""
    applied_count: int = Field(ge=0)
    last_applied_at: int | None = None
    last_interaction_id: int | None = None
    impact: LearningImpactView | None = None  # addition


class GetPlaybookApplicationStatsRequest(RequestModel):
    """Look-back window in days."""

    days_back: int = Field(default=30, gt=0, le=3650)


class GetPlaybookApplicationStatsResponse(WireModel):
    """One row per learning cited or injected in the window, most applied first."""

    success: bool
    stats: list[PlaybookApplicationStat] = Field(default_factory=list)
    msg: str | None = None


# -- reflection actions --------------------------------------------------------------------------


class ReflectionActionView(WireModel):
    """What reflection did to a learning, why, on what evidence, and whether it was reverted."""

    action_id: int
    kind: Literal["profile", "user_playbook", "agent_playbook"]
    learning_id: str
    action: Literal["retire", "suspend", "supersede", "propose_revision"]
    reason: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    status_before: str | None = None
    status_after: str | None = None
    related_learning_id: str | None = None
    actor: str = "reflect"
    created_at: int
    reverted_at: int | None = None
    reverted_by: str | None = None
    revert_note: str | None = None


class ListReflectionActionsRequest(RequestModel):
    """Actions on one learning, or the latest of the org."""

    kind: Literal["profile", "user_playbook", "agent_playbook"] | None = None
    learning_id: Id | None = None
    include_reverted: bool = True
    limit: PageSize = 100


class ListReflectionActionsResponse(WireModel):
    """Newest first."""

    success: bool = True
    actions: list[ReflectionActionView] = Field(default_factory=list)


class RevertReflectionActionRequest(RequestModel):
    """Undo an action: the learning gets back the state it had before."""

    action_id: RowId
    note: str | None = Field(default=None, max_length=2000)


class RevertReflectionActionResponse(WireModel):
    """The reverted action."""

    success: bool = True
    action: ReflectionActionView


# -- retrieval experiments -----------------------------------------------------------------------


class StartRetrievalExperimentRequest(RequestModel):
    """Start a user-level holdout: that share of users gets no learnings while it runs.

    The id travels in the results route's path (``/retrieval_experiments/{id}/results``): any
    characters are routable once percent-encoded (the SDK does so), "/" included, except an id
    that is only dots, which every HTTP client resolves away as a relative path segment.
    """

    experiment_id: NonEmptyStr = Field(max_length=128)
    holdout_percentage: float = Field(gt=0, lt=100)

    @field_validator("experiment_id")
    @classmethod
    def _routable(cls, value: str) -> str:
        if set(value) == {"."}:
            raise ValueError("an experiment id of only dots cannot be named in a URL path")
        return value


class StopRetrievalExperimentRequest(RequestModel):
    """Stop the active experiment."""

    experiment_id: NonEmptyStr = Field(max_length=128)


class RetrievalExperimentListResponse(WireModel):
    """The active experiment and every experiment ever run, newest first."""

    active_experiment: RetrievalExperimentRecord | None = None
    experiments: list[RetrievalExperimentRecord] = Field(default_factory=list)


class RetrievalExperimentArmMetrics(WireModel):
    """One arm's sessions and outcomes."""

    arm: Literal["treatment", "holdout"]
    assigned_user_count: int = 0
    published_session_count: int = 0
    evaluated_user_count: int = 0
    evaluated_session_count: int = 0
    success_rate: float | None = None
    average_corrections: float | None = None
    average_turns_to_resolution: float | None = None
    escalation_rate: float | None = None


class RetrievalExperimentResultsResponse(WireModel):
    """Treatment minus holdout success rate, with a 95 % interval clustered by user."""

    experiment: RetrievalExperimentRecord
    treatment: RetrievalExperimentArmMetrics
    holdout: RetrievalExperimentArmMetrics
    success_rate_lift_percentage_points: float | None = None
    relative_success_lift: float | None = None
    confidence_interval_95_percentage_points: tuple[float, float] | None = None
    evaluated_session_coverage: float | None = None
    unattributed_evaluated_session_count: int = 0
