"""Dependencies point one way (HOUSE_STYLE), and no module waits on itself.

Layers, bottom up: the prompt text rules and config's environment readers (standard library
only, under the models that wrap them and the config that builds on them); models, errors,
config and the domain records; telemetry (the OpenTelemetry API); the filters and the pure
ranking math; llm and embed; storage (which owns vectors, so it uses
embed); jobs; learn (whose extraction driver runs inside a job); service; api and cli on top.
The client depends only on models, errors and config. Only cli reaches into api (to serve).

Every import counts however it is written (``import reflexio.x``, ``from reflexio.x import y``,
``from reflexio import x``, a name re-exported by ``reflexio/__init__``), wherever it stands
(inside a function or under ``TYPE_CHECKING``): a lazy import is still a dependency, and a
cycle hidden in one still means two modules that cannot be understood apart.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "reflexio"
LAYER = {
    "prompt_text": -1, "environment": -1,
    "models": 0, "errors": 0, "config": 0, "records": 0, "span_export": 0,
    "telemetry": 1, "ranking": 1, "client": 1, "filters": 2, "llm": 2, "embed": 2, "storage": 3, "jobs": 4,
    "learn": 5, "service": 6,
    "testing": 7, "api": 8, "integrations": 8, "web": 8, "cli": 9,
}  # fmt: skip
CLIENT_MAY_USE = {"models", "errors", "config", "client"}


def _module_name(root: Path, path: Path) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(root, path): path for path in sorted(root.rglob("*.py"))}


def _imported(node: ast.AST, here: str, is_package: bool, known: dict[str, Path]) -> Iterator[str]:
    """The modules one import statement names (a ``from`` import of a submodule names it)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = here.split(".")
            base = base[: len(base) - node.level + (1 if is_package else 0)]
            module = ".".join([*base, *([node.module] if node.module else [])])
        else:
            module = node.module or ""
        for alias in node.names:
            yield f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each module of the package at ``root`` and the package's modules it imports."""
    known = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        is_package = path.name == "__init__.py"
        graph[name] = {
            target
            for node in ast.walk(tree)
            for target in _imported(node, name, is_package, known)
            if target in known and target != name
        }
    return graph


def _reexports(root: Path, graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Edges to the top package stand for the modules its ``__init__`` takes the names from."""
    top = root.name
    return {
        module: {t for target in targets for t in (graph[top] if target == top else {target})}
        for module, targets in graph.items()
    }


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_violations(root: Path) -> list[str]:
    """Imports that point up (or sideways into a layer not below)."""
    graph = _reexports(root, import_graph(root))
    wrong = []
    for module, targets in sorted(graph.items()):
        part = _part(module)
        if part not in LAYER:
            continue
        allowed = (
            CLIENT_MAY_USE if part == "client" else {p for p, level in LAYER.items() if level < LAYER[part]}
        )
        for used in sorted({_part(t) for t in targets} - {part, ""}):
            if used in LAYER and used not in allowed:
                wrong.append(f"{module} imports {root.name}.{used}")
    return wrong


def cycles(root: Path) -> list[list[str]]:
    """Every import cycle among the package's modules (one path per strongly connected set)."""
    graph = import_graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_dependencies_point_one_way() -> None:
    assert layer_violations(SRC) == []


def test_no_import_cycles() -> None:
    assert cycles(SRC) == []


# -- the checks themselves -------------------------------------------------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "reflexio"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_an_upward_import_is_caught_however_it_is_written(tmp_path: Path) -> None:
    forms = [
        "from reflexio.api.app import make\n",
        "import reflexio.api.app\n",
        "from reflexio import api\n",
        "from reflexio.api import app\n",
        "def later():\n    from reflexio.api import app\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import reflexio.api\n",
        "from .. import api\n",
    ]
    for n, form in enumerate(forms):
        root = _package(
            tmp_path / str(n),
            {
                "api/__init__.py": "",
                "api/app.py": "make = 1\n",
                "storage/__init__.py": "",
                "storage/sql.py": form,
            },
        )
        assert layer_violations(root) == ["reflexio.storage.sql imports reflexio.api"], form


def test_a_name_reexported_by_the_top_package_counts_as_its_source(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "from reflexio.client.core import Client\n",
            "client/__init__.py": "",
            "client/core.py": "class Client: ...\n",
            "models.py": "from reflexio import Client\n",
        },
    )
    assert layer_violations(root) == ["reflexio.models imports reflexio.client"]


def test_the_allowed_direction_passes(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "service/__init__.py": "",
            "service/a.py": "from reflexio.storage import sql\n",
            "storage/__init__.py": "",
            "storage/sql.py": "x = 1\n",
        },
    )
    assert layer_violations(root) == []


def test_a_cycle_through_a_lazy_import_is_caught(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "service/__init__.py": "",
            "service/a.py": "from reflexio.service import b\n",
            "service/b.py": "def f():\n    from reflexio.service.a import g\n",
            "service/c.py": "if TYPE_CHECKING:\n    from reflexio.service import b\n",
        },
    )
    assert cycles(root) == [["reflexio.service.a", "reflexio.service.b"]]
