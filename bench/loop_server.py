"""The in-process server ``bench.loop`` plays against when no ``--url`` is given.

A real API server on a free loopback port (a temporary SQLite file, the bundled embedder, and
in-process job workers), driven over the socket by the SDK exactly as an agent would. With
``--extractor llm`` the org's LLM is ``reflexio.testing.rules_script()`` (reading paraphrases
with the server's embedder, as a model would), a ScriptedLLM placed
through the same seam a configured provider uses, so calls and tokens are accounted for real.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from reflexio.api.server import in_background
from reflexio.config import DEFAULT_ORG_ID, Settings
from reflexio.service.core import open_core
from reflexio.testing import rules_script

__all__ = ["local_server"]


#: The prompts of the evaluation judges, and which of them judges a whole session.
SESSION_JUDGES = ("evaluate_session", "compare_shadow")
LEARNING_JUDGE = "judge_learnings"


@contextmanager
def local_server(extractor: str) -> Iterator[tuple[str, Callable[[], dict[str, int]]]]:
    """Yield (base URL, usage()) where usage() counts LLM calls, tokens and judge calls so far.

    Judge calls are counted on the scripted model itself (calls per prompt): ``judged_sessions``
    is the number of distinct sessions any judge prompt was called for.
    """
    with tempfile.TemporaryDirectory(prefix="reflexio-loop-") as tmp:
        home = Path(tmp)
        settings = Settings.from_env(
            {
                "HOME": str(home),
                "REFLEXIO_HOME": str(home / ".reflexio"),
                "REFLEXIO_STORAGE_URL": f"sqlite:///{home}/loop.db",
                "REFLEXIO_WORKERS": "2",
                "REFLEXIO_JOB_POLL_SECONDS": "0.02",
            }
        )
        core = open_core(settings)
        script = rules_script(core.embedder) if extractor == "llm" else None
        core.llm = script

        def usage() -> dict[str, int]:
            summary = core.storage.llm_usage(DEFAULT_ORG_ID)
            out = {"calls": summary.calls, "tokens": summary.tokens}
            if script is not None:
                judges = [*SESSION_JUDGES, LEARNING_JUDGE]
                out["judge_calls"] = sum(len(script.calls_to(p)) for p in judges)
                out["judged_sessions"] = len(
                    {
                        (t.user_id, t.session_id)
                        for p in judges
                        for c in script.calls_to(p)
                        for t in (c.inputs.get("turns") or c.inputs.get("all_turns") or ())[:1]
                    }
                )
                out["learning_judge_calls"] = len(script.calls_to(LEARNING_JUDGE))
            return out

        with in_background(core) as url:
            yield url, usage
