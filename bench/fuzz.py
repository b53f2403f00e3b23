"""Fuzz every API operation with schemathesis: 0 server errors, 0 schema violations.

``python -m bench.fuzz --out bench/results/fuzz.json [--backend sqlite|postgres]``

A real server (``python -m reflexio.api.server``, its job workers included) on a fresh store
is driven by the schemathesis CLI with the seed, budget and hooks of
``tests/api/schemathesis.toml``: every phase (examples, coverage, fuzzing, stateful) and every
check, response-schema conformance included. The test suite runs the same thing
(``tests/api/test_fuzz.py``); this writes the numbers down with the commit and machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.ingest import ROOT, backend_url, machine, server_process

CONFIG = ROOT / "tests" / "api" / "schemathesis.toml"


def run(base_url: str, report_dir: Path) -> dict[str, Any]:
    """Fuzz the server at ``base_url``; the summary of schemathesis' JSON report."""
    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file",
        str(CONFIG),
        "run",
        f"{base_url}/openapi.json",
        "--report",
        "json",
        "--report-dir",
        str(report_dir),
        "--no-color",
    ]
    # The first request builds the OpenAPI document (every model); on a loaded machine that can
    # outlast schemathesis' 10 s load timeout, so it is built here first (the app caches it).
    httpx.get(f"{base_url}/openapi.json", timeout=120).raise_for_status()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "output.txt").write_text(done.stdout + done.stderr)
    reports = sorted(report_dir.glob("*.json"))
    if not reports:
        raise RuntimeError(f"schemathesis wrote no report:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    report = json.loads(reports[-1].read_text())
    return {
        "exit_code": done.returncode,
        "seconds": round(report["running_time"], 1),
        "operations": report["operations"]["tested"],
        "cases": report["test_cases"]["generated"],
        "cases_with_failures": report["test_cases"]["with_failures"],
        "failures": [
            {"code": f["code"], "title": f["title"], "count": f["count"], "operations": f["operations"]}
            for f in report["failures"]
        ],
        "errors": report["errors"],
        "phases": {name: phase["status"] for name, phase in report["phases"].items()},
        "output_tail": done.stdout[-4000:] if done.returncode else "",
        "output": str(report_dir / "output.txt"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fuzz every API operation with schemathesis.")
    parser.add_argument("--out", required=True)
    parser.add_argument("--backend", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--report-dir", default="", help="keep schemathesis' report and output here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="reflexio-fuzz-") as tmp:
        home = Path(tmp)
        report = Path(args.report_dir) if args.report_dir else home / "report"
        with backend_url(args.backend, home) as url:
            env = {
                "HOME": str(home),
                "REFLEXIO_HOME": str(home / ".reflexio"),
                "REFLEXIO_STORAGE_URL": url,
                "REFLEXIO_WORKERS": "0",
            }
            with server_process(env) as base:
                result = run(base, report)
    result.pop("output_tail") if not result["output_tail"] else None
    out = {"machine": machine(), "backend": args.backend, "config": CONFIG.read_text(), **result}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k not in ("config", "output_tail")}, indent=2))
    return 0 if result["exit_code"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
