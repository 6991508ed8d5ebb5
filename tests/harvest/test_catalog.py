from mind_core.harvest.catalog import read_catalog
from mind_core.harvest.pipeline import register_source
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing.exports import write_chatgpt_export


def test_catalog_lists_sources_of_every_mind_and_which_are_due(tmp_path):
    home = MindHome(tmp_path / "home")
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 1, 1)
    with Mind.open(home.mind_path("beta")) as mind:
        register_source(mind, "chatgpt", export, "gpt", auto_sync=True, interval_hours=2)
        mind.db.execute("UPDATE harvest_sources SET last_synced_at = '2026-01-01T00:00:00.000Z'")
    with Mind.open(home.mind_path("alpha")) as mind:
        register_source(mind, "chatgpt", export, "manual")
        register_source(mind, "chatgpt", export, "auto", auto_sync=True)
    with Mind.open(home.personal_path) as mind:
        register_source(mind, "chatgpt", export, "mine")
    catalog = read_catalog(home, now="2026-01-01T01:00:00.000Z")
    assert set(catalog.minds) == {"alpha", "beta", "personal"}
    assert [(s.workspace, s.source.source) for s in catalog.sources] == [
        ("alpha", "auto"),
        ("alpha", "manual"),
        ("beta", "gpt"),
        ("personal", "mine"),
    ]
    assert [(s.workspace, s.source.source) for s in catalog.due] == [("alpha", "auto")]  # never synced
    later = read_catalog(home, now="2026-01-01T02:00:00.000Z")
    assert [(s.workspace, s.source.source) for s in later.due] == [("alpha", "auto"), ("beta", "gpt")]
    assert catalog.unreadable == {}


def test_an_unreadable_mind_is_reported_and_the_others_still_listed(tmp_path):
    home = MindHome(tmp_path / "home")
    with Mind.open(home.mind_path("good")) as mind:
        register_source(mind, "chatgpt", write_chatgpt_export(tmp_path / "c.json", 1, 1), "gpt")
    home.mind_path("broken").write_bytes(b"this is not an SQLite database" * 100)
    catalog = read_catalog(home)
    assert [s.source.source for s in catalog.sources] == ["gpt"]
    assert list(catalog.unreadable) == ["broken"] and "database" in catalog.unreadable["broken"]
