"""Requests and responses of the interaction routes: publish, read, search and delete the log.

Publishing is the one write every agent makes, so its request model does more than check
types: it drops empty turns (first-party plugins append an empty Assistant placeholder),
rejects a batch that is entirely empty, and keeps a bounded, log-safe record of every unknown
key it stripped so the server can answer with ``warnings`` instead of losing a typo silently.
"""

from typing import Final, Literal, Self

from pydantic import Field, PrivateAttr, model_validator

from reflexio.models.entities import (
    CONTENT_BEARING_FIELDS,
    InteractionData,
    InteractionView,
    Request,
    SearchMode,
    check_experiment_pair,
)
from reflexio.models.fields import (
    CapturesUnknownFields,
    Flag,
    Fraction,
    Id,
    PageSize,
    RequestModel,
    RowId,
    SessionOutcomeSource,
    TimeWindow,
    TopK,
    WireModel,
)

__all__ = [
    "BulkDeleteResponse",
    "DeleteRequestRequest",
    "DeleteRequestResponse",
    "DeleteRequestsByIdsRequest",
    "DeleteSessionRequest",
    "DeleteSessionResponse",
    "DeleteUserInteractionRequest",
    "DeleteUserInteractionResponse",
    "FinalizeSessionRequest",
    "FinalizeSessionResponse",
    "GetInteractionsRequest",
    "GetInteractionsViewResponse",
    "GetRequestsRequest",
    "GetRequestsViewResponse",
    "LearningStatusResponse",
    "PublishUserInteractionRequest",
    "PublishUserInteractionResponse",
    "RequestDataView",
    "SearchInteractionRequest",
    "SearchInteractionsViewResponse",
    "SessionView",
]

_MAX_RETRIEVED_LEARNINGS_PER_PUBLISH: Final = 1_000
# Caller-controlled names end up in a response body and a log line: bound them three ways.
_MAX_NAME_LEN: Final = 64
_MAX_NAMES_PER_WARNING: Final = 5
_MAX_WARNINGS: Final = 20
_MAX_SKIPPED_INDICES: Final = 10


def _log_safe(name: str) -> str:
    cleaned = "".join(char if char.isprintable() else "?" for char in name)
    return cleaned if len(cleaned) <= _MAX_NAME_LEN else f"{cleaned[:_MAX_NAME_LEN]}..."


def _summarise(names: list[str]) -> str:
    shown = [_log_safe(name) for name in names[:_MAX_NAMES_PER_WARNING]]
    remaining = len(names) - len(shown)
    return ", ".join(shown) + (f", +{remaining} more" if remaining > 0 else "")


def _capped(warnings: list[str]) -> list[str]:
    if len(warnings) <= _MAX_WARNINGS:
        return list(warnings)
    dropped = len(warnings) - _MAX_WARNINGS
    return [
        *warnings[:_MAX_WARNINGS],
        f"...and {dropped} more interaction(s) with the same problem",
    ]


# ---------------------------------------------------------------------------------------------
# Publish
# ---------------------------------------------------------------------------------------------


class PublishUserInteractionRequest(CapturesUnknownFields):
    """One publish: a batch of turns from one user in one session.

    ``request_id`` is optional; when given it is the idempotency key (a retry with the same id
    is stored once). Empty turns are dropped here, before anything is stored, and reported by
    :meth:`payload_warnings`; indices in every report refer to the list as the caller sent it.
    """

    request_id: Id | None = None
    user_id: Id
    interaction_data_list: list[InteractionData] = Field(min_length=1, max_length=1_000)
    source: SessionOutcomeSource = ""
    agent_version: str = Field(default="", max_length=1_000)
    session_id: Id
    session_finished: Flag = False
    skip_aggregation: Flag = False
    force_extraction: Flag = False
    evaluation_only: Flag = False
    # Learning never stalls on this server (failed jobs are retried, then dead-lettered), so the
    # flag can only be false; ``service.publish`` refuses ``true`` with a 422 saying why.
    override_learning_stall: Flag = Field(default=False, json_schema_extra={"const": False})
    retrieval_experiment_id: Id | None = None
    retrieval_experiment_arm: Literal["treatment", "holdout"] | None = None

    _interaction_unknown_fields: list[list[str]] = PrivateAttr(default_factory=list)
    _skipped_empty_indices: list[int] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _check_flags(self) -> Self:
        if self.evaluation_only and self.force_extraction:
            raise ValueError("evaluation_only cannot be combined with force_extraction")
        check_experiment_pair(self.retrieval_experiment_id, self.retrieval_experiment_arm)
        return self

    @model_validator(mode="after")
    def _drop_empty_interactions(self) -> Self:
        """Skip empty turns, but refuse a batch in which every turn is empty.

        Unknown keys are recorded against the original list first: a mis-keyed ``Content``
        makes its turn empty, and the warning must still name the row the caller sent.
        """
        turns = self.interaction_data_list
        self._interaction_unknown_fields = [turn.unknown_fields() for turn in turns]
        skipped = [index for index, turn in enumerate(turns) if turn.is_empty()]
        if len(skipped) == len(turns):
            faults = _capped(self._interaction_warnings())
            cause = f"; likely cause -- {'; '.join(faults)}" if faults else ""
            raise ValueError(
                'every interaction is empty: at least one must set "content" (or any of: '
                f'{", ".join(CONTENT_BEARING_FIELDS)}, or a user_action other than "none")'
                f"{cause}"
            )
        self._skipped_empty_indices = skipped
        self.interaction_data_list = [turn for turn in turns if not turn.is_empty()]
        return self

    @model_validator(mode="after")
    def _bound_retrieved_learnings(self) -> Self:
        total = sum(len(turn.retrieved_learnings) for turn in self.interaction_data_list)
        if total > _MAX_RETRIEVED_LEARNINGS_PER_PUBLISH:
            raise ValueError(
                "a publish request may carry at most 1000 retrieved_learnings"
                f" across all interactions (got {total})"
            )
        return self

    @property
    def skipped_empty_indices(self) -> list[int]:
        """Positions, in the list as sent, of the empty turns that were dropped."""
        return list(self._skipped_empty_indices)

    def sent_positions(self) -> list[int]:
        """Position, in the list as sent, of each kept turn (what warnings and errors name)."""
        skipped = set(self._skipped_empty_indices)
        sent = range(len(self.interaction_data_list) + len(skipped))
        return [index for index in sent if index not in skipped]

    def unknown_fields(self) -> list[str]:
        """Every stripped key as a path, e.g. ``interaction_data_list[3].tools_used[0].stat``."""
        nested = [
            f"interaction_data_list[{index}].{path}"
            for index, paths in enumerate(self._interaction_unknown_fields)
            for path in paths
        ]
        return sorted([*self.unknown_field_names(), *nested])

    def payload_warnings(self) -> list[str]:
        """Everything quietly altered in the payload, worded for the caller and bounded.

        Per-turn warnings are capped first and the two batch-level lines appended after, so
        a flood of typos can never hide that a top-level flag was dropped or rows skipped.
        """
        warnings = _capped(self._interaction_warnings())
        if top_level := self.unknown_field_names():
            warnings.append(f"publish request: ignored unrecognised field(s) {_summarise(top_level)}")
        if summary := self._skipped_summary():
            warnings.append(summary)
        return warnings

    def _interaction_warnings(self) -> list[str]:
        return [
            f"interaction_data_list[{index}]: ignored unrecognised field(s) {_summarise(paths)}"
            for index, paths in enumerate(self._interaction_unknown_fields)
            if paths
        ]

    def _skipped_summary(self) -> str | None:
        skipped = self._skipped_empty_indices
        if not skipped:
            return None
        shown = ", ".join(str(index) for index in skipped[:_MAX_SKIPPED_INDICES])
        more = len(skipped) - _MAX_SKIPPED_INDICES
        return (
            f"skipped {len(skipped)} empty interaction(s) that carried no content,"
            f" at index(es) {shown}{f', +{more} more' if more > 0 else ''}"
        )


class PublishUserInteractionResponse(WireModel):
    """Answer to a publish: stored or not, what was altered, and where learning stands.

    ``learning_status`` is ``"done"`` or ``"deferred"``; ``learning_reason`` says why.
    """

    success: bool
    message: str = ""
    warnings: list[str] = Field(default_factory=list)
    request_id: str | None = None
    endpoint_url: str | None = None
    storage_type: str | None = None
    storage_label: str | None = None
    profiles_added: int | None = None
    profiles_updated: int | None = None
    playbooks_added: int | None = None
    playbooks_updated: int | None = None
    learning_status: str | None = None
    learning_reason: str | None = None


class LearningStatusResponse(WireModel):
    """How far learning has got with one published request (``GET /api/learning_status``).

    ``not_tracked`` is for requests stored before status tracking existed.
    """

    status: Literal["pending", "processing", "done", "failed", "not_tracked"]
    reason: str | None = None


class FinalizeSessionRequest(RequestModel):
    """A hint that a session is over, so it can be learned from and judged without waiting."""

    user_id: Id
    session_id: Id


class FinalizeSessionResponse(WireModel):
    """Whether the hint was accepted; learning still runs asynchronously."""

    success: bool
    accepted: bool = False
    message: str = ""


# ---------------------------------------------------------------------------------------------
# Read and search
# ---------------------------------------------------------------------------------------------


class GetInteractionsRequest(TimeWindow):
    """One user's most recent turns, optionally within a time window."""

    user_id: Id
    top_k: PageSize | None = 30


class GetInteractionsViewResponse(WireModel):
    """Turns returned by ``get_interactions`` and ``get_all_interactions``."""

    success: bool
    interactions: list[InteractionView]
    msg: str | None = None


class SearchInteractionRequest(TimeWindow):
    """Search one user's turns by text and/or meaning."""

    user_id: Id
    request_id: Id | None = None
    query: str | None = Field(default=None, max_length=10_000)
    top_k: TopK | None = None
    most_recent_k: PageSize | None = None
    threshold: Fraction | None = None
    search_mode: SearchMode = SearchMode.HYBRID


class SearchInteractionsViewResponse(WireModel):
    """Turns matching a ``search_interactions`` query."""

    success: bool
    interactions: list[InteractionView]
    msg: str | None = None


class GetRequestsRequest(TimeWindow):
    """Sessions with their requests and turns; paginated by session, not by request."""

    user_id: Id | None = None
    request_id: Id | None = None
    session_id: Id | None = None
    source: SessionOutcomeSource | None = None
    top_k: PageSize | None = 30
    offset: int | None = Field(default=0, ge=0, le=1_000_000)


class RequestDataView(WireModel):
    """One request and its turns."""

    request: Request
    interactions: list[InteractionView]


class SessionView(WireModel):
    """One session: every request in it, in order."""

    session_id: str
    requests: list[RequestDataView]


class GetRequestsViewResponse(WireModel):
    """A page of sessions; ``has_more`` says whether another page exists."""

    success: bool
    sessions: list[SessionView]
    has_more: bool = False
    msg: str | None = None


# ---------------------------------------------------------------------------------------------
# Delete
# ---------------------------------------------------------------------------------------------


class DeleteUserInteractionRequest(RequestModel):
    """Delete one turn of one user."""

    user_id: Id
    interaction_id: RowId


class DeleteUserInteractionResponse(WireModel):
    """Outcome of deleting a turn."""

    success: bool
    message: str = ""


class DeleteRequestRequest(RequestModel):
    """Delete a request and its turns."""

    request_id: Id


class DeleteRequestResponse(WireModel):
    """Outcome of deleting a request."""

    success: bool
    message: str = ""


class DeleteSessionRequest(RequestModel):
    """Delete every request of a session."""

    session_id: Id


class DeleteSessionResponse(WireModel):
    """Outcome of deleting a session, with how many requests went."""

    success: bool
    message: str = ""
    deleted_requests_count: int = 0


class DeleteRequestsByIdsRequest(RequestModel):
    """Delete several requests at once."""

    request_ids: list[Id] = Field(min_length=1, max_length=10_000)


class BulkDeleteResponse(WireModel):
    """Outcome of any bulk or delete-all route."""

    success: bool
    deleted_count: int = 0
    message: str = ""
