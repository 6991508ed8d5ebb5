"""File names as text: stored losslessly, shown readably, never a crash.

On Linux a file name is bytes; Python hands out names that are not valid UTF-8 (``b"caf\\xe9.md"``)
as ``str`` with surrogate escapes (``"caf\\udce9.md"``), which SQLite, Parquet string columns,
JSON encoders and terminals all refuse. Plugins keep the surrogate-escaped ``str`` to open files
and convert at the boundary: ``stored_text`` is what goes into keys, metadata and errors (a valid
name is unchanged, so the keys of existing items never move; each undecodable byte becomes
``\\xNN``), ``display_text`` is what a person reads (U+FFFD for each undecodable byte).
"""

from __future__ import annotations

import os


def stored_text(value: str | os.PathLike[str]) -> str:
    """A name with undecodable bytes as ``\\xNN`` (other lone surrogates as ``\\udXXX``); else itself."""
    text = os.fspath(value)
    if is_clean(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte (from a JSON "\ud800")
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def display_text(value: str | os.PathLike[str]) -> str:
    """A name as a person reads it: each undecodable byte or lone surrogate shown as U+FFFD."""
    text = os.fspath(value)
    if is_clean(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def is_clean(value: str) -> bool:
    """True when ``value`` can be stored as is (it holds no surrogate)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
