"""What the installed hooks run: ``python -I -S <this file> <event>``.

Run as a file with ``-S``, Python loads neither ``site`` (the site-packages folders and their
``.pth`` files) nor ``runpy``: a few milliseconds of every prompt (``bench/hooks``). This file
then adds the folder that holds the ``reflexio`` package to the end of ``sys.path`` (after the
standard library, so nothing there can shadow it), which is all the hooks need: the standard
library and reflexio's own standard-library-only modules. The flush they start in the
background uses the SDK, so it runs with site-packages, as
``python -I -m reflexio.integrations.claude_code flush`` (which also works for every event).
"""

from __future__ import annotations

import sys

if not __package__:  # run as a file: the folder holding reflexio is four folders up from here
    import os

    sys.path.append(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    )

from reflexio.integrations.claude_code.hooks import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
