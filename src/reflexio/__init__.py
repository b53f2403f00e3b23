"""Reflexio: a learning layer for AI agents.

Search what was learned before answering, publish what happened after::

    from reflexio import ReflexioClient, InteractionData

    client = ReflexioClient()  # REFLEXIO_URL / REFLEXIO_API_KEY, default: the local server
    context = client.search(query=message, user_id=user_id, session_id=session_id)
    block = context.to_prompt(max_tokens=800)
    ...
    client.publish_interaction(
        user_id=user_id,
        session_id=session_id,
        interactions=[
            InteractionData(role="User", content=message),
            InteractionData(role="Agent", content=answer, retrieved_learnings=block.retrieved_learnings),
        ],
    )

Importing this package loads nothing but its names: the client, the wire models and the
errors are imported on first use (httpx and pydantic only); the server lives in subpackages
that are imported on demand.
"""

from __future__ import annotations

from reflexio._version import __version__

TYPE_CHECKING = False  # not ``typing``'s: importing ``typing`` costs the Claude Code hooks start-up
if TYPE_CHECKING:
    from typing import Any

    from reflexio.client import (
        AsyncReflexioClient,
        ReflexioClient,
    )
    from reflexio.errors import (
        AuthenticationError,
        BadRequestError,
        ConflictError,
        NotFoundError,
        PayloadTooLargeError,
        PermissionDeniedError,
        QuotaExceededError,
        RateLimitedError,
        ReflexioError,
        RequestCancelledError,
        ServiceUnavailableError,
        StorageError,
        ValidationError,
    )
    from reflexio.models import (
        AgentPlaybook,
        AgentPlaybookView,
        APIKeyConfig,
        Citation,
        Config,
        ConversationTurn,
        GetAgentPlaybooksRequest,
        Interaction,
        InteractionData,
        InteractionView,
        PlaybookConfig,
        PlaybookStatus,
        ProfileExtractorConfig,
        ProfileTimeToLive,
        ProfileView,
        PromptBlock,
        PublishUserInteractionRequest,
        PublishUserInteractionResponse,
        RetrievedLearning,
        SearchMode,
        SearchUserProfileRequest,
        SetConfigRequest,
        Status,
        ToolUsed,
        UnifiedSearchRequest,
        UnifiedSearchViewResponse,
        UserActionType,
        UserPlaybook,
        UserPlaybookExtractorConfig,
        UserPlaybookView,
        UserProfile,
    )

#: Where each public name lives. Importing ``reflexio`` loads none of them: the first use of a
#: name imports its module (PEP 562), so ``import reflexio.cli`` or ``reflexio --help`` never
#: pay for the client and the wire models they do not need.
_HOMES: dict[str, str] = {
    "AsyncReflexioClient": "reflexio.client",
    "ReflexioClient": "reflexio.client",
    "AuthenticationError": "reflexio.errors",
    "BadRequestError": "reflexio.errors",
    "ConflictError": "reflexio.errors",
    "NotFoundError": "reflexio.errors",
    "PayloadTooLargeError": "reflexio.errors",
    "PermissionDeniedError": "reflexio.errors",
    "QuotaExceededError": "reflexio.errors",
    "RateLimitedError": "reflexio.errors",
    "ReflexioError": "reflexio.errors",
    "RequestCancelledError": "reflexio.errors",
    "ServiceUnavailableError": "reflexio.errors",
    "StorageError": "reflexio.errors",
    "ValidationError": "reflexio.errors",
    "AgentPlaybook": "reflexio.models",
    "AgentPlaybookView": "reflexio.models",
    "Citation": "reflexio.models",
    "Config": "reflexio.models",
    "ConversationTurn": "reflexio.models",
    "InteractionData": "reflexio.models",
    "InteractionView": "reflexio.models",
    "PlaybookStatus": "reflexio.models",
    "ProfileTimeToLive": "reflexio.models",
    "ProfileView": "reflexio.models",
    "PromptBlock": "reflexio.models",
    "PublishUserInteractionRequest": "reflexio.models",
    "PublishUserInteractionResponse": "reflexio.models",
    "RetrievedLearning": "reflexio.models",
    "SearchMode": "reflexio.models",
    "Status": "reflexio.models",
    "ToolUsed": "reflexio.models",
    "APIKeyConfig": "reflexio.models",
    "GetAgentPlaybooksRequest": "reflexio.models",
    "Interaction": "reflexio.models",
    "PlaybookConfig": "reflexio.models",
    "ProfileExtractorConfig": "reflexio.models",
    "SearchUserProfileRequest": "reflexio.models",
    "SetConfigRequest": "reflexio.models",
    "UserPlaybookExtractorConfig": "reflexio.models",
    "UnifiedSearchRequest": "reflexio.models",
    "UnifiedSearchViewResponse": "reflexio.models",
    "UserActionType": "reflexio.models",
    "UserPlaybook": "reflexio.models",
    "UserPlaybookView": "reflexio.models",
    "UserProfile": "reflexio.models",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'reflexio' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "APIKeyConfig",
    "AgentPlaybook",
    "AgentPlaybookView",
    "AsyncReflexioClient",
    "AuthenticationError",
    "BadRequestError",
    "Citation",
    "Config",
    "ConflictError",
    "ConversationTurn",
    "GetAgentPlaybooksRequest",
    "Interaction",
    "InteractionData",
    "InteractionView",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PlaybookConfig",
    "PlaybookStatus",
    "ProfileExtractorConfig",
    "ProfileTimeToLive",
    "ProfileView",
    "PromptBlock",
    "PublishUserInteractionRequest",
    "PublishUserInteractionResponse",
    "QuotaExceededError",
    "RateLimitedError",
    "ReflexioClient",
    "ReflexioError",
    "RequestCancelledError",
    "RetrievedLearning",
    "SearchMode",
    "SearchUserProfileRequest",
    "ServiceUnavailableError",
    "SetConfigRequest",
    "Status",
    "StorageError",
    "ToolUsed",
    "UnifiedSearchRequest",
    "UnifiedSearchViewResponse",
    "UserActionType",
    "UserPlaybook",
    "UserPlaybookExtractorConfig",
    "UserPlaybookView",
    "UserProfile",
    "ValidationError",
    "__version__",
]
