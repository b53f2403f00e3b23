"""Secrets are encrypted at rest with the operator's key; the data is its owner's only (defect 10).

Before: provider keys sat in plain text in a database file created world-readable (0644).
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from reflexio.config import Settings
from reflexio.embed import Embedder
from reflexio.errors import ValidationError
from reflexio.service import org_config
from reflexio.service.core import Core, open_core
from reflexio.service.vault import PREFIX
from reflexio.storage import open_storage
from tests.conftest import BACKENDS, storage_url

ORG = "self-host-org"  # the default org: rotation covers it, key owners and orgs with data
SECRET = "sk-live-0123456789abcdefSECRET"
CONFIG = {
    "api_key_config": {
        "openai": {"api_key": SECRET},
        "anthropic": {"api_key": "sk-ant-hunter2pass"},
    },
}


def _core(url: str, home: Path, embedder: Embedder, keys: tuple[str, ...] = ()) -> Core:
    settings = Settings(home=home, storage_url=url, secret_keys=keys)
    return Core(settings=settings, storage=open_storage(url, embedder), embedder=embedder)


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return storage_url(request.param, tmp_path)


def test_stored_secrets_are_encrypted_and_read_back(url: str, tmp_path: Path, embedder: Embedder) -> None:
    core = _core(url, tmp_path, embedder)
    org_config.set_config(core, ORG, CONFIG)
    stored = core.storage.get_org_config(ORG)
    assert stored is not None
    assert SECRET not in str(stored) and "hunter2pass" not in str(stored)
    assert stored["api_key_config"]["openai"]["api_key"].startswith(PREFIX)
    config = core.org_config(ORG)
    assert config.api_key_config and config.api_key_config.openai
    assert config.api_key_config.openai.api_key == SECRET  # what the LLM adapter gets
    assert SECRET not in str(org_config.get_config(core, ORG))  # reads stay masked
    core.close()


def test_the_database_file_holds_no_secret(tmp_path: Path, embedder: Embedder) -> None:
    db = tmp_path / "data" / "reflexio.db"
    core = _core(f"sqlite:///{db}", tmp_path, embedder)
    org_config.set_config(core, ORG, CONFIG)
    core.close()
    raw = b"".join(path.read_bytes() for path in db.parent.iterdir())
    assert SECRET.encode() not in raw and b"hunter2pass" not in raw


def test_a_key_is_rotated_without_losing_a_secret(url: str, tmp_path: Path, embedder: Embedder) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    core = _core(url, tmp_path, embedder, (old,))
    org_config.set_config(core, ORG, CONFIG)
    both = Core(
        settings=Settings(home=tmp_path, storage_url=url, secret_keys=(new, old)),
        storage=core.storage,
        embedder=embedder,
    )
    assert org_config.seal_secrets(both) == 1
    assert org_config.seal_secrets(both) == 0  # nothing left to re-encrypt
    only_new = Core(
        settings=Settings(home=tmp_path, storage_url=url, secret_keys=(new,)),
        storage=core.storage,
        embedder=embedder,
    )
    config = only_new.org_config(ORG)
    assert (
        config.api_key_config
        and config.api_key_config.openai
        and config.api_key_config.openai.api_key == SECRET
    )
    core.close()


def test_plain_text_from_an_older_version_is_read_and_then_sealed(
    url: str, tmp_path: Path, embedder: Embedder
) -> None:
    core = _core(url, tmp_path, embedder)
    core.storage.put_org_config("self-host-org", {"api_key_config": {"openai": {"api_key": SECRET}}})
    config = core.org_config("self-host-org")
    assert (
        config.api_key_config
        and config.api_key_config.openai
        and config.api_key_config.openai.api_key == SECRET
    )
    assert org_config.seal_secrets(core) == 1
    assert SECRET not in str(core.storage.get_org_config("self-host-org"))
    core.close()


def test_a_lost_key_is_a_clear_error_and_the_config_can_be_set_again(
    url: str, tmp_path: Path, embedder: Embedder
) -> None:
    core = _core(url, tmp_path, embedder, (Fernet.generate_key().decode(),))
    org_config.set_config(core, ORG, CONFIG)
    other = Core(
        settings=Settings(home=tmp_path, storage_url=url, secret_keys=(Fernet.generate_key().decode(),)),
        storage=core.storage,
        embedder=embedder,
    )
    with pytest.raises(ValidationError, match="cannot be decrypted"):
        other.org_config(ORG)
    org_config.set_config(other, ORG, {"api_key_config": {"openai": {"api_key": "sk-new-key-value"}}})
    config = other.org_config(ORG)
    assert (
        config.api_key_config
        and config.api_key_config.openai
        and config.api_key_config.openai.api_key == "sk-new-key-value"
    )
    core.close()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_data_directory_key_and_database_are_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = Settings.from_env({"REFLEXIO_HOME": str(home), "REFLEXIO_EMBEDDER": "wordllama"})
    core = open_core(settings)
    org_config.set_config(core, ORG, CONFIG)  # makes the key on first use
    core.close()
    assert _mode(home) == 0o700
    assert _mode(home / "data") == 0o700
    assert _mode(home / "data" / "reflexio.db") == 0o600
    assert _mode(home / "secret.key") == 0o600
