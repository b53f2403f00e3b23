"""The committed worked example of Reflect is what ``bench.reflect_example`` renders from its run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.reflect_example import main, render

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"
SCENARIO = "reflect-bank-fee-waiver"


def test_the_committed_example_matches_its_run() -> None:
    results = json.loads((RESULTS / "reflect-worked-example.json").read_text())
    text = render(results, SCENARIO)
    assert text == (RESULTS / "reflect-worked-example.md").read_text()
    assert "action `retire`" in text and "| c1-s1 | yes | fee-waiver | negative |" in text


def test_a_run_without_an_action_says_so(tmp_path: Path) -> None:
    results: dict[str, object] = {"scenarios": {SCENARIO: {"reflection_actions": []}}}
    source = tmp_path / "r.json"
    source.write_text(json.dumps(results))
    with pytest.raises(SystemExit, match="no reflection action"):
        main(["--results", str(source), "--scenario", SCENARIO, "--out", str(tmp_path / "x.md")])
