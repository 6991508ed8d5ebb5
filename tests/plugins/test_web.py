"""Web pages: saved HTML, shortcut files and URLs fetched from a loopback server the test runs."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from mind_harvest.plugins.web import FetchError, FetchPolicy, WebSource, fetch, page_fingerprint, url_of

from mind_core import plugins
from mind_core.cli import EXIT_OK, main
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.harvest.stores import HarvestSourceStore
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing.message_exports import article_html

PARAGRAPHS = [
    "We went to Lisbon in May and ate pastel de nata every single day of the week.",
    "The tram 28 climbs the hills of Alfama slowly, full of tourists and locals alike.",
]
ARTICLE = article_html("Trip notes", PARAGRAPHS, author="Jane Roe", published="2022-09-14").encode()


class Pages(BaseHTTPRequestHandler):
    hits: dict[str, int] = {}
    served = ARTICLE  # what /served answers: a test changes it to change the page

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's name); answered for /tagged only
        Pages.hits[f"HEAD {self.path}"] = Pages.hits.get(f"HEAD {self.path}", 0) + 1
        if self.path == "/tagged":
            self.reply(200, b"", {"ETag": '"v1"'})
        else:
            self.reply(405, b"")

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        hits = Pages.hits[self.path] = Pages.hits.get(self.path, 0) + 1
        if self.path == "/article":
            self.reply(200, ARTICLE)
        elif self.path == "/served":
            self.reply(200, Pages.served)
        elif self.path == "/moved":
            self.send_response(301)
            self.send_header("Location", "/article")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/busy" and hits < 3:
            self.reply(503, b"busy", {"Retry-After": "1"})
        elif self.path == "/busy":
            self.reply(200, ARTICLE)
        elif self.path == "/always-busy":
            self.reply(503, b"busy")
        elif self.path == "/huge":
            self.reply(200, b"<html><body>" + b"<p>word</p>" * 20_000 + b"</body></html>")
        else:
            self.reply(404, b"not found")

    def reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Pages.hits, Pages.served = {}, ARTICLE
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def no_sleep(waits: list[float]) -> FetchPolicy:
    return FetchPolicy(attempts=3, initial_wait_s=0.01, max_wait_s=5.0, timeout_s=5.0, sleep=waits.append)


def scan(source: WebSource, path: Path | str) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(source.scan(Path(path)))
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def test_a_url_is_fetched_and_its_main_text_kept_without_the_navigation(server: str) -> None:
    url = f"{server}/moved"
    assert url_of(Path(url)) == url  # a URL kept as a Path reads back
    assert plugins.detect_source(Path(url)).kind == "web"
    items, errors = scan(WebSource(no_sleep([])), url)
    assert errors == []
    item = items[0]
    text = "\n".join(m.text for m in item.messages)
    assert all(paragraph in text for paragraph in PARAGRAPHS)
    assert "Archive" not in text and "newsletter" not in text
    assert item.metadata["url"] == f"{server}/article" and item.metadata["author"] == "Jane Roe"
    assert {m.timestamp for m in item.messages} == {"2022-09-14T00:00:00.000Z"}
    assert {m.author for m in item.messages} == {"Jane Roe"}


def test_a_busy_server_is_retried_waiting_what_retry_after_asks(server: str) -> None:
    waits: list[float] = []
    body, final = fetch(f"{server}/busy", no_sleep(waits))
    assert body == ARTICLE and final.endswith("/busy")
    assert Pages.hits["/busy"] == 3 and waits == [1.0, 1.0]
    with pytest.raises(FetchError, match="HTTP 503 after 3 attempts"):
        fetch(f"{server}/always-busy", no_sleep([]))
    assert Pages.hits["/always-busy"] == 3


def test_limits_and_failures_are_located_errors(server: str) -> None:
    small = FetchPolicy(attempts=1, max_bytes=10_000, timeout_s=5.0, sleep=lambda _: None)
    with pytest.raises(FetchError, match="larger than 10,000"):
        fetch(f"{server}/huge", small)
    with pytest.raises(FetchError, match="HTTP 404"):
        fetch(f"{server}/nothing", small)
    assert Pages.hits["/nothing"] == 1  # a 404 is not retried
    items, errors = scan(WebSource(small), f"{server}/nothing")
    assert items == [] and "cannot fetch" in errors[0].reason


def test_saved_pages_and_shortcuts_in_a_folder(tmp_path: Path, server: str) -> None:
    saved = tmp_path / "Trip notes.html"
    saved.write_bytes(article_html("Trip notes", PARAGRAPHS).encode())  # no date: the file's time
    os.utime(saved, (1_650_000_000, 1_650_000_000))
    (tmp_path / "Trip notes_files").mkdir()  # what a browser saves beside the page
    (tmp_path / "Trip notes_files" / "frame.html").write_text("<html><body>ad</body></html>")
    (tmp_path / "bookmark.url").write_text(f"[InternetShortcut]\nURL={server}/article\n")
    assert plugins.detect_source(saved).kind == "web"
    assert plugins.detect_source(tmp_path / "bookmark.url").kind == "web"
    items, errors = scan(WebSource(no_sleep([])), tmp_path)
    assert errors == []
    assert [i.metadata["path"] for i in items] == ["Trip notes.html", "bookmark.url"]
    from_file = items[0].messages[0]
    assert from_file.timestamp == "2022-04-15T05:20:00.000Z" and from_file.metadata["dated_by"] == "file"
    assert items[1].metadata["url"] == f"{server}/article"


def test_a_url_source_stays_a_url_and_is_harvested_and_recalled(tmp_path: Path, server: str, capsys) -> None:
    home = str(tmp_path / "home")
    url = f"{server}/served"
    assert main(["sources", "add", url, "--home", home, "--embedder", "mock"]) == EXIT_OK
    with Mind.open(MindHome(tmp_path / "home").workspace_path("default")) as mind:
        [source] = HarvestSourceStore(mind.db).get_all()
    assert (source.kind, source.source_path, source.source) == ("web", url, "served")
    capsys.readouterr()
    assert main(["harvest", "--home", home, "--embedder", "mock", "--json"]) == EXIT_OK
    [report] = json.loads(capsys.readouterr().out)
    assert report["status"] == "ok" and report["imported"]["frames_new"] >= 1
    assert main(["recall", "pastel de nata", "--home", home, "--embedder", "mock", "--json"]) == EXIT_OK
    assert "pastel de nata every single day" in capsys.readouterr().out
    assert main(["harvest", "--home", home, "--embedder", "mock", "--json"]) == EXIT_OK
    assert [r["status"] for r in json.loads(capsys.readouterr().out)] == ["skipped"]  # same page hash
    Pages.served = article_html(
        "Trip notes", [*PARAGRAPHS, "Back home we baked bifanas in the garden."]
    ).encode()
    assert main(["harvest", "--home", home, "--embedder", "mock", "--json"]) == EXIT_OK
    [report] = json.loads(capsys.readouterr().out)
    assert report["status"] == "ok" and not report["skipped"]
    assert main(["recall", "bifanas", "--home", home, "--embedder", "mock", "--json"]) == EXIT_OK
    assert "baked bifanas" in capsys.readouterr().out


def test_a_url_fingerprint_is_the_server_validator_else_the_page_hash(server: str) -> None:
    policy = no_sleep([])
    assert page_fingerprint(f"{server}/tagged", policy) == f'url:{server}/tagged etag:"v1"'
    assert "/tagged" not in Pages.hits  # a validator spares the download
    hashed = page_fingerprint(f"{server}/article", policy)  # HEAD refused: the page's bytes
    assert hashed == f"url:{server}/article sha256:{hashlib.sha256(ARTICLE).hexdigest()}"
    assert Pages.hits["HEAD /article"] == 1 and Pages.hits["/article"] == 1
    assert page_fingerprint(f"{server}/nothing", policy).startswith(f"url:{server}/nothing unreachable")


def test_a_fifo_named_like_a_shortcut_is_named_and_the_saved_pages_kept(tmp_path: Path) -> None:
    (tmp_path / "trip.html").write_bytes(ARTICLE)
    os.mkfifo(tmp_path / "bookmark.url")
    items, errors = scan(WebSource(no_sleep([])), tmp_path)
    assert [i.metadata["path"] for i in items] == ["trip.html"]
    assert [(e.path, e.reason) for e in errors] == [
        (str(tmp_path / "bookmark.url"), "a named pipe (FIFO), not a regular file; skipped")
    ]
