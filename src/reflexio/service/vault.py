"""Secrets at rest: the secret fields of every stored org config are encrypted with Fernet.

What reads mask (LLM provider keys, passwords in URLs, HMAC secrets: ``models.secrets``) is
what is encrypted before an org config reaches storage, each value on its own as
``fernet:<token>``, and decrypted when the config is read. A database file or a backup alone
then holds no usable credential.

The key is the operator's: ``REFLEXIO_SECRET_KEYS`` (Fernet keys, comma-separated; the first
encrypts, all decrypt, which is how a key is rotated), or else a key generated on first start
in ``<REFLEXIO_HOME>/secret.key``, created readable by its owner only. Values stored by older
versions in plain text are read as they are and sealed by :func:`seal_stored_configs` (the
server runs it at start-up, ``reflexio secrets rotate`` on demand).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from reflexio.errors import ValidationError
from reflexio.models import map_secrets
from reflexio.storage import Storage

__all__ = ["PREFIX", "Vault", "load_keys", "seal_stored_configs"]

log = logging.getLogger(__name__)

#: How an encrypted value starts in a stored config.
PREFIX: Final = "fernet:"


class Vault:
    """Encrypts and decrypts the secret fields of config documents with the operator's keys."""

    def __init__(self, keys: Sequence[str]) -> None:
        if not keys:
            raise ValueError("a vault needs at least one key")
        try:
            fernets = [Fernet(key) for key in keys]
        except ValueError as exc:
            raise ValueError(f"a secret key is not a valid Fernet key: {exc}") from None
        self._primary = fernets[0]
        self._fernet = MultiFernet(fernets)

    def is_sealed(self, document: Mapping[str, Any]) -> bool:
        """Whether every secret of ``document`` is encrypted with the first key already."""
        current = True

        def look(value: str) -> str:
            nonlocal current
            if current and not self._by_primary(value):
                current = False
            return value

        map_secrets(dict(document), look)
        return current

    def _by_primary(self, value: str) -> bool:
        if not value.startswith(PREFIX):
            return False
        try:
            self._primary.decrypt(value.removeprefix(PREFIX).encode())
        except InvalidToken:
            return False
        return True

    def seal(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """``document`` with every secret encrypted with the first key (sealed ones re-sealed)."""
        sealed: dict[str, Any] = map_secrets(dict(document), self._seal_one)
        return sealed

    def unseal(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """``document`` with every secret in plain text again.

        Raises:
            ValidationError: A secret cannot be decrypted with any configured key.
        """
        try:
            opened: dict[str, Any] = map_secrets(dict(document), self._unseal_one)
        except InvalidToken:
            raise ValidationError(
                "the stored secrets of this org cannot be decrypted with the configured keys"
                " (REFLEXIO_SECRET_KEYS or the key file): restore the key, or set the secrets again"
            ) from None
        return opened

    def _seal_one(self, value: str) -> str:
        if value.startswith(PREFIX):
            return PREFIX + self._fernet.rotate(value.removeprefix(PREFIX).encode()).decode()
        return PREFIX + self._fernet.encrypt(value.encode()).decode()

    def _unseal_one(self, value: str) -> str:
        if not value.startswith(PREFIX):
            return value  # written before secrets were encrypted; sealed on the next write
        return self._fernet.decrypt(value.removeprefix(PREFIX).encode()).decode()


def load_keys(keys: Sequence[str], key_file: Path | None) -> list[str]:
    """The keys from the environment, or the key file's (generated, owner-only, if missing)."""
    if keys:
        return list(keys)
    if key_file is None:
        raise ValueError("no secret key: set REFLEXIO_SECRET_KEYS or a key file")
    if not key_file.exists():
        key_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(Fernet.generate_key() + b"\n")
        log.warning("generated the key that encrypts stored secrets: %s (back it up)", key_file)
    return [line.strip() for line in key_file.read_text().splitlines() if line.strip()]


def seal_stored_configs(storage: Storage, vault: Vault, org_ids: Sequence[str]) -> int:
    """Seal (or re-seal with the first key) the secrets of these orgs' stored configs.

    Returns:
        How many configs were rewritten.
    """
    rewritten = 0
    for org_id in org_ids:
        stored = storage.get_org_config(org_id)
        if stored is None or vault.is_sealed(stored):
            continue
        storage.put_org_config(org_id, vault.seal(vault.unseal(stored)))
        rewritten += 1
    return rewritten
