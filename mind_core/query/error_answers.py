"""How the HTTP service answers errors: the app's exception handlers.

Every error is JSON (``{"error": ...}``) with the status the engine's error means: invalid input
400 with one readable line (pydantic's errors as ``describe_errors`` words them, the same line
the CLI and MCP give), no such mind or frame 404, a mind that cannot be read 409; an unknown path
404 and a wrong method 405 with the methods the path has.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import Scope

from mind_core.errors import FingerprintMismatchError, InvalidInputError, NotFoundError
from mind_core.query.json_answer import error_answer
from mind_core.query.models.validation import describe_errors
from mind_core.query.service import UnreadableMindError

# pydantic's error types of a number read from text: the URL's text is quoted as typed
# (``?limit=0`` reads "(got 0)", as the CLI and MCP, where it is a number, say it)
NUMERIC_ERRORS = frozenset(
    {"int_parsing", "int_type", "int_from_float", "float_parsing", "float_type", "out_of_range",
     "greater_than_equal", "less_than_equal"}
)
URL_PARTS = frozenset({"query", "path"})
BODY_NOT_READ = "There was an error parsing the body"  # FastAPI's words for a body it could not decode


class TypedText:
    """A value from the URL, quoted in an error as the user typed it."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def invalid_input_line(exc: RequestValidationError) -> str:
    """FastAPI's validation errors as the one line every surface gives: the parameter's name
    without FastAPI's location prefix (query, path, body)."""
    errors = []
    for error in exc.errors():
        part, *loc = error["loc"] or ("",)
        if error["type"] == "json_invalid":
            return f"the body is not valid JSON: {error.get('ctx', {}).get('error', error['msg'])}"
        if part in URL_PARTS and error["type"] in NUMERIC_ERRORS and isinstance(error.get("input"), str):
            error = {**error, "input": TypedText(error["input"])}
        errors.append({**error, "loc": tuple(loc)})
    return describe_errors(errors)


def body_not_read(exc: HTTPException) -> str:
    """What kept FastAPI from decoding a body, in our words."""
    cause = exc.__cause__
    if isinstance(cause, RecursionError):
        return "the body's JSON is nested too deeply"
    if isinstance(cause, UnicodeDecodeError):
        return "the body is not valid UTF-8"
    return "the body is not valid JSON"


def answer_errors_as_json(app: FastAPI) -> None:
    def allowed_methods(scope: Scope) -> str:
        allowed = [
            method
            for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
            if any(
                route.matches({**scope, "method": "GET" if method == "HEAD" else method})[0] is Match.FULL
                for route in app.router.routes
            )
        ]
        return ", ".join(allowed)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        headers = dict(exc.headers or {})
        message = exc.detail
        if exc.status_code == 404 and exc.detail == "Not Found":
            message = f"no such endpoint {request.url.path!r}; see /docs"
        if exc.status_code == 405:
            headers["Allow"] = allowed_methods(request.scope)
            message = f"{request.method} is not allowed on {request.url.path}"
        if exc.status_code == 400 and exc.detail == BODY_NOT_READ:
            message = body_not_read(exc)
        return error_answer(exc.status_code, message, headers)

    async def invalid_request(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return error_answer(400, invalid_input_line(exc))

    def answer(status: int) -> Callable[[Request, Exception], Coroutine[Any, Any, Response]]:
        async def handler(request: Request, exc: Exception) -> Response:
            return error_answer(status, str(exc))

        return handler

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(InvalidInputError, answer(400))
    app.add_exception_handler(NotFoundError, answer(404))
    app.add_exception_handler(FingerprintMismatchError, answer(409))
    app.add_exception_handler(UnreadableMindError, answer(409))
