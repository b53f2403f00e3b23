"""The hooks' local state: the plain files the prompt hook shares with the SQLite outbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from reflexio.integrations.claude_code.outbox import Outbox, has_backlog, remember_injection

LEARNING = [{"kind": "user_playbook", "learning_id": "7"}]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "claude-code" / "outbox.db"


def _publish(request_id: str) -> dict[str, object]:
    return {"kind": "publish", "request_id": request_id}


@pytest.mark.parametrize("session_id", ["../../escape", "a/b\\c", "..", "é 😀", "x" * 400, ".hidden"])
def test_any_session_id_gets_its_own_file_inside_the_injections_folder(path: Path, session_id: str) -> None:
    remember_injection(path, session_id, "the prompt", LEARNING)
    remember_injection(path, "other", "another prompt", LEARNING)
    files = sorted(p for p in path.parent.rglob("*") if p.is_file() and p.suffix == ".jsonl")
    assert len(files) == 2 and all(f.parent == path.parent / "injections" for f in files)
    outbox = Outbox(path)
    try:
        [injection] = outbox.injections(session_id)
    finally:
        outbox.close()
    assert (injection.prompt, injection.learnings) == ("the prompt", LEARNING)


def test_a_torn_line_is_skipped_and_what_a_publish_carries_leaves_with_it(path: Path) -> None:
    remember_injection(path, "s", "first", LEARNING)
    file = path.parent / "injections" / "s.jsonl"
    with file.open("ab") as handle:
        handle.write(b'{"prompt": "torn')  # a crash in the middle of a write
    remember_injection(path, "s", "second", LEARNING)
    remember_injection(path, "s", "third", LEARNING)
    outbox = Outbox(path)
    try:
        found = outbox.injections("s")
        assert [i.prompt for i in found] == ["first", "second", "third"]
        outbox.enqueue("s", "/t", 10, _publish("r1"), [found[0].id])
        assert [i.prompt for i in outbox.injections("s")] == ["second", "third"]
        assert b"torn" not in file.read_bytes()
        outbox.enqueue("s", "/t", 20, _publish("r2"), [i.id for i in outbox.injections("s")])
        assert outbox.injections("s") == [] and not file.exists()
    finally:
        outbox.close()


def test_the_backlog_marker_follows_the_outbox(path: Path) -> None:
    outbox = Outbox(path)
    try:
        assert not has_backlog(path)
        outbox.enqueue("s", "/t", 10, _publish("r1"), [])
        outbox.enqueue("s", "/t", 20, _publish("r2"), [])
        assert has_backlog(path)
        first, second = outbox.pending()
        outbox.sent(first.id)
        assert outbox.settle_backlog() and has_backlog(path)  # one still waits
        outbox.failed(second.id, "refused", permanent=True)  # set aside: nothing waits to be sent
        assert not outbox.settle_backlog() and not has_backlog(path)
    finally:
        outbox.close()
