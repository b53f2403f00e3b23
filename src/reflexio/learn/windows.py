"""Extraction over every interaction: windows from a durable bookmark.

Each (org, user, extractor) has a bookmark: the id of the last interaction it has learned
from. A run reads everything after the bookmark and cuts it into windows of ``window_size``
turns whose new parts advance by ``stride_size`` (the first ``window_size - stride_size``
turns of a window are context already learned from), so a 200-turn publish is covered
completely, not just its last window. Each window's learnings and the bookmark move commit in
one transaction; a crash repeats at most the window in flight.

Without ``flush`` only full strides are processed and a tail shorter than a stride waits for
more turns (or for the session to end: finalize and the idle timer flush it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reflexio.jobs import JobContext
from reflexio.learn.changes import Changes, apply_changes
from reflexio.models.org_config import Config
from reflexio.storage import Storage
from reflexio.storage.filters import InteractionFilter
from reflexio.storage.records import Audit, Bookmark, InteractionRecord

__all__ = ["Window", "WindowExtractor", "plan_windows", "run_extraction", "window_params"]


@dataclass(frozen=True, slots=True)
class Window:
    """Turns an extractor reads at once: context (already learned from) then new turns."""

    org_id: str
    user_id: str
    extractor: str
    turns: tuple[InteractionRecord, ...]
    new_from: int

    @property
    def new_turns(self) -> tuple[InteractionRecord, ...]:
        """The turns this window is the first to learn from."""
        return self.turns[self.new_from :]

    @property
    def last_id(self) -> int:
        """Where the bookmark moves once this window is learned."""
        return self.turns[-1].id


#: An extractor: reads a window (and may read storage or call an LLM) and returns Changes.
WindowExtractor = Callable[[Window], Changes]


def window_params(config: Config, extractor: str) -> tuple[int, int]:
    """(window_size, stride_size) for an extractor: its override, else the org's."""
    part = (
        config.profile_extractor_config if extractor == "profile" else config.user_playbook_extractor_config
    )
    size = getattr(part, "window_size_override", None) or config.window_size
    stride = getattr(part, "stride_size_override", None) or config.stride_size
    return max(1, size), max(1, min(stride, size))


def plan_windows(
    org_id: str,
    user_id: str,
    extractor: str,
    context: Sequence[InteractionRecord],
    new: Sequence[InteractionRecord],
    *,
    size: int,
    stride: int,
    flush: bool,
) -> list[Window]:
    """Cut ``new`` turns into windows that together cover every one of them.

    Window ``k`` ends at new turn ``(k+1)·stride`` and reaches back ``size`` turns, taking
    earlier turns (from ``new`` or from ``context``) as context. With ``flush`` a final
    window ends at the last new turn even if it is short.
    """
    history = [*context, *new]
    offset = len(context)
    ends = list(range(stride, len(new) + 1, stride))
    if flush and new and (not ends or ends[-1] != len(new)):
        ends.append(len(new))
    windows = []
    previous_end = 0
    for end in ends:
        stop = offset + end
        start = max(0, stop - max(size, end - previous_end))
        first_new = offset + previous_end
        windows.append(Window(org_id, user_id, extractor, tuple(history[start:stop]), first_new - start))
        previous_end = end
    return windows


def run_extraction(ctx: JobContext, storage: Storage, config: Config, extract: WindowExtractor) -> int:
    """Learn from every turn after the bookmark of the job's (user, extractor).

    Returns:
        How many windows were processed.
    """
    job = ctx.job
    user_id, extractor = str(job.payload["user_id"]), str(job.payload["extractor"])
    size, stride = window_params(config, extractor)
    bookmark = storage.get_bookmark(job.org_id, user_id, extractor)
    after = bookmark.last_interaction_id if bookmark else 0
    new = storage.list_interactions(job.org_id, InteractionFilter(user_id=user_id, after_id=after))
    context = storage.list_interactions(
        job.org_id,
        InteractionFilter(user_id=user_id, up_to_id=after),
        limit=max(0, size - stride),
        newest_first=True,
    )[::-1]
    flush = bool(job.payload.get("flush"))
    windows = plan_windows(
        job.org_id, user_id, extractor, context, new, size=size, stride=stride, flush=flush
    )
    audit = Audit(actor=f"extractor:{extractor}", request_id=job.request_id, job_id=job.id)
    for i, window in enumerate(windows):
        changes = extract(window)
        with ctx.effects(final=i == len(windows) - 1) as tx:
            apply_changes(
                tx,
                job.org_id,
                changes,
                Audit(
                    actor=audit.actor, reason=changes.reason, request_id=audit.request_id, job_id=audit.job_id
                ),
            )
            tx.put_bookmark(
                Bookmark(
                    org_id=job.org_id,
                    user_id=user_id,
                    extractor=extractor,
                    last_interaction_id=window.last_id,
                )
            )
    return len(windows)
