"""Versioned prompt files: load the active version of a prompt and render it safely.

Each prompt lives in ``learn/prompts/<name>/v<major>.<minor>.<patch>.md``: a front matter
(``active``, ``version``, ``description``, ``variables``) and a body whose part before the line
``=== user ===`` is the system message (stable instructions, which providers can cache) and
whose part after it is the user message (the data of one call). Exactly one version of each
prompt is active, so which text ran is never ambiguous, and every call records that version.

Templates use ``string.Template`` placeholders (``$name``): braces are ordinary characters, so
JSON examples need no escaping (the original's ``document_expansion`` prompt crashed on an
unescaped brace, W30), and values are substituted once and never re-parsed, so a conversation
containing ``$x`` or ``{}`` is inserted verbatim. Declared and used variables must match, and a
render must supply all of them, so a typo fails at load or in the test that renders every prompt.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import Any, TypeVar

from pydantic import BaseModel

from reflexio.errors import ReflexioError
from reflexio.llm import LLMCall, Message, Role

__all__ = ["Prompt", "PromptError", "load", "names"]

M = TypeVar("M", bound=BaseModel)

_USER_MARK = "=== user ==="
_FILE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)\.md$")


class PromptError(ReflexioError):
    """A prompt file is missing, malformed, or rendered with the wrong variables."""


@dataclass(frozen=True, slots=True)
class Prompt:
    """One version of a prompt, ready to render."""

    name: str
    version: str
    description: str
    variables: frozenset[str]
    system: Template
    user: Template

    def render(self, values: Mapping[str, object]) -> tuple[Message, ...]:
        """The chat messages for these values (every declared variable, nothing else).

        Raises:
            PromptError: A variable is missing or unknown.
        """
        given = set(values)
        if given != self.variables:
            missing, extra = sorted(self.variables - given), sorted(given - self.variables)
            raise PromptError(f"prompt {self.name} v{self.version}: missing {missing}, unknown {extra}")
        text = {k: str(v) for k, v in values.items()}
        return (
            {"role": "system", "content": self.system.substitute(text).strip()},
            {"role": "user", "content": self.user.substitute(text).strip()},
        )

    def call(
        self,
        role: Role,
        values: Mapping[str, object],
        *,
        output: type[M] | None,
        inputs: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> LLMCall[M]:
        """An ``LLMCall`` of this prompt; ``inputs`` adds domain objects to the variables.

        Raises:
            PromptError: A variable is missing or unknown, or ``inputs`` reuses a variable's name.
        """
        clash = sorted(set(values) & set(inputs or {}))
        if clash:
            raise PromptError(f"prompt {self.name}: inputs {clash} would hide variables of the same name")
        return LLMCall(
            role=role,
            prompt=self.name,
            version=self.version,
            messages=self.render(values),
            output=output,
            inputs={**values, **(inputs or {})},
            max_tokens=max_tokens,
        )


def names() -> list[str]:
    """Every prompt name (one folder each)."""
    root = resources.files("reflexio.learn").joinpath("prompts")
    return sorted(entry.name for entry in root.iterdir() if entry.is_dir() and not entry.name.startswith("_"))


@functools.cache
def load(name: str, version: str | None = None) -> Prompt:
    """The active version of a prompt, or a given version.

    Raises:
        PromptError: No such prompt or version, not exactly one active version, or a
            malformed file.
    """
    folder = resources.files("reflexio.learn").joinpath("prompts", name)
    if not folder.is_dir():
        raise PromptError(f"no prompt named {name!r}")
    files = sorted(
        (tuple(int(g) for g in match.groups()), entry)
        for entry in folder.iterdir()
        if (match := _FILE.match(entry.name))
    )
    prompts = [_parse(name, entry.read_text(encoding="utf-8"), ".".join(map(str, v))) for v, entry in files]
    if version is not None:
        chosen = [p for p in prompts if p[0].version == version]
    else:
        chosen = [p for p in prompts if p[1]]
    if len(chosen) != 1:
        what = f"version {version}" if version else "active version"
        raise PromptError(f"prompt {name!r} has {len(chosen)} files for its {what}, expected 1")
    return chosen[0][0]


def _parse(name: str, text: str, version: str) -> tuple[Prompt, bool]:
    """A prompt file's ``(Prompt, active)``; ``version`` comes from its file name."""
    head, body = _front_matter(name, text)
    if head.get("version") != version:
        raise PromptError(f"prompt {name!r}: file v{version} declares version {head.get('version')!r}")
    if _USER_MARK not in body:
        raise PromptError(f"prompt {name!r} has no '{_USER_MARK}' line")
    system_text, user_text = body.split(_USER_MARK, 1)
    system, user = Template(system_text), Template(user_text)
    variables = frozenset(v.strip() for v in head.get("variables", "").split(",") if v.strip())
    used = set(system.get_identifiers()) | set(user.get_identifiers())
    if not (system.is_valid() and user.is_valid()) or used != variables:
        raise PromptError(f"prompt {name!r}: declares {sorted(variables)} but uses {sorted(used)}")
    prompt = Prompt(
        name=name,
        version=version,
        description=head.get("description", ""),
        variables=variables,
        system=system,
        user=user,
    )
    return prompt, head.get("active", "false").lower() == "true"


def _front_matter(name: str, text: str) -> tuple[dict[str, str], str]:
    """``key: value`` lines between the leading ``---`` fences, and the body after them."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise PromptError(f"prompt {name!r} has no front matter")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        raise PromptError(f"prompt {name!r}: front matter is not closed")
    head = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        if sep:
            head[key.strip()] = value.strip()
    return head, "".join(lines[end + 1 :])
