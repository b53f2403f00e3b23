"""Masking the secrets in an org config for reads, and restoring them on writes.

Secrets are write-only through the API: ``get_config`` answers with every API key, password
and HMAC secret masked as ``"****"`` plus the last four characters. A client that reads the
config, edits one field and writes it all back sends those masks back; they are swapped for
the stored secrets here, so a round trip can never overwrite a key with its own mask. These
functions work on plain JSON-like data so they do not depend on the shape of ``Config``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "MASK",
    "is_secret_field",
    "map_secrets",
    "mask_secret",
    "mask_secrets",
    "mask_url",
    "restore_masked_secrets",
]

MASK: Final = "****"

# Field names whose whole string value is a secret.
_SECRET_KEYS: Final = frozenset({"api_key", "key", "read_key", "webhook_auth_header"})
# Field names holding a list of secrets.
_SECRET_LIST_KEYS: Final = frozenset({"hmac_secrets"})
# Field names holding a URL or DSN that may embed a password.
_URL_KEYS: Final = frozenset(
    {"db_url", "read_db_url", "url", "read_url", "api_base", "endpoint", "webhook_url"}
)
_PASSWORD_PARAM: Final = re.compile(r"(?i)(password=)([^&\s]+)")
_SHORTEST_SECRET_WITH_HINT: Final = 12


def is_secret_field(key: str) -> bool:
    """Whether a config field of this name holds a secret (or a list of them) as a whole."""
    return key in _SECRET_KEYS or key in _SECRET_LIST_KEYS


def mask_secret(secret: str) -> str:
    """Hide a secret but keep its last four characters as a hint (``****abcd``).

    Secrets shorter than twelve characters show no hint at all.
    """
    hint = secret[-4:] if len(secret) >= _SHORTEST_SECRET_WITH_HINT else ""
    return f"{MASK}{hint}"


def mask_url(url: str) -> str:
    """Hide the password in a URL's userinfo and in any ``password=`` parameter."""
    masked = _PASSWORD_PARAM.sub(rf"\g<1>{MASK}", url)
    parts = urlsplit(masked)
    if parts.password is None:
        return masked
    userinfo, _, host = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{host}"))


def _masker_for(key: str) -> Callable[[str], str] | None:
    if key in _SECRET_KEYS:
        return mask_secret
    if key in _URL_KEYS:
        return mask_url
    return None


def map_secrets(data: Any, change: Callable[[str], str]) -> Any:
    """A copy of JSON-like ``data`` with ``change`` applied to every secret-bearing string.

    The same fields :func:`mask_secrets` masks: keys, secrets in lists, and URLs (which may
    carry a password), so storage can encrypt exactly what reads hide.
    """
    if isinstance(data, dict):
        return {key: _map_field(str(key), value, change) for key, value in data.items()}
    if isinstance(data, list):
        return [map_secrets(item, change) for item in data]
    return data


def _map_field(key: str, value: Any, change: Callable[[str], str]) -> Any:
    if key in _SECRET_LIST_KEYS and isinstance(value, list):
        return [change(item) if isinstance(item, str) else item for item in value]
    if (key in _SECRET_KEYS or key in _URL_KEYS) and isinstance(value, str):
        return change(value)
    return map_secrets(value, change)


def mask_secrets(data: Any) -> Any:
    """Return a copy of JSON-like ``data`` with every secret it holds masked."""
    if isinstance(data, dict):
        return {key: _mask_field(str(key), value) for key, value in data.items()}
    if isinstance(data, list):
        return [mask_secrets(item) for item in data]
    return data


def _mask_field(key: str, value: Any) -> Any:
    if key in _SECRET_LIST_KEYS and isinstance(value, list):
        return [mask_secret(item) if isinstance(item, str) else item for item in value]
    masker = _masker_for(key)
    if masker is not None and isinstance(value, str):
        return masker(value)
    return mask_secrets(value)


def restore_masked_secrets(incoming: Any, stored: Any, path: str = "") -> Any:
    """Return ``incoming`` with every masked secret replaced by the stored secret it hides.

    A value is taken as masked when it contains ``****``; it is restored from the stored
    value at the same place whose mask it equals. Unmasked values are kept as sent, so a
    caller can still replace a secret by sending a new one.

    Raises:
        ValueError: When a masked value matches no stored secret (for instance the stored
            config has no key there): storing the mask itself would silently break the key.
    """
    if isinstance(incoming, dict):
        known = stored if isinstance(stored, dict) else {}
        return {
            key: _restore_field(str(key), value, known.get(key), _join(path, str(key)))
            for key, value in incoming.items()
        }
    if isinstance(incoming, list):
        known_items = stored if isinstance(stored, list) else []
        return [
            restore_masked_secrets(
                item, known_items[index] if index < len(known_items) else None, f"{path}[{index}]"
            )
            for index, item in enumerate(incoming)
        ]
    return incoming


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _restore_field(key: str, value: Any, stored: Any, path: str) -> Any:
    if key in _SECRET_LIST_KEYS and isinstance(value, list):
        candidates = [item for item in stored if isinstance(item, str)] if stored else []
        return [
            _restore_one(item, candidates, mask_secret, f"{path}[{index}]") if isinstance(item, str) else item
            for index, item in enumerate(value)
        ]
    masker = _masker_for(key)
    if masker is not None and isinstance(value, str):
        candidates = [stored] if isinstance(stored, str) else []
        return _restore_one(value, candidates, masker, path)
    return restore_masked_secrets(value, stored, path)


def _restore_one(value: str, candidates: list[str], masker: Callable[[str], str], path: str) -> str:
    if MASK not in value:
        return value
    for candidate in candidates:
        if masker(candidate) == value:
            return candidate
    raise ValueError(f"{path} holds a masked secret that matches no stored secret; send the real value")
