"""Word-level differences between two texts, as a reviewer reads them (struck out / inserted).

Learnings are a few sentences, so a diff by words (whitespace kept) is what a person wants to
see: a line diff would mark the whole rule as changed for one word.
"""

from __future__ import annotations

import difflib
import re

from markupsafe import Markup, escape

__all__ = ["changed_fields", "word_diff"]

_TOKENS = re.compile(r"\s+|[^\s]+")


def _ops(old: str, new: str) -> list[tuple[str, str]]:
    """(op, text) pieces: op is "same", "del" or "ins"."""
    a, b = _TOKENS.findall(old or ""), _TOKENS.findall(new or "")
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(("same", "".join(a[i1:i2])))
            continue
        if tag in ("delete", "replace"):
            out.append(("del", "".join(a[i1:i2])))
        if tag in ("insert", "replace"):
            out.append(("ins", "".join(b[j1:j2])))
    return out


def word_diff(old: str | None, new: str | None) -> Markup:
    """The diff as HTML: ``<del>`` for removed words, ``<ins>`` for added ones (text escaped)."""
    parts = []
    for op, text in _ops(old or "", new or ""):
        if op == "same":
            parts.append(str(escape(text)))
        else:
            parts.append(f"<{op}>{escape(text)}</{op}>")
    return Markup("".join(parts))


def changed_fields(
    before: dict[str, object] | None, after: dict[str, object] | None, fields: tuple[str, ...]
) -> list[tuple[str, str, str]]:
    """The text fields that differ between two snapshots, as (field, old, new)."""
    before, after = before or {}, after or {}
    out = []
    for name in fields:
        old, new = before.get(name), after.get(name)
        if name in before and name in after and old != new:
            out.append((name, "" if old is None else str(old), "" if new is None else str(new)))
    return out
