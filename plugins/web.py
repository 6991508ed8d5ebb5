"""Web pages: saved HTML files (``.html``, ``.htm``, a folder of them), Internet Shortcut files
(``.url``: ``[InternetShortcut]`` / ``URL=...``, what a browser writes when a link is dragged out)
and a URL itself. One note item per page; its main text cut into blocks as plain text is
(``mind_harvest.plugins.plaintext.blocks``), one frame per block.

Main text: trafilatura (maintained; among the best in its documented evaluation) drops
navigation, footers, comments and boilerplate and keeps the article text, with the page's title,
author, site name and publication date. The date, when the page states one, is the frames' own
time; else a saved file lends its modification time (``dated_by: file``) and a fetched page has no
time (the harvest's, which recency does not count).

Fetching (``fetch``): httpx, redirects followed (at most 5), a connect timeout of 5 s, and
``FETCH_TIMEOUT_S`` both for each read and for the whole body of one attempt; the body is read as it streams and a page over
``MAX_PAGE_BYTES`` is refused (never held whole). A 429 or 5xx reply is retried with exponential
backoff and full jitter, waiting at least what ``Retry-After`` asks (capped): the retry policy the
embedding providers use too (``mind_core.http_retry``, which plugins reach through
``mind_core.harvest``); a server that cannot be reached is not retried. A page that still fails is a located error.
A URL source reaches the plugin as text (``mind_core.harvest.locations``); a URL given as a path
(``Path("https://host/a")`` keeps one slash) is read back as the URL. Its fingerprint (what makes
a re-harvest "unchanged") is the server's ``ETag`` or ``Last-Modified`` from a HEAD request, else
the SHA-256 of the page (``page_fingerprint``). Saved files are opened and walked through
``mind_core.harvest.source_files`` (regular files only, the read-whole size limit, links kept inside).
"""

from __future__ import annotations

import configparser
import hashlib
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mind_harvest.plugins._file_sources import (
    PLAUSIBLE_FOLDER,
    FileSource,
    head_starts,
    holds_at_top,
    source_hooks,
    visible_folders,
)
from mind_harvest.plugins.plaintext import blocks

from mind_core.harvest import (
    RetryableReply,
    RetryPolicy,
    epoch_to_iso,
    is_retryable,
    normalize_iso,
    retry_after_seconds,
    with_retries,
)
from mind_core.harvest.items import (
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    stable_key,
)
from mind_core.harvest.source_files import open_source_file

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
SHORTCUT_SUFFIX = ".url"
URL_PATH = re.compile(r"^(https?):/+(.+)$", re.I)
MAX_PAGE_BYTES = 5 * 2**20
SHORTCUT_BYTES = 65536  # an Internet Shortcut is a few lines
FETCH_TIMEOUT_S = 20.0
CONNECT_TIMEOUT_S = 5.0
MAX_REDIRECTS = 5
USER_AGENT = "mind-harvest (+https://github.com/mind-harvest)"


@dataclass(frozen=True)
class FetchPolicy:
    """How a page is fetched: attempts for a 429/5xx reply, the backoff, the limits."""

    attempts: int = 3
    initial_wait_s: float = 0.5
    max_wait_s: float = 10.0
    timeout_s: float = FETCH_TIMEOUT_S
    max_bytes: int = MAX_PAGE_BYTES
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.attempts, self.initial_wait_s, self.max_wait_s, self.sleep)


DEFAULT_FETCH = FetchPolicy()


class FetchError(Exception):
    """A page that could not be fetched, with the reason a harvest reports."""


def fetch(url: str, policy: FetchPolicy = DEFAULT_FETCH) -> tuple[bytes, str]:
    """The page's bytes and its final URL (after redirects); raises ``FetchError``."""
    body, final, _ = _request("GET", url, policy)
    return body, final


def _request(method: str, url: str, policy: FetchPolicy) -> tuple[bytes, str, dict[str, str]]:
    """One request (retried as the module says): body, final URL and headers (lower-case names)."""
    import httpx

    client = httpx.Client(
        timeout=httpx.Timeout(policy.timeout_s, connect=min(CONNECT_TIMEOUT_S, policy.timeout_s)),
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        headers={"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml"},
        trust_env=False,
    )

    def attempt() -> tuple[bytes, str, dict[str, str]]:
        with client.stream(method, url) as response:
            if is_retryable(response.status_code):
                raise RetryableReply(
                    response.status_code, retry_after_seconds(response.headers.get("Retry-After"))
                )
            if response.status_code >= 400:
                raise FetchError(f"HTTP {response.status_code}")
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > policy.max_bytes:
                raise FetchError(f"page of {int(declared):,} bytes is larger than {policy.max_bytes:,}")
            body = bytearray()
            began = time.monotonic()
            for piece in response.iter_bytes():
                body += piece
                if len(body) > policy.max_bytes:
                    raise FetchError(f"page larger than {policy.max_bytes:,} bytes")
                if time.monotonic() - began > policy.timeout_s:  # a server trickling bytes forever
                    raise FetchError(f"page took longer than {policy.timeout_s:g} s to arrive")
            return bytes(body), str(response.url), {k.lower(): v for k, v in response.headers.items()}

    try:
        with client:
            return with_retries(policy.retry, attempt)
    except RetryableReply as exc:
        raise FetchError(f"{exc} after {policy.attempts} attempts") from exc
    except httpx.TooManyRedirects as exc:
        raise FetchError(f"more than {MAX_REDIRECTS} redirects") from exc
    except httpx.TimeoutException as exc:
        raise FetchError(f"timed out after {policy.timeout_s:g} s") from exc
    except httpx.HTTPError as exc:
        raise FetchError(f"{type(exc).__name__}: {exc}") from exc


@dataclass
class Page:
    """What the extractor kept of one page."""

    text: str
    title: str | None
    author: str | None
    date: str | None  # ISO, UTC
    sitename: str | None
    url: str | None


def extract_page(html: bytes | str, url: str | None = None) -> Page | None:
    """The page's main text and metadata, or None when it has no main text."""
    import trafilatura

    document = trafilatura.bare_extraction(
        html,
        url=url,
        with_metadata=True,
        include_comments=False,
        date_extraction_params={"extensive_search": False, "original_date": True},
    )
    if document is None or not (document.text or "").strip():
        return None
    date = None
    if document.date:
        try:
            date = normalize_iso(document.date)
        except ValueError:
            date = None
    return Page(document.text, document.title, document.author, date, document.sitename, document.url or url)


def page_item(
    page: Page, key: str, container: str, fallback_title: str, lent_time: str | None
) -> HarvestItem:
    """The note item of a page: one message per block of its main text."""
    text = "\n\n".join(line.strip() for line in page.text.split("\n") if line.strip())
    timestamp = page.date or lent_time
    messages = []
    for index, block in enumerate(blocks(text)):
        metadata: dict[str, Any] = {"block_index": index}
        if page.date is None and lent_time is not None:
            metadata["dated_by"] = "file"
        messages.append(
            HarvestMessage(
                key=stable_key("web", key, index),
                text=block.text,
                author=page.author,
                timestamp=timestamp,
                metadata=metadata,
            )
        )
    return HarvestItem(
        key=stable_key("web", key),
        kind="note",
        title=page.title or fallback_title,
        container_key=container,
        messages=messages,
        metadata={
            "path": container,
            "url": page.url,
            "site": page.sitename,
            "author": page.author,
            "published": page.date,
        },
        timestamp=timestamp,
    )


def page_fingerprint(url: str, policy: FetchPolicy = DEFAULT_FETCH) -> str:
    """What says a page changed, cheapest first: the server's validator from a HEAD request
    (``ETag``, else ``Last-Modified``), else the SHA-256 of the page's bytes (a server that sends
    neither, or refuses HEAD). A validator ignores what changes on every request (a CSRF token, a
    clock in the footer), so an unchanged page is skipped without a download. A page that cannot
    be reached has no fingerprint worth keeping: the scan reports it and its failure is never
    recorded as a sync, so the next harvest tries again."""
    try:
        _, _, headers = _request("HEAD", url, replace(policy, attempts=1))
        if headers.get("etag"):
            return f"url:{url} etag:{headers['etag']}"
        if headers.get("last-modified"):
            return f"url:{url} last-modified:{headers['last-modified']}"
    except FetchError:
        pass  # a server that refuses HEAD (405, 501) may still serve the page
    try:
        body, _ = fetch(url, policy)
    except FetchError as exc:
        return f"url:{url} unreachable: {exc}"
    return f"url:{url} sha256:{hashlib.sha256(body).hexdigest()}"


def url_of(path: Path | str) -> str | None:
    """The URL a path stands for (``https:/host/a`` as a ``Path`` keeps it), else None."""
    match = URL_PATH.match(str(path).replace("\\", "/"))
    return f"{match.group(1).lower()}://{match.group(2)}" if match else None


def shortcut_url(file: Path) -> str | None:
    """The ``URL=`` of an Internet Shortcut file, or None."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        with open_source_file(file) as handle:
            parser.read_string(handle.read(SHORTCUT_BYTES).decode("utf-8", errors="replace"))
        url = parser.get("InternetShortcut", "URL", fallback=None)
    except (OSError, configparser.Error):
        return None
    return url.strip() if url and url_of(url.strip()) else None


def scan_url(url: str, container: str, where: str, policy: FetchPolicy) -> Iterator[ScanEvent]:
    try:
        body, final = fetch(url, policy)
    except FetchError as exc:
        yield HarvestError(where, f"cannot fetch {url}: {exc}")
        return
    page = extract_page(body, final)
    if page is None:
        yield HarvestError(where, f"no main text found at {final}")
        return
    yield page_item(page, url, container, url, None)


def scan_html_file(file: Path, relpath: str) -> Iterator[ScanEvent]:
    where = str(file)
    try:
        with open_source_file(file) as handle:
            modified = os.fstat(handle.fileno()).st_mtime
            body = handle.read()
    except OSError as exc:
        yield HarvestError(where, f"cannot read: {exc.strerror or exc}")
        return
    page = extract_page(body)
    if page is None:
        yield HarvestError(where, "no main text found in the page")
        return
    yield page_item(page, relpath, relpath, Path(relpath).stem, epoch_to_iso(modified))


def _page_folders(folder: Path, names: list[str]) -> list[str]:
    """Visible folders, not a saved page's ``NAME_files`` (its images and scripts)."""
    return [name for name in visible_folders(folder, names) if not name.endswith("_files")]


def _looks_like_html(file: Path) -> bool:
    openings = (b"<!DOCTYPE HTML", b"<HTML", b"<?XML", b"<HEAD", b"<META", b"<!--")
    return head_starts(file, openings, 2048, streamed=False, blanks=None)


def detect_confidence(path: Path | str) -> float:
    """Sure of a URL, a saved page that starts as HTML does and a shortcut with a URL; plausible for
    a folder with saved pages at its top."""
    if url_of(path):
        return 0.95
    path = Path(path)
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix in HTML_SUFFIXES:
            return 0.9 if _looks_like_html(path) else 0.5
        return 0.9 if suffix == SHORTCUT_SUFFIX and shortcut_url(path) else 0.0
    return PLAUSIBLE_FOLDER if path.is_dir() and holds_at_top(path, HTML_SUFFIXES) else 0.0


class WebSource(FileSource):
    """Saved web pages, Internet Shortcut files, or a URL."""

    kind = "web"
    display_name = "Web pages (saved HTML or URL)"
    suffixes = (*HTML_SUFFIXES, SHORTCUT_SUFFIX)
    confidence = staticmethod(detect_confidence)

    def __init__(self, policy: FetchPolicy = DEFAULT_FETCH) -> None:
        self.policy = policy

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        url = url_of(path)
        if url is not None:
            yield from scan_url(url, url, url, self.policy)
            return
        yield from super().scan(path)

    def scan_file(self, file: Path, relpath: str) -> Iterator[ScanEvent]:
        if file.suffix.lower() == SHORTCUT_SUFFIX:
            url = shortcut_url(file)
            if url is None:
                yield HarvestError(str(file), "no [InternetShortcut] URL= line")
                return
            yield from scan_url(url, relpath, str(file), self.policy)
            return
        yield from scan_html_file(file, relpath)

    def enter(self, folder: Path, names: list[str]) -> list[str]:
        return _page_folders(folder, names)

    def fingerprint(self, path: Path) -> str:
        url = url_of(path)
        if url is not None:
            return page_fingerprint(url, self.policy)
        return super().fingerprint(path)


register_sources, detect_sources = source_hooks(WebSource, detect_confidence)
