"""The ``reflexio`` command (also ``python -m reflexio``).

The CLI needs Typer and Rich, which the client-only install leaves out; this entry point says
how to get them instead of failing with an import error.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run the CLI, or explain which extra to install."""
    try:
        from reflexio.cli import main as cli_main
    except ImportError as exc:
        sys.stderr.write(
            f"the reflexio command needs the CLI extras ({exc.name} is missing): "
            "pip install 'reflexio[cli]' (or 'reflexio[server]' to run a server)\n"
        )
        raise SystemExit(1) from exc
    cli_main()


if __name__ == "__main__":
    main()
