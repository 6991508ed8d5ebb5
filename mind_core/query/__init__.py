"""The query surfaces over ``mind_core.retrieval``: the HTTP service (``api``, ``http_server``,
``service``), the MCP server (``mcp``) and the request/answer models they and ``mind recall
--json`` share (``models``)."""
