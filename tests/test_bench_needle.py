"""The needle benchmark: its needles keep their promises, and a tiny run reports every mode.

The real run (haystacks of up to 100k rows, MiniLM) takes most of an hour; this one uses a
200-row haystack and the fast offline embedder, so it checks the plumbing and the report's
shape, not the numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench import haystack, needle


def test_lexical_needles_share_a_word_no_haystack_row_has_and_paraphrases_share_none() -> None:
    check = haystack.check(haystack.NEEDLES, haystack.rows(20_000))
    assert check.broken == []
    assert len(haystack.LEXICAL) == len(haystack.PARAPHRASE) >= 30
    assert len({n.key for n in haystack.NEEDLES}) == len(haystack.NEEDLES)
    assert check.distinct_rows > 10_000 and check.question_terms_in_haystack > 0.4  # varied, not alien


def test_the_check_catches_a_needle_that_breaks_its_kind() -> None:
    rows = haystack.rows(500)
    word = sorted(set(rows[0].rstrip(".").split()) - {"The", "user", "User"})[0]
    fake = [
        haystack.Needle("shared", f"The user owns a {word}", f"Does the user own a {word}?", lexical=True),
        haystack.Needle(
            "overlap", "The user is terrified of flying", "Is flying scary for them?", lexical=False
        ),
    ]
    assert haystack.check(fake, rows).broken == ["shared", "overlap"]


def test_the_haystack_of_n_rows_is_a_prefix_of_every_larger_one() -> None:
    assert haystack.rows(3000)[:100] == haystack.rows(100)


def test_a_tiny_run_reports_each_mode_per_layout_and_size(tmp_path: Path) -> None:
    out = tmp_path / "needle.json"
    args = ["--out", str(out), "--sizes", "200", "--embedder", "wordllama", "--cache", str(tmp_path)]
    report = needle.main(args)
    assert json.loads(out.read_text()) == report
    assert [(r["layout"], r["n"]) for r in report["results"]] == [("one", 200), ("spread", 200)]
    for r in report["results"]:
        assert set(r["modes"]) == {"fts", "vector", "hybrid"}
        assert set(r["ranks"]) == {n.key for n in haystack.NEEDLES}
        assert r["modes"]["fts"]["lexical"]["top5"] > 20  # a rare shared word is found by its word
        assert r["modes"]["fts"]["paraphrase"]["top10"] == 0  # a paraphrase shares none
        assert r["goal_met"] == (r["lost"] == [])
    assert report["run"]["embed_model"] and "| hybrid |" in out.with_suffix(".md").read_text()
