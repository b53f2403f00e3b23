"""``reflexio secrets``: the key that encrypts stored secrets, and rotating it.

Stored org configs keep their secrets (provider keys, passwords in URLs) encrypted with the
first key of ``REFLEXIO_SECRET_KEYS``, or with the key generated in ``~/.reflexio/secret.key``.
To rotate: ``reflexio secrets new-key``, put the new key first in ``REFLEXIO_SECRET_KEYS``
followed by the old one, run ``reflexio secrets rotate``, then drop the old key.
"""

from __future__ import annotations

import typer

from reflexio.cli.admin import StorageUrlOpt, local_core
from reflexio.cli.options import JsonOpt, wants_json
from reflexio.cli.output import Result, run

__all__ = ["secrets"]

secrets = typer.Typer(
    help="The key that encrypts stored secrets: make one, rotate to it.", no_args_is_help=True
)


@secrets.command("new-key")
def new_key(as_json: JsonOpt = False) -> None:
    """Print a new encryption key (for REFLEXIO_SECRET_KEYS); nothing is changed."""

    def action() -> Result:
        from cryptography.fernet import Fernet

        key = Fernet.generate_key().decode()
        return Result(
            {"key": key}, message="A new key (put it first in REFLEXIO_SECRET_KEYS):", fields={"key": key}
        )

    run(wants_json(as_json), action)


@secrets.command("rotate")
def rotate(storage_url: StorageUrlOpt = None, as_json: JsonOpt = False) -> None:
    """Re-encrypt every stored secret with the first key (plain-text ones from older versions too)."""

    def action() -> Result:
        from reflexio.service import org_config

        with local_core(storage_url) as core:
            changed = org_config.seal_secrets(core)
        return Result({"rewritten": changed}, message=f"Re-encrypted the secrets of {changed} org config(s)")

    run(wants_json(as_json), action)
