"""LiteLLM for the adapter tests, imported the way production imports it (offline)."""

from __future__ import annotations

import os
from typing import Any

import pytest


@pytest.fixture(scope="session")
def litellm() -> Any:
    """LiteLLM with its bundled price map, so importing it never reaches for the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return pytest.importorskip("litellm")
