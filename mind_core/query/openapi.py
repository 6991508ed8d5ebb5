"""The OpenAPI document and its Swagger UI page.

FastAPI writes the document from the routes; three corrections make it say what the service
does. Swagger UI is served from the ``swagger_ui_bundle`` package's files, so /docs works without
network access. Only a server with a token names a security scheme (Swagger UI's Authorize button
and lock icons), so a server without one does not ask for it; such a server answers /docs and
/openapi.json only with the token, a bearer header or ``?token=`` (a browser's way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

from mind_core.query.guard import DOCS_ASSETS
from mind_core.query.json_answer import JSONAnswer
from mind_core.query.routes.dependencies import (
    DOCS_TOKEN_PARAMETER,
    UNAUTHORIZED,
    require_docs_token,
    require_token,
    token_in_query,
)

OPENAPI_URL = "/openapi.json"
BEARER_SCHEME = "bearerAuth"
BEARER_SECURITY_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "This server was started with a token: send it as a bearer token.",
}
ERROR_SCHEMA = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}

docs = APIRouter(include_in_schema=False, dependencies=[Depends(require_docs_token)])
public = APIRouter(include_in_schema=False)


@docs.get("/docs")
async def docs_page(request: Request) -> HTMLResponse:
    """Swagger UI; opened as ``/docs?token=...``, it fetches the document with the same token."""
    openapi_url = OPENAPI_URL
    if token_in_query(request):
        openapi_url += f"?{DOCS_TOKEN_PARAMETER}={quote(request.query_params[DOCS_TOKEN_PARAMETER], safe='')}"
    return get_swagger_ui_html(
        openapi_url=openapi_url,
        title="mind-harvest query service - Swagger UI",
        swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
        oauth2_redirect_url=None,
    )


@public.get("/")
async def root(request: Request) -> RedirectResponse:
    """To /docs, with the query string (``?token=``), which checks it."""
    query = request.url.query
    return RedirectResponse(f"/docs?{query}" if query else "/docs")


@docs.get(OPENAPI_URL)
async def openapi_json(request: Request) -> Response:
    """The document, encoded once: it never changes while the app runs."""
    app = request.app
    if getattr(app.state, "openapi_bytes", None) is None:
        app.state.openapi_bytes = JSONAnswer(app.openapi()).body
    return Response(app.state.openapi_bytes, media_type="application/json")


def serve_docs(app: FastAPI, routers: Sequence[APIRouter]) -> None:
    """/docs, its assets, / (to /docs) and, at /openapi.json, the corrected document of the
    app's ``routers`` (the app is made with ``openapi_url=None``: this route serves it). With a
    token, /docs and /openapi.json need it (``require_docs_token``); Swagger UI's own static files
    and the redirect stay open: they are the same on every server and tell nothing of this one."""
    app.include_router(docs)
    app.include_router(public)
    app.mount(DOCS_ASSETS, StaticFiles(directory=swagger_ui_path), name="swagger-ui-assets")
    guarded = _guarded_operations(routers) if app.state.bearer_token else set()
    app.openapi = lambda: openapi_document(app, guarded)  # type: ignore[method-assign]


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A query parameter's schema without the ``null`` alternative: a URL cannot carry a null,
    only leave the parameter out, and ``anyOf [string, null]`` reads as ``string | (string |
    null)`` in Swagger UI."""
    options = schema.get("anyOf")
    if not options or len(options) != 2 or {"type": "null"} not in options:
        return schema
    [kept] = [option for option in options if option != {"type": "null"}]
    outer = {key: value for key, value in schema.items() if key not in ("anyOf", "default")}
    return {**kept, **outer}


def _guarded_operations(routers: Sequence[APIRouter]) -> set[tuple[str, str]]:
    """(path, method) of the routes that depend on the token."""
    return {
        (route.path, method.lower())
        for router in routers
        for route in router.routes
        if isinstance(route, APIRoute)
        and any(dependency.call is require_token for dependency in route.dependant.dependencies)
        for method in route.methods
    }


def openapi_document(app: FastAPI, guarded: set[tuple[str, str]]) -> dict[str, Any]:
    """FastAPI's document of the routes, with three corrections: FastAPI documents invalid input
    as 422 with its own error shape, while this service answers it 400 with ``ErrorResponse``;
    a query parameter is never null (``_not_null``); and the ``guarded`` operations (those that
    need the token, when the server has one) name the bearer scheme and their 401 answer."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
            tags=app.openapi_tags,
        )
        for path, operations in schema["paths"].items():
            for method, operation in operations.items():
                responses = operation["responses"]
                responses.pop("422", None)
                if (path, method) in guarded:
                    responses["401"] = {"description": UNAUTHORIZED, "content": ERROR_SCHEMA}
                    operation["responses"] = dict(sorted(responses.items()))
                    operation["security"] = [{BEARER_SCHEME: []}]
                for parameter in operation.get("parameters", []):
                    parameter["schema"] = _not_null(parameter["schema"])
                    examples = parameter["schema"].get("examples")
                    if examples and "example" not in parameter:  # what Swagger UI's "Try it out" starts with
                        parameter["example"] = examples[0]
        components = schema.setdefault("components", {})
        for name in ("HTTPValidationError", "ValidationError"):
            components.get("schemas", {}).pop(name, None)
        if guarded:
            components["securitySchemes"] = {BEARER_SCHEME: BEARER_SECURITY_SCHEME}
        app.openapi_schema = schema
    return app.openapi_schema
