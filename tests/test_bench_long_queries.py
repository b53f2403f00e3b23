"""The long-queries benchmark: how queries are built, and a run end to end on a tiny file."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from bench import locomo, long_queries


def _sample(name: str, speaker: str, facts: list[str], questions: list[tuple[str, str]]) -> dict[str, Any]:
    turns = [
        {"speaker": speaker, "dia_id": f"D1:{n}", "text": f"{fact} Let me tell you more."}
        for n, fact in enumerate(facts, start=1)
    ]
    return {
        "sample_id": name,
        "conversation": {"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns * 8},
        "observation": {"session_1_observation": {speaker: [[f, f"D1:{n}"] for n, f in enumerate(facts, 1)]}},
        "qa": [{"question": q, "evidence": [e], "category": 4} for q, e in questions],
    }


SAMPLES = [
    _sample(
        "conv-a",
        "Alice",
        ["Alice adopted a beagle puppy.", "Alice plays the cello in an orchestra.", "Alice bakes bread."],
        [("What instrument does Alice play?", "D1:2"), ("What pet did Alice adopt?", "D1:1")],
    ),
    _sample(
        "conv-b",
        "Bob",
        ["Bob repairs vintage motorcycles.", "Bob visited Lisbon with his sister."],
        [("Which city did Bob visit?", "D1:2")],
    ),
]


def test_the_question_sits_where_its_placement_says() -> None:
    assert long_queries.place("Q?", "PASTE", "none") == "Q?"
    assert long_queries.place("Q?", "PASTE", "head") == "Q?\nPASTE"
    assert long_queries.place("Q?", "PASTE", "tail") == "PASTE\nQ?"
    assert long_queries.place("Q?", "PASTE", "middle") == "PA\nQ?\nSTE"


def test_pastes_are_about_as_long_as_asked() -> None:
    rng = random.Random(1)
    log = long_queries.log_paste(1500, rng)
    assert 1500 <= len(log) < 1800 and log.startswith("Traceback")
    turns = list(long_queries.dialogue_turns(SAMPLES)[0].values())
    assert turns[0] == "Alice: Alice adopted a beagle puppy. Let me tell you more."
    assert 1500 <= len(long_queries.dialogue_paste(turns, 1500, rng)) < 1700  # wraps around


def test_every_question_is_asked_plainly_and_in_every_paste_and_place() -> None:
    conversations = [locomo.conversation(s, i) for i, s in enumerate(SAMPLES)]
    turns = long_queries.dialogue_turns(SAMPLES)
    asked = list(long_queries.queries(conversations, turns, per_conversation=None, paste_chars=600))
    assert len(asked) == 3 * (1 + 1 + 2 * 3)
    evidence = [q.text for q in asked if q.placement == "evidence"]
    assert evidence[0] == "Alice: Alice plays the cello in an orchestra. Let me tell you more."
    for query in (q for q in asked if q.paste == "dialogue"):  # another conversation's, not its own
        speakers = ("Bob:", "Alice:") if query.user_id == "conv-a" else ("Alice:", "Bob:")
        assert speakers[0] in query.text and speakers[1] not in query.text
    one_each = list(long_queries.queries(conversations, turns, per_conversation=1, paste_chars=600))
    assert len(one_each) == 2 * 8


def test_a_run_writes_metrics_per_window_paste_placement_and_mode(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(SAMPLES))
    out = tmp_path / "out.json"
    argv = [
        "--data",
        str(data),
        "--out",
        str(out),
        "--windows",
        "head-256",
        "head+tail-32",
        "--paste-chars",
        "1500",
    ]
    results = long_queries.main(argv)
    assert json.loads(out.read_text()) == results
    assert set(results["windows"]) == {"head-256", "head+tail-32"}
    for by_paste in results["windows"].values():
        assert set(by_paste) == {"none", "dialogue", "log"}
        assert set(by_paste["none"]) == {"none", "evidence"}
        assert set(by_paste["log"]) == {"head", "tail", "middle"}
        assert by_paste["none"]["none"]["vector"]["questions"] == 3
    assert results["run"]["long_queries"] == 3 * 2 * 3
    plain = [results["windows"][w]["none"]["none"]["vector"] for w in ("head-256", "head+tail-32")]
    assert plain[0] == plain[1]  # short questions fit either window
    # a question after a paste past 256 tokens is out of the head's window, in the tail's
    tail = {w: results["windows"][w]["log"]["tail"]["vector"]["mrr"] for w in ("head-256", "head+tail-32")}
    assert tail["head+tail-32"] > tail["head-256"]
    assert results["embed_ms"]["head-256"]["p50"] > results["embed_ms"]["head+tail-32"]["p50"]


def test_a_wordllama_run_compares_its_own_windows(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(SAMPLES))
    argv = ["--data", str(data), "--out", str(tmp_path / "out.json"), "--embedder", "wordllama"]
    results = long_queries.main([*argv, "--windows", "all", "head+tail-32"])
    assert results["run"]["embedder"].startswith("wordllama")
    assert results["run"]["windows"]["all"] == {"tokens": 8192, "head": 8191}
    # averaged with a whole log, the question after it is drowned; the window keeps it
    tail = {w: results["windows"][w]["log"]["tail"]["vector"]["mrr"] for w in ("all", "head+tail-32")}
    assert tail["head+tail-32"] > tail["all"]


def test_a_window_the_embedder_does_not_have_is_refused(tmp_path: Path, capsys: Any) -> None:
    argv = ["--data", "x.json", "--out", str(tmp_path / "out.json"), "--embedder", "wordllama"]
    with pytest.raises(SystemExit) as exited:  # head-256 is MiniLM's window
        long_queries.parse_args([*argv, "--windows", "head-256"])
    assert exited.value.code == 2
    assert "wordllama has no window head-256: choose from all, head-64" in capsys.readouterr().err
