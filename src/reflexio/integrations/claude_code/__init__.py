"""Claude Code hooks: learnings injected on every prompt, turns published when Claude stops.

``reflexio integrations claude-code install`` writes the hooks into Claude Code's settings;
``hooks`` holds what they run, ``transcript`` reads Claude Code's session files, ``outbox``
keeps what could not be sent yet, ``wire`` is the prompt hook's JSON and HTTP, ``install``
edits the settings file. Nothing here imports pydantic or httpx at start-up: the prompt hook
must start in milliseconds.
"""
