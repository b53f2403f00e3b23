"""Use cases every surface calls (HTTP, SDK server side, CLI local mode, workers).

Each module holds the use cases of one area as functions taking the process ``Core`` and the
caller's org id: ``retrieve`` (search), and the others added beside it.
"""
