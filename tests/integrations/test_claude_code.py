"""The Claude Code hooks, run as Claude Code runs them: the installed command, recorded hook JSON on
stdin, a live server (or none, then one), and the durable outbox in between.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reflexio.api.server import in_background
from reflexio.config import ClaudeCodeSettings
from reflexio.integrations.claude_code.install import HOOK_SCRIPT, MARKER, hook_command, install, uninstall
from reflexio.integrations.claude_code.outbox import Outbox, has_backlog
from reflexio.prompt_text import QUERY_CHARS, search_query
from reflexio.service.core import open_core
from tests.cli.conftest import free_port
from tests.integrations.conftest import Live, live_settings

DATA = Path(__file__).parent / "data" / "claude_code"
USER = "cc-user"


@dataclass
class Hooks:
    """Runs the hook commands for one Claude Code session against ``url``."""

    home: Path
    url: str
    transcript: Path

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith("REFLEXIO_")}
        return {
            **keep,
            "REFLEXIO_URL": self.url,
            "REFLEXIO_HOME": str(self.home),
            "REFLEXIO_USER_ID": USER,
            "REFLEXIO_HOOK_TIMEOUT_SECONDS": "2",
        }

    def run(self, event: str, payload: str, **fields: str) -> subprocess.CompletedProcess[str]:
        """Run a hook with a recorded payload, its ``fields`` replaced (e.g. another prompt)."""
        body = (DATA / payload).read_text().replace("TRANSCRIPT", str(self.transcript))
        if fields:
            body = json.dumps(json.loads(body) | fields)
        command = shlex.split(hook_command(event))  # exactly what Claude Code is told to run
        return subprocess.run(command, input=body, env=self.env(), capture_output=True, text=True, timeout=60)

    def outbox(self) -> Outbox:
        return Outbox(self.outbox_path())

    def outbox_path(self) -> Path:
        return Path(ClaudeCodeSettings.from_env(self.env()).folder) / "outbox.db"

    def wait_until_sent(self, timeout: float = 60.0) -> None:
        """The hooks send in a background process: wait until the outbox is empty, and says so
        to the prompt hook (its backlog marker is gone)."""
        deadline = time.monotonic() + timeout
        outbox = self.outbox()
        try:
            while outbox.has_pending() or has_backlog(self.outbox_path()):
                assert time.monotonic() < deadline, "the outbox was not sent"
                time.sleep(0.1)
        finally:
            outbox.close()

    def write(self, *parts: str) -> None:
        self.transcript.write_text("".join((DATA / part).read_text() for part in parts))


@pytest.fixture
def hooks(live: Live, tmp_path: Path) -> Hooks:
    return Hooks(home=tmp_path / "home", url=live.url, transcript=tmp_path / "session.jsonl")


def seed(live: Live) -> str:
    with live.client() as api:
        api.add_user_playbook(
            [
                {
                    "user_id": USER,
                    "agent_version": "claude-code",
                    "request_id": "seed",
                    "trigger": "a refund script fails",
                    "content": "Check that the order number column exists before editing refund code",
                }
            ]
        )
        rows = api.get_user_playbooks(user_id=USER).user_playbooks
    return str(rows[0].user_playbook_id)


def published(live: Live) -> list[dict[str, Any]]:
    """What the server holds from the Claude Code user, in the order it was said."""
    with live.client() as api:
        turns = api.get_interactions(user_id=USER, top_k=1000).interactions
    return [t.model_dump(mode="json") for t in sorted(turns, key=lambda t: t.interaction_id)]


def test_install_writes_the_documented_hooks_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    other = {"type": "command", "command": "echo other"}
    earlier = {"type": "command", "command": f"/opt/py/bin/python -I -m {MARKER} stop"}  # an older install
    path.write_text(
        json.dumps({"permissions": {"allow": ["Bash"]}, "hooks": {"Stop": [{"hooks": [other, earlier]}]}})
    )
    install(path, python="/opt/py/bin/python")
    install(path, python="/opt/py/bin/python")  # again: replaced, not doubled
    settings = json.loads(path.read_text())
    assert settings["permissions"] == {"allow": ["Bash"]}
    hooks = settings["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "Stop", "SessionEnd"}
    prompt = hooks["UserPromptSubmit"]
    assert prompt == [
        {
            "hooks": [
                {
                    "type": "command",
                    "command": f"/opt/py/bin/python -I -S {HOOK_SCRIPT} prompt",
                    "timeout": 10,
                }
            ]
        }
    ]
    assert hooks["Stop"][0] == {"hooks": [other]} and len(hooks["Stop"]) == 2
    assert hooks["SessionEnd"][0]["hooks"][0]["command"].endswith("session-end")
    assert sorted(uninstall(path)) == ["SessionEnd", "Stop", "UserPromptSubmit"]
    assert json.loads(path.read_text()) == {
        "permissions": {"allow": ["Bash"]},
        "hooks": {"Stop": [{"hooks": [other]}]},
    }


def test_the_cli_installs_into_the_project(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from reflexio.cli import app

    result = CliRunner().invoke(
        app, ["integrations", "claude-code", "install", "--project-dir", str(tmp_path), "--json"]
    )
    assert result.exit_code == 0, result.output
    written = json.loads(result.stdout)
    assert written["settings"] == str(tmp_path / ".claude" / "settings.json")
    assert (
        HOOK_SCRIPT
        in json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0][
            "command"
        ]
    )


def test_prompt_injects_and_stop_publishes_the_turns_once(live: Live, hooks: Hooks) -> None:
    playbook_id = seed(live)
    hooks.write("transcript-1.jsonl")
    prompt = hooks.run("prompt", "user-prompt-submit.json")
    assert prompt.returncode == 0, prompt.stderr
    output = json.loads(prompt.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    assert "Check that the order number column exists" in output["additionalContext"]

    stop = hooks.run("stop", "stop.json")
    assert stop.returncode == 0 and stop.stdout == ""
    hooks.wait_until_sent()
    turns = published(live)
    assert [t["role"] for t in turns] == ["User", "Assistant"]
    assert turns[0]["content"] == "The refund script fails on order 1042, can you fix it?"
    answer = turns[1]
    assert "falls back to order_id" in str(answer["content"]) and "sub-agent" not in str(answer["content"])
    tools = answer["tools_used"]
    assert [(t["tool_name"], t["status"]) for t in tools] == [("Bash", "error"), ("Edit", "success")]
    assert "KeyError" in tools[0]["tool_data"]["output"]
    assert answer["retrieved_learnings"] == [{"kind": "user_playbook", "learning_id": playbook_id}]

    again = hooks.run("stop", "stop.json")  # nothing new in the transcript: nothing published
    assert again.returncode == 0
    hooks.wait_until_sent()
    assert len(published(live)) == 2

    hooks.write("transcript-1.jsonl", "transcript-2.jsonl")
    assert hooks.run("session-end", "session-end.json").returncode == 0
    hooks.wait_until_sent()
    turns = published(live)
    assert [t["content"] for t in turns[2:]] == [
        "Thanks. Next time always confirm the order number with me before touching refund code.",
        "Understood: I will confirm the order number with you first.",
    ]


@pytest.mark.parametrize("embedder", ["minilm", "wordllama"])
def test_a_question_after_a_long_paste_still_finds_its_learnings(tmp_path: Path, embedder: str) -> None:
    """The hook sends a long prompt's head and tail, so a question after a pasted log reaches the
    server, and either local embedder reads the query's head and tail."""
    core = open_core(live_settings(tmp_path, REFLEXIO_EMBEDDER=embedder))
    log = "\n".join(
        f'  File "/srv/app/jobs/worker_{n}.py", line {n}, in run\n    step_{n}()' for n in range(200)
    )
    prompt = f"This started after the deploy:\nTraceback (most recent call last):\n{log}\n"
    prompt += "The refund script fails on order 1042, can you fix it?"
    assert len(prompt) > 2 * QUERY_CHARS  # the question is past any head the hook could send
    with in_background(core) as url:
        live = Live(url=url, core=core, home=tmp_path)
        seed(live)
        hooks = Hooks(home=tmp_path / "home", url=url, transcript=tmp_path / "session.jsonl")
        done = hooks.run("prompt", "user-prompt-submit.json", prompt=prompt)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Check that the order number column exists" in context


def test_an_integration_searches_with_the_prompt_or_its_head_and_tail() -> None:
    assert search_query("fix it") == "fix it"
    sent = search_query("H" * QUERY_CHARS + "middle" + "T" * QUERY_CHARS)
    assert len(sent) <= QUERY_CHARS + 1 and "middle" not in sent
    assert sent.startswith("H" * (QUERY_CHARS // 2)) and sent.endswith("T" * (QUERY_CHARS // 2))


def test_with_the_server_down_nothing_breaks_and_the_outbox_sends_later(tmp_path: Path) -> None:
    port = free_port()
    hooks = Hooks(home=tmp_path / "home", url=f"http://127.0.0.1:{port}", transcript=tmp_path / "s.jsonl")
    hooks.write("transcript-1.jsonl")
    started = time.monotonic()
    prompt = hooks.run("prompt", "user-prompt-submit.json")
    assert prompt.returncode == 0 and prompt.stdout == ""  # no server: no context, no error
    assert hooks.run("stop", "stop.json").returncode == 0
    assert time.monotonic() - started < 20
    time.sleep(1.0)  # the background flush finds no server
    outbox = hooks.outbox()
    try:
        assert [p.request_id for p in outbox.pending()] == [
            f"claude-code:cc-session-1:0-{hooks.transcript.stat().st_size}"
        ]
    finally:
        outbox.close()
    assert has_backlog(hooks.outbox_path())  # what tells the next prompt hook to send it
    assert "hook" in (hooks.home / "claude-code" / "hooks.log").read_text()

    core = open_core(live_settings(tmp_path / "server"))
    with in_background(core, port=port) as url:
        live = Live(url=url, core=core, home=tmp_path / "server")
        assert hooks.run("prompt", "user-prompt-submit.json").returncode == 0  # sees the backlog, sends it
        hooks.wait_until_sent()
        assert [t["role"] for t in published(live)] == ["User", "Assistant"]

        outbox = hooks.outbox()  # the same publish again (a reply that was lost): stored once
        try:
            outbox.enqueue(
                "cc-session-1", str(hooks.transcript), hooks.transcript.stat().st_size, _replay(hooks), []
            )
        finally:
            outbox.close()
        done = subprocess.run(
            [sys.executable, "-I", "-m", MARKER, "flush"], env=hooks.env(), capture_output=True, timeout=60
        )
        assert done.returncode == 0
        hooks.wait_until_sent()
        assert len(published(live)) == 2


def _replay(hooks: Hooks) -> dict[str, object]:
    from reflexio.integrations.claude_code.hooks import _publish_message
    from reflexio.integrations.claude_code.transcript import read_turns

    turns, end = read_turns(hooks.transcript, 0)
    settings = ClaudeCodeSettings.from_env(hooks.env())
    return _publish_message(settings, "cc-session-1", turns, f"claude-code:cc-session-1:0-{end}", False)


@pytest.mark.parametrize(
    ("url", "parts"),
    [
        ("http://127.0.0.1:8081", ("http", "127.0.0.1", 8081, "")),
        ("http://localhost", ("http", "localhost", 80, "")),
        ("HTTPS://reflexio.example/base/", ("https", "reflexio.example", 443, "/base/")),
        ("http://[::1]:9450/api", ("http", "::1", 9450, "/api")),
        ("https://[2001:db8::1]", ("https", "2001:db8::1", 443, "")),
        ("http://me:secret@host:81", ("http", "host", 81, "")),
    ],
)
def test_the_hooks_read_the_server_url_as_urllib_would(url: str, parts: tuple[str, str, int, str]) -> None:
    from urllib.parse import urlsplit

    from reflexio.integrations.claude_code.wire import split_url

    assert split_url(url) == parts
    split = urlsplit(url)
    assert (split.scheme.lower(), split.hostname, split.port or parts[2], split.path) == parts


@pytest.mark.parametrize("url", ["127.0.0.1:8081", "ftp://host", "http://", "http://host:80a", "http://[::1"])
def test_the_hooks_refuse_a_server_url_they_cannot_use(url: str) -> None:
    from reflexio.integrations.claude_code.wire import split_url

    with pytest.raises(ValueError, match="REFLEXIO_URL"):
        split_url(url)


def test_the_prompt_hook_starts_without_the_heavy_modules() -> None:
    """What keeps the prompt hook within its start-up budget (bench/hooks): no site, no runpy,
    none of the modules that cost more than its search, and nothing of the SDK's."""
    root = str(Path(HOOK_SCRIPT).parents[3])
    code = (
        f"import sys; sys.path.append({root!r}); import reflexio.integrations.claude_code.hooks; "
        "print(' '.join(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    )
    loaded = set(done.stdout.split())
    assert "reflexio.integrations.claude_code.hooks" in loaded
    heavy = {"site", "runpy", "typing", "dataclasses", "inspect", "pathlib", "urllib.parse", "logging"}
    heavy |= {"reflexio.config", "reflexio.client", "pydantic", "httpx", "subprocess", "http.client"}
    heavy |= {"json", "re", "enum", "socket", "selectors", "sqlite3", "_sqlite3", "datetime"}
    assert loaded & heavy == set()


def test_a_prompt_that_injects_loads_no_json_socket_or_sqlite(live: Live, tmp_path: Path) -> None:
    """The whole prompt hook, searching and remembering what it injected, on the C modules and
    plain files only (``wire``, ``outbox``); the stop hook then finds the injection."""
    user = "cc-lean-user"
    with live.client() as api:
        api.add_user_playbook(
            [
                {
                    "user_id": user,
                    "agent_version": "claude-code",
                    "request_id": "lean-seed",
                    "trigger": "a refund script fails",
                    "content": "Check that the order number column exists before editing refund code",
                }
            ]
        )
    hooks = Hooks(home=tmp_path / "home", url=live.url, transcript=tmp_path / "session.jsonl")
    env = hooks.env() | {"REFLEXIO_USER_ID": user}
    root = str(Path(HOOK_SCRIPT).parents[3])
    code = (
        f"import sys; sys.path.append({root!r}); from reflexio.integrations.claude_code.hooks import main; "
        "main(['prompt']); sys.stderr.write(' '.join(sorted(sys.modules)))"
    )
    body = (DATA / "user-prompt-submit.json").read_text().replace("TRANSCRIPT", str(hooks.transcript))
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code],
        input=body,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Check that the order number column exists" in done.stdout
    loaded = set(done.stderr.split())
    assert "reflexio.integrations.claude_code.wire" in loaded
    heavy = {"json", "re", "enum", "socket", "selectors", "sqlite3", "_sqlite3", "datetime", "logging"}
    assert loaded & heavy == set()
    outbox = Outbox(hooks.outbox_path())
    try:
        [injected] = outbox.injections("cc-session-1")
    finally:
        outbox.close()
    assert injected.prompt == json.loads(body)["prompt"]
    assert [r["kind"] for r in injected.learnings] == ["user_playbook"]
