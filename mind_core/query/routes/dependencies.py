"""What the routes share: the query service of the app, the bearer token checks (the API's, and
the API docs' that also reads ``?token=``), the refusal of a scalar parameter given twice, and the
error answers an endpoint lists in the OpenAPI document."""

from __future__ import annotations

import hmac
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any, get_args, get_origin

from fastapi import Request
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from mind_core import limits
from mind_core.errors import InvalidInputError
from mind_core.query.models.service import ErrorResponse
from mind_core.query.service import QueryService

INVALID = "Invalid input: the one line names the parameter and its rule"
NO_MIND = "No mind for the workspace named (the message lists the minds there are)"
UNREADABLE = "The mind cannot be read: corrupt, not a mind, or vectors of another embedder's space"
TOO_LARGE = f"Request body larger than {limits.MAX_BODY_BYTES} bytes"
UNEXPECTED = "Unexpected error (details in the server log under error_id)"
UNAUTHORIZED = "A valid bearer token is required"
DOCS_TOKEN_PARAMETER = "token"  # /docs and /openapi.json only
READS_A_MIND = {400: INVALID, 404: NO_MIND, 409: UNREADABLE}
WITH_BODY = {**READS_A_MIND, 413: TOO_LARGE}


def error_responses(errors: dict[int, str]) -> dict[int | str, dict[str, Any]]:
    """The error answers an endpoint can give (``errors``, and 500), for its OpenAPI entry; the
    app's document adds 401 where the server has a token."""
    listed = {**errors, 500: UNEXPECTED}
    return {
        status: {"model": ErrorResponse, "description": description}
        for status, description in sorted(listed.items())
    }


async def query_service(request: Request) -> QueryService:
    """The app's query service (``create_app``)."""
    return request.app.state.service


def token_given(request: Request) -> bool:
    """Whether the request carries the server's bearer token (compared in constant time), or the
    server needs none."""
    token = request.app.state.bearer_token
    if not token:
        return True
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and _is_token(given.strip(), token)


def token_in_query(request: Request) -> bool:
    """Whether the query string's ``token`` is the server's token: how a browser, which sends no
    bearer header by itself, opens /docs and /openapi.json (they alone read it)."""
    token = request.app.state.bearer_token
    given = request.query_params.get(DOCS_TOKEN_PARAMETER)
    return bool(token) and given is not None and _is_token(given, token)


def _is_token(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


async def require_token(request: Request) -> None:
    """Every route but the public ones depends on this: with a token configured, a request
    without it is a 401."""
    if not token_given(request):
        raise HTTPException(401, "a valid bearer token is required", {"WWW-Authenticate": "Bearer"})


async def require_docs_token(request: Request) -> None:
    """/docs and /openapi.json: with a token configured, they need it too (the document names
    every route and field of the service), as a bearer token or as ``?token=`` (a browser)."""
    if not token_given(request) and not token_in_query(request):
        raise HTTPException(
            401,
            f"a valid bearer token is required (in a browser: {request.url.path}?{DOCS_TOKEN_PARAMETER}=TOKEN)",
            {"WWW-Authenticate": "Bearer"},
        )


def single_values(model: type[BaseModel]) -> Callable[[Request], Coroutine[Any, Any, None]]:
    """A dependency refusing a scalar parameter of ``model`` given twice (``?limit=5&limit=50``),
    which FastAPI would read as its last value; a list parameter is repeated by design
    (``?tags=a&tags=b``, OpenAPI's default form for a query array, which Swagger UI sends)."""
    lists = frozenset(name for name, info in model.model_fields.items() if _is_list(info.annotation))

    async def refuse_repeated_parameters(request: Request) -> None:
        names = Counter(name for name, _ in request.query_params.multi_items() if name not in lists)
        repeated = sorted(name for name, count in names.items() if count > 1)
        if repeated:
            raise InvalidInputError(f"parameter(s) given more than once: {', '.join(repeated)}")

    return refuse_repeated_parameters


def _is_list(annotation: Any) -> bool:
    return get_origin(annotation) is list or any(get_origin(a) is list for a in get_args(annotation))
