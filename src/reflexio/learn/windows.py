"""Extraction over every interaction: windows from durable per-extractor bookmarks.

Each (org, user, extractor) has a bookmark: the id of the last interaction that extractor has
learned from. One job per user reads everything after the bookmarks and cuts it into windows
of ``window_size`` turns whose new parts advance by ``stride_size`` (the first
``window_size - stride_size`` turns of a window are context already learned from), so a
200-turn publish is covered completely, not just its last window. Extractors whose windows
coincide (the usual case) share each window, so one model call can serve profiles and
playbooks together. Each window's learnings and the bookmark moves commit in one transaction;
a crash repeats at most the window in flight.

Without ``flush`` only full strides are processed and a tail shorter than a stride waits for
more turns (or for the session to end: finalize and the idle timer flush it) — unless the tail
teaches something: a correction, an instruction, a stated preference, a failed tool call or an
expert answer should change the agent's next answer, so an ``Urgency`` check (the rule
extractor's triage, no model call) flushes such a tail at once. Doing it here rather than at
publish keeps the publish path free of it (~0.7 ms of CPU per publish measured on the shared
VM) and lets it read the tail with the turns before it, as the extractor will.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reflexio.filters import InteractionFilter
from reflexio.jobs import JobContext
from reflexio.learn.aggregation_trigger import delay_of
from reflexio.learn.changes import Changes, apply_changes
from reflexio.models.org_config import Config
from reflexio.records import Audit, Bookmark, InteractionRecord
from reflexio.storage import Storage

__all__ = [
    "EXTRACTORS",
    "Window",
    "WindowLearner",
    "automatic_extractors",
    "enabled_extractors",
    "plan_windows",
    "run_extraction",
    "window_params",
]

#: Extractor names, as Reflexio 0.2.32 names its singleton extractors.
EXTRACTORS = ("profile", "playbook")


@dataclass(frozen=True, slots=True)
class Window:
    """Turns read at once: context (already learned from) then new turns, for some extractors."""

    org_id: str
    user_id: str
    extractors: tuple[str, ...]
    turns: tuple[InteractionRecord, ...]
    new_from: int

    @property
    def new_turns(self) -> tuple[InteractionRecord, ...]:
        """The turns this window is the first to learn from."""
        return self.turns[self.new_from :]

    @property
    def last_id(self) -> int:
        """Where the bookmarks move once this window is learned."""
        return self.turns[-1].id


#: A learner reads a window (and may read storage or call an LLM) and returns Changes for
#: the window's extractors only.
WindowLearner = Callable[[Window], Changes]

#: Whether new turns (after the turns before them) teach something worth learning at once.
Urgency = Callable[[Sequence[InteractionRecord], Sequence[InteractionRecord]], bool]


def enabled_extractors(config: Config) -> tuple[str, ...]:
    """The extractors an org's config turns on."""
    out = []
    if config.profile_extractor_config is not None:
        out.append("profile")
    if config.user_playbook_extractor_config is not None:
        out.append("playbook")
    return tuple(out)


def automatic_extractors(config: Config) -> tuple[str, ...]:
    """The enabled extractors that learn from every publish.

    A profile extractor with ``manual_trigger`` is left out: it learns only when asked (a
    manual generation or a rerun), as in Reflexio.
    """
    profile = config.profile_extractor_config
    manual = profile is not None and profile.manual_trigger
    return tuple(e for e in enabled_extractors(config) if not (manual and e == "profile"))


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
    extractors: tuple[str, ...],
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
        windows.append(Window(org_id, user_id, extractors, tuple(history[start:stop]), first_new - start))
        previous_end = end
    return windows


def _windows_for(
    storage: Storage,
    config: Config,
    org_id: str,
    user_id: str,
    extractor: str,
    flush: bool,
    urgent: Urgency | None = None,
) -> list[Window]:
    size, stride = window_params(config, extractor)
    bookmark = storage.get_bookmark(org_id, user_id, extractor)
    after = bookmark.last_interaction_id if bookmark else 0
    new = storage.list_interactions(org_id, InteractionFilter(user_id=user_id, after_id=after))
    context = storage.list_interactions(
        org_id,
        InteractionFilter(user_id=user_id, up_to_id=after),
        limit=max(2, size - stride),
        newest_first=True,
    )[::-1]
    if not flush and urgent is not None:
        cut = len(new) - len(new) % stride  # the tail a stride would leave waiting
        flush = cut < len(new) and urgent(new[cut:], [*context, *new[:cut]][-2:])
    context = context[-(size - stride) :] if size > stride else []
    return plan_windows(org_id, user_id, (extractor,), context, new, size=size, stride=stride, flush=flush)


def _merge_plans(plans: Sequence[list[Window]]) -> list[Window]:
    """One ordered list of windows; identical windows are shared by their extractors."""
    merged: dict[tuple[int, ...], Window] = {}
    for windows in plans:
        for w in windows:
            key = (w.new_from, *(t.id for t in w.turns))
            shared = merged.get(key)
            extractors = w.extractors if shared is None else (*shared.extractors, *w.extractors)
            merged[key] = Window(w.org_id, w.user_id, extractors, w.turns, w.new_from)
    return sorted(merged.values(), key=lambda w: (w.last_id, w.extractors))


def run_extraction(
    ctx: JobContext, storage: Storage, config: Config, learn: WindowLearner, urgent: Urgency | None = None
) -> int:
    """Learn from every turn after each extractor's bookmark for the job's user.

    Args:
        ctx: The job.
        storage: Where turns, learnings and bookmarks live.
        config: The org's config (windows, extractors).
        learn: What learns from one window.
        urgent: Flushes a tail shorter than a stride when it teaches something (see the
            module docstring); without it such a tail waits.

    Returns:
        How many windows were processed.
    """
    job = ctx.job
    user_id = str(job.payload["user_id"])
    flush = bool(job.payload.get("flush"))
    names = enabled_extractors(config) if job.payload.get("manual") else automatic_extractors(config)
    plans = [_windows_for(storage, config, job.org_id, user_id, e, flush, urgent) for e in names]
    windows = _merge_plans(plans)
    for i, window in enumerate(windows):
        changes = learn(window)
        audit = Audit(
            actor=f"extractor:{'+'.join(window.extractors)}",
            reason=changes.reason,
            request_id=job.request_id,
            job_id=job.id,
        )
        with ctx.effects(final=i == len(windows) - 1) as tx:
            apply_changes(tx, job.org_id, changes, audit, aggregation_delay=delay_of(config))
            for extractor in window.extractors:
                tx.put_bookmark(
                    Bookmark(
                        org_id=job.org_id,
                        user_id=user_id,
                        extractor=extractor,
                        last_interaction_id=window.last_id,
                    )
                )
    return len(windows)
