"""The JSON every HTTP answer is: an answer model or plain data, errors as ``{"error": ...}``."""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError


class JSONAnswer(JSONResponse):
    """UTF-8 JSON of an answer model or plain data. An endpoint returns one, so a model is
    serialized once, by pydantic's own JSON encoder, in the endpoint's worker thread (a returned
    model would be validated again by FastAPI and encoded on the event loop); text UTF-8 cannot
    carry (a lone surrogate in stored content) is escaped."""

    def render(self, content: Any) -> bytes:
        try:
            if isinstance(content, BaseModel):
                return content.model_dump_json().encode("utf-8")
            return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except (UnicodeEncodeError, PydanticSerializationError):
            data = content.model_dump(mode="json") if isinstance(content, BaseModel) else content
            return json.dumps(data, separators=(",", ":")).encode("ascii")


def error_answer(status: int, message: str, headers: dict[str, str] | None = None) -> JSONAnswer:
    return JSONAnswer({"error": message}, status_code=status, headers=headers)
