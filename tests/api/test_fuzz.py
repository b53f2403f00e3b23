"""schemathesis over every operation of a real server: 0 server errors, 0 schema violations.

Defect 8 of issue 16: the OpenAPI document must describe the server exactly. The run is the
one ``python -m bench.fuzz`` makes (seed and budget in ``tests/api/schemathesis.toml``), over
a real socket against a real server on SQLite; it takes a few minutes, so it is ``slow``.
Its wall-clock bound is generous: on a busy 2-core machine the same cases take several times
longer than on an idle one, and a slow run is not a failed one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.fuzz import run
from bench.ingest import server_process

pytestmark = pytest.mark.slow


@pytest.mark.timeout(1_200)
def test_schemathesis_finds_no_failure(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "REFLEXIO_HOME": str(tmp_path / ".reflexio"),
        "REFLEXIO_STORAGE_URL": f"sqlite:///{tmp_path}/fuzz.db",
        "REFLEXIO_WORKERS": "0",  # the HTTP surface is under test, not learning
    }
    with server_process(env) as base:
        result = run(base, tmp_path / "report")
    assert result["operations"] >= 64 and result["cases"] >= 2_000, result
    assert result["failures"] == [] and result["errors"] == [], result["output_tail"]
    assert result["exit_code"] == 0, result["output_tail"]
