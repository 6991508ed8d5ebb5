"""CombinedRetrieval: the original's combined-retrieval, conflict-detection and memory-linker tests
(reference-behaviour §14), the normalized-threshold behaviour with real search scores, scope
routing, external failures against a real HTTP server, provenance, and access recording."""

from __future__ import annotations

import inspect
import time

import pytest

from mind_core import plugins, retrieval
from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.mind import Mind
from mind_core.plugins import hookimpl
from mind_core.query.service import AccessRecorder
from mind_core.recall import CombinedResult, CombinedRetrievalResult
from mind_core.retrieval import (
    CONFLICT_NOTE_EXTERNAL_AFFIRMATIVE,
    CONFLICT_NOTE_WORKSPACE_AFFIRMATIVE,
    CombinedRetrieval,
    HttpRetriever,
    configured_retrievers,
    detect_conflict,
    extract_polarity,
    format_external_attribution,
    has_sufficient_local_coverage,
    recall_mind_paths,
    should_query_external,
)
from mind_core.search.linker import MemoryLinker
from mind_core.store.frames import Frame
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder
from mind_core.timestamps import now_iso
from tests.query.helpers import CONVERSATION_KEY, CONVERSATION_TITLE, fake_external, harvest_conversation

FALCON_APPROVED = [
    "Project Falcon budget approved by the board",
    "Project Falcon launch date approved",
    "Project Falcon vendor list approved",
]
FILLER = ["Lunch menu: soup and bread", "Weather report: sunny and warm", "Gym schedule for Tuesday"]


class SpyRetriever:
    """A plugin-style external source that records its calls."""

    def __init__(self, results=(), error: Exception | None = None, name: str = "KVARK") -> None:
        self.name = name
        self.results = list(results)
        self.error = error
        self.calls: list[tuple[str, int]] = []

    def search(self, query, limit):
        self.calls.append((query, limit))
        if self.error is not None:
            raise self.error
        return self.results


def make_mind(texts, embedder=None, importance=None) -> Mind:
    mind = Mind.open(":memory:", embedder=embedder or HashingEmbedder())
    mind.sessions.ensure("g")
    frames = [
        mind.frames.create_i_frame("g", t, importance=(importance or {}).get(t, "normal")) for t in texts
    ]
    mind.search.index_frames_batch(frames)
    return mind


@pytest.fixture
def minds():
    opened: list[Mind] = []

    def factory(texts, **kwargs) -> Mind:
        mind = make_mind(texts, **kwargs)
        opened.append(mind)
        return mind

    yield factory
    for mind in opened:
        mind.close()


def result(score: float, content: str = "text", confident: bool = True) -> CombinedResult:
    return CombinedResult(
        content, "default", "notes", "default/notes", score, {"match_score": score, "confident": confident}
    )


# -- attribution, coverage and gating (combined-retrieval.test) --------------------------------------
def test_every_result_names_its_workspace_and_source(minds):
    ws = minds(["Falcon roadmap"])
    personal = minds(["Falcon notes of mine"])
    found = CombinedRetrieval(ws, personal, workspace_name="team").search("Falcon")
    assert [(r.workspace, r.source, r.attribution) for r in found.workspace_results] == [
        ("team", "user_stated", "team/user_stated")
    ]
    assert [(r.workspace, r.source, r.attribution) for r in found.personal_results] == [
        ("personal", "user_stated", "personal/user_stated")
    ]
    harvested = minds([])
    harvest_conversation(harvested)
    top = CombinedRetrieval(harvested, None).search("PostgreSQL migration").workspace_results[0]
    assert (top.workspace, top.source) == ("default", "gpt")
    assert top.attribution == f"default/gpt: {CONVERSATION_TITLE}"
    assert format_external_attribution("KVARK", "Project Status", "pdf") == "[KVARK: pdf: Project Status]"
    assert format_external_attribution("KVARK", "Title") == "[KVARK: Title]"
    assert format_external_attribution("Wiki", None) == "[Wiki: Untitled]"


def test_local_coverage_needs_three_results_at_0_7():
    assert has_sufficient_local_coverage([result(0.7), result(0.8), result(0.9)])
    assert not has_sufficient_local_coverage([result(0.9), result(0.9), result(0.69)])
    assert not has_sufficient_local_coverage([result(0.95), result(0.95)])
    assert not has_sufficient_local_coverage([])
    # strong lane agreement without a confident match (the best of poor candidates) is no coverage
    assert not has_sufficient_local_coverage([result(0.9, confident=False)] * 3)
    assert not has_sufficient_local_coverage([result(0.9), result(0.9), result(0.9, confident=False)])


def test_should_query_external_cases():
    spy = SpyRetriever()
    weak = [result(0.9)]
    strong = [result(0.9)] * 3
    assert not should_query_external([], "all", weak)
    assert not should_query_external([spy], "personal", weak)
    assert not should_query_external([spy], "workspace", weak)
    assert not should_query_external([spy], "all", strong)
    assert should_query_external([spy], "all", weak)


def test_defaults_are_10_balanced_all():
    defaults = inspect.signature(CombinedRetrieval.search).parameters
    assert (defaults["limit"].default, defaults["profile"].default, defaults["scope"].default) == (
        10,
        "balanced",
        "all",
    )


# -- the normalized scale with real search results ------------------------------------------------
def test_strong_real_matches_count_toward_coverage_and_skip_external(minds):
    ws = minds(FALCON_APPROVED + FILLER)
    spy = SpyRetriever([{"snippet": "never asked", "score": 1.0}])
    found = CombinedRetrieval(ws, None, [spy]).search("Project Falcon approved")
    strong = [r for r in found.workspace_results if retrieval.match_of(r) >= retrieval.LOCAL_COVERAGE_SCORE_THRESHOLD]
    assert {r.content for r in strong} == set(FALCON_APPROVED)
    assert all(0.0 <= r.score <= 1.0 for r in found.workspace_results)
    assert spy.calls == []
    assert found.external_available and found.external_skipped and found.external_results == []


def test_single_lane_matches_stay_at_or_below_half_and_do_not_cover(minds):
    ws = minds(["Project Falcon budget approved", *FILLER])
    spy = SpyRetriever([{"snippet": "Falcon status page", "score": 0.4, "title": "Status"}])
    found = CombinedRetrieval(ws, None, [spy]).search("Project Falcon approved")
    keyword_hit = [r for r in found.workspace_results if "Falcon" in r.content]
    vector_only = [r for r in found.workspace_results if "Falcon" not in r.content]
    assert retrieval.match_of(keyword_hit[0]) > 0.9
    assert vector_only and all(retrieval.match_of(r) <= 0.5 for r in vector_only)
    assert spy.calls == [("Project Falcon approved", 10)]
    assert not found.external_skipped
    assert [r.attribution for r in found.external_results] == ["[KVARK: Status]"]


def test_polarity_conflict_is_detected_with_real_scores_and_a_real_external_server(minds):
    ws = minds(["Project Falcon migration approved by the board", *FILLER])
    docs = [
        {
            "id": "d1",
            "title": "Falcon status",
            "snippet": "Project Falcon migration was cancelled",
            "score": 0.9,
        }
    ]
    with fake_external("ok", docs) as service:
        found = CombinedRetrieval(ws, None, [HttpRetriever(service.url)]).search("Project Falcon migration")
    assert retrieval.match_of(found.workspace_results[0]) >= retrieval.CONFLICT_SCORE_THRESHOLD
    assert found.has_conflict
    assert found.conflict_note == CONFLICT_NOTE_WORKSPACE_AFFIRMATIVE


def test_reverse_polarity_and_neutral_texts(minds):
    ws = minds(["Project Falcon migration was postponed", *FILLER])
    external = SpyRetriever([{"snippet": "Falcon migration completed", "score": 0.8}])
    found = CombinedRetrieval(ws, None, [external]).search("Project Falcon migration")
    assert found.conflict_note == CONFLICT_NOTE_EXTERNAL_AFFIRMATIVE

    neutral = minds(["Project Falcon migration meeting notes", *FILLER])
    found = CombinedRetrieval(neutral, None, [external]).search("Project Falcon migration")
    assert not found.has_conflict and found.conflict_note is None


def test_conflicts_compare_workspace_with_external_only(minds):
    personal = minds(["Project Falcon migration approved", *FILLER])
    external = SpyRetriever([{"snippet": "Falcon migration rejected", "score": 0.95}])
    found = CombinedRetrieval(None, personal, [external]).search("Project Falcon migration")
    assert found.personal_results and found.external_results
    assert not found.has_conflict


# -- conflict detection (conflict-detection.test) ------------------------------------------------
def test_extract_polarity():
    assert extract_polarity(["the plan was approved"]) == "positive"
    assert extract_polarity(["the plan was rejected"]) == "negative"
    assert extract_polarity(["approved first", "then cancelled"]) == "neutral"
    assert extract_polarity(["nothing decisive"]) == "neutral"
    assert extract_polarity(["the flag is inactive"]) == "positive"  # substring test, as the original


def test_detect_conflict_thresholds_and_top_three():
    ws = [result(0.9, "approved")]
    assert detect_conflict(ws, [result(0.59, "rejected")]) is None  # below 0.6
    assert detect_conflict([result(0.5, "approved")], [result(0.9, "rejected")]) is None
    assert detect_conflict(ws, [result(0.9, "rejected")]) == CONFLICT_NOTE_WORKSPACE_AFFIRMATIVE
    fourth_disagrees = [result(0.9, "neutral")] * 3 + [result(0.9, "approved")]
    assert detect_conflict(fourth_disagrees, [result(0.9, "rejected")]) is None
    assert detect_conflict([result(0.9, "Approved")], [result(0.9, "REJECTED")]) is not None  # lowercased
    assert detect_conflict([], [result(0.9, "rejected")]) is None


# -- scope routing and pass-through -------------------------------------------------------------
def test_scope_routing(minds):
    ws = minds(["Falcon in the workspace"])
    personal = minds(["Falcon in my notes"])
    spy = SpyRetriever()
    engine = CombinedRetrieval(ws, personal, [spy])

    only_personal = engine.search("Falcon", scope="personal")
    assert only_personal.workspace_results == [] and len(only_personal.personal_results) == 1
    only_workspace = engine.search("Falcon", scope="workspace")
    assert only_workspace.personal_results == [] and len(only_workspace.workspace_results) == 1
    assert spy.calls == []  # external sources only for scope 'all'
    both = engine.search("Falcon")
    assert len(both.workspace_results) == 1 and len(both.personal_results) == 1
    assert spy.calls == [("Falcon", 10)]
    assert sorted(r.workspace for r in both.merged()) == ["default", "personal"]


def test_no_workspace_mind_and_zero_external_results(minds):
    personal = minds(["Falcon notes"])
    found = CombinedRetrieval(None, personal, [SpyRetriever([])]).search("Falcon")
    assert found.workspace_results == [] and len(found.personal_results) == 1
    assert found.external_results == [] and found.external_error is None and not found.external_skipped
    nothing = CombinedRetrieval().search("Falcon")
    assert nothing.to_dict()["external_available"] is False and nothing.merged() == []


def test_limit_is_the_number_of_results_in_the_answer(minds):
    ws = minds([f"Falcon status report number {i}" for i in range(6)])
    personal = minds([f"Falcon status notes of mine {i}" for i in range(6)])
    engine = CombinedRetrieval(ws, personal)
    everything = engine.search("Falcon status", limit=12).merged()
    assert len(everything) == 12
    for limit in (1, 3, 5):
        found = engine.search("Falcon status", limit=limit)
        answer = found.merged()
        assert len(answer) == limit and [r.content for r in answer] == [r.content for r in everything[:limit]]
        assert len(found.workspace_results) + len(found.personal_results) == limit  # lists within it


def test_without_external_results_the_answer_is_in_score_order():
    """A confident memory may score below one that only came closest (recency is part of the
    score): the shown scores still fall down the list."""

    def memory(score: float, confident: bool) -> CombinedResult:
        return CombinedResult(f"m{score}", "default", "notes", "default/notes", score, {"confident": confident})

    found = CombinedRetrievalResult(
        "q", workspace_results=[memory(0.10, True), memory(0.31, False)], personal_results=[memory(0.26, True)]
    )
    assert [r.score for r in found.merged()] == [0.31, 0.26, 0.10]
    found.keep_first(1)
    assert [r.score for r in found.merged()] == [0.31] and found.confident is False


def test_external_results_come_after_good_matches_and_before_the_least_poor(minds):
    ws = minds(["Project Falcon budget approved", *FILLER])
    docs = [{"snippet": f"Falcon wiki page {i}", "score": 0.9 - i / 10, "title": f"p{i}"} for i in range(3)]
    found = CombinedRetrieval(ws, None, [SpyRetriever(docs)]).search("Project Falcon approved", limit=5)
    answer = [(r.workspace, r.metadata.get("confident")) for r in found.merged()]
    assert answer == [("default", True), (None, None), (None, None), (None, None), ("default", False)]
    assert len(found.external_results) == 3 and len(found.workspace_results) == 2
    cut = CombinedRetrieval(ws, None, [SpyRetriever(docs)]).search("Project Falcon approved", limit=2)
    assert [r.workspace for r in cut.merged()] == ["default", None]


def test_which_minds_a_recall_reads(tmp_path):
    home = MindHome(tmp_path)
    for path in (home.workspace_path("team"), home.personal_path):
        Mind.open(path).close()
    assert recall_mind_paths(home, None, "team", "all") == ("team", home.workspace_path("team"), home.personal_path)
    assert recall_mind_paths(home, None, "team", "workspace") == ("team", home.workspace_path("team"), None)
    assert recall_mind_paths(home, None, "team", "personal") == ("team", None, home.personal_path)
    # the default workspace may not exist yet; a workspace named otherwise must
    assert recall_mind_paths(home, None, "default", "all") == ("default", None, home.personal_path)
    with pytest.raises(NotFoundError, match=r"^no mind for workspace 'ghost' \(minds: team, personal\)$"):
        recall_mind_paths(home, "ghost", "team", "all")
    assert recall_mind_paths(home, "ghost", "team", "personal") == ("ghost", None, home.personal_path)
    # the personal mind is the personal workspace's mind, whatever the scope
    for scope in ("all", "personal"):
        assert recall_mind_paths(home, "personal", "team", scope) == ("personal", None, home.personal_path)
    assert recall_mind_paths(home, "personal", "team", "workspace") == ("personal", home.personal_path, None)


def test_limit_and_profile_pass_through(minds):
    texts = [f"Falcon status report number {i}" for i in range(15)]
    assert len(CombinedRetrieval(minds(texts), None).search("Falcon status report").workspace_results) == 10
    critical = "Falcon status report: critical incident"
    ws = minds([*texts[:5], critical], importance={critical: "critical"})
    found = CombinedRetrieval(ws, None).search("Falcon status report", limit=3, profile="important")
    assert len(found.workspace_results) == 3
    assert found.workspace_results[0].content == critical


def test_invalid_inputs_are_refused(minds):
    engine = CombinedRetrieval(minds(["x"]), None)
    for kwargs in (
        {"scope": "everything"},
        {"profile": "loud"},
        {"limit": 0},
        {"limit": 101},
        {"limit": "5"},
        {"since": "yesterday"},
    ):
        with pytest.raises(InvalidInputError):
            engine.search("Falcon", **kwargs)
    for query in ("", "   ", None, "x" * 10_001):
        with pytest.raises(InvalidInputError):
            engine.search(query)


def test_since_and_until_filter_on_event_time():
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("g")
    old = mind.frames.create_i_frame("g", "Falcon kickoff", created_at="2023-01-10T09:00:00Z")
    new = mind.frames.create_i_frame("g", "Falcon review", created_at="2024-06-01T09:00:00Z")
    mind.search.index_frames_batch([old, new])
    engine = CombinedRetrieval(mind, None)
    assert [
        r.metadata["frame_id"] for r in engine.search("Falcon", since="2024-01-01").workspace_results
    ] == [new.id]
    assert [
        r.metadata["frame_id"] for r in engine.search("Falcon", until="2023-12-31").workspace_results
    ] == [old.id]
    mind.close()


# -- external sources: failures degrade gracefully -----------------------------------------------
@pytest.mark.parametrize(
    ("mode", "message"),
    [("error500", "answered HTTP 500"), ("badjson", "invalid JSON"), ("shape", "without a 'results' list")],
)
def test_external_failures_keep_local_results(minds, mode, message):
    ws = minds(["Falcon budget approved"])
    with fake_external(mode) as service:
        found = CombinedRetrieval(ws, None, [HttpRetriever(service.url)]).search("Falcon budget")
    assert len(found.workspace_results) == 1
    assert found.external_results == [] and found.external_available and not found.external_skipped
    assert found.external_error.startswith("External: ") and message in found.external_error
    assert not found.has_conflict


def test_external_timeout_is_reported(minds):
    ws = minds(["Falcon budget approved"])
    with fake_external("slow") as service:
        started = time.perf_counter()
        found = CombinedRetrieval(ws, None, [HttpRetriever(service.url, timeout=0.3)]).search("Falcon")
        elapsed = time.perf_counter() - started
    assert "timed out after 0.3s" in found.external_error
    assert elapsed < service.delay and len(found.workspace_results) == 1


def test_unreachable_external_source(minds):
    with fake_external() as service:
        url = service.url  # the port is closed once the context exits
    found = CombinedRetrieval(minds(["Falcon"]), None, [HttpRetriever(url)]).search("Falcon")
    assert "unreachable" in found.external_error and len(found.workspace_results) == 1


def test_external_round_trip_contract_and_bad_entries(minds):
    docs = [
        {"id": "d1", "title": "Project Status", "snippet": "Falcon is on track", "score": 0.8, "type": "pdf"},
        {"id": 7, "snippet": "score above one is clamped", "score": 3},
        {"title": "no score", "snippet": "skipped"},
        {"snippet": ["not text"], "score": 0.5},
        "not an object",
    ]
    with fake_external("ok", docs) as service:
        retriever = HttpRetriever(service.url + "/", "s3cret", name="KVARK")
        found = CombinedRetrieval(minds(["unrelated"]), None, [retriever]).search("Falcon status", limit=5)
    assert service.requests == [
        {"path": "/search", "body": {"query": "Falcon status", "limit": 5}, "authorization": "Bearer s3cret"}
    ]
    assert [(r.attribution, r.score) for r in found.external_results] == [
        ("[KVARK: Untitled]", 1.0),
        ("[KVARK: pdf: Project Status]", 0.8),
    ]
    top = found.external_results[1]
    assert (top.workspace, top.source, top.content) == (None, "KVARK", "Falcon is on track")
    assert top.metadata["document_id"] == "d1" and top.metadata["document_type"] == "pdf"
    assert found.external_results[0].metadata["document_id"] == "7"
    assert found.external_error is None


def test_error_text_is_kept_and_empty_errors_are_named(minds):
    ws = minds(["Falcon"])
    failing = [
        SpyRetriever(error=RuntimeError("index offline"), name="Wiki"),
        SpyRetriever(error=RuntimeError()),
    ]
    found = CombinedRetrieval(ws, None, failing).search("Falcon")
    assert found.external_error == "Wiki: index offline; KVARK: Unknown external error"
    assert len(found.workspace_results) == 1


def test_http_retriever_needs_an_http_url():
    with pytest.raises(InvalidInputError):
        HttpRetriever("file:///etc/passwd")


def test_retrievers_from_the_plugin_hook_and_settings(monkeypatch):
    source = SpyRetriever([{"snippet": "from the plugin", "score": 0.3}], name="PluginSource")

    class Plugin:
        @hookimpl
        def register_retrievers(self, register):
            register(source)

    monkeypatch.delenv(retrieval.EXTERNAL_URL_ENV, raising=False)
    plugins.register_plugin(Plugin(), name="test-retriever-plugin")
    try:
        found = configured_retrievers()
        assert source in found
        with_http = configured_retrievers(env={retrieval.EXTERNAL_URL_ENV: "http://127.0.0.1:9", "X": "1"})
        assert isinstance(with_http[-1], HttpRetriever) and with_http[-1].name == "External"
    finally:
        plugins.get_plugin_manager(refresh=True)
    assert source not in configured_retrievers()


# -- provenance -----------------------------------------------------------------------------------
def test_every_result_carries_its_provenance():
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    ids = harvest_conversation(mind)
    mind.sessions.ensure("saved")
    saved = mind.frames.create_i_frame("saved", "A PostgreSQL tuning tip I saved myself")
    mind.search.index_frame(saved.id, saved.content)
    found = CombinedRetrieval(mind, None).search("PostgreSQL migration plan")
    by_id = {r.metadata["frame_id"]: r.metadata["provenance"] for r in found.workspace_results}
    harvested = by_id[ids[1]]
    assert harvested["source"] == "gpt" and harvested["plugin"] == "chatgpt"
    assert harvested["container"] == CONVERSATION_KEY and harvested["title"] == CONVERSATION_TITLE
    assert harvested["message_id"] == "m2" and harvested["role"] == "assistant"
    assert harvested["event_time"] == "2024-03-05T13:02:00.000Z"
    assert harvested["original_timestamp"] == "2024-03-05T14:02:00+01:00"
    assert harvested["path"] == "/exports/conversations.json"
    own = by_id[saved.id]
    assert own["source"] == "user_stated" and own["container"] == "saved" and own["message_id"] is None
    assert own["event_time"] == saved.created_at
    mind.close()


# -- access is recorded only when asked -------------------------------------------------------------
def access(mind: Mind) -> dict[int, tuple[int, str]]:
    rows = mind.db.query("SELECT id, access_count, last_accessed FROM memory_frames")
    return {r["id"]: (r["access_count"], r["last_accessed"]) for r in rows}


def test_recall_reads_only_by_default_and_scores_stay_put(minds):
    ws = minds(["Falcon budget", "Falcon launch", "Unrelated lunch note"])
    before = access(ws)
    first = CombinedRetrieval(ws, None).search("Falcon", limit=2)
    again = CombinedRetrieval(ws, None).search("Falcon", limit=2)
    assert access(ws) == before
    assert [r.score for r in again.workspace_results] == [r.score for r in first.workspace_results]


def test_recording_access_touches_the_frames_of_the_answer_only(minds):
    ws = minds(["Falcon budget", "Falcon launch", "Unrelated lunch note"])
    personal = minds(["Falcon notes of mine", "Falcon reading list"])
    before = {"ws": access(ws), "personal": access(personal)}
    found = CombinedRetrieval(ws, personal, record_access_on_recall=True).search("Falcon", limit=2)
    returned = {
        "ws": {r.metadata["frame_id"] for r in found.workspace_results},
        "personal": {r.metadata["frame_id"] for r in found.personal_results},
    }
    assert sum(len(ids) for ids in returned.values()) == 2  # found in both minds, two answered
    for name, mind in (("ws", ws), ("personal", personal)):
        for frame_id, (count, seen) in access(mind).items():
            if frame_id in returned[name]:
                assert count == before[name][frame_id][0] + 1 and seen >= before[name][frame_id][1]
            else:
                assert (count, seen) == before[name][frame_id]


def test_read_only_minds_are_touched_only_through_an_access_writer(tmp_path):
    path = tmp_path / "team.mind"
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        mind.sessions.ensure("g")
        frame = mind.frames.create_i_frame("g", "Falcon budget")
        mind.search.index_frame(frame.id, frame.content)
    with Mind.open(path, embedder=HashingEmbedder(), readonly=True) as ro:
        recording = CombinedRetrieval(ro, None, record_access_on_recall=True)
        assert len(recording.search("Falcon").workspace_results) == 1
        assert ro.frames.get_by_id(frame.id).access_count == 0
        writer = AccessRecorder()
        CombinedRetrieval(ro, None, record_access_on_recall=True, access_writer=writer).search("Falcon")
        writer.close()
        assert ro.frames.get_by_id(frame.id).access_count == 1


def test_a_busy_mind_skips_the_touch_instead_of_hanging(tmp_path, monkeypatch):
    monkeypatch.setattr(retrieval, "TOUCH_BUSY_TIMEOUT_MS", 50)
    path = tmp_path / "team.mind"
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        mind.sessions.ensure("g")
        frame = mind.frames.create_i_frame("g", "Falcon budget")
        mind.search.index_frame(frame.id, frame.content)
        blocker = Mind.open(path)
        blocker.db.execute("BEGIN IMMEDIATE")
        try:
            started = time.perf_counter()
            found = CombinedRetrieval(mind, None, record_access_on_recall=True).search("Falcon")
            assert time.perf_counter() - started < 2
        finally:
            blocker.db.execute("ROLLBACK")
            blocker.close()
        assert len(found.workspace_results) == 1
        assert mind.frames.get_by_id(frame.id).access_count == 0
        assert mind.db.scalar("PRAGMA busy_timeout") == 30_000  # restored


# -- memory linker (memory-linker.test) -------------------------------------------------------------
class SearchSpy:
    def __init__(self, search) -> None:
        self.inner = search
        self.calls: list[dict] = []

    def search(self, query, **kwargs):
        self.calls.append({"query": query, **kwargs})
        return self.inner.search(query, **kwargs)


def test_linker_searches_with_limit_5_without_time_boost_and_maps_frame_id_content_score(minds):
    mind = minds(["PostgreSQL migration plan", "PostgreSQL migration review", "Garden party"])
    spy = SearchSpy(mind.search)
    links = MemoryLinker(spy, threshold=0.0).find_related("PostgreSQL migration")
    # a frame's text is not a question: dates in it must not boost its neighbours in time
    assert spy.calls == [{"query": "PostgreSQL migration", "limit": 5, "time_aware": False}]
    frames: dict[int, Frame] = mind.frames.get_many([link.frame_id for link in links])
    for link in links:
        assert link.content == frames[link.frame_id].content and 0.0 <= link.score <= 1.0
    assert set(vars(links[0])) == {"frame_id", "content", "score"}


def test_linker_threshold_filters_on_the_match_scale(minds):
    mind = minds(["PostgreSQL migration plan", "PostgreSQL migration review", "Garden party"])
    everything = MemoryLinker(mind.search, threshold=0.0).find_related("PostgreSQL migration")
    strict = MemoryLinker(mind.search, threshold=0.9).find_related("PostgreSQL migration")
    assert len(everything) == 3
    assert {link.content for link in strict} == {"PostgreSQL migration plan", "PostgreSQL migration review"}
    assert MemoryLinker(mind.search, threshold=1.01).find_related("PostgreSQL migration") == []


# -- scores a person can trust ---------------------------------------------------------------------
def test_a_mind_of_unrelated_notes_does_not_place_its_best_guess_above_another_minds_match(minds):
    # each mind's scores are relative to it: alone, the notes mind's best guess scores 1.0
    ws = minds(["CIFS patch series: local caching for network mounts", *FILLER])
    notes = ["How the app stores data: a metadata cache on disk", "Canvas and file explorer"]
    personal = minds(notes, importance=dict.fromkeys(notes, "critical"))  # relevance lifts them
    alone = CombinedRetrieval(None, personal).search("CIFS local caching")
    assert alone.merged()[0].score == pytest.approx(max(r.score for r in alone.merged()))
    found = CombinedRetrieval(ws, personal).search("CIFS local caching")
    merged = found.merged()
    assert merged[0].workspace == "default" and merged[0].content.startswith("CIFS patch series")
    weights = {r.workspace: r.metadata["mind_weight"] for r in merged}
    assert weights["default"] > weights["personal"]
    assert [r.score for r in merged] == sorted((r.score for r in merged), reverse=True)


def test_shown_scores_are_the_order_and_stay_within_one(minds):
    # an important frame that matches less and a normal one that matches more: relevance reorders
    # them, and the shown score follows the order it makes
    ws = minds(
        ["Project Falcon budget approved", "Falcon notes", *FILLER],
        importance={"Falcon notes": "critical"},
    )
    personal = minds(["Project Falcon approved by the board", *FILLER])
    found = CombinedRetrieval(ws, personal).search("Project Falcon approved", explain=True)
    merged = found.merged()
    scores = [r.score for r in merged]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
    for answer in (found.workspace_results, found.personal_results):  # each mind keeps its order
        finals = [r.explain["final_score"] for r in answer]
        assert finals == sorted(finals, reverse=True)
    top = merged[0]
    assert top.explain is not None and top.explain["score"] == top.score
    assert 0.0 < top.metadata["mind_weight"] <= 1.0  # two minds: weighed by their best evidence
    assert top.score == pytest.approx(
        top.metadata["match_score"] * top.explain["relevance_score"] / top.explain["max_relevance"]
        * top.metadata["mind_weight"],
        abs=1e-3,
    )
    assert top.explain["final_score"] == pytest.approx(top.explain["rrf_score"] * top.explain["relevance_score"])


def test_nonsense_is_not_a_confident_match(minds):
    ws = minds(FALCON_APPROVED + FILLER)
    nonsense = CombinedRetrieval(ws, None).search("zzzqqq xxvvyy")
    assert nonsense.workspace_results  # the vector lane still lists the closest frames ...
    assert not nonsense.confident  # ... and says they are no match
    assert nonsense.to_dict()["confident"] is False
    real = CombinedRetrieval(ws, None).search("Project Falcon approved")
    assert real.confident and real.workspace_results[0].metadata["confident"]


def test_a_note_dated_by_its_file_is_not_favoured_by_recency():
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("g")
    undated = {"source": {"item": {}, "message": {"dated_by": "file"}}}
    dated = {"source": {"item": {}, "message": {"dated_by": "frontmatter"}}}
    copied = mind.frames.create_i_frame("g", "Falcon budget: 2 million", created_at=now_iso(), metadata=undated)
    written = mind.frames.create_i_frame(
        "g", "Falcon budget: 3 million", created_at="2026-01-05T00:00:00Z", metadata=dated
    )
    mind.search.index_frames_batch([copied, written])
    found = CombinedRetrieval(mind, None).search("Falcon budget", explain=True, profile="recent")
    by_id = {r.metadata["frame_id"]: r for r in found.workspace_results}
    assert by_id[copied.id].metadata["provenance"]["dated_by_file"] is True
    assert by_id[written.id].metadata["provenance"]["dated_by_file"] is False
    assert by_id[copied.id].explain["relevance"]["temporal"] == 0.0
    assert found.workspace_results[0].metadata["frame_id"] == written.id
    mind.close()


def test_a_time_one_mind_holds_is_the_question_time_for_both_minds():
    """ "What happened in June 1996" over a workspace of that June's mails and a personal mind of
    recent notes that say "happens": the personal mind has no memory then, yet its notes must not
    come first (its own search alone ignores the time: nothing of its is near it)."""
    ws = Mind.open(":memory:", embedder=HashingEmbedder())
    ws.sessions.ensure("mail")
    june = [
        ws.frames.create_i_frame("mail", text, created_at=f"1996-06-{day:02d}T10:00:00Z")
        for day, text in ((3, "the release of version 2 is out"), (17, "meeting notes: budget approved"))
    ]
    ws.frames.create_i_frame("mail", "the printer is fixed", created_at="1999-02-01T10:00:00Z")
    ws.search.index_frames_batch(ws.frames.get_many([f.id for f in june]).values())
    personal = Mind.open(":memory:", embedder=HashingEmbedder())
    personal.sessions.ensure("notes")
    notes = [
        personal.frames.create_i_frame("notes", text, created_at="2024-05-01T10:00:00Z")
        for text in ("what happens when sync fails", "what happened at the offsite", "it happens every June")
    ]
    personal.search.index_frames_batch(notes)
    with ws, personal:
        assert ws.search.names_a_time_near("what happened in June 1996")
        assert not personal.search.names_a_time_near("what happened in June 1996")
        alone = personal.search.search("what happened in June 1996", explain=True)
        assert alone and "time_window_ignored" in alone[0].explain  # by itself, it ignores the time
        found = CombinedRetrieval(ws, personal, workspace_name="default").search("what happened in June 1996", limit=3)
        assert [r.workspace for r in found.merged()][:2] == ["default", "default"]
        assert {r.metadata["frame_id"] for r in found.merged()[:2]} == {f.id for f in june}


def test_stems_that_agree_without_a_confident_match_do_not_cover_and_the_external_source_is_asked(minds):
    """The lanes agree on the best of poor candidates (match >= 0.7 for three frames that share
    one word of the question), but none is close in meaning: the mind knows nothing of it."""
    ws = minds(
        [
            "Capitalize first letters in every heading across exported notes",
            "Capital gains table needs another column for quarterly numbers",
            "Use capitals for constants and lower case for variables in scripts",
            *FILLER,
        ]
    )
    spy = SpyRetriever([{"snippet": "Paris is the capital of France", "score": 0.9, "title": "Atlas"}])
    found = CombinedRetrieval(ws, None, [spy]).search("what is the capital of France")
    strong = [r for r in found.workspace_results if retrieval.match_of(r) >= retrieval.LOCAL_COVERAGE_SCORE_THRESHOLD]
    assert len(strong) >= retrieval.LOCAL_COVERAGE_MIN_COUNT  # the old rule called this covered
    assert not found.confident
    assert spy.calls == [("what is the capital of France", 10)]
    assert not found.external_skipped and [r.content for r in found.external_results] == [
        "Paris is the capital of France"
    ]
