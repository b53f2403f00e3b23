"""Requests and responses of the learning searches: per kind, and unified across kinds.

The unified search response is what an agent reads before answering. Besides Reflexio's
fields it carries ``score`` on each hit and can render itself as a prompt block within a token
budget (:meth:`UnifiedSearchViewResponse.to_prompt`), returning the ``retrieved_learnings``
to publish for exactly the learnings that made it into the prompt.
"""

from typing import Annotated, Literal, TypeAlias

from pydantic import Field

from reflexio.models.entities import (
    AgentPlaybookView,
    PlaybookStatus,
    ProfileView,
    RetrievedLearningKind,
    SearchMode,
    Status,
    UserPlaybookView,
)
from reflexio.models.fields import (
    MAX_QUERY_LENGTH,
    Flag,
    Fraction,
    Id,
    Name,
    NonEmptyStr,
    QueryText,
    RequestModel,
    RowId,
    SessionOutcomeSource,
    TimeWindow,
    TopK,
    WireModel,
)
from reflexio.models.prompt import STANDING_TAG, PromptBlock, PromptItem, pack_prompt, rule_line

__all__ = [
    "ConversationTurn",
    "RetrievalExperimentAssignment",
    "SearchAgentPlaybookRequest",
    "SearchAgentPlaybooksViewResponse",
    "SearchProfilesViewResponse",
    "SearchUserPlaybookRequest",
    "SearchUserPlaybooksViewResponse",
    "SearchUserProfileRequest",
    "UnifiedSearchEntityType",
    "UnifiedSearchRequest",
    "UnifiedSearchViewResponse",
]

UnifiedSearchEntityType: TypeAlias = Literal["profiles", "user_playbooks", "agent_playbooks"]
Tags: TypeAlias = Annotated[list[Name], Field(max_length=100)]
Statuses: TypeAlias = Annotated[list[PlaybookStatus], Field(max_length=10)]


class RetrievalExperimentAssignment(WireModel):
    """Which arm of an active retrieval experiment the user is in (holdouts get nothing)."""

    experiment_id: str
    arm: Literal["treatment", "holdout"]


class ConversationTurn(RequestModel):
    """A prior turn given to query rewriting for context."""

    role: Annotated[NonEmptyStr, Field(max_length=1_000)]
    content: Annotated[NonEmptyStr, Field(max_length=MAX_QUERY_LENGTH)]


class SearchUserProfileRequest(TimeWindow):
    """Search one user's profiles; ``threshold=None`` means the embedder's default.

    ``user_id`` is optional only because Reflexio 0.2.7's README searched without one; such a
    search finds nothing (profiles are private to their user), and ``msg`` says why.
    """

    user_id: Id | None = None
    generated_from_request_id: Id | None = None
    request_id: Id | None = None
    session_id: Id | None = None
    query: QueryText | None = None
    top_k: TopK | None = 10
    source: SessionOutcomeSource | None = None
    custom_feature: QueryText | None = None
    extractor_name: Name | None = None  # accepted and ignored, as in Reflexio
    tags: Tags | None = None
    threshold: Fraction | None = None
    enable_reformulation: Flag | None = False
    search_mode: SearchMode = SearchMode.HYBRID


class SearchProfilesViewResponse(WireModel):
    """Profiles matching a search, best first."""

    success: bool
    user_profiles: list[ProfileView]
    msg: str | None = None
    experiment: RetrievalExperimentAssignment | None = None


class SearchUserPlaybookRequest(TimeWindow):
    """Search user playbooks; ``status_filter=None`` means every non-tombstone status."""

    query: QueryText | None = None
    user_id: Id | None = None
    agent_version: Name | None = None
    playbook_name: Name | None = None
    source: SessionOutcomeSource | None = None
    status_filter: list[Status | None] | None = Field(default=None, max_length=10)
    tags: Tags | None = None
    top_k: TopK | None = 10
    threshold: Fraction | None = None
    enable_reformulation: Flag | None = False
    search_mode: SearchMode = SearchMode.HYBRID
    request_id: Id | None = None
    session_id: Id | None = None


class SearchUserPlaybooksViewResponse(WireModel):
    """User playbooks matching a search, best first."""

    success: bool
    user_playbooks: list[UserPlaybookView]
    msg: str | None = None
    experiment: RetrievalExperimentAssignment | None = None


class SearchAgentPlaybookRequest(TimeWindow):
    """Search agent playbooks; ``user_id`` only picks the experiment arm, it does not filter.

    ``playbook_status_filter`` takes one review state or a list of them.
    """

    query: QueryText | None = None
    user_id: Id | None = None
    agent_version: Name | None = None
    playbook_name: Name | None = None
    source: SessionOutcomeSource | None = None
    status_filter: list[Status | None] | None = Field(default=None, max_length=10)
    playbook_status_filter: PlaybookStatus | Annotated[list[PlaybookStatus], Field(max_length=10)] | None = (
        None
    )
    tags: Tags | None = None
    top_k: TopK | None = 10
    threshold: Fraction | None = None
    enable_reformulation: Flag | None = False
    search_mode: SearchMode = SearchMode.HYBRID
    request_id: Id | None = None
    session_id: Id | None = None


class SearchAgentPlaybooksViewResponse(WireModel):
    """Agent playbooks matching a search, best first."""

    success: bool
    agent_playbooks: list[AgentPlaybookView]
    msg: str | None = None
    experiment: RetrievalExperimentAssignment | None = None


class UnifiedSearchRequest(RequestModel):
    """One search over profiles, user playbooks and agent playbooks.

    ``top_k`` applies per kind. ``agent_playbook_status_filter=None`` means approved and
    pending (rejected rules are hidden). ``session_id`` also turns on session dedup: what
    was already served in the session is skipped and the next best fills in.
    """

    query: Annotated[NonEmptyStr, Field(max_length=MAX_QUERY_LENGTH)]
    top_k: TopK | None = 5
    threshold: Fraction | None = None
    agent_version: Name | None = None
    playbook_name: Name | None = None
    user_id: Id | None = None
    source: SessionOutcomeSource | None = None
    tags: Tags | None = None
    entity_types: list[UnifiedSearchEntityType] | None = Field(default=None, max_length=3)
    agent_playbook_status_filter: list[PlaybookStatus] | None = Field(default=None, max_length=3)
    conversation_history: list[ConversationTurn] | None = Field(default=None, max_length=100)
    enable_reformulation: Flag | None = False
    enable_agent_answer: Flag | None = False
    search_mode: SearchMode = SearchMode.HYBRID
    request_id: Id | None = None
    session_id: Id | None = None
    interaction_id: RowId | None = None
    # Additions: serve learnings already served in this session again; cap the total size.
    include_already_served: Flag = False
    max_tokens: int | None = Field(default=None, gt=0, le=1_000_000)


class UnifiedSearchViewResponse(WireModel):
    """What a unified search found, per kind and best first.

    ``degraded`` is always present: ``True`` means an arm did not answer (for example
    embeddings failed and the search fell back to full text, named in
    ``search_mode_effective``), so an empty list is not proof that nothing matches.
    """

    success: bool
    profiles: list[ProfileView] = Field(default_factory=list)
    agent_playbooks: list[AgentPlaybookView] = Field(default_factory=list)
    user_playbooks: list[UserPlaybookView] = Field(default_factory=list)
    reformulated_query: str | None = None
    msg: str | None = None
    agent_trace: str | None = None
    rehydrated_text: str | None = None
    experiment: RetrievalExperimentAssignment | None = None
    degraded: bool = False
    search_mode_effective: str | None = None

    def to_prompt(self, max_tokens: int | None = None) -> PromptBlock:
        """Render the best learnings that fit in ``max_tokens``, with their attribution.

        Playbooks become ``When <trigger>: <content>`` rules, profiles become facts. The
        returned ``retrieved_learnings`` are exactly the learnings in ``text``; publish them
        with the agent's answer so evaluation judges what was actually injected.
        """
        return pack_prompt(self.prompt_items(), max_tokens)

    def prompt_items(self) -> list[PromptItem]:
        """Every hit as one renderable line with its reference and score (before any budget)."""
        rules: list[tuple[RetrievedLearningKind, str, AgentPlaybookView | UserPlaybookView]] = [
            *(("agent_playbook", str(rule.agent_playbook_id), rule) for rule in self.agent_playbooks),
            *(("user_playbook", str(rule.user_playbook_id), rule) for rule in self.user_playbooks),
        ]
        items = [
            PromptItem(
                kind,
                learning_id,
                rule_line(rule.trigger, rule.content),
                rule.score,
                standing=STANDING_TAG in rule.tags,
            )
            for kind, learning_id, rule in rules
        ]
        items.extend(
            PromptItem(
                "profile",
                fact.profile_id,
                " ".join(fact.content.split()),
                fact.score,
                standing=STANDING_TAG in fact.tags,
            )
            for fact in self.profiles
        )
        return items
