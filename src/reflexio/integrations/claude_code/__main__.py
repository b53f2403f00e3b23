"""``python -I -m reflexio.integrations.claude_code <event>``: what the installed hooks run."""

from __future__ import annotations

import sys

from reflexio.integrations.claude_code.hooks import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
