"""What the query surfaces accept and answer: pydantic models shared by HTTP, MCP and
``mind recall --json``, so the three validate alike and return the same JSON shape (the HTTP
service's OpenAPI document is generated from them). One module per concept."""
