"""A PostgreSQL outage fails fast and heals by itself (issue 16, defect 5).

Before: during an outage every call waited the pool's 30 s before a 503 without
``Retry-After``. The database is reached here through a TCP relay that the test can cut: its
connections are dropped (as when PostgreSQL stops) and new ones are accepted but never
answered (a host that no longer responds), the worst case for a client.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from tests.conftest import POSTGRES_URL, postgres_schema_url

from reflexio.embed import Embedder
from reflexio.errors import StorageError
from reflexio.storage import Storage, open_storage
from reflexio.storage.postgres import POOL_WAIT_SECONDS

pytestmark = pytest.mark.postgres

#: What "fails fast" means: the pool wait, plus scheduling slack on a loaded machine.
FAST_SECONDS = POOL_WAIT_SECONDS + 1.5


class Relay:
    """Forwards TCP connections on localhost to the test server's Unix socket, until cut."""

    def __init__(self, target: Path) -> None:
        self._target = str(target)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self.cut = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._open.append(client)
                if self.cut:
                    continue  # accepted, never answered
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self._target)
            with self._lock:
                self._open.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    def sever(self) -> None:
        """Drop every connection and stop answering new ones."""
        with self._lock:
            self.cut = True
            for sock in self._open:
                _close(sock)
            self._open.clear()

    def restore(self) -> None:
        with self._lock:
            self.cut = False
            for sock in self._open:  # the ones accepted while cut
                _close(sock)
            self._open.clear()

    def close(self) -> None:
        self.sever()
        self._listener.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    _close(source)
    _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _unix_socket() -> Path:
    host = parse_qs(urlsplit(POSTGRES_URL).query).get("host", [""])[0]
    if not host.startswith("/"):
        pytest.skip("the relay needs the test server's Unix socket (REFLEXIO_TEST_POSTGRES_URL ?host=/dir)")
    return Path(host) / f".s.PGSQL.{urlsplit(POSTGRES_URL).port or 5432}"


@pytest.fixture
def relay() -> Iterator[Relay]:
    if not POSTGRES_URL:
        pytest.skip("REFLEXIO_TEST_POSTGRES_URL is not set")
    relay = Relay(_unix_socket())
    yield relay
    relay.close()


@pytest.fixture
def store(relay: Relay, embedder: Embedder) -> Iterator[Storage]:
    parts = urlsplit(postgres_schema_url())
    query = {k: v[0] for k, v in parse_qs(parts.query).items() if k != "host"}
    user = parts.username or os.environ.get("PGUSER", "postgres")
    url = f"postgresql://{user}@127.0.0.1:{relay.port}{parts.path}?{urlencode(query)}"
    storage = open_storage(url, embedder)
    yield storage
    relay.restore()
    storage.close()


def _timed_failure(call: object) -> tuple[float, StorageError]:
    assert callable(call)
    started = time.monotonic()
    with pytest.raises(StorageError) as caught:
        call()
    return time.monotonic() - started, caught.value


def test_calls_fail_fast_with_retry_after_while_the_database_is_down(relay: Relay, store: Storage) -> None:
    store.put_org_config("org-a", {"window_size": 12})
    relay.sever()
    for call in (
        lambda: store.get_org_config("org-a"),
        lambda: store.put_org_config("org-a", {}),
        store.ping,
    ):
        elapsed, error = _timed_failure(call)
        assert elapsed < FAST_SECONDS, f"a call during the outage took {elapsed:.1f} s"
        assert error.status_code == 503 and error.retry_after is not None and error.retry_after >= 1


def test_service_resumes_without_a_restart_and_nothing_stored_is_lost(relay: Relay, store: Storage) -> None:
    store.put_org_config("org-a", {"window_size": 12})
    relay.sever()
    _timed_failure(lambda: store.get_org_config("org-a"))
    relay.restore()
    deadline = time.monotonic() + 15
    while True:
        try:
            assert store.get_org_config("org-a") == {"window_size": 12}
            break
        except StorageError:
            assert time.monotonic() < deadline, "storage did not recover within 15 s of the restart"
            time.sleep(0.2)
    store.ping()


def test_once_one_call_found_the_database_down_the_others_fail_at_once(relay: Relay, store: Storage) -> None:
    """A request makes several storage calls: waiting the pool's 2 s for each made it time out."""
    store.put_org_config("org-a", {"window_size": 12})
    relay.sever()
    first, _ = _timed_failure(lambda: store.get_org_config("org-a"))
    assert first < FAST_SECONDS
    refused: list[float] = []
    prober = threading.Thread(target=lambda: _timed_failure(store.ping))
    prober.start()
    time.sleep(0.2)  # one call probes (it waits for a connection); every other fails at once
    for _ in range(5):
        elapsed, error = _timed_failure(lambda: store.get_org_config("org-a"))
        assert error.status_code == 503 and error.retry_after is not None
        refused.append(elapsed)
    prober.join()
    assert max(refused) < 0.5, refused
