"""Schemathesis hooks for the fuzz run: the few rules between fields that JSON Schema cannot state.

Everything else a request must satisfy is in the OpenAPI document (``api.openapi``), so these
are the only places where a schema-valid request is still refused with a 422. Before a
*positive* case (one meant to be valid) is sent, it is brought in line with them, with an edit
that keeps it schema-valid; negative cases are sent as generated. Each rule is the server's:

* a time window's ``end_time`` must be after its ``start_time`` (``models.fields.TimeWindow``);
* a publish needs one turn with content (empty turns are dropped, a batch of only empty turns
  is refused), cannot be both ``evaluation_only`` and ``force_extraction``, and names a
  retrieval experiment with its arm or not at all;
* an evaluation overview's ``to_ts`` is not before its ``from_ts``, and learning impact by id
  names the ids' ``kind``;
* a config's ``stride_size`` may not exceed its ``window_size`` (``Config``), a masked secret
  (``****``) must match a stored one (``models.secrets``), and a retrieval experiment record
  ends after it starts (its changes are a 409 anyway: the experiment has routes of its own).

And one that is not a rule but a shape: ``GET /api/events`` streams until the client leaves
(``follow=true``, its default), which a request/response fuzzer would wait on forever, so every
case of it reads the backlog only (``follow=false``); the live stream has tests of its own.

Loaded by the schemathesis CLI through ``SCHEMATHESIS_HOOKS=tests.api.fuzz_hooks``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import schemathesis

from reflexio.models import MASK

#: What a query parameter's ``true`` may be spelled as (pydantic's boolean parsing).
_TRUE = frozenset({"true", "1", "yes", "on", "t", "y"})


@schemathesis.hook
def before_call(ctx: Any, case: Any, kwargs: dict[str, Any]) -> None:
    """Bring a positive case's body in line with the rules between its fields."""
    if case.path.endswith("/events"):
        query = case.query if isinstance(case.query, dict) else {}
        if str(query.get("follow", True)).lower() in _TRUE:
            case.query = {**query, "follow": "false"}
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or not isinstance(case.body, dict):
        return
    _order_window(case.body)
    if case.path.endswith("/get_evaluation_overview"):
        _order_overview(case.body)
    if case.path.endswith("/get_learning_impact") and case.body.get("learning_ids"):
        case.body["kind"] = case.body.get("kind") or "agent_playbook"
    if case.path.endswith("/publish_interaction"):
        _consistent_publish(case.body)
    if case.path.endswith(("/set_config", "/update_config")):
        _fit_stride(case.body)
        _unmask(case.body)
        case.body.pop("retrieval_experiment_history", None)


def _order_window(body: dict[str, Any]) -> None:
    start, end = _instant(body.get("start_time")), _instant(body.get("end_time"))
    if start is not None and end is not None and end <= start:
        if end == start:
            del body["end_time"]
        else:
            body["start_time"], body["end_time"] = body["end_time"], body["start_time"]


def _order_overview(body: dict[str, Any]) -> None:
    start, end = body.get("from_ts"), body.get("to_ts")
    if isinstance(start, int) and isinstance(end, int) and end < start:
        body["from_ts"], body["to_ts"] = end, start


def _instant(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            return None
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    return None


def _consistent_publish(body: dict[str, Any]) -> None:
    """One turn has content; evaluation-only is never extracted; experiment id and arm together."""
    turns = body.get("interaction_data_list")
    if isinstance(turns, list) and turns and all(isinstance(t, dict) and _is_empty(t) for t in turns):
        turns[0]["content"] = "a turn with content"
    if body.get("evaluation_only") is True and body.get("force_extraction") is True:
        body["force_extraction"] = False
    if (body.get("retrieval_experiment_id") is None) != (body.get("retrieval_experiment_arm") is None):
        body.pop("retrieval_experiment_id", None)
        body.pop("retrieval_experiment_arm", None)


def _is_empty(turn: dict[str, Any]) -> bool:
    """``InteractionData.is_empty`` on the raw turn."""
    if turn.get("user_action", "none") != "none":
        return False
    texts = ("content", "shadow_content", "expert_content", "interacted_image_url", "image_encoding")
    lists = ("tools_used", "citations", "retrieved_learnings")
    blank = all(not isinstance(turn.get(name), str) or not turn[name].strip() for name in texts)
    return blank and not any(turn.get(name) for name in lists)


#: Window and stride of each extraction preset, and the defaults (``models.org_config``).
_PRESETS = {"quick_chat": (5, 3), "standard": (10, 8), "long_form": (25, 10), "high_volume": (15, 8)}
_DEFAULT = (10, 8)


def _fit_stride(body: dict[str, Any]) -> None:
    """Make the window explicit (a config update may meet any stored one) and the stride fit it."""
    if not ({"window_size", "stride_size", "extraction_preset"} & body.keys()):
        return
    preset = _PRESETS.get(str(body.get("extraction_preset")), _DEFAULT)
    given_window, given_stride = body.get("window_size"), body.get("stride_size")
    window = given_window if isinstance(given_window, int) else preset[0]
    stride = given_stride if isinstance(given_stride, int) else preset[1]
    body["window_size"] = max(window, stride)
    body["stride_size"] = stride


def _unmask(value: Any) -> Any:
    """Replace every masked secret by a plain one (a mask must match a stored secret)."""
    if isinstance(value, dict):
        for key, item in value.items():
            value[key] = _unmask(item)
    elif isinstance(value, list):
        value[:] = [_unmask(item) for item in value]
    elif isinstance(value, str) and MASK in value:
        return value.replace(MASK, "xxxx")
    return value
