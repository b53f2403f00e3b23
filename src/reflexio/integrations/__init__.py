"""Reflexio where agents live: thin layers over the SDK and the service.

Each integration is an optional extra and imports its framework only when used:

* ``mcp_server`` (``reflexio[mcp]``): the MCP server, over stdio (``reflexio mcp``) and
  streamable HTTP (mounted by the API at ``/api/mcp``);
* ``claude_code``: Claude Code hooks (``reflexio integrations claude-code install``), standard
  library only, with a durable local outbox;
* ``langchain`` (``reflexio[langchain]``): a retriever over search and a callback handler that
  publishes each turn;
* ``openai_agents`` (``reflexio[openai-agents]``): run hooks that inject learnings and publish;
* ``gateway``: the one door they all go through (the SDK, or the service in process).
"""
