"""The LoCoMo benchmark: parsing, skip rules and metric definitions, on a tiny synthetic file.

The full-text expectations are worked out by hand: each question's gold facts either share
clearly more query terms than any other fact or share none, so the ranking does not depend on
BM25's constants.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from bench import locomo

SAMPLES: list[dict[str, Any]] = [
    {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_2_date_time": "2:10 pm on 20 May, 2023",
        },
        "observation": {
            "session_1_observation": {
                "Alice": [
                    ["Alice adopted a beagle puppy.", "D1:1"],
                    ["Alice plays the cello in an orchestra.", "D1:2"],
                ],
                "Bob": [["Bob repairs vintage motorcycles.", "D1:3"]],
            },
            "session_2_observation": {
                "Bob": [["Bob visited Lisbon with his sister.", ["D2:1", "D2:2"]]],
                "Alice": [["Alice learned to bake sourdough bread.", "D2:5; D2:6"], ["", "D2:7"]],
            },
        },
        "qa": [
            {"question": "What instrument does Alice play?", "evidence": ["D1:2"], "category": 4},
            {
                "question": "Which city did Bob visit, and what does he repair?",
                "evidence": ["D2:1", "D1:3", "D1:1", "D9:9"],
                "category": 1,
            },
            {
                "question": "What did Alice adopt, and what puppy did she learn about?",
                "evidence": ["D:2:5"],
                "category": 2,
            },
            {"question": "What did Bob adopt?", "evidence": ["D1:1"], "category": 5},
            {"question": "What is Alice's job?", "evidence": ["D7:7"], "category": 4},
            {"question": "Does Bob sing?", "evidence": [], "category": 3},
        ],
    },
    {
        "sample_id": "conv-b",
        "conversation": {"session_1_date_time": "9:00 am on 1 June, 2023"},
        "observation": {"session_1_observation": {"Carol": [["Carol grows tomatoes.", "D1:1"]]}},
        "qa": [{"question": "What does Carol grow?", "evidence": ["D1:1"], "category": "4"}],
    },
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("locomo")
    data, out = folder / "tiny.json", folder / "results.json"
    data.write_text(json.dumps(SAMPLES))
    locomo.main(["--data", str(data), "--out", str(out), "--embedder", "wordllama", "--split", "1"])
    written: dict[str, Any] = json.loads(out.read_text())
    return written


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("D1:3", ("D1:3",)),
        ("D8:6; D9:17", ("D8:6", "D9:17")),
        ("D:11:26", ("D11:26",)),
        ("D", ()),
        (["D1:3", ["D2:4", "D1:3"]], ("D1:3", "D2:4")),
        (5, ()),
    ],
)
def test_dia_ids_are_normalised(value: Any, expected: tuple[str, ...]) -> None:
    assert locomo.dia_ids(value) == expected


def test_loading_keeps_provenance_and_applies_the_skip_rules() -> None:
    conv = locomo.conversation(SAMPLES[0], 0)
    assert conv.user_id == "conv-a"
    assert len(conv.facts) == 5  # the entry without text is dropped
    assert conv.facts[3].dia_ids == ("D2:1", "D2:2")
    assert conv.facts[4].dia_ids == ("D2:5", "D2:6")
    assert conv.facts[3].date == "2:10 pm on 20 May, 2023"
    # category 5, evidence no fact carries, and no evidence at all: skipped
    assert [q.gold for q in conv.questions] == [
        frozenset({"D1:2"}),
        frozenset({"D2:1", "D1:3", "D1:1"}),  # D9:9 is carried by no fact
        frozenset({"D2:5"}),
    ]
    assert [q.category for q in conv.questions] == ["4", "1", "2"]


def test_metric_definitions() -> None:
    gold = frozenset({"D1:1", "D1:2", "D1:3"})
    ranked = [("D9:9",), ("D1:2", "D1:3"), ("D8:8",), ("D1:3",), ("D1:1",)]
    assert locomo.recall_at(gold, ranked, 1) == 0.0
    assert locomo.recall_at(gold, ranked, 2) == pytest.approx(2 / 3)
    assert locomo.recall_at(gold, ranked, 5) == 1.0
    assert locomo.reciprocal_rank(gold, ranked) == 0.5
    assert locomo.reciprocal_rank(gold, [("D9:9",)]) == 0.0
    assert locomo.mean([locomo.score(gold, ranked), locomo.score(gold, [])]) == {
        "recall@5": 0.5,
        "recall@10": 0.5,
        "recall@20": 0.5,
        "mrr": 0.25,
        "questions": 2,
    }


def test_results_have_one_entry_per_mode(results: dict[str, Any]) -> None:
    assert set(results) == {"fts", "vector", "hybrid", "run"}
    for mode in locomo.MODES:
        summary = results[mode]
        assert {"recall@5", "recall@10", "recall@20", "mrr", "questions"} <= set(summary)
        assert summary["questions"] == 4
        assert set(summary["by_category"]) == {"1", "2", "4"}
        assert set(summary["by_split"]) == {"tune", "held_out"}
    assert results["run"]["embedder"] == "wordllama"
    assert results["run"]["date_indexed"] is True


def test_full_text_scores_match_a_hand_count(results: dict[str, Any]) -> None:
    # Q1: the cello fact is first. Q2: the Lisbon and motorcycle facts are found, the puppy
    # fact shares no word with the question: 2/3, first hit gold. Q3: the puppy fact shares
    # three terms, the baking fact (gold) two: rank 2. Carol's question: first.
    fts = results["fts"]
    assert fts["recall@5"] == pytest.approx((1 + 2 / 3 + 1 + 1) / 4, abs=1e-4)
    assert fts["mrr"] == pytest.approx((1 + 1 + 0.5 + 1) / 4, abs=1e-4)
    assert fts["by_category"]["1"]["recall@10"] == pytest.approx(2 / 3, abs=1e-4)
    assert fts["by_category"]["2"]["mrr"] == 0.5
    assert fts["by_split"]["tune"]["mrr"] == pytest.approx(2.5 / 3, abs=1e-4)
    assert fts["by_split"]["held_out"] == {
        "recall@5": 1.0,
        "recall@10": 1.0,
        "recall@20": 1.0,
        "mrr": 1.0,
        "questions": 1,
    }


def test_vector_search_ranks_every_fact_of_the_user(results: dict[str, Any]) -> None:
    # Five facts fit in the top 5, so every gold id is found whatever the order.
    assert results["vector"]["recall@5"] == 1.0


def test_the_table_lists_every_mode(results: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    print(locomo.table(results))
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("hybrid  overall") for line in lines)
    assert sum(1 for line in lines if " cat " in line) == 3 * 3
