"""A publish retried with the same request_id from a new process is the same request, not a 409."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.client.live_server import running_server

PUBLISH = """
import sys
from reflexio import InteractionData, ReflexioClient

client = ReflexioClient(url_endpoint=sys.argv[1])
answer = client.publish_interaction(
    user_id="u-retry",
    session_id="s-retry",
    request_id="retry-1",
    interactions=[
        InteractionData(role="User", content="Book me a window seat."),
        InteractionData(role="Agent", content="Done: seat 12A."),
    ],
)
print(answer.message)
"""


def _publish_in_a_new_process(url: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PUBLISH, url], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_same_publish_from_a_new_process_is_a_replay(tmp_path: Path) -> None:
    with running_server(tmp_path) as url:
        first = _publish_in_a_new_process(url)
        time.sleep(1.1)  # a new second: a created_at the client filled in would differ now
        second = _publish_in_a_new_process(url)
    assert "learning is scheduled" in first
    assert "nothing new" in second
