"""Hosted embedding models through LiteLLM, for teams that already pay for one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reflexio.config import load_litellm
from reflexio.embed.protocol import EmbedderUnavailable, EmbedKind, Vectors, normalise_rows, text_list

__all__ = ["LiteLLMEmbedder"]


class LiteLLMEmbedder:
    """Any embedding model that litellm can call, such as "openai/text-embedding-3-small".

    `dim` is the width the model is expected to return; every response is checked against it.
    When it is None, the first response decides (reading `dim` first costs one request). To ask
    a model for shorter vectors, pass both `dim` and `extra_kwargs={"dimensions": dim}`.
    `extra_kwargs` go to every `litellm.embedding` call as they are, which is also how tests
    use litellm's `mock_response`. Provider errors propagate as litellm raises them.
    """

    def __init__(
        self,
        model: str,
        dim: int | None = None,
        api_key: str | None = None,
        api_base: str | None = None,
        *,
        batch_size: int = 128,
        extra_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        """Configure the model; litellm itself is imported at the first request, not here."""
        self.name = f"litellm:{model}"
        self._model = model
        self._dim = dim
        self._batch_size = batch_size
        credentials = {"api_key": api_key, "api_base": api_base}
        self._kwargs = {key: value for key, value in credentials.items() if value is not None}
        self._kwargs.update(extra_kwargs or {})

    @property
    def dim(self) -> int:
        """The vector width, asking the model once if it was not configured."""
        if self._dim is None:
            self._checked(self._request(["dimension probe"]))
        assert self._dim is not None  # set by _checked
        return self._dim

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> Vectors:
        """Embed `texts` in batches of `batch_size` texts per request (see `Embedder.embed`)."""
        batch = text_list(texts)
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        size = self._batch_size
        parts = [self._request(batch[i : i + size]) for i in range(0, len(batch), size)]
        return normalise_rows(self._checked(np.concatenate(parts)))

    def _request(self, texts: list[str]) -> Vectors:
        response = _litellm().embedding(model=self._model, input=texts, **self._kwargs)
        items = sorted(response.data, key=lambda item: item["index"])
        if len(items) != len(texts):
            raise EmbedderUnavailable(f"{self.name} returned {len(items)} vectors for {len(texts)} texts")
        return np.asarray([item["embedding"] for item in items], dtype=np.float32)

    def _checked(self, vectors: Vectors) -> Vectors:
        """Remember the width on first sight; refuse a model that changes it later."""
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        if vectors.ndim != 2 or vectors.shape[1] != self._dim:
            raise EmbedderUnavailable(
                f"{self.name} returned vectors of shape {vectors.shape}, expected width {self._dim}"
            )
        return vectors


def _litellm() -> Any:
    try:
        return load_litellm()
    except ImportError as error:
        raise EmbedderUnavailable("litellm is not installed: pip install 'reflexio[llm]'") from error
