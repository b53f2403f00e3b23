"""Is a publish with a known ``request_id`` a retry of the stored one, or a different request?

Only what the caller sent counts. A value the caller did not send is filled in by a default
(a turn's ``created_at`` is the time it arrived), and a retry from a new process, an hour
later, gets another one; comparing those would turn every honest retry into a 409. So:

* the fingerprint stored with a request (``payload_hash``) covers the fields the caller set,
  which makes the common replay one string comparison;
* when fingerprints differ (a caller that sends a default explicitly once and not the next
  time, or a request stored by an older version), the new request is compared with what was
  stored, field by field:
  user, session, source, agent version and every turn's content, tools, citations and
  references, plus a turn's ``created_at`` when the retry sends one. Flags (``force_extraction``,
  ``session_finished``, ...) are not stored: they steered the first publish only, so a retry
  that changes them is still the same request. Any stored field that differs is a conflict,
  and the 409 names the fields.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from typing import Final

from reflexio.filters import InteractionFilter
from reflexio.models import DEFAULT_AGENT_VERSION, PublishUserInteractionRequest
from reflexio.records import InteractionRecord, RequestRecord
from reflexio.service import views
from reflexio.storage import Storage

__all__ = ["describe", "differences", "payload_hash"]

#: Turn fields that are the storage's own, never the caller's.
_NOT_SENT: Final = frozenset({"org_id", "request_id", "user_id", "session_id", "id", "created_at"})
#: Request fields that steer how a publish is processed; they are not stored, so not compared.
_FLAGS: Final = frozenset(
    {
        "session_finished",
        "skip_aggregation",
        "force_extraction",
        "evaluation_only",
        "override_learning_stall",
        "retrieval_experiment_id",
        "retrieval_experiment_arm",
    }
)
#: At most this many differing fields are named in a 409.
_MAX_NAMED: Final = 10


def payload_hash(req: PublishUserInteractionRequest) -> str:
    """Fingerprint of the fields the caller set, flags left out (they are not compared)."""
    body = req.model_dump(mode="json", exclude_unset=True, exclude={"request_id", *_FLAGS})
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def differences(
    storage: Storage, org_id: str, stored: RequestRecord, req: PublishUserInteractionRequest
) -> list[str]:
    """The fields in which ``req`` differs from the stored request (empty: it is a retry)."""
    out = [
        name
        for name, sent, kept in (
            ("user_id", req.user_id, stored.user_id),
            ("session_id", req.session_id, stored.session_id),
            ("source", req.source or "", stored.source),
            ("agent_version", req.agent_version or DEFAULT_AGENT_VERSION, stored.agent_version),
        )
        if sent != kept
    ]
    turns = storage.list_interactions(org_id, InteractionFilter(request_ids=(stored.request_id,)))
    if len(turns) != len(req.interaction_data_list):
        out.append(f"interaction_data_list (has {len(req.interaction_data_list)} turns, stored {len(turns)})")
        return out
    for index, item, kept_turn in zip(req.sent_positions(), req.interaction_data_list, turns, strict=True):
        sent_turn = views.interaction_record(org_id, stored.request_id, req.user_id, req.session_id, item)
        out += [f"interaction_data_list[{index}].{name}" for name in _turn_differences(sent_turn, kept_turn)]
        if "created_at" in item.model_fields_set and item.created_at != kept_turn.created_at:
            out.append(f"interaction_data_list[{index}].created_at")
    return out


def _turn_differences(sent: InteractionRecord, kept: InteractionRecord) -> list[str]:
    return [
        f.name
        for f in fields(InteractionRecord)
        if f.name not in _NOT_SENT and getattr(sent, f.name) != getattr(kept, f.name)
    ]


def describe(names: list[str]) -> str:
    """The differing fields as a phrase for the 409's message."""
    shown = ", ".join(names[:_MAX_NAMED])
    return shown + (f" and {len(names) - _MAX_NAMED} more" if len(names) > _MAX_NAMED else "")
