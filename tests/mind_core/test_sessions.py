import re

from mind_core import sessions as sessions_module
from mind_core.mind import Mind
from tests.fakes import SteppingClock


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
