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

Importing this package loads only the client, the wire models and the errors (httpx and
pydantic); the server lives in subpackages that are imported on demand.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from reflexio.client import AsyncReflexioClient, ReflexioClient
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
    Citation,
    Config,
    ConversationTurn,
    InteractionData,
    InteractionView,
    PlaybookStatus,
    ProfileTimeToLive,
    ProfileView,
    PromptBlock,
    PublishUserInteractionRequest,
    PublishUserInteractionResponse,
    RetrievedLearning,
    SearchMode,
    Status,
    ToolUsed,
    UnifiedSearchRequest,
    UnifiedSearchViewResponse,
    UserActionType,
    UserPlaybook,
    UserPlaybookView,
    UserProfile,
)

try:
    __version__ = _version("reflexio")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AgentPlaybook",
    "AgentPlaybookView",
    "AsyncReflexioClient",
    "AuthenticationError",
    "BadRequestError",
    "Citation",
    "Config",
    "ConflictError",
    "ConversationTurn",
    "InteractionData",
    "InteractionView",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PlaybookStatus",
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
    "ServiceUnavailableError",
    "Status",
    "StorageError",
    "ToolUsed",
    "UnifiedSearchRequest",
    "UnifiedSearchViewResponse",
    "UserActionType",
    "UserPlaybook",
    "UserPlaybookView",
    "UserProfile",
    "ValidationError",
    "__version__",
]
