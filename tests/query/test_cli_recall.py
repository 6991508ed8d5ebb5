"""`mind recall`: the table, JSON for scripts, --explain, scopes, time bounds, errors, access."""

from __future__ import annotations

import json
import re
import sys

import pytest

from mind_core.cli import EXIT_OK, EXIT_USAGE, main
from mind_core.embeddings import create_embedding_provider
from mind_core.mind import Mind
from mind_core.search.snippets import bold_markdown, make_snippet, shorten, without_mail_quotes
from mind_core.store.home import MindHome
from tests.query.helpers import CONVERSATION_TITLE, RECALL_ANSWER_KEYS, build_mind, harvest_conversation

# every test here runs on plain minds and on encrypted ones (tests/query/conftest.py)
pytestmark = pytest.mark.usefixtures("mind_encryption")


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
    assert code == EXIT_OK and lines[0].split() == ["#", "score", "time", "(UTC)", "from", "snippet"]
    assert f"default/gpt: {CONVERSATION_TITLE}" in out and "personal/user_stated" in out
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
    code, out, _ = recall(capsys, home, "PostgreSQL", "--json")
    data = json.loads(out)
    assert code == EXIT_OK and data["query"] == "PostgreSQL"
    assert [(r["workspace"], r["source"]) for r in data["results"]].count(("default", "gpt")) == 2
    assert ("personal", "user_stated") in [(r["workspace"], r["source"]) for r in data["results"]]
    top = next(r for r in data["results"] if r["workspace"] == "default")
    assert top["metadata"]["provenance"]["source"] == "gpt" and top["metadata"]["provenance"]["container"] == "conv-42"
    assert top["attribution"] == f"default/gpt: {CONVERSATION_TITLE}"
    assert data["external_available"] is False and data["has_conflict"] is False
    # one list, each result once, and the score parts only under explain
    assert set(data) == RECALL_ANSWER_KEYS
    assert not {"rrf_score", "relevance_score", "final_score"} & set(top["metadata"])
    assert "explain" not in top  # only when asked for
    _, out, _ = recall(capsys, home, "PostgreSQL", "--json", "--explain")
    explained = json.loads(out)["results"][0]["explain"]
    assert {"rrf_score", "relevance_score", "final_score", "max_relevance", "relevance"} <= set(explained)


def test_limit_is_the_number_of_results_across_both_minds(capsys, home):
    _, out, _ = recall(capsys, home, "PostgreSQL", "--json", "--limit", "3")
    everything = json.loads(out)["results"]
    assert len(everything) == 3 and {r["workspace"] for r in everything} == {"default", "personal"}
    for limit in (1, 2):
        _, out, _ = recall(capsys, home, "PostgreSQL", "--json", "--limit", str(limit))
        assert json.loads(out)["results"] == everything[:limit]  # the first of the same answer
    _, out, _ = recall(capsys, home, "PostgreSQL", "--limit", "2")
    assert [line.split()[0] for line in out.splitlines() if line[:1].isdigit()] == ["1", "2"]


def test_explain_shows_lane_ranks_and_score_parts(capsys, home):
    code, out, _ = recall(capsys, home, "PostgreSQL", "migration", "--explain", "--scope", "workspace")
    explain = [line for line in out.splitlines() if line.startswith("#1 ")]
    assert code == EXIT_OK and explain
    assert "keyword rank" in explain[0] and "vector rank" in explain[0]  # which is first depends on the fusion
    assert "temporal" in explain[0] and "importance" in explain[0] and "match" in explain[0]


def workspaces(out: str) -> list[str]:
    return [r["workspace"] for r in json.loads(out)["results"]]


def test_scopes_and_workspaces(capsys, home):
    _, out, _ = recall(capsys, home, "PostgreSQL", "--scope", "personal", "--json")
    assert workspaces(out) == ["personal"]
    _, out, _ = recall(capsys, home, "PostgreSQL", "--workspace", "team", "--scope", "workspace", "--json")
    assert [(r["workspace"], r["content"]) for r in json.loads(out)["results"]] == [
        ("team", "Team decided: PostgreSQL for billing")
    ]
    _, out, _ = recall(capsys, home, "PostgreSQL", "--workspace", "team")
    assert "team/user_stated" in out and "personal/user_stated" in out
    for scope in ("all", "workspace", "personal"):  # the personal mind is that workspace's mind
        _, out, _ = recall(capsys, home, "PostgreSQL", "--workspace", "personal", "--scope", scope, "--json")
        assert workspaces(out) == ["personal"], scope


def test_time_bounds(capsys, home):
    _, out, _ = recall(capsys, home, "PostgreSQL", "--until", "2024-12-31", "--json")
    assert workspaces(out) == ["default", "default"]  # the personal frame is new
    _, out, _ = recall(capsys, home, "PostgreSQL", "--since", "2025-01-01", "--json")
    assert "default" not in workspaces(out)
    # a year or a year-month is its whole span: the first instant as a start, the last as an end
    _, out, _ = recall(capsys, home, "PostgreSQL", "--since", "2024", "--until", "2024", "--json")
    assert workspaces(out) == ["default", "default"]
    _, out, _ = recall(capsys, home, "PostgreSQL", "--since", "2025-01", "--json")
    assert "default" not in workspaces(out)


def test_an_inverted_time_range_is_a_usage_error(capsys, home):
    code, _, err = recall(capsys, home, "PostgreSQL", "--since", "2011-01-01", "--until", "2010-01-01")
    assert code == EXIT_USAGE and "since '2011-01-01' is after until '2010-01-01'" in err
    code, _, err = recall(capsys, home, "PostgreSQL", "--since", "2010-06", "--until", "2010-05")
    assert code == EXIT_USAGE and "is after until" in err


def test_errors_and_exit_codes(capsys, home):
    code, _, err = recall(capsys, home, "x", "--workspace", "ghost")
    assert code == EXIT_USAGE and err == (
        "error: no mind for workspace 'ghost' (minds: default, team, personal); "
        "`mind sources add PATH -w ghost` creates it\n"
    )
    code, _, err = recall(capsys, home, "x", "--workspace", "../etc")
    assert code == EXIT_USAGE and "invalid workspace name" in err
    code, _, err = recall(capsys, home, "x", "--limit", "0")
    assert code == EXIT_USAGE and "limit must be between 1 and 100 (got 0)" in err
    code, _, err = recall(capsys, home, "x", "--since", "someday")
    assert code == EXIT_USAGE and "since must be an ISO-8601 date or date/time" in err
    code, out, err = recall(capsys, home, "zzzqqq", "--scope", "workspace", "--workspace", "team")
    # the closest, not a match: said on stderr, so piped output stays the table alone
    assert code == EXIT_OK and "no confident match for 'zzzqqq'" in err
    assert out.splitlines()[0].split()[:2] == ["#", "score"]
    code, out, err = recall(capsys, home, "zzzqqq", "--workspace", "team", "--json")
    assert code == EXIT_OK and "no confident match" not in out + err and json.loads(out)["results"]


def test_recall_reads_only_unless_asked_to_record_access(capsys, home):
    def counts():
        with Mind.open(home.personal_path, readonly=True) as mind:
            return mind.db.scalar("SELECT access_count FROM memory_frames")

    def scores() -> list[float]:
        _, out, _ = recall(capsys, home, "PostgreSQL", "--json")
        return [r["score"] for r in json.loads(out)["results"]]

    first = scores()
    assert scores() == first and counts() == 0  # the same query scores the same the next time
    recall(capsys, home, "PostgreSQL", "--scope", "personal", "--record-access")
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


def test_json_snippets_around_the_query_words(capsys, home):
    _, out, _ = recall(capsys, home, "PostgreSQL", "--json")
    full = {r["metadata"]["frame_id"]: r["content"] for r in json.loads(out)["results"]}
    code, out, _ = recall(capsys, home, "PostgreSQL", "--json", "--snippet-chars", "20")
    results = json.loads(out)["results"]
    assert code == EXIT_OK and results
    assert any(len(r["content"]) < len(full[r["metadata"]["frame_id"]]) for r in results)
    assert all("PostgreSQL" in r["content"] for r in results)
    # drawn from the text, as the table's are: the title the result opens with is shown apart
    code, out, _ = recall(capsys, home, "Falcon", "planning", "--json", "--snippet-chars", "60")
    harvested = [r for r in json.loads(out)["results"] if r["metadata"]["provenance"].get("title") == CONVERSATION_TITLE]
    assert harvested and full[harvested[0]["metadata"]["frame_id"]].startswith(f"[{CONVERSATION_TITLE}]")
    assert all(CONVERSATION_TITLE not in r["content"] for r in harvested)


def test_a_snippet_shows_the_passage_with_the_most_query_words_not_the_subject_line():
    mail = (
        "[[notmuch] Working with Maildir storage?] Lars wrote: I saw the article and decided to"
        " take a look at notmuch. Is the list archived anywhere? I would like to read older posts."
    )
    snippet = make_snippet(mail, "is the notmuch list archived", width=80)
    assert "list archived anywhere" in snippet and snippet.startswith("\u2026")
    assert "Working with Maildir storage" in make_snippet(mail, "Maildir", width=80)  # the only place it is


def test_the_snippet_does_not_repeat_the_title_the_from_column_shows(capsys, home):
    code, out, _ = recall(capsys, home, "PostgreSQL", "migration", "--json")
    content = next(r["content"] for r in json.loads(out)["results"] if r["workspace"] == "default")
    assert content.startswith(f"[{CONVERSATION_TITLE}]")  # the frame's text opens with its title
    code, out, _ = recall(capsys, home, "PostgreSQL", "migration")
    rows = [line for line in out.splitlines() if f"default/gpt: {CONVERSATION_TITLE}" in line]
    assert code == EXIT_OK and rows and all(f"[{CONVERSATION_TITLE}]" not in row for row in rows)


def test_snippet_chars_sets_the_table_s_snippets_too(capsys, home):
    _, wide, _ = recall(capsys, home, "PostgreSQL", "migration")
    code, narrow, _ = recall(capsys, home, "PostgreSQL", "migration", "--snippet-chars", "20")
    assert code == EXIT_OK and "PostgreSQL migration plan was approved" in wide
    assert "PostgreSQL migration plan was approved" not in narrow and "\u2026" in narrow


def test_a_long_title_is_cut_at_a_word_with_an_ellipsis():
    title = "[PATCH 00/44] remove unnecessary casts of void pointers"
    assert shorten(title, 30) == "[PATCH 00/44] remove\u2026"
    assert shorten("[notmuch] archive", 30) == "[notmuch] archive"
    assert len(shorten("x" * 50, 30)) == 30  # one long word: cut inside it


def test_quoted_lines_of_a_mail_reply_are_not_its_snippet_when_it_says_something():
    reply = (
        "Mikhail Gusarov <m@example.org>: Twas brillig when lars did gyre and gimble:\n\n"
        " LK> Is the list archived anywhere?  The obvious archives\n"
        " LK> aren't available.\n"
        "> > an older quote\n\n"
        "Just has been pushed"
    )
    own = without_mail_quotes(reply)
    assert "LK>" not in own and "older quote" not in own and own.endswith("Just has been pushed")
    only_quotes = "Lars wrote:\n> Is the list archived anywhere?"
    assert without_mail_quotes(only_quotes) == only_quotes  # nothing of its own: the quote is all there is
    assert without_mail_quotes("Use a -> b, then HTML> tags") == "Use a -> b, then HTML> tags"


def test_explain_names_who_said_each_turn_when_the_question_names_a_speaker(capsys, tmp_path):
    home = MindHome(tmp_path / "home")
    turns = [
        ("Caroline", "Caroline: Melanie, what did you paint this weekend?"),
        ("Melanie", "Melanie: a sunset over the lake, my first painting in oils"),
        ("Caroline", "Caroline: Melanie, your painting is lovely"),
        ("assistant", "What a lovely painting"),
    ]
    with Mind.open(home.workspace_path("default"), embedder=create_embedding_provider("mock")) as mind:
        mind.sessions.ensure("chat")
        frames = [
            mind.frames.create_i_frame("chat", text, metadata={"provenance": {"role": role}}) for role, text in turns
        ]
        mind.search.index_frames_batch(frames)
    query = ("What", "painting", "did", "Melanie", "make?", "--scope", "workspace", "--limit", "4")
    code, out, _ = recall(capsys, home, *query, "--explain")
    lines = explain_lines(out)
    assert code == EXIT_OK and len(lines) == 4
    assert sum("said by Melanie (named)" in line for line in lines) == 1
    assert sum("said by Caroline (another speaker)" in line for line in lines) == 2
    # an AI chat's side is a role, not a name: said by no one the question could name
    assert sum("said by assistant (another speaker)" in line for line in lines) == 1
    assert all("(lanes searched without Melanie)" in line for line in lines)
    _, out, _ = recall(capsys, home, *query, "--explain", "--json")
    said = {r["content"]: (r["explain"]["speaker"], r["explain"]["speaker_score"]) for r in json.loads(out)["results"]}
    assert said[turns[1][1]] == ("Melanie", 1.0) and said[turns[0][1]] == ("Caroline", 0.0)


def test_explain_names_the_time_part_the_search_gives_and_no_other(capsys, home):
    code, out, _ = recall(capsys, home, "PostgreSQL", "migration", "in", "March", "2024", "--explain")
    lines = explain_lines(out)
    assert code == EXIT_OK and len(lines) == 3
    times = [re.search(r", time (\d\.\d\d) for 2024-03-01\.\.2024-04-01 \(March 2024\)", line) for line in lines]
    assert all(times) and {m.group(1) for m in times} == {"1.00", "0.00"}  # the conversation's turns / today's note
    assert not any("dated text" in line for line in lines)  # the "when" preference is gone from the search


def explain_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if re.match(r"#\d+ ", line)]
