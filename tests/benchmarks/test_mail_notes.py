"""The mail and notes benchmark's question generation: deterministic, read from the files."""

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import mail_notes as mn  # noqa: E402


def test_a_paraphrase_drops_stop_words_and_every_third_word_and_reverses():
    sentence = "Obsidian stores your notes as plain text files in a folder on your device."
    assert mn.paraphrase(sentence) == "device folder text plain stores obsidian"
    assert mn.paraphrase(sentence) == mn.paraphrase(sentence)


def test_note_sections_leave_out_frontmatter_code_and_tables():
    text = "---\ntitle: x\n---\nIntro line here.\n# Setup\n```\ncode that is long enough to count as words\n```\n| a | b |\nProse of the setup.\n"
    assert list(mn.note_sections(text)) == [("", ["Intro line here."]), ("Setup", ["Prose of the setup."])]


def test_the_first_sentence_needs_eight_mostly_plain_words():
    assert mn.first_sentence(
        ["Too short.", "This sentence has", "more than eight plain words in it. Next one."]
    ) == ("This sentence has more than eight plain words in it.")
    assert mn.first_sentence(["x = foo(bar) + baz[0] * qux{1} / 2 - 3 ;"]) is None


def test_subject_tags_and_reply_prefixes_are_stripped():
    assert (
        mn._SUBJECT_TAGS.sub("", "Re: [PATCH 03/44] drivers/net: Remove semicolons")
        == "drivers/net: Remove semicolons"
    )
    assert mn._SUBJECT_TAGS.sub("", "[notmuch] [PATCH] Fix the tag search") == "Fix the tag search"


def test_mail_questions_from_a_maildir_skip_quotes_and_ask_each_thread_start_once(tmp_path, monkeypatch):
    cur = tmp_path / "box" / "cur"
    cur.mkdir(parents=True)
    first = (
        "Message-ID: <a@x>\nSubject: [PATCH] Fix the tag search in threads\n\n"
        "The tag search skipped every message of a thread after the first one.\n"
    )
    reply = (
        "Message-ID: <b@x>\nIn-Reply-To: <a@x>\nSubject: Re: [PATCH] Fix the tag search in threads\n\n"
        "Joe wrote:\n> The tag search skipped every message of a thread after the first one.\nApplied.\n"
    )
    (cur / "1:2,").write_text(first)
    (cur / "2:2,").write_text(reply)
    monkeypatch.setattr(mn, "SHARED_DATA", tmp_path)
    questions = list(mn.mail_questions(tmp_path / "box"))
    assert [(q.kind, q.where) for q in questions] == [("mail sentence", "a@x"), ("mail subject", "a@x")]
    assert questions[1].question == "Fix the tag search in threads"


def test_a_notes_questions_share_one_fold_and_the_folds_are_stable():
    def question(source: str, heading: str) -> mn.Question:
        return mn.Question("note sentence", "words of a question", source, heading, "A sentence.")

    first, second = question("markdown/v/a.md", "One"), question("markdown/v/a.md", "Two")
    assert mn.fold_of(first) == mn.fold_of(second) == mn.fold_of(question("markdown/v/a.md", "One"))
    folds = {mn.fold_of(question(f"markdown/v/note {i}.md", "")) for i in range(30)}
    assert folds == set(range(mn.FOLDS))
