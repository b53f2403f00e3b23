"""Storage contract: after an embedder change, old vectors are found and re-embedded."""

from __future__ import annotations

import numpy as np
import pytest

from reflexio.embed import open_embedder
from reflexio.filters import CandidateQuery, LearningFilter, SearchMode
from reflexio.records import Audit, Learning, LearningKind
from reflexio.storage import Storage


@pytest.fixture
def storage(search_storage: Storage) -> Storage:
    """Every backend, PostgreSQL also with every search in SQL (``SEARCH_BACKENDS``)."""
    return search_storage


def test_vectors_of_a_previous_embedder_are_refreshed_without_touching_history(storage: Storage) -> None:
    text = "Prefers aisle seats on long flights"
    (stored,) = storage.save_learnings(
        [Learning(org_id="o1", kind=LearningKind.PROFILE, user_id="u1", content=text)], Audit()
    )
    assert storage.orgs_with_stale_vectors() == []
    new = open_embedder("wordllama-64")
    storage.embedder = new  # type: ignore[attr-defined]  # the server restarts with another model
    assert storage.orgs_with_stale_vectors() == ["o1"]
    q = CandidateQuery(
        filters=(LearningFilter(kinds=(LearningKind.PROFILE,)),),
        text="aisle seat",
        vector=new.embed(["aisle seat"], kind="query")[0],
        embed_model=new.name,
        mode=SearchMode.VECTOR,
    )
    assert storage.search_candidates("o1", q) == []  # a vector of another model is never compared
    events_before = len(storage.list_events("o1"))
    assert storage.refresh_vectors("o1", limit=10) == 1
    assert storage.refresh_vectors("o1", limit=10) == 0
    (fresh,) = storage.get_learnings("o1", LearningFilter(ids=(stored.id,)))
    assert fresh.embed_model == new.name and fresh.updated_at == stored.updated_at
    assert np.allclose(fresh.embedding, new.embed([text])[0], atol=1e-5)  # type: ignore[arg-type]
    assert len(storage.list_events("o1")) == events_before
    assert [h.learning.id for h in storage.search_candidates("o1", q)] == [stored.id]
    assert storage.orgs_with_stale_vectors() == []
