"""`mind recall`: the table, JSON for scripts, --explain, scopes, time bounds, errors, access."""

from __future__ import annotations

import json
import sys

import pytest

from mind_core.cli import EXIT_OK, EXIT_USAGE, main
from mind_core.embeddings import create_embedding_provider
from mind_core.home import MindHome
from mind_core.mind import Mind
from mind_core.snippets import bold_markdown, make_snippet
from tests.query.helpers import CONVERSATION_TITLE, build_mind, harvest_conversation


@pytest.fixture
def home(tmp_path) -> MindHome:
    home = MindHome(tmp_path / "home")
    embedder = create_embedding_provider("mock")  # what `--embedder mock` opens the minds with
    with Mind.open(home.workspace_path("default"), embedder=embedder) as mind:
        harvest_conversation(mind)
    build_mind(home.workspace_path("team"), ["Team decided: PostgreSQL for billing"], embedder)
    build_mind(home.personal_path, ["My PostgreSQL reading list"], embedder)
    return home


def recall(capsys, home, *argv):
    code = main(["recall", "--home", str(home.root), "--embedder", "mock", *argv])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


def test_piped_recall_is_plain_text_without_markers(capsys, home):
    code, out, _ = recall(capsys, home, "PostgreSQL", "migration")
    lines = out.splitlines()
    assert code == EXIT_OK and lines[0].split() == ["#", "score", "time", "from", "snippet"]
    assert f"workspace/gpt: {CONVERSATION_TITLE}" in out and "personal/user_stated" in out
    assert "PostgreSQL migration plan was approved" in out  # not a TTY: no bold of any kind
    assert "2024-03-05 13:02" in out  # event time in UTC
    assert "\033[1m" not in out and "**" not in out


def test_recall_on_a_terminal_marks_the_matches_in_bold(capsys, home, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, out, _ = recall(capsys, home, "PostgreSQL", "migration")
    assert code == EXIT_OK and "\033[1mPostgreSQL\033[0m" in out and "\033[1mmigration\033[0m" in out
    assert "**" not in out


def test_json_for_scripts(capsys, home):
    code, out, _ = recall(capsys, home, "PostgreSQL", "--json", "--limit", "2")
    data = json.loads(out)
    assert code == EXIT_OK and data["query"] == "PostgreSQL"
    assert len(data["workspace_results"]) == 2 and len(data["personal_results"]) == 1
    assert [r["source"] for r in data["results"]].count("workspace") == 2
    provenance = data["workspace_results"][0]["metadata"]["provenance"]
    assert provenance["source"] == "gpt" and provenance["container"] == "conv-42"
    assert data["external_available"] is False and data["has_conflict"] is False


def test_explain_shows_lane_ranks_and_score_parts(capsys, home):
    code, out, _ = recall(capsys, home, "PostgreSQL", "migration", "--explain", "--scope", "workspace")
    explain = [line for line in out.splitlines() if line.startswith("#1 ")]
    assert code == EXIT_OK and explain
    assert "keyword rank" in explain[0] and "vector rank" in explain[0]  # which is first depends on the fusion
    assert "temporal" in explain[0] and "importance" in explain[0] and "match" in explain[0]


def test_scopes_and_workspaces(capsys, home):
    _, out, _ = recall(capsys, home, "PostgreSQL", "--scope", "personal", "--json")
    data = json.loads(out)
    assert data["workspace_results"] == [] and len(data["personal_results"]) == 1
    _, out, _ = recall(capsys, home, "PostgreSQL", "--workspace", "team", "--scope", "workspace", "--json")
    assert [r["content"] for r in json.loads(out)["workspace_results"]] == [
        "Team decided: PostgreSQL for billing"
    ]
    _, out, _ = recall(capsys, home, "PostgreSQL", "--workspace", "personal", "--json")
    data = json.loads(out)
    assert data["workspace_results"] == [] and len(data["personal_results"]) == 1


def test_time_bounds(capsys, home):
    _, out, _ = recall(capsys, home, "PostgreSQL", "--until", "2024-12-31", "--json")
    data = json.loads(out)
    assert len(data["workspace_results"]) == 2 and data["personal_results"] == []  # personal frame is new
    _, out, _ = recall(capsys, home, "PostgreSQL", "--since", "2025-01-01", "--json")
    assert json.loads(out)["workspace_results"] == []
    # a year or a year-month is its whole span: the first instant as a start, the last as an end
    _, out, _ = recall(capsys, home, "PostgreSQL", "--since", "2024", "--until", "2024", "--json")
    assert len(json.loads(out)["workspace_results"]) == 2
    _, out, _ = recall(capsys, home, "PostgreSQL", "--since", "2025-01", "--json")
    assert json.loads(out)["workspace_results"] == []


def test_an_inverted_time_range_is_a_usage_error(capsys, home):
    code, _, err = recall(capsys, home, "PostgreSQL", "--since", "2011-01-01", "--until", "2010-01-01")
    assert code == EXIT_USAGE and "since '2011-01-01' is after until '2010-01-01'" in err
    code, _, err = recall(capsys, home, "PostgreSQL", "--since", "2010-06", "--until", "2010-05")
    assert code == EXIT_USAGE and "is after until" in err


def test_errors_and_exit_codes(capsys, home):
    code, _, err = recall(capsys, home, "x", "--workspace", "ghost")
    assert code == EXIT_USAGE and "no mind for workspace 'ghost'" in err
    code, _, err = recall(capsys, home, "x", "--workspace", "../etc")
    assert code == EXIT_USAGE and "invalid workspace name" in err
    code, _, err = recall(capsys, home, "x", "--limit", "0")
    assert code == EXIT_USAGE and "limit must be between 1 and 100 (got 0)" in err
    code, _, err = recall(capsys, home, "x", "--since", "someday")
    assert code == EXIT_USAGE and "since must be an ISO-8601 date or date/time" in err
    code, out, _ = recall(capsys, home, "zzzqqq", "--scope", "workspace", "--workspace", "team")
    assert code == EXIT_OK and "no confident match for 'zzzqqq'" in out  # the closest, not a match
    code, out, _ = recall(capsys, MindHome(home.root / "empty"), "PostgreSQL")
    assert code == EXIT_OK and out.strip() == "no memories match 'PostgreSQL'"


def test_recall_counts_as_access_unless_no_touch(capsys, home):
    def counts():
        with Mind.open(home.personal_path, readonly=True) as mind:
            return mind.db.scalar("SELECT access_count FROM memory_frames")

    recall(capsys, home, "PostgreSQL", "--scope", "personal", "--no-touch")
    assert counts() == 0
    recall(capsys, home, "PostgreSQL", "--scope", "personal")
    assert counts() == 1


def test_snippets_window_and_marks():
    text = (
        "filler words here. " * 20 + "Then the database migrations were approved on Monday. " + "tail. " * 30
    )
    snippet = make_snippet(text, "database migration approved", width=80, mark=bold_markdown)
    assert snippet.startswith("\u2026") and snippet.endswith("\u2026")
    assert "**database** **migrations** were **approved**" in snippet
    assert len(snippet.replace("**", "")) <= 82
    assert make_snippet("short  text\nhere", "nothing") == "short text here"
    assert make_snippet("a the of", "the") == "a the of"  # stop words are not marked
