"""Dependencies point one way (HOUSE_STYLE): models, errors, config, search at the bottom; then
llm and embed; storage (which owns vectors, so it uses embed); jobs; learn (whose extraction
driver runs inside a job); service; api and cli on top. The client depends only on models,
errors and config. Only cli reaches into api (to serve)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "reflexio"
LAYER = {
    "models": 0, "errors": 0, "config": 0, "search": 1, "llm": 2, "embed": 2, "storage": 3,
    "jobs": 4, "learn": 5, "service": 6, "testing": 7, "api": 8, "cli": 9, "client": 1,
}  # fmt: skip
CLIENT_MAY_USE = {"models", "errors", "config", "client"}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("reflexio."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("reflexio.")}
    return found


def _part(path: Path) -> str:
    return path.relative_to(SRC).parts[0].removesuffix(".py")


def test_dependencies_point_one_way() -> None:
    wrong = []
    for path in SRC.rglob("*.py"):
        part = _part(path)
        if part not in LAYER:
            continue
        for used in _imports(path) - {part}:
            allowed = (
                CLIENT_MAY_USE
                if part == "client"
                else {p for p, level in LAYER.items() if level < LAYER[part]}
            )
            if used in LAYER and used not in allowed:
                wrong.append(f"{path.relative_to(SRC)} imports reflexio.{used}")
    assert wrong == []
