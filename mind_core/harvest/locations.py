"""Where a source lives: a local path, or a web address that stays a web address.

``mind sources add https://example.com/notes`` registers the URL itself. Turned into a ``Path``
it would become a relative local path (``https:/example.com/notes``, one slash folded away) that
the harvest then finds missing. So the registry stores a URL as typed (scheme and host in lower
case), the plugins are handed it as text, and it is never "missing": whether it answers is the
scan's to report, as a located error.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit, urlunsplit

_URL = re.compile(r"^https?://[^/\s?#]+", re.I)


def source_url(location: str | Path) -> str | None:
    """``location`` as a URL when it is an http(s) address, with scheme and host in lower case
    (the same page is one registration however its host is typed); else None. A ``Path`` is never
    a URL: its ``//`` is already gone."""
    if not isinstance(location, str) or not _URL.match(location.strip()):
        return None
    parts = urlsplit(location.strip())
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, parts.fragment))


def plugin_location(stored: str) -> Path | str:
    """What a plugin's ``scan``, ``detect`` and ``fingerprint`` are handed for a registered
    location: the URL as text, else a ``Path``."""
    return source_url(stored) or Path(stored)


def location_exists(stored: str) -> bool:
    """Whether a registered location is there to be read: a URL always is (a server that does
    not answer is the scan's failure, not a missing source)."""
    return source_url(stored) is not None or Path(stored).exists()


def url_name(url: str) -> str:
    """What names a URL source: the last part of its path without extension, else its host
    (``https://example.com/blog/kestrel.html`` -> ``kestrel``, ``https://example.com/`` ->
    ``example.com``)."""
    parts = urlsplit(url)
    return PurePosixPath(parts.path).stem or parts.hostname or parts.netloc
