"""The README's examples run: its Python, shell and curl blocks against a real server.

So the examples people copy are the ones the suite proves: the Python block through the SDK
against a server with workers, the curl block against that server, and the shell block as
written (a background ``reflexio services start`` on a free port under a temporary home).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reflexio import ReflexioClient
from reflexio.api.server import in_background
from reflexio.config import Settings
from reflexio.service.core import open_core
from tests.cli.conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def block(heading: str, language: str) -> str:
    """The first ``language`` code block after a ``## heading``."""
    section = README.split(f"## {heading}", 1)[1]
    match = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert match, f"no {language} block under {heading!r}"
    return match.group(1)


def env_for(home: Path, **extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("REFLEXIO_")}
    return {**keep, "HOME": str(home), "REFLEXIO_HOME": str(home / ".reflexio"), **extra}


@pytest.mark.slow
def test_python_and_curl_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings.from_env(
        {"HOME": str(tmp_path), "REFLEXIO_STORAGE_URL": f"sqlite:///{tmp_path}/db.sqlite"}
    )
    with in_background(open_core(settings)) as url:
        monkeypatch.setenv("REFLEXIO_URL", url)
        monkeypatch.delenv("REFLEXIO_API_KEY", raising=False)
        for run in ("first", "again"):  # re-running the example prints the same learnings
            scope: dict[str, object] = {}
            exec(compile(block("Use it from Python", "python"), "README.md", "exec"), scope)
            scope["client"].close()  # type: ignore[attr-defined]  # the example ends; its process would close it
            text = scope["block"].text  # type: ignore[attr-defined]
            assert "Linux" in text, f"{run}: {text!r}"
            assert scope["block"].retrieved_learnings  # type: ignore[attr-defined]
        curl = block("Use it over HTTP", "bash").replace("http://127.0.0.1:8081", url)
        done = subprocess.run(["bash", "-c", curl], capture_output=True, text=True, timeout=60, check=True)
        assert '"success":true' in done.stdout.replace(" ", "") and "Linux" in done.stdout


@pytest.mark.slow
def test_shell_examples(tmp_path: Path) -> None:
    port = free_port()
    env = env_for(tmp_path, REFLEXIO_URL=f"http://127.0.0.1:{port}", REFLEXIO_PORT=str(port))
    lines = [line.split("#", 1)[0].strip() for line in block("Use it from the shell", "bash").splitlines()]
    approved = False
    for line in filter(None, lines):
        args = shlex.split(line)
        if args[1:3] == ["agent-playbooks", "approve"]:
            args[3] = _agent_playbook(env["REFLEXIO_URL"])
            approved = True
        done = subprocess.run(
            [sys.executable, "-m", "reflexio", *args[1:]],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    assert approved


def _agent_playbook(url: str) -> str:
    with ReflexioClient(url_endpoint=url) as client:
        client.add_agent_playbooks(
            [{"agent_version": "v1", "content": "Confirm the order number before refunding"}]
        )
        return str(client.get_agent_playbooks(agent_version="v1").agent_playbooks[0].agent_playbook_id)


# -- the integrations -------------------------------------------------------------------------


@pytest.fixture
def mcp_server_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A server with its workers and the MCP endpoint; ``REFLEXIO_URL`` points at it."""
    from reflexio.integrations.mcp_server import http_mount

    settings = Settings.from_env(
        {"HOME": str(tmp_path), "REFLEXIO_STORAGE_URL": f"sqlite:///{tmp_path}/db.sqlite"}
    )
    with in_background(open_core(settings), mounts=[http_mount]) as url:
        monkeypatch.setenv("REFLEXIO_URL", url)
        monkeypatch.delenv("REFLEXIO_API_KEY", raising=False)
        with ReflexioClient(url_endpoint=url) as client:
            client.add_user_profile([{"user_id": "user_123", "content": "Only uses Linux laptops"}])
        yield url


def _published(url: str, session_id: str) -> list[str]:
    """The turns the user published in one session, in order."""
    with ReflexioClient(url_endpoint=url) as client:
        sessions = client.get_requests(user_id="user_123", session_id=session_id).sessions
    return [
        turn.content for session in sessions for request in session.requests for turn in request.interactions
    ]


@pytest.mark.slow
def test_mcp_example(mcp_server_url: str) -> None:
    config = json.loads(block("Use it from an MCP client", "json"))
    assert config["mcpServers"]["reflexio"]["command"] == "reflexio"
    assert config["mcpServers"]["reflexio"]["args"] == ["mcp"]
    scope: dict[str, object] = {}
    exec(compile(block("Use it from an MCP client", "python"), "README.md", "exec"), scope)
    result = scope["result"]
    assert "Linux" in result["prompt"] and result["retrieved_learnings"]  # type: ignore[index]


@pytest.mark.slow
def test_claude_code_example(mcp_server_url: str, tmp_path: Path) -> None:
    """The install line as written, then the prompt hook it wrote, run as Claude Code runs it."""
    line = block("Use it from Claude Code", "bash").split("#", 1)[0].strip()
    args = shlex.split(line)
    done = subprocess.run(
        [sys.executable, "-m", "reflexio", *args[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "Stop", "SessionEnd"}
    command = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    payload = {
        "session_id": "cc-readme",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Recommend a laptop",
    }
    env = env_for(tmp_path, REFLEXIO_URL=mcp_server_url, REFLEXIO_USER_ID="user_123")
    hook = subprocess.run(
        ["bash", "-c", command],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert hook.returncode == 0, hook.stderr
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Only uses Linux laptops" in context


@pytest.mark.slow
def test_langchain_example(mcp_server_url: str) -> None:
    scope: dict[str, object] = {}
    exec(compile(block("Use it from LangChain", "python"), "README.md", "exec"), scope)
    assert _published(mcp_server_url, "session_003") == [
        "Recommend a laptop for me.",
        "The Framework 13 runs Linux well.",
    ]


@pytest.mark.slow
def test_openai_agents_example(mcp_server_url: str) -> None:
    scope: dict[str, object] = {}
    exec(compile(block("Use it from the OpenAI Agents SDK", "python"), "README.md", "exec"), scope)
    assert _published(mcp_server_url, "session_004") == [
        "Recommend a laptop for me.",
        "The Framework 13 runs Linux well.",
    ]


@pytest.mark.slow
def test_observe_example(tmp_path: Path) -> None:
    port = free_port()
    env = env_for(tmp_path, REFLEXIO_URL=f"http://127.0.0.1:{port}", REFLEXIO_PORT=str(port))
    reflexio = [sys.executable, "-m", "reflexio"]
    started = subprocess.run(
        [*reflexio, "services", "start"], env=env, capture_output=True, text=True, timeout=120
    )
    assert started.returncode == 0, started.stderr
    try:
        search = [*reflexio, "search", "anything at all", "--user", "u1"]
        subprocess.run(search, env=env, capture_output=True, timeout=60, check=True)
        curl = block("Observe it: OpenTelemetry and Prometheus", "bash").replace(
            "http://127.0.0.1:8081", env["REFLEXIO_URL"]
        )
        done = subprocess.run(["bash", "-c", curl], capture_output=True, text=True, timeout=60, check=True)
        assert "reflexio_search_duration" in done.stdout and 'org="self-host-org"' in done.stdout
    finally:
        subprocess.run([*reflexio, "services", "stop"], env=env, capture_output=True, timeout=60, check=False)


@pytest.mark.slow
def test_watch_example(mcp_server_url: str) -> None:
    line = block("Watch it live", "bash").split("#", 1)[0].strip()
    args = [*shlex.split(line)[1:], "--after", "0", "--no-follow"]
    done = subprocess.run(
        [sys.executable, "-m", "reflexio", *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "learning.created" in done.stdout and "Only uses Linux laptops" in done.stdout
