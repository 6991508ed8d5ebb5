"""Combined retrieval: "what do I know about X" across the workspace mind, the personal mind and,
when local memory is thin, external sources (spec §8, reference-behaviour §9).

Score scale. A memory result's ``score`` is what the local results are ordered by
(``SearchResult.score``: match times relevance, as a share of the most the profile gives, 0..1),
so the shown scores fall down the list. Its ``metadata.match_score`` is the fused lane score on
a 0..1 scale, 1.0 for the best match of both the keyword and the vector lane, at most 0.5 with
support from one lane alone (``SearchResult.match_score``). The spec's thresholds (3 results at
>= 0.7 for local coverage, 0.6 for a conflict) are compared against the match score. The original compared them with raw final scores (at most
~0.04), so its coverage was never sufficient and no conflict was ever flagged. An external
result's score is the source's own, clamped to 0..1 (the HTTP contract asks for 0..1).

External sources. Plugins provide them through the ``register_retrievers`` hook; the built-in
``HttpRetriever`` talks to any service that speaks this JSON contract::

    POST {url}/search   {"query": "...", "limit": 10}      (Authorization: Bearer <token>)
    200 -> {"results": [{"id": "doc-1", "title": "Project Status", "snippet": "...",
                         "score": 0.82, "type": "pdf", "url": "https://..."}]}

``snippet`` and ``score`` are required per result; ``id``, ``title``, ``type`` and ``url`` are
optional. A failing source never costs the local results: its error is reported instead.

Limit. ``limit`` is the number of results in the answer, across the minds it reads: each mind
is searched for ``limit`` candidates, and the merged list (``merged``) is cut to ``limit``; the
per-mind lists keep only what the answer holds.

Names. Every result names its ``workspace`` (the mind's name, ``personal`` for the personal
mind, None for an external source) and its ``source`` (the harvest source's registered name,
or the external source's name); ``attribution`` is the two with the title, as a person reads it.

Access. A recall reads only, unless asked to record access (``record_access_on_recall``: ``mind
recall --record-access``, ``mind serve --record-access``, ``mind mcp --record-access``): then the
frames of the answer are touched (access_count, last_accessed) in one short write transaction
per mind. Counting every recall as an access made the same query's scores drift from one recall
to the next (popularity is part of relevance). A mind opened read-only is touched through an
``access_writer`` the caller provides (the HTTP service's separate connection).
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mind_core.errors import InvalidInputError, MindError
from mind_core.limits import DEFAULT_RESULTS
from mind_core.recall import (
    PERSONAL,
    WORKSPACE,
    CombinedResult,
    CombinedRetrievalResult,
    RecallParameters,
)
from mind_core.search.filters import SourceFilter
from mind_core.search.results import SearchResult
from mind_core.search.scoring import borrowed_time, dated_by_file
from mind_core.search.snippets import make_snippet, own_text
from mind_core.store.db import Database
from mind_core.store.frames import Frame
from mind_core.store.home import DEFAULT_WORKSPACE, MindHome
from mind_core.timestamps import now_iso

if TYPE_CHECKING:
    from pathlib import Path

    import httpx

    from mind_core.mind import Mind

log = logging.getLogger(__name__)

LOCAL_COVERAGE_MIN_COUNT = 3
LOCAL_COVERAGE_SCORE_THRESHOLD = 0.7
CONFLICT_SCORE_THRESHOLD = 0.6
CONFLICT_TOP_N = 3
POSITIVE_STATUS = (
    "approved",
    "accepted",
    "selected",
    "chose",
    "chosen",
    "decided",
    "confirmed",
    "active",
    "completed",
    "launched",
    "enabled",
)
NEGATIVE_STATUS = (
    "rejected",
    "cancelled",
    "canceled",
    "postponed",
    "deprecated",
    "deferred",
    "suspended",
    "disabled",
    "abandoned",
    "declined",
    "revoked",
)
CONFLICT_NOTE_WORKSPACE_AFFIRMATIVE = (
    "Workspace memory contains affirmative language (approved/selected/active) while enterprise "
    "documents contain contradictory language (rejected/cancelled/deprecated). These sources may be "
    "out of sync."
)
CONFLICT_NOTE_EXTERNAL_AFFIRMATIVE = (
    "Enterprise documents contain affirmative language while workspace memory contains contradictory "
    "language. The enterprise source may be more current."
)

UNKNOWN_EXTERNAL_ERROR = "Unknown external error"
DEFAULT_EXTERNAL_NAME = "External"
EXTERNAL_TIMEOUT_SECONDS = 5.0
TOUCH_BUSY_TIMEOUT_MS = 1_000
EXTERNAL_URL_ENV = "MIND_HARVEST_EXTERNAL_URL"
EXTERNAL_TOKEN_ENV = "MIND_HARVEST_EXTERNAL_TOKEN"
EXTERNAL_NAME_ENV = "MIND_HARVEST_EXTERNAL_NAME"

AccessWriter = Callable[[str, Sequence[int]], None]


# -- provenance and memory results --------------------------------------------------------------
def frame_provenance(frame: Frame) -> dict[str, Any]:
    """Where a frame came from, in one shape for harvested and directly saved frames.

    Harvested frames carry ``metadata.provenance`` (source, plugin, conversation/note/thread,
    message key, original timestamp, file); saved ones have only their session and source column.
    ``event_time`` is the frame's created_at: the message's own time, normalized to UTC;
    ``dated_by`` says what gave it: ``message`` (its own), ``file`` (a note without a date of its
    own: the file's modification time; also ``dated_by_file``) or ``harvest`` (an item its source
    gave no time: when it was harvested). Only a message's own time earns recency.
    ``message_id`` is the message's id in its export, as the plugin read it (a mail's Message-ID,
    a ChatGPT message id); ``message_key`` the harvest ledger's key of it (for a mail or a note
    section a hash the engine made).
    """
    raw = frame.metadata.get("provenance")
    origin: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    read = _source_part(frame, "message")
    own_id = read.get("message_id")
    return {
        "source": origin.get("source") or frame.source,
        "plugin": origin.get("plugin"),
        "item_kind": origin.get("item_kind"),
        "container": origin.get("container") or frame.gop_id,
        "title": origin.get("title"),
        "message_id": own_id if isinstance(own_id, str) else None,
        "message_key": origin.get("message_key"),
        "role": origin.get("role"),
        "author": origin.get("author"),
        "path": origin.get("path"),
        "session": frame.gop_id,
        "event_time": frame.created_at,
        "original_timestamp": origin.get("timestamp") or frame.metadata.get("original_created_at"),
        "dated_by_file": dated_by_file(frame),
        "dated_by": borrowed_time(frame) or "message",
    }


def _source_part(frame: Frame, part: str) -> Mapping[str, Any]:
    """``item`` or ``message`` of what the plugin read about a frame (``metadata.source``)."""
    source = frame.metadata.get("source")
    value = source.get(part) if isinstance(source, Mapping) else None
    return value if isinstance(value, Mapping) else {}


# the item lists a recall result keeps: what the tag filter matches (``SourceFilter``)
RESULT_ITEM_LISTS = frozenset({"tags"})


def result_source_fields(frame: Frame) -> dict[str, Any]:
    """What a plugin read about a recalled frame, compact: the message's own fields, and its
    item's without the item's lists but its tags. The other lists gather what the item's other
    messages hold (a mail thread's message ids, participants and files; a note's links from all
    its sections), up to 200 entries each, copied into every result of the thread or note. A
    frame's whole metadata stays at ``GET /frames/{id}``."""
    if not isinstance(frame.metadata.get("source"), Mapping):
        return {}
    item = {
        key: value
        for key, value in _source_part(frame, "item").items()
        if not isinstance(value, list) or key in RESULT_ITEM_LISTS
    }
    return {"item": item, "message": dict(_source_part(frame, "message"))}


def memory_attribution(workspace: str, source: str, title: str | None) -> str:
    """``workspace/source: title``: the mind, the harvest source and the conversation, note or
    thread, as the recall table's ``from`` column shows them."""
    return f"{workspace}/{source}" + (f": {title}" if title else "")


def explained(result: SearchResult) -> dict[str, Any] | None:
    """A hit's ``explain`` with every part of its score: an answer shows only ``score`` (the
    order) and ``match_score`` (the match alone); the fused, relevance and final scores they are
    made of belong to the explanation."""
    if result.explain is None:
        return None
    parts = {"relevance_score": result.relevance_score, "final_score": result.final_score}
    return {**result.explain, "rrf_score": result.rrf_score, **parts}


def search_hit(result: SearchResult, query: str = "", snippet_chars: int | None = None) -> dict[str, Any]:
    """A search hit as the HTTP ``/search`` answer gives it (``SearchHit``); with
    ``snippet_chars``, the frame's text cut to a snippet around the query's words, as a recall's."""
    frame = result.frame.to_dict()
    provenance = frame_provenance(result.frame)
    if snippet_chars is not None:
        frame["content"] = make_snippet(own_text(result.frame.content, provenance), query, width=snippet_chars)
    return {
        "frame": frame,
        "score": result.score,
        "match_score": result.match_score,
        "confident": result.confident,
        "provenance": provenance,
        "explain": explained(result),
    }


def absolute_evidence(result: SearchResult) -> float:
    """How well a frame matches the question on scales that mean the same in every mind: the mean
    of its cosine similarity to the question (0 when the vector lane did not find it) and the share
    of the question's keywords it holds; 1.0 for a frame from the time a question asks only about
    (``in_asked_time``). A result's ``score`` is relative to its mind (the best candidate of a mind
    of unrelated notes scores 1.0 there), so minds are merged by this."""
    if result.in_asked_time:
        return 1.0
    return round(((result.similarity or 0.0) + result.keyword_share) / 2, 4)


def weigh_minds(*answers: list[CombinedResult]) -> None:
    """Make the scores of several minds' answers comparable before they are merged: each mind's
    scores are multiplied by the absolute evidence of its best-matching result, so a mind whose
    best candidate barely matches the question no longer places it above another mind's good
    match (each mind's own order is kept; ``metadata["mind_weight"]`` says by how much)."""
    if sum(1 for answer in answers if answer) < 2:
        return
    for answer in answers:
        weight = max((r.metadata.get("evidence", 0.0) for r in answer), default=0.0)
        for result in answer:
            result.score = round(result.score * weight, 4)
            result.metadata["mind_weight"] = weight
            if result.explain is not None:
                result.explain.update(score=result.score, mind_weight=weight)


def map_memory_result(result: SearchResult, workspace: str) -> CombinedResult:
    """A search hit of the mind named ``workspace`` as a recall result."""
    frame = result.frame
    provenance = frame_provenance(frame)
    return CombinedResult(
        content=frame.content,
        workspace=workspace,
        source=provenance["source"],
        attribution=memory_attribution(workspace, provenance["source"], provenance["title"]),
        score=result.score,
        metadata={
            "match_score": result.match_score,
            "confident": result.confident,
            "evidence": absolute_evidence(result),
            "frame_id": frame.id,
            "frame_type": frame.frame_type,
            "importance": frame.importance,
            "created_at": frame.created_at,
            "access_count": frame.access_count,
            "provenance": provenance,
            "source_fields": result_source_fields(frame),
        },
        explain=explained(result),
    )


def record_access(db: Database, frame_ids: Sequence[int]) -> int:
    """Touch recalled frames in one short write transaction; returns the rows touched.

    A recall must not hang behind a long write (a harvest batch), so the lock is awaited for
    at most TOUCH_BUSY_TIMEOUT_MS; a busy mind skips the touch (only popularity is lost).
    """
    ids = sorted({int(i) for i in frame_ids})
    if not ids:
        return 0
    previous = db.scalar("PRAGMA busy_timeout")
    db.execute(f"PRAGMA busy_timeout = {TOUCH_BUSY_TIMEOUT_MS}")
    try:
        with db.transaction():
            marks = ",".join("?" for _ in ids)
            cursor = db.execute(
                "UPDATE memory_frames SET access_count = access_count + 1, last_accessed = ? "
                f"WHERE id IN ({marks})",
                [now_iso(), *ids],
            )
            return cursor.rowcount
    except db.errors.OperationalError as exc:
        log.warning("recall could not record access on %s (%s); skipped", db.path, exc)
        return 0
    finally:
        db.execute(f"PRAGMA busy_timeout = {int(previous)}")


# -- external sources ---------------------------------------------------------------------------
class ExternalSourceError(MindError):
    """An external source failed (HTTP error, timeout, malformed answer)."""


@dataclass
class ExternalDocument:
    snippet: str
    score: float
    id: str | None = None
    title: str | None = None
    type: str | None = None
    url: str | None = None


@runtime_checkable
class ExternalRetriever(Protocol):
    """What a ``register_retrievers`` plugin registers: a name and a search method.

    ``search`` returns ExternalDocument objects or mappings in the HTTP contract's result shape;
    it may raise any Exception, which is reported as the source's error.
    """

    name: str

    def search(self, query: str, limit: int) -> Iterable[ExternalDocument | Mapping[str, Any]]: ...


def format_external_attribution(name: str, title: str | None, document_type: str | None = None) -> str:
    """``[NAME: type: title]`` or ``[NAME: title]``, the original's KVARK format for any source."""
    parts = [name] + [p for p in (document_type, title or "Untitled") if p]
    return "[" + ": ".join(parts) + "]"


def _optional_text(entry: Mapping[str, Any], key: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ValueError(f"'{key}' must be a string")
    return value


def parse_external_document(entry: ExternalDocument | Mapping[str, Any]) -> ExternalDocument:
    """Validate one result; raises ValueError naming the field at fault."""
    if isinstance(entry, ExternalDocument):
        entry = entry.__dict__
    if not isinstance(entry, Mapping):
        raise ValueError(f"a result must be an object, not {type(entry).__name__}")
    snippet = entry.get("snippet", entry.get("content"))
    if not isinstance(snippet, str):
        raise ValueError("'snippet' must be a string")
    score = entry.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise ValueError("'score' must be a finite number")
    return ExternalDocument(
        snippet=snippet,
        score=min(1.0, max(0.0, float(score))),
        id=_optional_text(entry, "id"),
        title=_optional_text(entry, "title"),
        type=_optional_text(entry, "type"),
        url=_optional_text(entry, "url"),
    )


def map_external_results(
    name: str, entries: Iterable[ExternalDocument | Mapping[str, Any]]
) -> list[CombinedResult]:
    """Valid results become CombinedResults; an invalid one is skipped with a located warning."""
    results = []
    for index, entry in enumerate(entries):
        try:
            doc = parse_external_document(entry)
        except ValueError as exc:
            log.warning("external source %s: result #%d skipped: %s", name, index, exc)
            continue
        results.append(
            CombinedResult(
                content=doc.snippet,
                workspace=None,
                source=name,
                attribution=format_external_attribution(name, doc.title, doc.type),
                score=doc.score,
                metadata={
                    "retriever": name,
                    "document_id": doc.id,
                    "document_type": doc.type,
                    "title": doc.title,
                    "url": doc.url,
                    "provenance": {"source": name, "document_id": doc.id, "title": doc.title, "url": doc.url},
                },
            )
        )
    return results


class HttpRetriever:
    """An external source over HTTP: ``POST {url}/search`` with the JSON contract above."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        name: str = DEFAULT_EXTERNAL_NAME,
        timeout: float = EXTERNAL_TIMEOUT_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not isinstance(url, str) or not re.match(r"^https?://", url):
            raise InvalidInputError(f"external source URL must start with http:// or https://, got {url!r}")
        self.url = url.rstrip("/")
        self.name = name
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        import httpx  # here, not at the top: most recalls have no external source to call

        self._client = httpx.Client(headers=headers, timeout=timeout, transport=transport)

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        import httpx

        endpoint = f"{self.url}/search"
        try:
            response = self._client.post(endpoint, json={"query": query, "limit": limit})
        except httpx.TimeoutException as exc:
            raise ExternalSourceError(f"{endpoint} timed out after {self.timeout:g}s") from exc
        except httpx.HTTPError as exc:
            raise ExternalSourceError(f"{endpoint} unreachable: {exc}") from exc
        if response.status_code != 200:
            raise ExternalSourceError(f"{endpoint} answered HTTP {response.status_code}")
        try:
            body = response.json()
        except ValueError as exc:
            raise ExternalSourceError(f"{endpoint} answered invalid JSON") from exc
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list):
            raise ExternalSourceError(f"{endpoint} answered JSON without a 'results' list")
        return results

    def close(self) -> None:
        self._client.close()


def configured_retrievers(
    url: str | None = None,
    token: str | None = None,
    name: str | None = None,
    env: Mapping[str, str] | None = None,
) -> list[ExternalRetriever]:
    """Plugin retrievers (``register_retrievers``) plus the HTTP client when a URL is configured
    (argument, else $MIND_HARVEST_EXTERNAL_URL; the token only from the argument or
    $MIND_HARVEST_EXTERNAL_TOKEN, so it never has to appear on a command line)."""
    from mind_core.plugins import get_retrievers

    env = os.environ if env is None else env
    url = url or env.get(EXTERNAL_URL_ENV)
    token = token or env.get(EXTERNAL_TOKEN_ENV)
    name = name or env.get(EXTERNAL_NAME_ENV)

    retrievers: list[ExternalRetriever] = []
    for retriever in get_retrievers():
        if isinstance(retriever, ExternalRetriever):
            retrievers.append(retriever)
        else:
            log.warning(
                "ignoring registered retriever %r: it needs a name and search(query, limit)", retriever
            )
    if url:
        retrievers.append(HttpRetriever(url, token, name=name or DEFAULT_EXTERNAL_NAME))
    return retrievers


# -- coverage and conflicts ---------------------------------------------------------------------
def match_of(result: CombinedResult) -> float:
    """The lanes' agreement of a memory result; an external result's own score."""
    return float(result.metadata.get("match_score", result.score))


def has_sufficient_local_coverage(results: Sequence[CombinedResult]) -> bool:
    """At least LOCAL_COVERAGE_MIN_COUNT memories at LOCAL_COVERAGE_SCORE_THRESHOLD or more that
    also match well (``confident``): the lanes' agreement is relative to the mind (the best of
    poor candidates is 1.0 in its lane), so a question the mind knows nothing about, whose
    stems happen to match, is no coverage and the external source is asked."""
    strong = [
        r for r in results if match_of(r) >= LOCAL_COVERAGE_SCORE_THRESHOLD and r.metadata.get("confident")
    ]
    return len(strong) >= LOCAL_COVERAGE_MIN_COUNT


def should_query_external(
    retrievers: Sequence[ExternalRetriever], scope: str, local: Sequence[CombinedResult]
) -> bool:
    if not retrievers or scope != "all":
        return False
    return not has_sufficient_local_coverage(local)


def extract_polarity(texts: Sequence[str]) -> str:
    """positive, negative or neutral: substring tests over the joined texts, as the original."""
    joined = " ".join(texts)
    positive = any(word in joined for word in POSITIVE_STATUS)
    negative = any(word in joined for word in NEGATIVE_STATUS)
    if positive and not negative:
        return "positive"
    if negative and not positive:
        return "negative"
    return "neutral"


def detect_conflict(workspace: Sequence[CombinedResult], external: Sequence[CombinedResult]) -> str | None:
    strong_ws = [r for r in workspace if match_of(r) >= CONFLICT_SCORE_THRESHOLD]
    strong_ext = [r for r in external if match_of(r) >= CONFLICT_SCORE_THRESHOLD]
    if not strong_ws or not strong_ext:
        return None
    ws = extract_polarity([r.content.lower() for r in strong_ws[:CONFLICT_TOP_N]])
    ext = extract_polarity([r.content.lower() for r in strong_ext[:CONFLICT_TOP_N]])
    if ws == "positive" and ext == "negative":
        return CONFLICT_NOTE_WORKSPACE_AFFIRMATIVE
    if ws == "negative" and ext == "positive":
        return CONFLICT_NOTE_EXTERNAL_AFFIRMATIVE
    return None


# -- the engine -----------------------------------------------------------------------------------
def recall_mind_paths(
    home: MindHome, workspace: str | None, default_workspace: str, scope: str
) -> tuple[str, Path | None, Path | None]:
    """Which minds a recall reads: the workspace's name and the paths of the workspace's mind and
    of the personal mind (None: not read). With ``workspace`` personal the personal mind is the
    workspace's, so ``scope`` workspace reads it too. A mind that does not exist is skipped,
    unless the request names a workspace other than the surface's default (``MindHome.missing_mind``)."""
    name = workspace or default_workspace
    personal = home.personal_path if home.personal_path.is_file() else None
    if name == PERSONAL:
        return (name, personal, None) if scope == WORKSPACE else (name, None, personal)
    workspace_path = None
    if scope != PERSONAL:
        path = home.workspace_path(name)
        if path.is_file():
            workspace_path = path
        elif name != default_workspace:
            raise home.missing_mind(name)
    return name, workspace_path, personal if scope != WORKSPACE else None


class CombinedRetrieval:
    """Workspace + personal memory, and external sources when local coverage is insufficient.
    ``workspace_name`` is the name the workspace mind's results carry."""

    def __init__(
        self,
        workspace: Mind | None = None,
        personal: Mind | None = None,
        retrievers: Sequence[ExternalRetriever] = (),
        *,
        workspace_name: str = DEFAULT_WORKSPACE,
        record_access_on_recall: bool = False,
        access_writer: AccessWriter | None = None,
    ) -> None:
        self.workspace = workspace
        self.personal = personal
        self.retrievers = list(retrievers)
        self.workspace_name = workspace_name
        self.record_access_on_recall = record_access_on_recall
        self.access_writer = access_writer

    def search(
        self,
        query: str,
        limit: int = DEFAULT_RESULTS,
        profile: str = "balanced",
        scope: str = "all",
        turn_id: str | None = None,
        *,
        since: str | None = None,
        until: str | None = None,
        explain: bool = False,
        source: SourceFilter | None = None,
        as_of: str | None = None,
    ) -> CombinedRetrievalResult:
        """``recall`` for plain arguments (checked by ``RecallParameters``)."""
        parameters = RecallParameters(
            query,
            limit,
            profile,
            scope,
            since,
            until,
            explain,
            source if source is not None else SourceFilter(),
            as_of,
        )
        return self.recall(parameters, turn_id)

    def recall(self, request: RecallParameters, turn_id: str | None = None) -> CombinedRetrievalResult:
        """``request.source`` narrows the minds' results to frames whose sources match (external
        sources know nothing of it and are asked unchanged); ``as_of`` recalls as of that instant
        (frames up to it, recency from it; see ``HybridSearch.search``)."""
        query, limit, scope = request.query, request.limit, request.scope
        log.debug("recall turn=%s scope=%s query=%r", turn_id, scope, query[:80])
        options = {
            "limit": limit,
            "profile": request.profile,
            "since": request.since,
            "until": request.until,
            "explain": request.explain,
            "source": request.source,
            "as_of": request.as_of,
        }
        searched = [
            mind
            for mind, kept in ((self.workspace, scope != PERSONAL), (self.personal, scope != WORKSPACE))
            if kept and mind is not None
        ]
        # A time one mind holds memories near is the question's time for every mind searched: a
        # mind without memories then must not answer "what happened in June 1996" from its other
        # words while the other mind's mails of that June wait below.
        if len(searched) > 1 and any(mind.search.names_a_time_near(query, request.as_of) for mind in searched):
            options["keep_far_window"] = True
        workspace_results = (
            self._search_mind(self.workspace, self.workspace_name, query, options)
            if scope != PERSONAL
            else []
        )
        personal_results = (
            self._search_mind(self.personal, PERSONAL, query, options) if scope != WORKSPACE else []
        )
        weigh_minds(workspace_results, personal_results)
        result = CombinedRetrievalResult(
            query=query,
            workspace_results=workspace_results,
            personal_results=personal_results,
            external_available=bool(self.retrievers),
        )
        if should_query_external(self.retrievers, scope, workspace_results + personal_results):
            self._ask_external(result, query, limit)
        else:
            result.external_skipped = result.external_available
        result.keep_first(limit)
        self._record_access(self.workspace, result.workspace_results)
        self._record_access(self.personal, result.personal_results)
        return result

    def _ask_external(self, result: CombinedRetrievalResult, query: str, limit: int) -> None:
        """External results (the best ``limit`` of all sources), their errors and the conflict
        note, judged on every local result found (before the answer is cut to ``limit``)."""
        errors = []
        for retriever in self.retrievers:
            try:
                found = map_external_results(retriever.name, retriever.search(query, limit))
            except Exception as exc:  # a source's failure must never cost the local results
                log.warning("external source %s failed: %s", retriever.name, exc)
                errors.append(f"{retriever.name}: {str(exc) or UNKNOWN_EXTERNAL_ERROR}")
                continue
            result.external_results.extend(found)
        result.external_results.sort(key=lambda r: r.score, reverse=True)
        del result.external_results[limit:]
        result.external_error = "; ".join(errors) or None
        note = detect_conflict(result.workspace_results, result.external_results)
        result.has_conflict = note is not None
        result.conflict_note = note

    @staticmethod
    def _search_mind(
        mind: Mind | None, name: str, query: str, options: dict[str, Any]
    ) -> list[CombinedResult]:
        if mind is None:
            return []
        return [map_memory_result(r, name) for r in mind.search.search(query, **options)]

    def _record_access(self, mind: Mind | None, answered: Sequence[CombinedResult]) -> None:
        """Touch the frames of the answer, when this recall records access."""
        if mind is None or not answered or not self.record_access_on_recall:
            return
        ids = [r.metadata["frame_id"] for r in answered]
        if not mind.db.readonly:
            record_access(mind.db, ids)
        elif self.access_writer is not None:
            self.access_writer(mind.path, ids)
