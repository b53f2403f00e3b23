"""``reflexio secrets``: the README's key rotation, step by step, from the command line.

No server: ``secrets rotate`` opens the storage itself, as an operator runs it on the database's
machine. The org config is written and read through the service with the key set the CLI's
environment names, so each step sees what a restarted server would.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from reflexio.config import Settings
from reflexio.errors import ValidationError
from reflexio.service import org_config
from reflexio.service.core import open_core
from tests.cli.conftest import Cli, home_env

ORG = "self-host-org"
SECRET = "sk-live-rotate-0123456789abcdef"


def _config_with(home: Path, keys: str) -> str | None:
    """The provider key a server started with ``REFLEXIO_SECRET_KEYS=keys`` would use."""
    core = open_core(Settings.from_env(home_env(home, REFLEXIO_SECRET_KEYS=keys)))
    try:
        config = core.org_config(ORG)
        return (
            config.api_key_config.openai.api_key
            if config.api_key_config and config.api_key_config.openai
            else None
        )
    finally:
        core.close()


def test_new_key_prints_a_key_and_changes_nothing(tmp_path: Path) -> None:
    cli = Cli(home_env(tmp_path))
    key = cli.json("secrets", "new-key")["key"]
    assert Fernet(key.encode())  # a usable Fernet key
    assert cli.json("secrets", "new-key")["key"] != key
    assert "REFLEXIO_SECRET_KEYS" in cli("secrets", "new-key").stdout
    assert not (tmp_path / "reflexio.db").exists()  # nothing was opened, let alone changed


def test_the_documented_rotation_keeps_every_secret(tmp_path: Path) -> None:
    old = Fernet.generate_key().decode()
    core = open_core(Settings.from_env(home_env(tmp_path, REFLEXIO_SECRET_KEYS=old)))
    org_config.set_config(core, ORG, {"api_key_config": {"openai": {"api_key": SECRET}}})
    core.close()

    new = Cli(home_env(tmp_path)).json("secrets", "new-key")["key"]
    both = Cli(home_env(tmp_path, REFLEXIO_SECRET_KEYS=f"{new},{old}"))
    assert both.json("secrets", "rotate") == {"rewritten": 1}
    assert both.json("secrets", "rotate") == {"rewritten": 0}  # everything is under the new key now
    assert "Re-encrypted the secrets of 0 org config(s)" in both("secrets", "rotate").stdout

    assert _config_with(tmp_path, new) == SECRET  # the old key can be dropped
    with pytest.raises(ValidationError, match="cannot be decrypted"):
        _config_with(tmp_path, old)
