"""The query surfaces over ``mind_core.retrieval``: the HTTP service (``app`` with its
``routes``, ``guard``, ``error_answers`` and ``openapi``; ``http_server`` runs it on uvicorn,
``http_protocol`` its one extension of uvicorn; ``service`` answers for it), the MCP server
(``mcp`` over ``mcp_tools`` and ``mcp_arguments``) and the request/answer models they and ``mind
recall --json`` share (``models``)."""
