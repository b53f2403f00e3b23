"""Writing Reflexio's hooks into Claude Code's settings (and taking them out again).

Claude Code reads hooks from ``.claude/settings.json`` in a project (``--project``, shared
with the team) or ``~/.claude/settings.json`` (``--user``), in this shape::

    {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "...", "timeout": 5}]}],
               "Stop": [...], "SessionEnd": [...]}}

Installing keeps everything else in the file (other hooks, permissions, env), replaces a
previous Reflexio entry instead of adding a second one, and writes the file atomically.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any, Literal

__all__ = ["HOOKS", "HOOK_SCRIPT", "MARKER", "hook_command", "install", "settings_path", "uninstall"]

#: The module the hooks are (``python -I -m MARKER <event>`` runs them too, as earlier installs did).
MARKER = "reflexio.integrations.claude_code"
#: The file the installed commands run, with ``python -I -S``: see its docstring for why.
HOOK_SCRIPT = str(Path(__file__).resolve().with_name("__main__.py"))
#: What our commands contain, however they were installed, so a reinstall or uninstall finds them.
_OURS = (MARKER, str(Path("reflexio", "integrations", "claude_code", "__main__.py")))

#: Claude Code event -> (our hook event, Claude Code's timeout for it in seconds). The hooks
#: bound their own waits well below these; Claude Code's timeout is the last resort.
HOOKS: dict[str, tuple[str, int]] = {
    "UserPromptSubmit": ("prompt", 10),
    "Stop": ("stop", 15),
    "SessionEnd": ("session-end", 15),
}


def settings_path(scope: Literal["project", "user"], *, project_dir: Path, home: Path) -> Path:
    """The settings file a scope means."""
    base = project_dir if scope == "project" else home
    return base / ".claude" / "settings.json"


def hook_command(event: str, *, python: str = sys.executable, url: str = "") -> str:
    """The shell command Claude Code runs for one of our events (``url`` pins the server)."""
    command = f"{shlex.quote(python)} -I -S {shlex.quote(HOOK_SCRIPT)} {event}"
    return f"REFLEXIO_URL={shlex.quote(url)} {command}" if url else command


def install(path: Path, *, python: str = sys.executable, url: str = "") -> dict[str, str]:
    """Write our hooks into the settings file at ``path``; returns event -> command."""
    settings = _read(path)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError(f"{path}: 'hooks' is not an object; fix the file first")
    written = {}
    for claude_event, (event, timeout) in HOOKS.items():
        command = hook_command(event, python=python, url=url)
        groups = _without_ours(hooks.get(claude_event, []))
        groups.append({"hooks": [{"type": "command", "command": command, "timeout": timeout}]})
        hooks[claude_event] = groups
        written[claude_event] = command
    _write(path, settings)
    return written


def uninstall(path: Path) -> list[str]:
    """Remove our hooks from the settings file; returns the events they were on."""
    if not path.exists():
        return []
    settings = _read(path)
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed = []
    for claude_event in list(hooks):
        kept = _without_ours(hooks[claude_event])
        if kept != hooks[claude_event]:
            removed.append(claude_event)
        if kept:
            hooks[claude_event] = kept
        else:
            del hooks[claude_event]
    if not hooks:
        del settings["hooks"]
    _write(path, settings)
    return removed


def _without_ours(groups: Any) -> list[Any]:
    if not isinstance(groups, list):
        return []
    out = []
    for group in groups:
        entries = group.get("hooks", []) if isinstance(group, dict) else []
        mine = [h for h in entries if isinstance(h, dict) and _is_ours(str(h.get("command", "")))]
        if not mine:
            out.append(group)
        elif len(mine) < len(entries):
            out.append({**group, "hooks": [h for h in entries if h not in mine]})
    return out


def _is_ours(command: str) -> bool:
    return any(mark in command for mark in _OURS)


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    text = path.read_text() or "{}"
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); fix or remove it first") from exc
    if not isinstance(loaded, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return loaded


def _write(path: Path, settings: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".settings.", suffix=".json")
    with os.fdopen(fd, "w") as handle:
        json.dump(settings, handle, indent=2)
        handle.write("\n")
    Path(tmp).replace(path)
