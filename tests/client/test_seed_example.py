"""The product's search→publish example runs unchanged against our server, Python and curl.

The example is read from ``shared/seeds/001_188d3514a1987faf.txt`` beside the repository when it
is there (the text we were given), else from its copy in ``tests/data/seeds`` (a clone on its
own), which ``test_the_copies_are_the_seeds`` keeps equal to the original. Only
``call_your_llm`` is supplied, and ``REFLEXIO_URL`` points at a real server on loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reflexio import ReflexioClient
from tests.client.live_server import running_server

REPO = Path(__file__).resolve().parents[2]
GIVEN = REPO.parent / "shared" / "seeds" / "001_188d3514a1987faf.txt"
#: The text we were given when ``shared/`` sits beside the repository, else its copy.
SEED = GIVEN if GIVEN.exists() else REPO / "tests" / "data" / "seeds" / "001_188d3514a1987faf.txt"
USER, SESSION, VERSION = "user_123", "session_001", "support-agent@2"
ANSWER = "The ZenBook 14 (1.2 kg, about $900) fits your travel needs."


def _seed_text() -> str:
    return SEED.read_text(encoding="utf-8")


def _python_part(text: str) -> str:
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("curl "))
    return "\n".join(lines[:end]).strip() + "\n"


def _curl_commands(text: str) -> list[str]:
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("curl ")]
    assert len(starts) == 2, "the seed should hold two curl commands"
    heredoc_end = next(i for i in range(starts[1], len(lines)) if lines[i] == "JSON")
    first = "\n".join(lines[starts[0] : starts[1]]).strip()
    second = "\n".join(lines[starts[1] : heredoc_end + 1])
    return [first, second + "\n"]


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    """A fresh server per test, seeded with one learning of each kind for ``user_123``.

    The Python and the curl example are alternatives, and search skips what was already
    served in ``session_001``, so they must not share a server.
    """
    with running_server(tmp_path) as url, ReflexioClient(url_endpoint=url) as client:
        client.add_user_profile([{"user_id": USER, "content": "Prefers lightweight laptops for travel"}])
        client.add_user_playbook(
            [
                {
                    "user_id": USER,
                    "agent_version": VERSION,
                    "request_id": "seed-request",
                    "trigger": "recommending a laptop",
                    "content": "ask about the budget before recommending a laptop",
                }
            ]
        )
        client.add_agent_playbooks(
            [
                {
                    "agent_version": VERSION,
                    "trigger": "the user asks for a laptop recommendation",
                    "content": "recommend three laptops with weight and price",
                    "playbook_status": "approved",
                }
            ]
        )
        yield url


def _learnings_of_agent_turns(client: ReflexioClient, content: str) -> list[tuple[str, str]]:
    turns = client.get_interactions(user_id=USER, top_k=100).interactions
    agent = [turn for turn in turns if turn.role == "Agent" and turn.content == content]
    assert agent, f"no Agent turn {content!r} was stored"
    return [(learning.kind, learning.learning_id) for learning in agent[0].retrieved_learnings]


def test_python_example_runs_unchanged(server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFLEXIO_URL", server_url)
    monkeypatch.delenv("REFLEXIO_API_KEY", raising=False)
    prompts: list[list[dict[str, str]]] = []

    def call_your_llm(messages: list[dict[str, str]]) -> str:
        prompts.append(messages)
        return ANSWER

    namespace: dict[str, Any] = {"call_your_llm": call_your_llm, "__name__": "seed_example"}
    exec(compile(_python_part(_seed_text()), str(SEED), "exec"), namespace)
    namespace["client"].close()  # the example's script ends here; its process would close it

    context = namespace["context"]
    assert context.profiles and context.user_playbooks and context.agent_playbooks
    system = prompts[0][0]["content"]
    assert "Prefers lightweight laptops for travel" in system
    assert "recommend three laptops" in system
    expected = [(item["kind"], item["learning_id"]) for item in namespace["retrieved_learnings"]]
    assert {kind for kind, _ in expected} == {"profile", "user_playbook", "agent_playbook"}
    with ReflexioClient(url_endpoint=server_url) as client:
        assert _learnings_of_agent_turns(client, ANSWER) == expected


def _run_shell(command: str, url: str) -> dict[str, Any]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("REFLEXIO_")}
    env["REFLEXIO_URL"] = url
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def test_curl_example_runs_against_the_server(server_url: str) -> None:
    search, publish = _curl_commands(_seed_text())
    found = _run_shell(search, server_url)
    assert found["success"] is True, found
    ids = {
        "profile_id": found["profiles"][0]["profile_id"],
        "user_playbook_id": str(found["user_playbooks"][0]["user_playbook_id"]),
        "agent_playbook_id": str(found["agent_playbooks"][0]["agent_playbook_id"]),
    }
    for name, value in ids.items():
        placeholder = f"<{name} returned by search>"
        assert placeholder in publish
        publish = publish.replace(placeholder, value)
    published = _run_shell(publish, server_url)
    assert published["success"] is True, published
    with ReflexioClient(url_endpoint=server_url) as client:
        learnings = _learnings_of_agent_turns(client, "The completed agent response.")
    assert learnings == [
        ("profile", ids["profile_id"]),
        ("user_playbook", ids["user_playbook_id"]),
        ("agent_playbook", ids["agent_playbook_id"]),
    ]


def test_the_copies_are_the_seeds() -> None:
    """The copies in tests/data/seeds are the seeds we were given, byte for byte."""
    copies = sorted((REPO / "tests" / "data" / "seeds").glob("*.txt"))
    assert copies
    given = REPO.parent / "shared" / "seeds"
    if not given.exists():
        pytest.skip("shared/ is not beside the repository: nothing to compare the copies with")
    for copy in copies:
        assert copy.read_bytes() == (given / copy.name).read_bytes(), copy.name
