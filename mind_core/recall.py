"""What a recall is asked and what it answers, in the engine's own types.

``RecallParameters`` is the one request ``CombinedRetrieval.recall`` takes: the surfaces (HTTP,
MCP, ``mind recall``) validate their own pydantic models and convert them into it, so the engine
never imports a surface. It checks the engine's invariants itself (a Python caller has no
surface in front of it), each broken one an InvalidInputError with one readable line.
``CombinedRetrievalResult`` is the answer, which the surfaces shape into their JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mind_core.errors import InvalidInputError
from mind_core.limits import DEFAULT_RESULTS, MAX_QUERY_CHARS, MAX_RESULTS
from mind_core.search.filters import SourceFilter
from mind_core.search.scoring import SCORING_PROFILES
from mind_core.store.db import well_formed
from mind_core.store.frames import time_bound

WORKSPACE, PERSONAL = "workspace", "personal"
CURRENT = "current"  # the workspace the surface serves: read as ``workspace``
SCOPES = ("all", PERSONAL, WORKSPACE, CURRENT)


@dataclass(frozen=True)
class RecallParameters:
    """One recall: the query, which minds (``scope``), how many results across them, the
    relevance profile, the event-time window, the source filter and the instant to recall as of."""

    query: str
    limit: int = DEFAULT_RESULTS
    profile: str = "balanced"
    scope: str = "all"
    since: str | None = None
    until: str | None = None
    explain: bool = False
    source: SourceFilter = field(default_factory=SourceFilter)
    as_of: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.query, str) or not self.query.strip():
            raise InvalidInputError("query: must be a text that is not blank")
        if len(self.query) > MAX_QUERY_CHARS:
            raise InvalidInputError(f"query: must be at most {MAX_QUERY_CHARS} characters")
        object.__setattr__(self, "query", well_formed(self.query))
        if self.scope not in SCOPES:
            raise InvalidInputError(f"scope: must be one of {', '.join(SCOPES)} (got {self.scope!r})")
        if self.scope == CURRENT:
            object.__setattr__(self, "scope", WORKSPACE)
        if self.profile not in SCORING_PROFILES:
            raise InvalidInputError(
                f"profile: must be one of {', '.join(SCORING_PROFILES)} (got {self.profile!r})"
            )
        if not isinstance(self.limit, int) or isinstance(self.limit, bool) or not 1 <= self.limit <= MAX_RESULTS:
            raise InvalidInputError(f"limit: must be between 1 and {MAX_RESULTS} (got {self.limit!r})")
        for name in ("since", "until", "as_of"):
            value = getattr(self, name)
            if value is not None:
                time_bound(value, end=name == "until")
        if self.since is not None and self.until is not None:
            if time_bound(self.since, end=False) > time_bound(self.until, end=True):
                raise InvalidInputError(f"since {self.since} is after until {self.until}")


# -- the answer ---------------------------------------------------------------------------------
@dataclass
class CombinedResult:
    """One recalled item: ``workspace`` is the mind it came from (``personal`` for the personal
    mind; None for an external source), ``source`` the harvest source (or external source) name."""

    content: str
    workspace: str | None
    source: str
    attribution: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)
    explain: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "content": self.content,
            "workspace": self.workspace,
            "source": self.source,
            "attribution": self.attribution,
            "score": self.score,
            "metadata": self.metadata,
        }
        if self.explain is not None:
            data["explain"] = self.explain
        return data


@dataclass
class CombinedRetrievalResult:
    query: str
    workspace_results: list[CombinedResult] = field(default_factory=list)
    personal_results: list[CombinedResult] = field(default_factory=list)
    external_results: list[CombinedResult] = field(default_factory=list)
    external_available: bool = False
    external_skipped: bool = False
    external_error: str | None = None
    has_conflict: bool = False
    conflict_note: str | None = None

    @property
    def confident(self) -> bool:
        """Whether any local result matches well (``SearchResult.confident``); False tells the
        reader that the list holds only the least poor candidates."""
        return any(r.metadata.get("confident") for r in self.workspace_results + self.personal_results)

    def merged(self) -> list[CombinedResult]:
        """The answer in one list: local results that match well (``confident``) in score order
        across both minds, then external ones by their score, then the other local results.
        External sources are asked only when local memory is thin, so they come before local
        results that are merely the least poor candidates (without an external answer, the
        order is the score order)."""
        local = sorted(self.workspace_results + self.personal_results, key=lambda r: r.score, reverse=True)
        if not self.external_results:
            return local
        external = sorted(self.external_results, key=lambda r: r.score, reverse=True)
        confident = [r for r in local if r.metadata.get("confident")]
        return confident + external + [r for r in local if not r.metadata.get("confident")]

    def keep_first(self, limit: int) -> None:
        """Cut the answer to its first ``limit`` results; the per-mind lists keep what is left."""
        kept = {id(r) for r in self.merged()[:limit]}
        for results in (self.workspace_results, self.personal_results, self.external_results):
            results[:] = [r for r in results if id(r) in kept]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "results": [r.to_dict() for r in self.merged()],
            "external_available": self.external_available,
            "external_skipped": self.external_skipped,
            "external_error": self.external_error,
            "has_conflict": self.has_conflict,
            "conflict_note": self.conflict_note,
            "confident": self.confident,
        }
