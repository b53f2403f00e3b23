"""The Claude Code hook commands: search on prompt submit, publish on stop and session end.

Claude Code runs ``python -I -S .../reflexio/integrations/claude_code/__main__.py <event>``
(see ``__main__`` for why that form) with the hook's JSON on stdin:

* ``prompt`` (UserPromptSubmit): search with the prompt and print the block as
  ``hookSpecificOutput.additionalContext``; remember what was injected. This runs before every
  prompt, so it starts in milliseconds: it imports no ``json``, ``socket`` or ``sqlite3`` (see
  ``wire`` and ``outbox``), and the SDK and pydantic would cost more than the whole budget, and
  so would ``typing``, ``dataclasses``, ``pathlib`` and ``urllib.parse`` (``bench/hooks``).
* ``stop`` (Stop) and ``session-end`` (SessionEnd): read the transcript since the last publish,
  queue one publish of those turns (tool calls with their status, and on each answer the
  learnings its prompt was given) in the outbox, and start a background ``flush``.
* ``flush``: send what the outbox holds through the SDK, oldest first, idempotently by
  ``request_id``; what the server cannot take now stays for the next hook.

A hook never blocks or breaks the agent: every failure is logged to ``hooks.log`` in the
outbox's folder and the hook exits 0; the server is given ``timeout_seconds`` at most.
"""

from __future__ import annotations

import os
import sys
import time

from reflexio.environment import ClaudeCodeSettings
from reflexio.integrations.claude_code.outbox import Outbox, has_backlog, remember_injection
from reflexio.integrations.claude_code.wire import dumps, loads, post
from reflexio.prompt_text import STANDING_TAG, PromptItem, pack, rule_line, search_query

TYPE_CHECKING = False  # ``typing`` is not imported at run time (start-up time; see wire)
if TYPE_CHECKING:  # the prompt hook never reads a transcript nor opens the SQLite outbox
    from typing import Any

    from reflexio.integrations.claude_code.outbox import Injection
    from reflexio.integrations.claude_code.transcript import Turn

__all__ = ["EVENTS", "SOURCE", "flush", "main", "on_prompt", "on_stop"]

_LOG_FOLDER: list[str] = []


def _log(level: str, message: str, *args: object, trace: bool = False) -> None:
    """Append to the hooks' log; ``logging`` is imported only then (it costs start-up time)."""
    import logging

    logger = logging.getLogger("reflexio.claude_code")
    if not logger.handlers and _LOG_FOLDER:
        handler = logging.FileHandler(os.path.join(_LOG_FOLDER[0], "hooks.log"))
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    logger.log(logging.getLevelName(level), message, *args, exc_info=trace)


#: The ``source`` every publish from Claude Code carries.
SOURCE = "claude-code"
#: What the injected block starts with, so the model knows where it comes from.
INTRO = "Reflexio, from earlier sessions with this user (follow these where they apply):"
#: Prompts not worth a search: acknowledgements and the like.
_TRIVIAL = frozenset(
    {"y", "n", "yes", "no", "ok", "okay", "k", "thanks", "thank you", "thx", "lgtm", "go", "continue"}
)
#: Seconds one flusher may hold the outbox before another may take over.
FLUSH_LEASE_SECONDS = 60.0

EVENTS = ("prompt", "stop", "session-end", "flush")


# -- prompt -------------------------------------------------------------------------------------


def on_prompt(payload: dict[str, Any], settings: ClaudeCodeSettings, outbox_path: str) -> str:
    """The UserPromptSubmit hook: the JSON to print (empty when there is nothing to inject).

    It reads and writes only the outbox's plain files (``outbox_path``'s backlog marker, the
    session's injections): opening the SQLite file would cost it more than its search.
    """
    if has_backlog(outbox_path):
        spawn_flush()
    prompt = str(payload.get("prompt", ""))
    session_id = str(payload.get("session_id", ""))
    if _trivial(prompt):
        return ""
    found = _search(settings, prompt, session_id)
    kept, text = pack(_items(found), settings.max_tokens)
    if not kept:
        return ""
    learnings = [{"kind": item.kind, "learning_id": item.learning_id} for item in kept]
    if session_id:  # the stop hook publishes by session: without one, nobody would read it
        remember_injection(outbox_path, session_id, prompt, learnings)
    context = f"{INTRO}\n\n{text}"
    return dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}})


def _trivial(prompt: str) -> bool:
    words = prompt.strip().lower().strip(".!?")
    return len(words) < 3 or words in _TRIVIAL


def _search(settings: ClaudeCodeSettings, prompt: str, session_id: str) -> dict[str, Any]:
    body = {
        "query": search_query(prompt),
        "user_id": settings.user_id,
        "agent_version": settings.agent_version,
        "top_k": settings.top_k,
    }
    if session_id:
        body["session_id"] = session_id
    found: dict[str, Any] = post(
        settings.url, "/api/search", body, api_key=settings.api_key, timeout=settings.timeout_seconds
    )
    return found


def _items(found: dict[str, Any]) -> list[PromptItem]:
    """The search hits as prompt items (the same rules as ``UnifiedSearchViewResponse.to_prompt``)."""
    items = [
        PromptItem(
            "agent_playbook",
            str(r["agent_playbook_id"]),
            rule_line(r.get("trigger"), r["content"]),
            r.get("score"),
            standing=STANDING_TAG in (r.get("tags") or ()),
        )
        for r in found.get("agent_playbooks", [])
    ]
    items += [
        PromptItem(
            "user_playbook",
            str(r["user_playbook_id"]),
            rule_line(r.get("trigger"), r["content"]),
            r.get("score"),
            standing=STANDING_TAG in (r.get("tags") or ()),
        )
        for r in found.get("user_playbooks", [])
    ]
    items += [
        PromptItem(
            "profile",
            str(r["profile_id"]),
            " ".join(str(r["content"]).split()),
            r.get("score"),
            standing=STANDING_TAG in (r.get("tags") or ()),
        )
        for r in found.get("profiles", [])
    ]
    return items


# -- stop and session end --------------------------------------------------------------------


def on_stop(payload: dict[str, Any], settings: ClaudeCodeSettings, outbox: Outbox, *, finished: bool) -> bool:
    """The Stop / SessionEnd hook: queue the turns since the last publish; True when queued."""
    session_id = str(payload.get("session_id", ""))
    path = str(payload.get("transcript_path", ""))
    if not session_id or not os.path.isfile(path):
        _log("WARNING", "no transcript to read for session %r at %s", session_id, path)
        return False
    offset = outbox.offset(session_id)
    if offset > os.path.getsize(path):  # the file was replaced: read it again from the top
        offset = 0
    from reflexio.integrations.claude_code.transcript import read_turns

    turns, end = read_turns(path, offset)
    injections = outbox.injections(session_id)
    consumed = _attach(turns, injections)
    if turns:
        message = _publish_message(
            settings, session_id, turns, f"{SOURCE}:{session_id}:{offset}-{end}", finished
        )
    elif finished:
        message = {
            "kind": "finalize",
            "request_id": f"{SOURCE}:{session_id}:end",
            "user_id": settings.user_id,
            "session_id": session_id,
        }
    else:
        return False
    outbox.enqueue(session_id, path, end, message, consumed)
    return True


def _publish_message(
    settings: ClaudeCodeSettings, session_id: str, turns: list[Turn], request_id: str, finished: bool
) -> dict[str, Any]:
    return {
        "kind": "publish",
        "request_id": request_id,
        "user_id": settings.user_id,
        "session_id": session_id,
        "agent_version": settings.agent_version,
        "source": SOURCE,
        "session_finished": finished,
        "interactions": [turn.as_interaction() for turn in turns],
    }


def _attach(turns: list[Turn], injections: list[Injection]) -> list[int]:
    """Put each injection on the answer to its prompt; returns the injections placed.

    An injection whose prompt is not among the turns (Claude Code rewrote it) goes on the
    last answer; with no answer at all, injections wait for the next publish.
    """
    answers = [i for i, turn in enumerate(turns) if turn.role == "Assistant"]
    if not answers:
        return []
    placed = []
    cursor = 0
    for injection in injections:
        target = answers[-1]
        for i in range(cursor, len(turns)):
            if turns[i].role == "User" and turns[i].content.strip() == injection.prompt.strip():
                target = next((a for a in answers if a > i), answers[-1])
                cursor = i + 1
                break
        known = {(r["kind"], r["learning_id"]) for r in turns[target].retrieved_learnings}
        turns[target].retrieved_learnings += [
            r for r in injection.learnings if (r["kind"], r["learning_id"]) not in known
        ]
        placed.append(injection.id)
    return placed


# -- flush ------------------------------------------------------------------------------------


def spawn_flush() -> None:
    """Send the outbox in a detached process, so no hook waits for the network."""
    import subprocess  # only when there is something to send: it costs start-up time

    subprocess.Popen(
        [sys.executable, "-I", "-m", "reflexio.integrations.claude_code", "flush"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def flush(settings: ClaudeCodeSettings, outbox: Outbox) -> int:
    """Send what the outbox holds, oldest first; returns how many the server took.

    Stops at the first failure the server may get over (it is down, overloaded, the key is
    wrong): the rest is tried next time, in order. A publish the server refuses for good
    (its payload is invalid) is set aside with its error rather than retried forever.
    """
    from reflexio.client import ReflexioClient
    from reflexio.errors import (
        BadRequestError,
        ConflictError,
        NotFoundError,
        PayloadTooLargeError,
        ReflexioError,
        ValidationError,
    )

    permanent = (BadRequestError, ConflictError, NotFoundError, PayloadTooLargeError, ValidationError)
    holder = f"{os.getpid()}:{time.time()}"
    if not outbox.take_flusher_lease(holder, FLUSH_LEASE_SECONDS):
        return 0
    sent = 0
    try:
        client = ReflexioClient(
            api_key=settings.api_key,
            url_endpoint=settings.url,
            timeout=settings.timeout_seconds * 5,
        )
        with client:
            for item in outbox.pending():
                try:
                    _send(client, item.payload)
                except permanent as exc:
                    outbox.failed(item.id, f"{type(exc).__name__}: {exc}", permanent=True)
                except (ReflexioError, OSError) as exc:
                    outbox.failed(item.id, f"{type(exc).__name__}: {exc}", permanent=False)
                    break
                else:
                    outbox.sent(item.id)
                    sent += 1
        outbox.settle_backlog()  # if nothing is left, the prompt hook stops starting flushes
    finally:
        outbox.release_flusher_lease(holder)
    return sent


def _send(client: Any, message: dict[str, Any]) -> None:
    if message.get("kind") == "finalize":
        client.finalize_session(message["user_id"], message["session_id"])
        return
    client.publish_interaction(
        message["user_id"],
        message["interactions"],
        source=message["source"],
        agent_version=message["agent_version"],
        session_id=message["session_id"],
        session_finished=message["session_finished"],
        request_id=message["request_id"],
    )


# -- entry point ------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    """Run one hook event; always 0, whatever happens (the agent must never break on us)."""
    settings = ClaudeCodeSettings.from_env()
    try:
        os.makedirs(settings.folder, mode=0o700, exist_ok=True)
        _LOG_FOLDER.append(settings.folder)
        _run(argv[0] if argv else "", settings)
    except OSError as exc:  # the server is down or slow: expected, and the outbox keeps the turns
        _log("WARNING", "hook %s: %s: %s", argv[:1], type(exc).__name__, exc)
    except BaseException:  # a hook must exit 0 whatever failed; the log says what
        _log("ERROR", "hook %s failed", argv[:1], trace=True)
    return 0


def _run(event: str, settings: ClaudeCodeSettings) -> None:
    if event not in EVENTS:
        raise ValueError(f"unknown hook event {event!r}; one of {', '.join(EVENTS)}")
    outbox_path = os.path.join(settings.folder, "outbox.db")
    payload = loads(sys.stdin.read() or "{}") if event != "flush" else {}
    if event == "prompt":
        out = on_prompt(payload, settings, outbox_path)
        if out:
            sys.stdout.write(out)
        return
    outbox = Outbox(outbox_path)  # the SQLite file (and sqlite3): never for a prompt
    try:
        if event == "flush":
            sent = flush(settings, outbox)
            _log("INFO", "flush: sent %s", sent)
        elif on_stop(payload, settings, outbox, finished=event == "session-end"):
            spawn_flush()
    finally:
        outbox.close()
