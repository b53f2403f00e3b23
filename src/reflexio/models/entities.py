"""The nouns of the wire format: enums, the records Reflexio stores, and the views it returns.

Field names, types, defaults and limits follow Reflexio 0.2.32 / reflexio-client 0.2.16 so the
published client can talk to our server. Entities are what callers send when they add learnings
directly and what the server reads back; views are the shapes responses carry (no embeddings,
no internal bookkeeping). Embeddings are not part of any model here: the server computes them,
and the original client's ``embedding: []`` is accepted and ignored.

One addition: the three learning views carry ``score`` (relevance, set on search results only),
which older clients ignore.
"""

from enum import Enum, IntEnum, StrEnum
from typing import Annotated, Any, Final, Literal, Self, TypeAlias, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict

from reflexio.models.fields import (
    MAX_ROW_ID,
    NEVER_EXPIRES_TIMESTAMP,
    NON_BLANK_PATTERN,
    CapturesUnknownFields,
    Epoch,
    Id,
    ImageUrl,
    JsonTyped,
    LearningText,
    Name,
    NonEmptyStr,
    RowId,
    WireModel,
    is_blank,
    now_epoch,
)

__all__ = [
    "AgentPlaybook",
    "AgentPlaybookView",
    "AgentSuccessEvaluationResult",
    "BlockingIssue",
    "BlockingIssueKind",
    "Citation",
    "CitationKind",
    "EffectInterval",
    "EvaluationResultView",
    "Interaction",
    "InteractionData",
    "InteractionView",
    "LearningImpact",
    "LearningImpactView",
    "OperationStatus",
    "PlaybookDiagnosis",
    "PlaybookStatus",
    "ProfileChangeLog",
    "ProfileChangeLogView",
    "ProfileTimeToLive",
    "ProfileView",
    "RegularVsShadow",
    "Request",
    "RetrievedLearning",
    "RetrievedLearningEvaluationResult",
    "RetrievedLearningKind",
    "SearchMode",
    "Status",
    "StorageConfigTest",
    "ToolUsed",
    "UserActionType",
    "UserPlaybook",
    "UserPlaybookView",
    "UserProfile",
]

# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------


class UserActionType(StrEnum):
    """What the user did in the UI alongside a turn; anything but ``none`` needs a description."""

    CLICK = "click"
    SCROLL = "scroll"
    TYPE = "type"
    NONE = "none"


class ProfileTimeToLive(StrEnum):
    """How long a profile fact stays valid after it was last confirmed."""

    ONE_DAY = "one_day"
    ONE_WEEK = "one_week"
    ONE_MONTH = "one_month"
    ONE_QUARTER = "one_quarter"
    ONE_YEAR = "one_year"
    INFINITY = "infinity"


class PlaybookStatus(StrEnum):
    """Human review state of an agent playbook; rejected ones never reach retrieval."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class Status(str, Enum):  # noqa: UP042 - a StrEnum member cannot have the value None
    """Lifecycle of a learning row; the current version is ``None`` (JSON ``null``).

    Reflexio spells "current" as the absence of a status. ``CURRENT`` exists so code can name
    it, and it really has the value ``None``: it serialises as ``null`` and ``Status(None)``
    is ``CURRENT``. (The original's ``CURRENT = None`` in a ``str`` enum silently became the
    string ``"None"``; here a custom ``__new__`` keeps the value.) Fields that hold a status
    are ``Status | None`` and a current row carries ``None``.
    """

    def __new__(cls, value: str | None) -> "Status":
        member = str.__new__(cls, "" if value is None else value)
        member._value_ = value
        return member

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {self.value!r}>"

    CURRENT = None
    ARCHIVED = "archived"
    PENDING = "pending"
    ARCHIVE_IN_PROGRESS = "archive_in_progress"
    MERGED = "merged"  # tombstone: folded into a survivor (merged_into is set)
    SUPERSEDED = "superseded"  # tombstone: replaced by a newer version (superseded_by is set)
    EXPIRED = "expired"  # tombstone: its time to live ran out
    # Additions: set by reflection on a learning that hurts (never in default listings).
    SUSPENDED = "suspended"  # not served; waiting for a reviewer's decision
    RETIRED = "retired"  # not served; stopped with a reason, revertible


class OperationStatus(StrEnum):
    """State of a long-running operation the client polls via ``get_operation_status``."""

    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class RegularVsShadow(StrEnum):
    """Judge's comparison of the agent's regular answer with its shadow answer."""

    REGULAR_IS_BETTER = "regular_is_better"
    REGULAR_IS_SLIGHTLY_BETTER = "regular_is_slightly_better"
    SHADOW_IS_BETTER = "shadow_is_better"
    SHADOW_IS_SLIGHTLY_BETTER = "shadow_is_slightly_better"
    TIED = "tied"


class BlockingIssueKind(StrEnum):
    """Why an agent could not do what the user asked."""

    MISSING_TOOL = "missing_tool"
    PERMISSION_DENIED = "permission_denied"
    EXTERNAL_DEPENDENCY = "external_dependency"
    POLICY_RESTRICTION = "policy_restriction"


class SearchMode(StrEnum):
    """Which retrieval arms a search uses: embeddings, full text, or both fused."""

    VECTOR = "vector"
    FTS = "fts"
    HYBRID = "hybrid"


class StorageConfigTest(IntEnum):
    """Result of the last storage connectivity test, kept in the org config (JSON integer)."""

    UNKNOWN = 0
    INCOMPLETE = 1
    FAILED = 2
    SUCCEEDED = 3


CitationKind: TypeAlias = Literal["playbook", "profile", "user_playbook", "agent_playbook"]
RetrievedLearningKind: TypeAlias = Literal["profile", "user_playbook", "agent_playbook"]
LearningImpact: TypeAlias = Literal["positive", "negative", "neutral"]

# ---------------------------------------------------------------------------------------------
# Parts of an interaction
# ---------------------------------------------------------------------------------------------

_MAX_TOOL_STATUS_LEN: Final = 100


class BlockingIssue(JsonTyped):
    """A capability the agent lacked, attached to a user playbook."""

    model_config = ConfigDict(extra="forbid")

    kind: BlockingIssueKind
    details: str = Field(
        max_length=10_000, description="What capability is missing and why it blocks the request"
    )


class ToolUsed(CapturesUnknownFields):
    """One tool call made during a turn: its name, free-form data, and outcome."""

    tool_name: str = Field(max_length=1_000)
    tool_data: dict[str, Any] = Field(default_factory=dict)
    status: str = ""

    @field_validator("status", mode="before")
    @classmethod
    def _coerce_status(cls, value: object) -> str:
        """Turn whatever was sent into a short string instead of failing the whole publish.

        Plugins send ``"success"``/``"error"`` but also ints, booleans and nulls; a 422 here
        would make them retry the same batch forever.
        """
        return "" if value is None else str(value)[:_MAX_TOOL_STATUS_LEN]


class Citation(CapturesUnknownFields):
    """A learning the agent claims influenced its answer (``playbook`` is the legacy kind)."""

    kind: CitationKind
    real_id: str = Field(max_length=1_000)
    tag: str = Field(default="", max_length=1_000)
    title: str = Field(default="", max_length=10_000)


class RetrievedLearning(CapturesUnknownFields):
    """A learning that was injected into the agent's context for a turn, used or not.

    ``learning_id`` is the ``profile_id`` for profiles and the decimal playbook id for
    playbooks; this pair is what retrieved-learning evaluation credits or blames.
    """

    kind: RetrievedLearningKind
    learning_id: str = Field(min_length=1, max_length=1_000)


# Request-level ids that plugins copy onto every turn: stripped but never reported.
_BENIGN_UNKNOWN_KEYS: Final = frozenset({"user_id", "session_id"})

#: User actions that need a description.
_ACTIONS: Final[list[JsonValue]] = [
    action.value for action in UserActionType if action is not UserActionType.NONE
]

#: The InteractionData fields that make a turn worth storing (besides a user action).
CONTENT_BEARING_FIELDS: Final = (
    "content",
    "shadow_content",
    "expert_content",
    "interacted_image_url",
    "image_encoding",
    "tools_used",
    "citations",
    "retrieved_learnings",
)


class InteractionData(CapturesUnknownFields):
    """One turn as a caller publishes it.

    ``role`` is free-form (``"User"``, ``"Assistant"``, ``"Agent"``...); the server compares it
    case-insensitively. ``created_at`` is kept as sent. Unknown keys are stripped and listed
    by :meth:`unknown_fields`. The two rules between fields are in the schema too: a user
    action other than ``none`` needs a description, and an image is a URL or an encoding.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {
                    "if": {"properties": {"user_action": {"enum": _ACTIONS}}, "required": ["user_action"]},
                    "then": {
                        "properties": {"user_action_description": {"minLength": 1}},
                        "required": ["user_action_description"],
                    },
                },
                {
                    "not": {
                        "properties": {
                            "interacted_image_url": {"minLength": 1},
                            "image_encoding": {"minLength": 1},
                        },
                        "required": ["interacted_image_url", "image_encoding"],
                    }
                },
            ]
        }
    )

    created_at: Epoch = Field(default_factory=now_epoch)
    role: str = Field(default="User", max_length=1_000)
    content: str = Field(default="", max_length=1_000_000)
    shadow_content: str = Field(default="", max_length=1_000_000)
    expert_content: str = Field(default="", max_length=1_000_000)
    user_action: UserActionType = UserActionType.NONE
    user_action_description: str = Field(default="", max_length=10_000)
    interacted_image_url: ImageUrl = Field(default="", max_length=2_048)
    image_encoding: str = Field(default="", max_length=15_000_000)
    tools_used: list[ToolUsed] = Field(default_factory=list, max_length=1_000)
    citations: list[Citation] = Field(default_factory=list, max_length=1_000)
    retrieved_learnings: list[RetrievedLearning] = Field(default_factory=list, max_length=1_000)

    @model_validator(mode="after")
    def _reject_contradictions(self) -> Self:
        if self.user_action != UserActionType.NONE and not self.user_action_description:
            raise ValueError("user_action requires a user_action_description")
        if self.interacted_image_url and self.image_encoding:
            raise ValueError("interacted_image_url and image_encoding cannot both be set")
        return self

    def is_empty(self) -> bool:
        """Whether this turn carries nothing worth storing (blank text counts as nothing).

        A tool-only turn, an expert-only row or an image is content; so is any user action.
        """
        if self.user_action != UserActionType.NONE:
            return False
        values = (getattr(self, name) for name in CONTENT_BEARING_FIELDS)
        return all(is_blank(value) if isinstance(value, str) else not value for value in values)

    def unknown_fields(self) -> list[str]:
        """Stripped keys worth telling the caller about, as paths (``tools_used[0].stat``).

        ``user_id`` and ``session_id`` copied onto a turn are dropped silently: both
        first-party plugins send them on every turn, and warning about correct publishes
        would teach people to ignore the channel.
        """
        return [
            path for path in super().unknown_fields() if path.rsplit(".", 1)[-1] not in _BENIGN_UNKNOWN_KEYS
        ]


# ---------------------------------------------------------------------------------------------
# Views: what responses carry
# ---------------------------------------------------------------------------------------------


def _none_as_empty(value: object) -> object:
    return [] if value is None else value


# Views always carry a list: the 0.2.16 client rejects ``"tags": null`` on these views.
TagList: TypeAlias = Annotated[list[str], BeforeValidator(_none_as_empty)]


class InteractionView(WireModel):
    """A stored turn as responses show it: no image bytes, no citations (a server signal)."""

    interaction_id: int = 0
    user_id: str
    request_id: str
    created_at: int = Field(default_factory=now_epoch)
    role: str = "User"
    content: str = ""
    user_action: UserActionType = UserActionType.NONE
    user_action_description: str = ""
    interacted_image_url: str = ""
    shadow_content: str = ""
    expert_content: str = ""
    tools_used: list[ToolUsed] = Field(default_factory=list)
    retrieved_learnings: list[RetrievedLearning] = Field(default_factory=list)


class EffectInterval(WireModel):
    """An estimate with its 95 % interval (``low``/``high`` absent when it cannot be computed)."""

    value: float
    low: float | None = None
    high: float | None = None
    sessions: int = 0
    users: int = 0


class LearningImpactView(WireModel):
    """A learning's record in production (our addition): exposures, outcomes, effect.

    ``help_rate`` is the share of its judged sessions it helped (helped / (helped + hurt)), with
    a Wilson interval; ``lift`` is the success rate of sessions it was served in minus that of
    sessions the holdout withheld it from, with a 95 % interval clustered by user.
    """

    kind: Literal["profile", "user_playbook", "agent_playbook"]
    learning_id: str
    sessions_served: int = 0
    sessions_withheld: int = 0
    helped: int = 0
    hurt: int = 0
    neutral: int = 0
    unjudged: int = 0
    users_served: int = 0
    success_rate_served: float | None = None
    success_rate_withheld: float | None = None
    help_rate: EffectInterval | None = None
    lift: EffectInterval | None = None
    last_served_at: int | None = None


class ProfileView(WireModel):
    """A user profile fact as responses show it; ``score`` is set on search results only."""

    profile_id: str
    user_id: str
    content: str
    last_modified_timestamp: int
    generated_from_request_id: str
    profile_time_to_live: ProfileTimeToLive = ProfileTimeToLive.INFINITY
    expiration_timestamp: int = NEVER_EXPIRES_TIMESTAMP
    custom_features: dict[str, Any] | None = None
    source: str | None = None
    status: Status | None = None
    extractor_names: list[str] | None = None
    source_span: str | None = None
    source_interaction_ids: list[int] = Field(default_factory=list)
    tags: TagList = Field(default_factory=list)
    score: float | None = None  # addition: relevance of a search hit
    impact: LearningImpactView | None = None  # addition: its record in production


class UserPlaybookView(WireModel):
    """A per-user behaviour rule as responses show it; ``score`` is set on search results."""

    user_playbook_id: int = 0
    user_id: str | None = None
    agent_version: str
    request_id: str
    playbook_name: str = ""
    created_at: int = Field(default_factory=now_epoch)
    content: str = ""
    trigger: str | None = None
    rationale: str | None = None
    pitfall: str | None = None  # addition: what goes wrong without the rule
    status: Status | None = None
    source: str | None = None
    source_interaction_ids: list[int] = Field(default_factory=list)
    source_span: str | None = None
    tags: TagList = Field(default_factory=list)
    score: float | None = None  # addition: relevance of a search hit
    impact: LearningImpactView | None = None  # addition: its record in production


class AgentPlaybookView(WireModel):
    """An agent-wide behaviour rule as responses show it; ``score`` is set on search results."""

    agent_playbook_id: int = 0
    playbook_name: str = ""
    agent_version: str
    created_at: int = Field(default_factory=now_epoch)
    content: str
    trigger: str | None = None
    rationale: str | None = None
    pitfall: str | None = None  # addition: what goes wrong without the rule
    playbook_status: PlaybookStatus = PlaybookStatus.PENDING
    playbook_metadata: str = ""
    status: Status | None = None
    tags: TagList = Field(default_factory=list)
    score: float | None = None  # addition: relevance of a search hit
    impact: LearningImpactView | None = None  # addition: its record in production


class EvaluationResultView(WireModel):
    """A session-success verdict as responses show it."""

    result_id: int = 0
    user_id: str = ""
    agent_version: str
    session_id: str
    is_success: bool
    failure_type: str | None = None
    failure_reason: str | None = None
    evaluation_name: str | None = None
    created_at: int = Field(default_factory=now_epoch)
    regular_vs_shadow: RegularVsShadow | None = None
    number_of_correction_per_session: int = Field(default=0, ge=0)
    user_turns_to_resolution: int | None = None
    is_escalated: bool = False
    tags: list[str] | None = None


class ProfileChangeLogView(WireModel):
    """Profiles one request added and removed, as responses show it."""

    id: int
    user_id: str
    request_id: str
    created_at: int = Field(default_factory=now_epoch)
    added_profiles: list[ProfileView]
    removed_profiles: list[ProfileView]


# ---------------------------------------------------------------------------------------------
# Stored records
# ---------------------------------------------------------------------------------------------

ViewT = TypeVar("ViewT", bound=BaseModel)


def _view_of(view: type[ViewT], record: BaseModel) -> ViewT:
    """Build ``view`` from the fields of ``record`` it shares, dropping the rest.

    A dict rather than the record itself, because a record that subclasses its view would
    otherwise pass through unchanged, internal fields and all.
    """
    shared = {name: getattr(record, name) for name in view.model_fields if hasattr(record, name)}
    return view.model_validate(shared, from_attributes=True)


class Interaction(InteractionView):
    """A stored turn with everything the caller sent, including citations and image bytes.

    Reflexio 0.2.7's README built turns to publish as ``Interaction(role=..., content=...)``, so
    ``user_id`` and ``request_id`` may be left out here (the client publishes such a turn as
    ``InteractionData``); stored turns always carry both.
    """

    user_id: str = ""
    request_id: str = ""
    token_count: int | None = Field(default=None, ge=0)
    image_encoding: str = ""
    citations: list[Citation] = Field(default_factory=list)

    def to_view(self) -> InteractionView:
        """The response shape of this turn."""
        return _view_of(InteractionView, self)


def check_experiment_pair(experiment_id: str | None, arm: str | None) -> None:
    """Reject a retrieval experiment id without its arm, or the reverse.

    Raises:
        ValueError: When exactly one of the two is set.
    """
    if (experiment_id is None) != (arm is None):
        raise ValueError("retrieval_experiment_id and retrieval_experiment_arm must be provided together")


class Request(WireModel):
    """One published request: the unit a session is made of.

    ``session_id`` must be non-empty here too, because the 0.2.16 client validates it when it
    reads ``get_requests`` responses.
    """

    request_id: str
    user_id: str
    created_at: int = Field(default_factory=now_epoch)
    source: str = ""
    agent_version: str = ""
    session_id: NonEmptyStr
    evaluation_only: bool = False
    retrieval_experiment_id: NonEmptyStr | None = None
    retrieval_experiment_arm: Literal["treatment", "holdout"] | None = None

    @model_validator(mode="after")
    def _experiment_fields_come_together(self) -> Self:
        check_experiment_pair(self.retrieval_experiment_id, self.retrieval_experiment_arm)
        return self


class _LearningRecord(JsonTyped):
    """Base of the learning records a caller may also send (``add_user_profile``, ``add_*_playbook``).

    Unknown keys are refused, except the ones Reflexio's clients send on every row and this
    server computes or keeps itself (:data:`IGNORED_LEARNING_KEYS`): those are dropped.
    """

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _drop_ignored_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and IGNORED_LEARNING_KEYS & data.keys():
            return {key: value for key, value in data.items() if key not in IGNORED_LEARNING_KEYS}
        return data


#: Keys the 0.2.16 client sends on learnings that the server computes (embeddings) or keeps
#: in its own history (retirement, governance): accepted and dropped.
IGNORED_LEARNING_KEYS: Final = frozenset({"embedding", "retired_at", "governance_subject_ref"})

#: Tags, extractor names and source ids a learning may carry.
_MAX_LABELS: Final = 100
_MAX_SOURCE_IDS: Final = 1_000

Labels: TypeAlias = Annotated[list[Name], Field(max_length=_MAX_LABELS)]


class UserProfile(_LearningRecord):
    """A fact or preference about one user, with its provenance and lifecycle."""

    profile_id: Id
    user_id: Id
    content: Annotated[LearningText, StringConstraints(pattern=NON_BLANK_PATTERN)]
    last_modified_timestamp: Epoch
    generated_from_request_id: Name
    profile_time_to_live: ProfileTimeToLive = ProfileTimeToLive.INFINITY
    expiration_timestamp: Epoch = NEVER_EXPIRES_TIMESTAMP
    custom_features: dict[str, Any] | None = None
    source: Name | None = None
    status: Status | None = None
    extractor_names: Labels | None = None
    expanded_terms: LearningText | None = None
    tags: Labels | None = None  # None = not yet tagged; [] = tagged, nothing matched
    source_interaction_ids: list[RowId] = Field(default_factory=list, max_length=_MAX_SOURCE_IDS)
    source_span: LearningText | None = None
    notes: LearningText | None = None
    reader_angle: LearningText | None = None
    merged_into: Id | None = None
    superseded_by: Id | None = None

    def to_view(self) -> ProfileView:
        """The response shape of this profile."""
        return _view_of(ProfileView, self)


#: A playbook needs a content or a trigger (what it is embedded from), as the schema says too.
_CONTENT_OR_TRIGGER: Final[JsonDict] = {
    "anyOf": [
        {"properties": {"content": {"pattern": NON_BLANK_PATTERN}}, "required": ["content"]},
        {
            "properties": {"trigger": {"type": "string", "pattern": NON_BLANK_PATTERN}},
            "required": ["trigger"],
        },
    ]
}


class UserPlaybook(_LearningRecord):
    """A behaviour rule learned from one user's sessions (it needs a content or a trigger)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_CONTENT_OR_TRIGGER)

    user_playbook_id: int = Field(default=0, ge=0, le=MAX_ROW_ID)
    user_id: Id | None = None
    agent_version: Name
    request_id: Name
    playbook_name: Name = ""
    created_at: Epoch = Field(default_factory=now_epoch)
    content: LearningText = ""
    trigger: LearningText | None = None
    rationale: LearningText | None = None
    pitfall: LearningText | None = None  # addition: what goes wrong without the rule
    blocking_issue: BlockingIssue | None = None
    status: Status | None = None
    source: Name | None = None
    source_interaction_ids: list[RowId] = Field(default_factory=list, max_length=_MAX_SOURCE_IDS)
    expanded_terms: LearningText | None = None
    tags: Labels | None = None
    source_span: LearningText | None = None
    notes: LearningText | None = None
    reader_angle: LearningText | None = None
    merged_into: RowId | None = None
    superseded_by: RowId | None = None

    def to_view(self) -> UserPlaybookView:
        """The response shape of this playbook."""
        return _view_of(UserPlaybookView, self)


class AgentPlaybook(_LearningRecord):
    """A behaviour rule generalised across users for one agent version, reviewed by a human.

    Like a user playbook it needs a content or a trigger.
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra=_CONTENT_OR_TRIGGER)

    agent_playbook_id: int = Field(default=0, ge=0, le=MAX_ROW_ID)
    playbook_name: Name = ""
    agent_version: Name
    created_at: Epoch = Field(default_factory=now_epoch)
    content: LearningText
    trigger: LearningText | None = None
    rationale: LearningText | None = None
    pitfall: LearningText | None = None  # addition: what goes wrong without the rule
    blocking_issue: BlockingIssue | None = None
    playbook_status: PlaybookStatus = PlaybookStatus.PENDING
    playbook_metadata: LearningText = ""
    expanded_terms: LearningText | None = None
    tags: Labels | None = None
    status: Status | None = None
    merged_into: RowId | None = None
    superseded_by: RowId | None = None

    def to_view(self) -> AgentPlaybookView:
        """The response shape of this playbook."""
        return _view_of(AgentPlaybookView, self)


class ProfileChangeLog(WireModel):
    """The profiles one request added and removed."""

    id: int
    user_id: str
    request_id: str
    created_at: int = Field(default_factory=now_epoch)
    added_profiles: list[UserProfile]
    removed_profiles: list[UserProfile]

    def to_view(self) -> ProfileChangeLogView:
        """The response shape of this change log."""
        return _view_of(ProfileChangeLogView, self)


class AgentSuccessEvaluationResult(EvaluationResultView):
    """Whether the agent handled one session well, judged after the session went idle.

    Same fields as its view today; kept as its own type so stored-only fields can be added.
    """

    def to_view(self) -> EvaluationResultView:
        """The response shape of this verdict."""
        return _view_of(EvaluationResultView, self)


class PlaybookDiagnosis(WireModel):
    """Why an injected playbook helped or hurt: evidence-bounded, not proof of cause."""

    category: Literal["content_defect", "application_failure", "external_failure", "no_issue", "unknown"]
    reason: str = Field(min_length=1, max_length=4_000)
    evidence_interaction_ids: list[int] = Field(default_factory=list, max_length=20)


class RetrievedLearningEvaluationResult(WireModel):
    """The latest relevance and impact verdict for one learning injected into one turn.

    ``is_relevant``/``impact`` are ``None`` only when the judge failed for that learning.
    """

    result_id: int = 0
    user_id: str
    session_id: str
    agent_version: str = ""
    interaction_id: int | None = None
    interaction_created_at: int | None = None
    kind: RetrievedLearningKind
    learning_id: str
    is_relevant: bool | None = None
    relevance_reason: str = ""
    impact: LearningImpact | None = None
    impact_reason: str = ""
    diagnosis: PlaybookDiagnosis | None = None
    evaluated_playbook_digest: str | None = None
    diagnosis_evidence_complete: bool = False
    created_at: int = Field(default_factory=now_epoch)
