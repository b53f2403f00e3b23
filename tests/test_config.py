"""Server settings: a child process given ``to_env()`` reads exactly the same settings."""

from __future__ import annotations

from reflexio.config import Settings


def test_to_env_round_trips_every_setting() -> None:
    chosen = Settings.from_env({"HOME": "/tmp/home", "OPENAI_API_KEY": "sk-x"}).replace(
        port=9000, workers=3, worker_process=False, job_poll_seconds=0.25, log_level="DEBUG"
    )
    env = chosen.to_env()
    assert Settings.from_env(env) == chosen
    assert env["OPENAI_API_KEY"] == "sk-x", "provider keys reach the child"


def test_litellm_callbacks_are_read_in_order() -> None:
    from reflexio.config import litellm_callbacks

    assert litellm_callbacks({"REFLEXIO_LITELLM_CALLBACKS": " langfuse, otel ,"}) == ["langfuse", "otel"]
    assert litellm_callbacks({}) == []
