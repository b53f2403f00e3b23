"""A handler that writes one learning per new interaction, to prove job guarantees.

Run as a worker process: ``python -m tests.support.echo STORAGE_URL [LEASE_SECONDS [DELAY]]``;
DELAY seconds are spent per window before writing, like a model call. It uses
the product's ``WorkerPool``, ``run_extraction`` windows and bookmarks; only the extractor is
a stand-in, so duplicated or missing rows would reveal a broken guarantee, not a broken model.
"""

from __future__ import annotations

import signal
import sys
import threading
import time

from reflexio.embed import open_embedder
from reflexio.jobs import JobContext, WorkerPool
from reflexio.learn.changes import Changes
from reflexio.learn.windows import Window, run_extraction
from reflexio.models.org_config import Config
from reflexio.records import Learning, LearningKind
from reflexio.service.publish import EXTRACT
from reflexio.storage import Storage, open_storage


def echo(window: Window) -> Changes:
    """One profile per turn this window is the first to see."""
    return Changes(
        added=[
            Learning(
                org_id=window.org_id,
                kind=LearningKind.PROFILE,
                user_id=window.user_id,
                content=f"echo {turn.id}: {turn.content}",
                custom_features={"interaction_id": turn.id},
                source_interaction_ids=[turn.id],
            )
            for turn in window.new_turns
            if "profile" in window.extractors
        ],
        reason="echo",
    )


def handlers(storage: Storage, delay: float = 0.0) -> dict[str, object]:
    config = Config()

    def slow_echo(window: Window) -> Changes:
        time.sleep(delay)
        return echo(window)

    def extract(ctx: JobContext) -> None:
        run_extraction(ctx, storage, config, slow_echo)

    return {EXTRACT: extract}


def main() -> None:
    url = sys.argv[1]
    lease = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    storage = open_storage(url, open_embedder("wordllama"))
    pool = WorkerPool(storage, handlers(storage, delay), size=1, lease_seconds=lease, poll_seconds=0.05)  # type: ignore[arg-type]
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=pool.stop, args=(5.0,)).start())
    pool.start()
    print("ready", flush=True)
    pool.wait()


if __name__ == "__main__":
    main()
