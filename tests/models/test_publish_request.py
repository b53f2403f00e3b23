"""Publishing: required ids, empty turns skipped, unknown keys reported, limits enforced."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from reflexio.models import PublishUserInteractionRequest


def publish(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "user_id": "u",
        "session_id": "s",
        "interaction_data_list": [{"role": "User", "content": "hi"}],
    }
    body.update(overrides)
    return body


@pytest.mark.parametrize("session_id", [None, "", "   "])
def test_session_id_is_required_and_non_blank(session_id: str | None) -> None:
    body = publish(session_id=session_id)
    if session_id is None:
        del body["session_id"]
    with pytest.raises(ValidationError, match="session_id"):
        PublishUserInteractionRequest.model_validate(body)


def test_request_id_is_optional_and_kept() -> None:
    assert PublishUserInteractionRequest.model_validate(publish()).request_id is None
    request = PublishUserInteractionRequest.model_validate(publish(request_id=" r-1 "))
    assert request.request_id == "r-1"


def test_defaults_match_the_original() -> None:
    request = PublishUserInteractionRequest.model_validate(publish())
    assert request.source == ""
    assert request.agent_version == ""
    assert not (request.skip_aggregation or request.force_extraction or request.evaluation_only)
    assert request.session_finished is False


def test_empty_turns_are_skipped_and_reported_by_original_index() -> None:
    request = PublishUserInteractionRequest.model_validate(
        publish(
            interaction_data_list=[
                {"role": "User", "content": "hi"},
                {"role": "Assistant", "Content": "typo makes this row empty"},
                {"role": "Assistant", "content": "answer"},
            ]
        )
    )
    assert [turn.content for turn in request.interaction_data_list] == ["hi", "answer"]
    assert request.skipped_empty_indices == [1]
    assert request.unknown_fields() == ["interaction_data_list[1].Content"]
    warnings = request.payload_warnings()
    assert "interaction_data_list[1]: ignored unrecognised field(s) Content" in warnings
    assert any("skipped 1 empty interaction(s)" in warning for warning in warnings)


def test_all_empty_batch_is_rejected_naming_the_likely_typo() -> None:
    with pytest.raises(ValidationError, match=r"every interaction is empty.*Content"):
        PublishUserInteractionRequest.model_validate(
            publish(interaction_data_list=[{"Content": "hi"}, {"content": "  "}])
        )


def test_top_level_unknown_keys_are_reported() -> None:
    request = PublishUserInteractionRequest.model_validate(publish(forceExtraction=True))
    assert request.force_extraction is False
    assert request.unknown_fields() == ["forceExtraction"]
    assert request.payload_warnings() == ["publish request: ignored unrecognised field(s) forceExtraction"]


def test_warnings_are_bounded() -> None:
    turns = [{"content": "x", f"bogus{i}": 1, "user_id": "u"} for i in range(50)]
    warnings = PublishUserInteractionRequest.model_validate(
        publish(interaction_data_list=turns)
    ).payload_warnings()
    assert len(warnings) == 21
    assert warnings[-1] == "...and 30 more interaction(s) with the same problem"
    assert all("user_id" not in warning for warning in warnings)


def test_user_action_requires_a_description() -> None:
    with pytest.raises(ValidationError, match="user_action requires a user_action_description"):
        PublishUserInteractionRequest.model_validate(
            publish(interaction_data_list=[{"content": "x", "user_action": "click"}])
        )


def test_retrieved_learnings_are_capped_per_publish() -> None:
    refs = [{"kind": "profile", "learning_id": str(i)} for i in range(600)]
    turns = [{"content": "a", "retrieved_learnings": refs}] * 2
    with pytest.raises(ValidationError, match="at most 1000 retrieved_learnings"):
        PublishUserInteractionRequest.model_validate(publish(interaction_data_list=turns))


@pytest.mark.parametrize(
    "overrides",
    [
        {"interaction_data_list": []},
        {"interaction_data_list": [{"content": "x"}] * 1_001},
        {"source": "Support Agent"},
        {"agent_version": "v" * 1_001},
        {"evaluation_only": True, "force_extraction": True},
        {"retrieval_experiment_id": "e"},
    ],
)
def test_request_level_limits(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        PublishUserInteractionRequest.model_validate(publish(**overrides))


def test_roles_are_free_form() -> None:
    request = PublishUserInteractionRequest.model_validate(
        publish(
            interaction_data_list=[
                {"role": "Agent", "content": "x"},
                {"role": "tool", "content": "y"},
            ]
        )
    )
    assert [turn.role for turn in request.interaction_data_list] == ["Agent", "tool"]
