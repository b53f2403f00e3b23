"""A worker process that judges idle sessions with the product's handler, for the crash test.

``python -m tests.support.judge STORAGE_URL HOME LEASE_SECONDS MARKER_DIR [slow]``: the real
``evaluate_session`` handler (judgement, verdicts, reflection) with the rules-backed scripted
model. With ``slow``, every session-judge call (which judges the learnings too) first writes
a file in MARKER_DIR and then hangs, so the test can kill the process in the middle of a judgement.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from reflexio.config import Settings
from reflexio.jobs import WorkerPool
from reflexio.service.core import open_core
from reflexio.service.publish import EVALUATE_SESSION
from reflexio.service.workers import handlers
from reflexio.testing import rules_script, rules_session_judgement

__all__ = ["main"]


def main() -> None:
    url, home, lease, markers = sys.argv[1], sys.argv[2], float(sys.argv[3]), Path(sys.argv[4])
    slow = len(sys.argv) > 5 and sys.argv[5] == "slow"
    core = open_core(Settings.from_env({"REFLEXIO_STORAGE_URL": url, "HOME": home, "REFLEXIO_HOME": home}))
    script = rules_script()
    if slow:

        def hang(inputs: Any) -> Any:
            (markers / f"judging-{os.getpid()}").write_text("started")
            time.sleep(60)
            return rules_session_judgement(inputs)

        script.on("evaluate_session", hang)
    core.llm = script
    work = {EVALUATE_SESSION: handlers(core)[EVALUATE_SESSION]}
    pool = WorkerPool(core.storage, work, size=1, lease_seconds=lease, poll_seconds=0.05)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=pool.stop, args=(5.0,)).start())
    pool.start()
    print("ready", flush=True)
    pool.wait()


if __name__ == "__main__":
    main()
