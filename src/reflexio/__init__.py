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

Importing this package loads nothing: each public name is imported on first use (PEP 562),
so ``import reflexio.config`` or a Claude Code hook starts in milliseconds, and ``from reflexio
import ReflexioClient`` loads only the client, the wire models and the errors (httpx and
pydantic). The server lives in subpackages that are imported on demand.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
        ReflexioError,
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

#: Where each public name lives; ``__getattr__`` imports it from there on first use.
_SOURCES: dict[str, str] = {
    "AsyncReflexioClient": "reflexio.client",
    "ReflexioClient": "reflexio.client",
    "AuthenticationError": "reflexio.errors",
    "BadRequestError": "reflexio.errors",
    "ConflictError": "reflexio.errors",
    "NotFoundError": "reflexio.errors",
    "PayloadTooLargeError": "reflexio.errors",
    "PermissionDeniedError": "reflexio.errors",
    "ReflexioError": "reflexio.errors",
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
    "UnifiedSearchRequest": "reflexio.models",
    "UnifiedSearchViewResponse": "reflexio.models",
    "UserActionType": "reflexio.models",
    "UserPlaybook": "reflexio.models",
    "UserPlaybookView": "reflexio.models",
    "UserProfile": "reflexio.models",
}

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
    "ReflexioClient",
    "ReflexioError",
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


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it (module ``__getattr__``, PEP 562)."""
    if name == "__version__":
        value: Any = _installed_version()
    elif name in _SOURCES:
        value = getattr(importlib.import_module(_SOURCES[name]), name)
    else:
        raise AttributeError(f"module 'reflexio' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reflexio")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"
