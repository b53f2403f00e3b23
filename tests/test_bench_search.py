"""The search benchmark: a tiny run end to end, checking the shape of what it reports.

The real run (100k learnings per kind) takes an hour; this one seeds 200 per kind into a
temporary cache, so it checks the plumbing (child processes, seeding, every kind timed, the
JSON and Markdown reports), not the numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench import corpus, search

from reflexio.records import LearningKind


def test_a_tiny_run_reports_every_kind_percentiles_rss_and_build_time(tmp_path: Path) -> None:
    out = tmp_path / "search.json"
    tiny = ["--sizes", "200", "--worst", "200", "--blas", "default", "--repeat", "5"]
    search.main([*tiny, "--out", str(out), "--cache", str(tmp_path / "cache")])
    report = json.loads(out.read_text())
    assert {"commit", "date", "machine", "goal", "corpus", "runs"} <= report.keys()
    assert {"cores", "cpu", "ram_gb", "python"} <= report["machine"].keys()
    assert [(r["layout"], r["n_per_kind"]) for r in report["runs"]] == [("spread", 200), ("worst", 200)]
    for run in report["runs"]:
        assert run["backend"] == "sqlite" and run["rows"] == 600
        assert run["peak_rss_mb"] > 0 and run["cold_first_search_ms"] > 0
        assert set(run["latency"]) == set(search.KINDS)
        for kind in search.KINDS:
            timings = run["latency"][kind]["service_ms"]
            assert timings["n"] == 5 and 0 < timings["p50"] <= timings["p95"] <= timings["p99"]
        assert run["latency"]["unified"]["mean_results"] > 0  # the searches find something
        assert run["query_embedding_ms"]["n"] > 0 and run["concurrent"]["searches_per_s"] > 0
        restart = run["restart"]  # a fresh process, the first search and the warm ones after it
        assert restart["first_search_ms"] > 0 and restart["warm_ms"]["n"] == search.RESTART_WARM
    assert "| unified |" in out.with_suffix(".md").read_text()


def test_the_corpus_is_a_prefix_of_every_larger_corpus() -> None:
    small = corpus.texts(LearningKind.AGENT_PLAYBOOK, 50)
    assert corpus.texts(LearningKind.AGENT_PLAYBOOK, 500)[:50] == small
    assert len({content for _, content in corpus.texts(LearningKind.PROFILE, 500)}) > 300  # varied
    queries = corpus.queries(1000, "spread", 40)
    assert {q.shares_terms for q in queries} == {True, False}
    assert len({q.user_id for q in queries}) > 30
