"""Reflexio 0.2.7's README snippets run against our server with our SDK, as that README wrote them.

The snippets are read from ``shared/seeds/000_46445decff8f0632.txt`` beside the repository,
or from its copy in ``tests/data/seeds`` when the repository is cloned on its own. Only what
the README leaves as a placeholder is filled in: the server's address, ``[...]`` where turns or
extractor configs go, and ``PlaybookConfig(...)``. The ``await`` forms run inside
``asyncio.run``, with the blocking ``ReflexioClient`` the README creates (awaiting one of its
answers gives the answer back).
"""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import reflexio
from reflexio import ReflexioClient
from tests.client.live_server import running_server

REPO = Path(__file__).resolve().parents[2]
GIVEN = REPO.parent / "shared" / "seeds" / "000_46445decff8f0632.txt"
#: The text we were given when ``shared/`` sits beside the repository, else its copy.
SEED = GIVEN if GIVEN.exists() else REPO / "tests" / "data" / "seeds" / "000_46445decff8f0632.txt"
README_URL = 'url_endpoint="http://localhost:8081/"'


def _seed_text() -> str:
    return SEED.read_text(encoding="utf-8")


def snippet(section: str, first: str, until: str) -> str:
    """The code of ``section``: from its line starting ``first`` to the next line starting ``until``."""
    lines = _seed_text().splitlines()
    heading = lines.index(section)
    start = next(i for i in range(heading, len(lines)) if lines[i].startswith(first))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(until))
    return "\n".join(lines[start:end]).strip() + "\n"


def run_awaiting(code: str, namespace: dict[str, Any]) -> None:
    """Run top-level ``await`` code as the README meant it: inside ``asyncio.run``."""
    body = textwrap.indent(code, "    ")
    exec(compile(f"async def _readme():\n{body}\n    return locals()\n", str(SEED), "exec"), namespace)
    namespace.update(asyncio.run(namespace["_readme"]()))


def close_clients(namespace: dict[str, Any]) -> None:
    """Close the clients a snippet opened: the example ends there, and its process would."""
    for value in namespace.values():
        if isinstance(value, ReflexioClient):
            value.close()


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    with running_server(tmp_path) as url:
        yield url


def _readme_client(code: str, url: str) -> str:
    assert README_URL in code, "the README's client points at the local server"
    return code.replace(README_URL, f'url_endpoint="{url}/"')


def test_publish_your_first_interaction(server_url: str) -> None:
    code = _readme_client(
        snippet("Publish your first interaction", "import reflexio", "Reflexio will automatically"),
        server_url,
    )
    assert "reflexio.Interaction(" in code and "session_id" not in code
    namespace: dict[str, Any] = {}
    exec(compile(code, str(SEED), "exec"), namespace)
    close_clients(namespace)
    with ReflexioClient(url_endpoint=server_url) as client:
        turns = client.get_interactions(user_id="user-123").interactions
        (session,) = client.get_requests(user_id="user-123").sessions
    assert session.session_id == "req-001"  # a request without a session is its own session
    assert [r.request.request_id for r in session.requests] == ["req-001"]
    assert {(t.role, t.content) for t in turns} == {
        ("user", "How do I reset my password?"),
        ("assistant", "Go to Settings > Security > Reset Password."),
    }


def test_basic_usage_with_await(server_url: str, request: pytest.FixtureRequest) -> None:
    code = _readme_client(snippet("Basic usage", "import reflexio", "Configuration"), server_url)
    assert "await client.publish_interaction(" in code and "interactions=[...]" in code
    code = code.replace("interactions=[...]", "interactions=TURNS")
    client = ReflexioClient(url_endpoint=server_url)
    request.addfinalizer(client.close)
    client.add_agent_playbooks([{"agent_version": "v1", "content": "Offer the password reset link first"}])
    turns = [
        reflexio.Interaction(role="user", content="How do I reset my password?"),
        reflexio.Interaction(role="assistant", content="Go to Settings > Security > Reset Password."),
    ]
    namespace: dict[str, Any] = {"TURNS": turns}
    with pytest.warns(DeprecationWarning, match="search_profiles"):
        run_awaiting(code, namespace)
    close_clients(namespace)
    assert namespace["profiles"].success and namespace["profiles"].user_profiles == []
    assert "pass user_id" in (namespace["profiles"].msg or "")
    assert [p.content for p in namespace["playbooks"].agent_playbooks] == [
        "Offer the password reset link first"
    ]
    (session,) = client.get_requests(user_id="user-123").sessions
    assert session.session_id == "session-abc"
    assert session.requests[0].request.agent_version == "v1"


def test_configuration_with_await(server_url: str, request: pytest.FixtureRequest) -> None:
    code = snippet("Configuration", "# Update org configuration", "Architecture")
    assert "reflexio.SetConfigRequest(" in code and 'openai="sk-..."' in code
    code = code.replace("profile_extractor_configs=[...]", "profile_extractor_configs=PROFILE_CONFIGS")
    code = code.replace("reflexio.PlaybookConfig(...)", "reflexio.PlaybookConfig(**PLAYBOOK_FIELDS)")
    client = ReflexioClient(url_endpoint=server_url)
    request.addfinalizer(client.close)
    namespace: dict[str, Any] = {
        "reflexio": reflexio,
        "client": client,
        "PROFILE_CONFIGS": [
            reflexio.ProfileExtractorConfig(extraction_definition_prompt="The user's devices and accounts")
        ],
        # 0.2.7's field names, as its PlaybookConfig spelled them.
        "PLAYBOOK_FIELDS": {"playbook_name": "support", "playbook_definition_prompt": "How to fix logins"},
    }
    run_awaiting(code, namespace)
    stored = client.get_config()
    assert stored.api_key_config is not None and stored.api_key_config.openai is not None
    assert stored.api_key_config.openai.api_key == "****"  # kept, and masked on every read
    assert stored.profile_extractor_config is not None
    assert stored.profile_extractor_config.extraction_definition_prompt == "The user's devices and accounts"
    assert stored.user_playbook_extractor_config is not None
    assert stored.user_playbook_extractor_config.extraction_definition_prompt == "How to fix logins"
