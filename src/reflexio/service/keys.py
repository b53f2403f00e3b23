"""API keys: created per org, shown once, stored only as a SHA-256 hash.

A key is ``rfx_`` plus 40 URL-safe random characters. Storage keeps its hash (enough to
recognise it, useless to anyone who reads the database) and a short prefix so a person can
tell keys apart when listing or revoking them. Keys are looked up on every request rather than
cached, so a key created or revoked while the server runs takes effect at once, in every
process that shares the storage.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import replace

from reflexio.errors import NotFoundError, ValidationError
from reflexio.filters import LearningFilter, RequestFilter
from reflexio.records import ApiKeyRecord
from reflexio.service.core import Core

__all__ = [
    "KEY_PREFIX",
    "active_key",
    "authenticate",
    "create_key",
    "hash_key",
    "identify",
    "keyless_data_notes",
    "list_keys",
    "revoke_key",
    "set_reviewer",
]

#: Every key starts with this, so leaked keys are easy to spot in logs and by secret scanners.
KEY_PREFIX = "rfx_"
#: ``token_urlsafe(30)`` yields exactly 40 characters.
_RANDOM_BYTES = 30
#: How much of the key is kept in clear for listing (the marker and 8 random characters).
_SHOWN_PREFIX_LEN = len(KEY_PREFIX) + 8


def hash_key(plain: str) -> str:
    """The stored form of a key: its SHA-256 hex digest (keys are random, so no salt is needed)."""
    return hashlib.sha256(plain.encode("utf-8")).hexdigest()


def create_key(
    core: Core, org_id: str, name: str = "", *, reviewer: bool = False
) -> tuple[ApiKeyRecord, str]:
    """Create a key for ``org_id`` (``reviewer``: may approve and reject, over REST and MCP).

    Returns:
        The stored record and the plain key; the plain key is never retrievable again.

    Raises:
        ValidationError: The org id is blank.
    """
    if not org_id.strip():
        raise ValidationError("an API key needs a non-blank org id")
    plain = KEY_PREFIX + secrets.token_urlsafe(_RANDOM_BYTES)
    record = core.storage.add_api_key(
        ApiKeyRecord(
            org_id=org_id,
            key_hash=hash_key(plain),
            prefix=plain[:_SHOWN_PREFIX_LEN],
            name=name,
            reviewer=reviewer,
        )
    )
    return record, plain


def keyless_data_notes(core: Core, org_id: str) -> list[str]:
    """What a person creating a key for ``org_id`` should know about data published without one.

    Key-less callers (clients on this machine, before any key existed) act as the default org,
    so that org holds everything they published. A key for another org does not see it.
    """
    default = core.settings.default_org_id
    if org_id == default:
        return [f"{default} is the default org: everything published without a key is visible to this key"]
    has_data = core.storage.list_requests(default, RequestFilter(), limit=1) or core.storage.count_learnings(
        default, LearningFilter()
    )
    if not has_data:
        return []
    return [
        f"what was published without a key lives in the default org {default}, which this key "
        f"(org {org_id}) does not see; to keep using it, create a key for {default}: "
        "`reflexio keys create` (no --org)"
    ]


def list_keys(core: Core, org_id: str | None = None) -> list[ApiKeyRecord]:
    """Keys of one org (or of every org), active and revoked, oldest first."""
    return core.storage.list_api_keys(org_id)


def revoke_key(core: Core, key_id: int, org_id: str | None = None) -> None:
    """Revoke a key; when ``org_id`` is given the key must belong to it.

    Raises:
        NotFoundError: No active key with this id (in this org).
    """
    owned = {k.id: k for k in core.storage.list_api_keys(org_id)}
    key = owned.get(key_id)
    if key is None or key.revoked_at is not None or not core.storage.revoke_api_key(key_id):
        raise NotFoundError(f"no active API key with id {key_id}")
    core.forget_keys()


def set_reviewer(core: Core, key_id: int, reviewer: bool, org_id: str | None = None) -> ApiKeyRecord:
    """Let an existing key review agent playbooks (approve, reject), or take that right away.

    Keys are looked up on every request, so the change holds at once in every process that
    shares the storage; the key itself (and what was published with it) is unchanged.

    Returns:
        The key as it is now.

    Raises:
        NotFoundError: No active key with this id (in this org, when ``org_id`` is given).
    """
    owned = {k.id: k for k in core.storage.list_api_keys(org_id)}
    key = owned.get(key_id)
    if key is None or key.revoked_at is not None or not core.storage.set_api_key_reviewer(key_id, reviewer):
        raise NotFoundError(f"no active API key with id {key_id}")
    return replace(key, reviewer=reviewer)


def identify(core: Core, bearer: str) -> ApiKeyRecord | None:
    """The active key record a presented key matches, or None when unknown or revoked."""
    if not bearer.startswith(KEY_PREFIX):
        return None
    return core.storage.find_api_key(hash_key(bearer))


def authenticate(core: Core, bearer: str) -> str | None:
    """The org a presented key belongs to, or None when it is unknown or revoked."""
    found = identify(core, bearer)
    return found.org_id if found is not None else None


def active_key(core: Core, org_id: str, key_id: int) -> ApiKeyRecord | None:
    """The org's key with this id while it is active (a dashboard session names its key by id)."""
    for key in core.storage.list_api_keys(org_id):
        if key.id == key_id:
            return key if key.revoked_at is None else None
    return None
