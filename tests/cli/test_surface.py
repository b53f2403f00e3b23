"""The command surface other tools rely on: names, ``--json`` everywhere, help text, entry points."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import typer

from reflexio.cli import app

#: Commands and flags that scripts, docs and other checks depend on.
CONTRACT = {
    "services start": {"--host", "--port", "--foreground", "--json"},
    "services stop": {"--port", "--json"},
    "services status": {"--port", "--json"},
    "publish": {
        "--user",
        "--session",
        "--agent-version",
        "--source",
        "--user-message",
        "--agent-response",
        "--file",
        "--stdin",
        "--wait",
        "--json",
    },
    "search": {"--user", "--agent-version", "--top-k", "--kind", "--json"},
    "profiles list": {"--user", "--json"},
    "profiles add": {"--user", "--content", "--json"},
    "profiles delete": {"--user", "--id", "--json"},
    "user-playbooks list": {"--json"},
    "user-playbooks add": {"--content", "--json"},
    "user-playbooks delete": {"--json"},
    "agent-playbooks list": {"--json"},
    "agent-playbooks add": {"--content", "--json"},
    "agent-playbooks approve": {"--note", "--if-status", "--json"},
    "agent-playbooks reject": {"--note", "--if-status", "--json"},
    "agent-playbooks reopen": {"--note", "--if-status", "--json"},
    "agent-playbooks delete": {"--json"},
    "config show": {"--json"},
    "config set": {"--file", "--data", "--field", "--json"},
    "keys create": {"--org", "--name", "--json"},
    "keys list": {"--org", "--json"},
    "keys revoke": {"--json"},
    "export": {"--user", "--out", "--json"},
    "doctor": {"--json"},
    "worker": {"--concurrency", "--json"},
    "jobs list": {"--status", "--json"},
    "jobs dead": {"--json"},
    "jobs retry": {"--json"},
    "profiles rerun": {"--user", "--wait", "--json"},
    "profiles generate": {"--user", "--json"},
    "profiles upgrade": {"--user", "--only-affected", "--json"},
    "profiles downgrade": {"--user", "--json"},
    "profiles status": {"--json"},
    "user-playbooks rerun": {"--agent-version", "--wait", "--json"},
    "user-playbooks upgrade": {"--agent-version", "--json"},
    "user-playbooks downgrade": {"--agent-version", "--json"},
    "user-playbooks status": {"--json"},
}


def _commands(group: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        if hasattr(command, "commands"):
            yield from _commands(command, f"{path} ")
        else:
            yield path, command


def _flags(command: Any) -> set[str]:
    return {opt for param in command.params for opt in getattr(param, "opts", [])}


def test_the_contracted_commands_and_flags_exist() -> None:
    commands = dict(_commands(typer.main.get_command(app)))
    for path, flags in CONTRACT.items():
        assert path in commands, f"missing command: reflexio {path}"
        assert flags <= _flags(commands[path]), f"reflexio {path} lacks {flags - _flags(commands[path])}"


def test_every_command_has_json_and_help() -> None:
    for path, command in _commands(typer.main.get_command(app)):
        assert "--json" in _flags(command), f"reflexio {path} has no --json"
        assert command.help and len(command.help) > 20, f"reflexio {path} needs a docstring"


def test_python_dash_m_reflexio_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reflexio", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0
    assert "services" in done.stdout and "keys" in done.stdout


def test_the_cli_does_not_import_the_server_until_a_command_needs_it() -> None:
    server = "('fastapi', 'uvicorn', 'reflexio.storage', 'reflexio.service')"
    code = f"import sys, reflexio.cli; print(any(m.startswith({server}) for m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"


def _modules_after(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """The modules a real ``reflexio ...`` process has imported when it exits."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.__stderr__.write('MODULES ' + ' '.join(sorted(sys.modules))))\n"
        "from reflexio.cli import main\n"
        f"sys.argv = ['reflexio', *{args!r}]\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False, env=env
    )
    listed = done.stderr.rsplit("MODULES ", 1)[-1]
    return set(listed.split())


def test_help_loads_neither_the_client_nor_pydantic_nor_rich_help() -> None:
    """What makes ``reflexio --help`` fast: it imports typer and the command modules only."""
    loaded = _modules_after(["--help"])
    assert "reflexio.cli" in loaded
    for heavy in (
        "pydantic",
        "httpx",
        "reflexio.models",
        "reflexio.client",
        "typer.rich_utils",
        "markdown_it",
    ):
        assert not any(m == heavy or m.startswith(f"{heavy}.") for m in loaded), heavy


def test_a_remote_command_loads_the_client_but_nothing_of_the_server() -> None:
    env = {**os.environ, "REFLEXIO_URL": "http://127.0.0.1:9"}  # nobody listens: it fails fast
    loaded = _modules_after(["search", "anything"], env)
    assert "reflexio.client" in loaded
    for server in ("fastapi", "uvicorn", "numpy", "reflexio.storage", "reflexio.service", "litellm"):
        assert not any(m == server or m.startswith(f"{server}.") for m in loaded), server
