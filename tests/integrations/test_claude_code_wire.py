"""The prompt hook's JSON (``claude_code.wire``) against the standard library's, on awkward inputs.

``wire.dumps`` / ``wire.loads`` are ``json.dumps`` / ``json.loads`` built on ``_json`` directly, so
the prompt hook need not import ``json`` (and ``re``, ``enum``...): they must never differ, in
what they return or in what they raise.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from reflexio.integrations.claude_code import wire

SRC = str(Path(wire.__file__).parents[3])

VALID = [
    '{"a": 1}',
    ' \n\t{"a": [1, 2, {"b": null, "c": [true, false]}]} \r\n',
    '"\\u00e9\\ud83d\\ude00 \\u0000"',
    '"\\ud800 lone \\udfff"',
    '"\\"\\\\\\/\\b\\f\\n\\r\\t"',
    '"é 😀 \u2028 \x7f"',
    "1e400",
    "-1e400",
    "-0",
    "-0.0",
    "0.1",
    "1.5E-3",
    "12345678901234567890123456789",
    "NaN",
    "[Infinity, -Infinity, NaN]",
    "true",
    "null",
    "[]",
    "{}",
    '{"a": 1, "a": 2}',
    "[" * 200 + "]" * 200,
    '{"": {"": {"": ""}}}',
    '  "x"  ',
]

INVALID = [
    "",
    "   ",
    "{",
    '{"a" 1}',
    '{"a": }',
    "[1,]",
    '"\\x"',
    '"abc',
    '"\\ud83d',
    "1 2",
    "\ufeff{}",
    "nan",
    "[1] x",
    '"\x01"',
    '{"a": 1}}',
    "01",
    "[" * 100_000,
]


def _outcome(function: object, value: object) -> tuple[str, str]:
    try:
        result = function(value)  # type: ignore[operator]
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return "ok", repr(result)


@pytest.mark.parametrize("text", VALID)
def test_loads_reads_what_json_reads(text: str) -> None:
    assert _outcome(wire.loads, text) == _outcome(json.loads, text)
    assert _outcome(wire.loads, text.encode()) == _outcome(json.loads, text.encode())


@pytest.mark.parametrize("text", INVALID)
def test_loads_refuses_what_json_refuses_with_its_error(text: str) -> None:
    expected = _outcome(json.loads, text)
    assert expected[0] != "ok"
    assert _outcome(wire.loads, text) == expected


@pytest.mark.parametrize(
    "data",
    [
        '{"a": "é"}'.encode("utf-16"),
        '{"a": "é"}'.encode("utf-16-le"),
        '{"a": "é"}'.encode("utf-32"),
        '{"a": "é"}'.encode("utf-8-sig"),
        b'{"a": "\xff"}',
        b"\x00",
        b"",
    ],
)
def test_loads_reads_bytes_as_json_does(data: bytes) -> None:
    assert _outcome(wire.loads, data) == _outcome(json.loads, data)


class _Odd:
    pass


def _circular() -> list[object]:
    loop: list[object] = [1]
    loop.append(loop)
    return loop


DUMPED = [
    {"a": [1, 2.5, None, True, False], "b": {"c": []}},
    'é 😀 \x00 \x1f " \\ / \u2028 \x7f',
    "\ud800",
    math.nan,
    [math.inf, -math.inf, -0.0, 1e16, 1 / 3, 10**30, -(2**63)],
    {1: "int key", 2.5: "float key", False: "bool key", None: "none key", "": ""},
    (1, (2, [3])),
    [[[[[[]]]]]],
    {(1, 2): "a tuple key"},
    _Odd(),
    {"nested": [_Odd()]},
    _circular(),
    b"bytes",
]


@pytest.mark.parametrize("value", DUMPED)
def test_dumps_writes_what_json_writes(value: object) -> None:
    assert _outcome(wire.dumps, value) == _outcome(json.dumps, value)


def test_the_prompt_path_never_imports_json_and_json_still_explains_a_mistake() -> None:
    """In a fresh interpreter (``json.decoder`` not loaded, as in the hook) a bad input still raises
    ``json.JSONDecodeError`` with json's message: the fast path hands every error to json."""
    code = f"""
import sys
sys.path.append({SRC!r})
from reflexio.integrations.claude_code import wire
assert wire.loads(wire.dumps({{"é": [1.5, None]}})) == {{"é": [1.5, None]}}
loaded = sorted(m for m in ("json", "re", "enum", "socket") if m in sys.modules)
try:
    wire.loads('{{"a" 1}}')
except ValueError as exc:
    print(loaded, type(exc).__module__, type(exc).__name__, exc)
"""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == (
        "[] json.decoder JSONDecodeError Expecting ':' delimiter: line 1 column 6 (char 5)"
    )


def test_without_the_c_accelerator_the_public_json_is_used() -> None:
    """As on PyPy, where ``_json`` is missing."""
    code = f"""
import sys
sys.modules["_json"] = None  # an import of it fails
sys.path.append({SRC!r})
from reflexio.integrations.claude_code import wire
assert wire._scan is None
print(wire.dumps({{"a": [float("nan"), "é"]}}), wire.loads(' [1, {{"b": 2.5}}] '))
"""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == '{"a": [NaN, "\\u00e9"]} [1, {\'b\': 2.5}]'
