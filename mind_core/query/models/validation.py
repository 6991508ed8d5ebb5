"""Pydantic's validation errors as one readable line: the wording of HTTP 400 answers, MCP
tool errors and the command line alike."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


# -- validation errors as one readable line -----------------------------------------------------
def _shown(value: Any) -> str:
    """A rejected value as a message quotes it: short, and as JSON would spell it."""
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "...")
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


# pydantic's error types for a value of the wrong type -> what the value must be
_EXPECTED_TYPES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _describe(error: Mapping[str, Any]) -> str:
    where = ".".join(str(part) for part in error["loc"])
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "inverted_range":
        return f"since {ctx['since']!r} is after until {ctx['until']!r}"
    if not where:
        if isinstance(value, bytes | bytearray):
            return "send the body as JSON (Content-Type: application/json)"
        if kind == "missing":
            return "a JSON object body is required"
        return "the body must be a JSON object"
    got = f" (got {_shown(value)})"
    if kind == "missing":
        return f"{where} is required"
    if kind == "extra_forbidden":
        return f"unknown parameter {where!r}"
    if kind == "out_of_range":
        return f"{where} must be between {ctx['low']} and {ctx['high']}{got}"
    if kind == "greater_than_equal":
        return f"{where} must be at least {ctx['ge']}{got}"
    if kind == "less_than_equal":
        return f"{where} must be at most {ctx['le']}{got}"
    if kind in ("string_too_long", "too_long") and isinstance(value, str):
        return f"{where} is longer than {ctx['max_length']} characters (got {len(value)})"
    if kind == "too_long":
        return f"{where} has more than {ctx['max_length']} items (got {len(value)})"
    if kind in ("string_too_short", "too_short"):
        return f"{where} must not be empty"
    if kind == "literal_error":
        return f"{where} must be one of {ctx['expected']}{got}"
    if kind in _EXPECTED_TYPES:
        return f"{where} must be {_EXPECTED_TYPES[kind]}{got}"
    if kind == "value_error":
        reason = str(ctx.get("error") or error["msg"])
        return f"{where} {reason}{got}" if reason.startswith("must") else reason
    return f"{where}: {error['msg']}"


def describe_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """Pydantic's error list as one line a person can act on, each error naming the parameter and
    its rule ("limit must be between 1 and 100 (got 0)"): the wording of HTTP 400 answers, MCP
    tool errors and the command line alike."""
    return "; ".join(dict.fromkeys(_describe(e) for e in errors))
