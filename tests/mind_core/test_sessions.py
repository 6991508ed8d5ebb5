import re

from mind_core.mind import Mind
from mind_core.store import sessions as sessions_module
from mind_core.testing.fakes import SteppingClock


def test_gop_id_format():
    mind = Mind.open(":memory:")
    session = mind.sessions.create("proj")
    assert re.fullmatch(r"session:\d{4}-\d{2}-\d{2}T[\d:.]+Z:[0-9a-z]{6}", session["gop_id"])
    assert session["status"] == "active" and session["project_id"] == "proj"


def test_ensure_active_creates_then_reuses_and_keeps_project():
    mind = Mind.open(":memory:")
    first = mind.sessions.ensure_active("p1")
    assert first["project_id"] == "p1"
    assert mind.sessions.ensure_active("p2")["gop_id"] == first["gop_id"]


def test_ensure_active_returns_most_recent_and_never_resurrects(monkeypatch):
    monkeypatch.setattr(sessions_module, "now_iso", SteppingClock())
    mind = Mind.open(":memory:")
    a = mind.sessions.create()
    b = mind.sessions.create()
    assert mind.sessions.ensure_active()["gop_id"] == b["gop_id"]
    mind.sessions.close(b["gop_id"])
    mind.sessions.archive(a["gop_id"])
    fresh = mind.sessions.ensure_active()
    assert fresh["gop_id"] not in (a["gop_id"], b["gop_id"])


def test_ensure_is_idempotent():
    mind = Mind.open(":memory:")
    one = mind.sessions.ensure("harvest:chatgpt:c1", "harvest", "first")
    two = mind.sessions.ensure("harvest:chatgpt:c1", "other", "second")
    assert one == two
    assert mind.db.scalar("SELECT COUNT(*) FROM sessions") == 1


def test_close_and_archive():
    mind = Mind.open(":memory:")
    s = mind.sessions.create()
    mind.sessions.close(s["gop_id"], "done")
    closed = mind.sessions.get_by_gop_id(s["gop_id"])
    assert closed["status"] == "closed" and closed["summary"] == "done" and closed["ended_at"]
    t = mind.sessions.create()
    mind.sessions.archive(t["gop_id"])
    archived = mind.sessions.get_by_gop_id(t["gop_id"])
    assert archived["status"] == "archived" and archived["ended_at"] is None
    assert mind.sessions.get_by_gop_id("missing") is None


def test_get_by_project_newest_first(monkeypatch):
    monkeypatch.setattr(sessions_module, "now_iso", SteppingClock())
    mind = Mind.open(":memory:")
    a = mind.sessions.create("p")
    b = mind.sessions.create("p")
    mind.sessions.create("q")
    assert [s["gop_id"] for s in mind.sessions.get_by_project("p")] == [b["gop_id"], a["gop_id"]]
    assert len(mind.sessions.get_active()) == 3


# -- harvested sessions are closed; frames without a session go to the day's notes (issue #16 §6) --
def test_a_harvest_closes_its_sessions_with_an_extractive_summary(tmp_path):
    from pathlib import Path

    from mind_core.embeddings import create_embedding_provider
    from mind_core.harvest.pipeline import harvest, register_source

    examples = Path(__file__).resolve().parents[2] / "examples"
    with Mind.open(tmp_path / "m.mind", embedder=create_embedding_provider("mock")) as mind:
        register_source(mind, "email", examples / "mail", "mail")
        report = harvest(mind, "mail")
        sessions = mind.db.query("SELECT * FROM sessions WHERE gop_id LIKE 'harvest:mail:%'")
        assert sessions and report.cognified["sessions_closed"] == len(sessions)
        assert all(s["status"] == "closed" and s["ended_at"] and s["summary"] for s in sessions)
        plan = next(s for s in sessions if s["gop_id"].endswith("falcon-plan-1@example.com"))
        first = mind.db.scalar("SELECT content FROM memory_frames WHERE gop_id = ? ORDER BY t LIMIT 1", (plan["gop_id"],))
        assert plan["summary"].startswith(" ".join(first.split("] ", 1)[1].split())[:60])  # no title
        assert " … " in plan["summary"] and len(plan["summary"]) <= 2 * 200 + 3  # and the most central one

        saved = mind.cognify.cognify("Remember: the Falcon cutover moved to a Saturday")
        frame = mind.frames.get_by_id(saved.frame_id)
        assert frame.gop_id.startswith("notes:") and frame.gop_id[6:] == frame.created_at[:10]
        assert mind.sessions.ensure_active()["gop_id"].startswith(("notes:", "session:"))
        assert not mind.sessions.ensure_active()["gop_id"].startswith("harvest:")


def test_extractive_summary_first_and_most_central_turn():
    from mind_core.knowledge.session_summary import extractive_summary

    turns = [
        "[Trip] Ann: planning the Lisbon trip for May",
        "[Trip] Bo: flights to Lisbon in May are cheap, hotels in Lisbon too",
        "[Trip] Ann: ok",
        "[Trip] Bo: booked a table for dinner",
    ]
    assert extractive_summary(turns) == (
        "Ann: planning the Lisbon trip for May … Bo: flights to Lisbon in May are cheap, hotels in Lisbon too"
    )
    assert extractive_summary(["[T] only one turn"]) == "only one turn"
    assert extractive_summary([]) is None


def test_summary_turns_lose_titles_that_hold_brackets():
    from mind_core.knowledge.session_summary import extractive_summary

    summary = extractive_summary(["[3.01 MIME [Fwd: a problem]] Chuck Simmons <c@x.com>: My problem message."])
    assert summary == "Chuck Simmons <c@x.com>: My problem message."
    assert extractive_summary(["[[PATCH] fix] Joe: semicolons"]) == "Joe: semicolons"
