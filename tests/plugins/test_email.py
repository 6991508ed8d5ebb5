"""The email source on the real mail corpora in ../shared/data and on small hand-made mailboxes."""

from __future__ import annotations

import email as stdlib_email
import re
import tracemalloc
from collections import Counter
from email import policy
from email.header import decode_header, make_header
from email.utils import parsedate_to_datetime
from pathlib import Path

from mind_harvest.plugins.email import EmailSource, subject_key
from mind_harvest.plugins.html_text import html_to_text
from mind_harvest.plugins.mail_text import decode_header_value, parse_date, strip_replies

from mind_core import plugins
from mind_core.harvest import format_utc
from mind_core.harvest.items import HarvestError, HarvestItem, HarvestMessage

SOURCE = EmailSource()


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(SOURCE.scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def messages_of(items: list[HarvestItem]) -> list[HarvestMessage]:
    return [m for item in items for m in item.messages]


def by_path(items: list[HarvestItem]) -> dict[str, HarvestMessage]:
    return {m.metadata["path"]: m for m in messages_of(items)}


def stdlib_parse(path: Path) -> stdlib_email.message.Message:
    return stdlib_email.message_from_bytes(path.read_bytes(), policy=policy.compat32)


def reference_threads(folder: Path, link_junk: bool) -> list[set[str]]:
    """Threads computed independently (compat32 parsing, BFS over a Message-ID graph), as sets of
    file names. ``link_junk`` also follows ids without ``@`` (like ``<yes>``), as notmuch does."""
    edges: dict[str, set[str]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        parsed = stdlib_parse(path)
        ids = re.findall(
            r"<([^<>]+)>", " ".join(str(parsed.get(h, "")) for h in ("references", "in-reply-to"))
        )
        own = re.findall(r"<([^<>]+)>", str(parsed.get("message-id", "")))
        node = f"file:{path.relative_to(folder).as_posix()}"
        for linked in [*own, *(i for i in ids if link_junk or "@" in i)]:
            edges.setdefault(node, set()).add(f"id:{linked}")
            edges.setdefault(f"id:{linked}", set()).add(node)
    seen: set[str] = set()
    threads = []
    for start in edges:
        if start in seen or not start.startswith("file:"):
            continue
        component, stack = set(), [start]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if node.startswith("file:"):
                component.add(node[5:])
            stack.extend(edges[node])
        threads.append(component)
    return threads


def files_of(item: HarvestItem) -> set[str]:
    return {p for m in item.messages for p in [m.metadata["path"], *m.metadata.get("copies", [])]}


# --- module naming ---------------------------------------------------------------------------------


def test_stdlib_email_is_not_shadowed_by_the_plugin_module() -> None:
    import mind_harvest.plugins.email as plugin_module

    assert plugin_module is not stdlib_email
    assert Path(stdlib_email.__file__).parent.name == "email"
    assert "plugins" not in Path(stdlib_email.__file__).parts
    assert hasattr(stdlib_email, "message_from_bytes") and hasattr(plugin_module, "EmailSource")
    assert isinstance(plugins.get_source("email"), EmailSource)


# --- the real corpora ------------------------------------------------------------------------------


def test_cpython_messages(shared_data: Path) -> None:
    folder = shared_data / "email" / "cpython-test_email"
    items, errors = scan(folder)
    assert errors == []
    with_headers = {p.name for p in folder.iterdir() if stdlib_parse(p).keys()}
    assert len(with_headers) == 46  # msg_19.txt is a bare digest body with no header at all
    messages = messages_of(items)
    imported = {p for item in items for p in files_of(item)}
    assert imported == with_headers
    assert len(messages) + sum(len(m.metadata.get("copies", [])) for m in messages) == 46
    paths = by_path(items)
    # four files with the same Message-ID and byte-identical bodies are one message...
    assert sorted(paths["msg_01.txt"].metadata["copies"]) == ["msg_03.txt", "msg_20.txt", "msg_29.txt"]
    # ...while a fifth reusing that id with another body stays separate, under its own key
    assert paths["msg_14.txt"].metadata["duplicate_message_id"] is True
    assert paths["msg_14.txt"].key != paths["msg_01.txt"].key
    assert len({m.key for m in messages}) == len(messages)
    # a header block without the blank line before the body (msg_35) still parses
    assert paths["msg_35.txt"].metadata["subject"] == "here's something interesting"


def test_mail_parser_messages_and_the_outlook_file(shared_data: Path) -> None:
    folder = shared_data / "email" / "mail-parser"
    items, errors = scan(folder)
    [outlook] = errors
    assert outlook.path.endswith("mail_outlook_1") and "Outlook" in outlook.reason
    mails = {p.name for p in folder.iterdir() if p.name.startswith("mail_") and p.name != "mail_outlook_1"}
    assert len(mails) == 22
    assert set(by_path(items)) == mails  # every other file, malformed ones included, is one message
    assert all(m.text.strip() for m in messages_of(items))


def test_rfc2047_subjects_match_the_stdlib_decoder(shared_data: Path) -> None:
    compared = 0
    for corpus in ("mail-parser", "cpython-test_email"):
        folder = shared_data / "email" / corpus
        items, _ = scan(folder)
        for path, message in by_path(items).items():
            raw = stdlib_parse(folder / path).get("subject")
            if raw is None:
                continue
            try:
                expected = str(make_header(decode_header(str(raw))))
            except (LookupError, UnicodeDecodeError, ValueError):
                continue
            if "\ufffd" in expected or "=?" in expected:
                continue
            assert message.metadata["subject"] == " ".join(expected.split()), path
            compared += 1
    assert compared > 50


def test_encoded_names_charsets_and_attachments(shared_data: Path) -> None:
    folder = shared_data / "email" / "mail-parser"
    paths = by_path(scan(folder)[0])
    russian = paths["mail_test_1"]
    assert russian.metadata["subject"] == "письмо уведом-е"
    assert russian.author == "служба ФНС Даниил Суворов <suvorov.s@nalg.ru>"
    assert russian.metadata["attachments"] == [
        {"name": "ФНС_РФ558.zip", "content_type": "application/octet-stream"}
    ]
    assert "Информируем Вас" in russian.text  # HTML-only body, base64, converted to text
    assert "<br>" not in russian.text and "<p>" not in russian.text
    comma = paths["mail_test_18"]
    assert comma.author == "LastßlName, FirstName <comma.name@example.com>"
    mislabeled = paths["mail_test_12"]  # says gb2312, is UTF-8
    assert mislabeled.text.startswith("你好")
    assert mislabeled.metadata["decode_notes"] == ["declared gb2312 but is UTF-8"]

    weather = paths["mail_test_2"]
    expected = {
        (part.get_filename(), part.get_content_type())
        for part in stdlib_parse(folder / "mail_test_2").walk()
        if part.get_filename()
    }
    assert {(a["name"], a["content_type"]) for a in weather.metadata["attachments"]} == expected


def test_forward_keeps_the_forwarded_mail(shared_data: Path) -> None:
    forward = by_path(scan(shared_data / "email" / "mail-parser" / "mail_test_7")[0])["mail_test_7"]
    assert forward.metadata["subject"] == "I: Ordine"
    assert forward.text.startswith("Ciao sere mi puoi dire")
    assert "Inizio messaggio inoltrato" in forward.text and "Anna Milone" in forward.text


def test_dates_become_utc_from_their_zones(shared_data: Path) -> None:
    checked = 0
    for corpus in ("mail-parser", "cpython-test_email", "notmuch-corpus"):
        folder = shared_data / "email" / corpus
        for path, message in by_path(scan(folder)[0]).items():
            raw = stdlib_parse(folder / path).get("date")
            try:
                expected = format_utc(parsedate_to_datetime(str(raw)))
            except (TypeError, ValueError):
                continue  # no Date, or not a date: covered below and by the hand-made mbox
            assert message.timestamp == expected, path
            checked += 1
    assert checked > 100
    paths = by_path(scan(shared_data / "email" / "mail-parser")[0])
    assert paths["mail_test_12"].metadata["date"] == "Sun, 13 May 2018 12:32:22 +0800"
    assert paths["mail_test_12"].timestamp == "2018-05-13T04:32:22.000Z"
    # no Date header: the newest Received time stands in, and the metadata says so
    assert paths["mail_test_1"].metadata["date_problem"] == "no Date header"
    assert paths["mail_test_1"].metadata["date_source"] == "received"
    assert paths["mail_test_1"].timestamp is not None


def test_notmuch_default_maildir_threads(shared_data: Path) -> None:
    folder = shared_data / "email" / "notmuch-corpus" / "default"
    items, errors = scan(folder)
    assert errors == []
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert len(files) == 53
    assert set().union(*(files_of(item) for item in items)) == files
    assert sorted(map(sorted, (files_of(item) for item in items))) == sorted(
        map(sorted, reference_threads(folder, link_junk=True))
    )
    message_ids = Counter(str(stdlib_parse(folder / f).get("message-id")).strip() for f in files)
    assert len(messages_of(items)) == len(message_ids) == 52  # one mail is stored in two folders
    for item in items:
        times = [m.timestamp for m in item.messages]
        assert times == sorted(times)
        assert item.kind == "email" and item.container_key == item.metadata["thread_root"]
    assert {m.metadata["maildir_flags"] for m in messages_of(items)} == {""}


def test_inline_reply_keeps_the_answers_and_drops_the_quotes(shared_data: Path) -> None:
    folder = shared_data / "email" / "notmuch-corpus" / "default"
    reply = by_path(scan(folder)[0])["cur/41:2,"]
    assert "Welcome, Lars!" in reply.text
    assert "Sadly, the lwn article coincided" in reply.text
    assert "Notmuch works just fine with maildir" in reply.text
    assert "I saw the LWN article" not in reply.text  # quoted
    assert "Too many open files" not in reply.text  # quoted
    assert "wrote:" not in reply.text  # the attribution line went with its quote
    assert reply.metadata["quoted_lines_removed"] == 8


def test_lkml_threads_and_copies(shared_data: Path) -> None:
    folder = shared_data / "email" / "notmuch-corpus" / "lkml"
    items, errors = scan(folder)
    assert errors == []
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert len(files) == 180
    distinct_ids = {str(stdlib_parse(folder / f).get("message-id")).strip() for f in files}
    assert len(messages_of(items)) == len(distinct_ids) == 148  # 32 mails arrived twice (two lists)

    # Threads as the corpus README counts them (100 and 80 files) only exist when the junk
    # reference <yes> (git send-email's In-Reply-To prompt answered "yes") links messages;
    # we thread on real ids only, which must give exactly the independent real-id threads.
    readme_threads = sorted(len(t) for t in reference_threads(folder, link_junk=True))
    assert readme_threads == [80, 100]
    ours = sorted(map(sorted, (files_of(item) for item in items)))
    assert ours == sorted(map(sorted, reference_threads(folder, link_junk=False)))
    [series] = [item for item in items if len(files_of(item)) == 100]
    assert series.container_key == "cover.1289789604.git.joe@perches.com"
    assert series.title == "[PATCH 00/44] remove unnecessary semicolons"
    assert series.messages[0].metadata["message_id"] == series.container_key
    for item in items:  # the <yes> link had joined 2009 notmuch mail with 2010 cifs patches
        years = {m.timestamp[:4] for m in item.messages}
        assert len(years) == 1, item.title


def test_lkml_quote_attribution_and_signature_stripping(shared_data: Path) -> None:
    paths = by_path(scan(shared_data / "email" / "notmuch-corpus" / "lkml")[0])
    reply = paths["cur/1354585346.000323:2,"]
    assert reply.text.startswith("Hello.\n\nThanks for the review.")
    assert "This function should interpret the flags" not in reply.text
    assert "Keith Packard wrote:" not in reply.text
    assert reply.metadata["attachments"] == [
        {"name": "signature.asc", "content_type": "application/pgp-signature"}
    ]
    other = paths["cur/1354585346.000324:2,"]
    assert "Stefan Schmidt <stefan@datenfreihafen.org> wrote:" not in other.text
    for message in paths.values():
        lines = message.text.split("\n")
        assert "-- " not in lines  # signatures (git's version footer on patches included) are cut
        if message.metadata["quoted_lines_removed"]:
            assert not any(line.startswith(">") for line in lines)
    patch = next(m for m in paths.values() if m.metadata["subject"].startswith("[PATCH 01/44]"))
    assert "diff --git" in patch.text and patch.metadata["signature_removed"]


def test_mimekit_mboxes(shared_data: Path) -> None:
    folder = shared_data / "email" / "mimekit-mbox"
    items, errors = scan(folder)
    assert errors == []
    counts = Counter(m.metadata["path"] for m in messages_of(items))
    # README says 3 for unmunged.mbox, MimeKit's own test expects 4 (one per "From " line); the file
    # holds 2 messages whose bodies quote "From Russia with love" without mbox escaping.
    assert counts == {
        "netscape-content-length.mbox": 29,
        "simple.mbox": 3,
        "gmail-style-issue1189.mbox": 4,
        "unmunged.mbox": 2,
    }
    unmunged = sorted(
        (m for m in messages_of(items) if m.metadata["path"] == "unmunged.mbox"),
        key=lambda m: m.metadata["mbox_index"],
    )
    assert [m.text.split("\n")[2] for m in unmunged] == ["From Russia with love", "From Russia with love"]
    assert unmunged[1].text.endswith("Year: 1963\n\nWhat did Thunderbird do this time?")

    # Netscape's "From - " separators: subjects in file order, found by a plain split on those lines
    raw = (folder / "netscape-content-length.mbox").read_bytes()
    chunks = re.split(rb"(?m)^From - .*\n", raw)[1:]
    expected = [
        str(make_header(decode_header(stdlib_email.message_from_bytes(c)["subject"]))) for c in chunks
    ]
    netscape = sorted(
        (m for m in messages_of(items) if m.metadata["path"] == "netscape-content-length.mbox"),
        key=lambda m: m.metadata["mbox_index"],
    )
    assert [m.metadata["subject"] for m in netscape] == [" ".join(s.split()) for s in expected]

    gmail = sorted(
        (m for m in messages_of(items) if m.metadata["path"] == "gmail-style-issue1189.mbox"),
        key=lambda m: m.metadata["mbox_index"],
    )
    assert [m.text for m in gmail] == [f"Body of message {i}." for i in range(1, 5)]
    assert gmail[1].metadata["attachments"] == [
        {"name": "Attachment.zip", "content_type": "application/x-zip-compressed"}
    ]


def test_richtext_and_broken_boundaries_still_give_text(shared_data: Path) -> None:
    netscape = [
        m
        for m in messages_of(scan(shared_data / "email" / "mimekit-mbox" / "netscape-content-length.mbox")[0])
    ]
    richtext = next(m for m in netscape if m.metadata["subject"] == "More richtext questions/comments")
    assert richtext.metadata["content_type"] == "text/richtext"
    assert "<nl>" not in richtext.text and "I think the biggest problem with point size" in richtext.text
    assert richtext.author == "develop!nextmime@ebony@sblab.att.com"
    spam = by_path(scan(shared_data / "email" / "mail-parser")[0])
    assert "Problemas para visualizar" in spam["mail_malformed_3"].text  # declared boundary never used
    assert spam["mail_malformed_1"].metadata["attachments"] == [
        {"name": "20160523_916527.jpg_.zip", "content_type": "application/zip"}
    ]  # found after a premature closing boundary


# --- hand-made mailboxes ---------------------------------------------------------------------------

QUOTED_POSTMARK_BODY = (
    b"A reply quoting a postmark:\nFrom x@example.com Mon Mar 11 10:00:00 2024\nSubject: not a new message\n"
)
MBOX = (
    b"From alice@example.com Mon Mar 11 08:15:00 2024\n"
    b"From: Alice <alice@example.com>\nSubject: Plan\nDate: Mon, 11 Mar 2024 09:15:00 +0530\n"
    b"Message-ID: <plan-1@example.com>\n\n"
    b"First message.\nFrom the desk of Alice: this line starts with 'From ' but is prose.\n"
    b">From an escaped line.\n\n"
    b"From - \nX-Junk: only an unknown header\nthis block has no real headers\n\n"
    b"From bob@example.com Mon Mar 11 09:00:00 2024\n"
    b"From: Bob <bob@example.com>\nSubject: Re: Plan\nDate: not a date at all\n"
    b"In-Reply-To: <plan-1@example.com>\nMessage-ID: <plan-2@example.com>\n"
    b"Content-Type: text/plain; charset=x-bogus-charset\n"
    b"Content-Length: " + str(len(QUOTED_POSTMARK_BODY)).encode() + b"\n\n" + QUOTED_POSTMARK_BODY + b"\n"
    b"From carol@example.com Mon Mar 11 10:00:00 2024\n"
    b"From: =?x-unknown?Q?Caf=E9?= <carol@example.com>\nSubject: =?utf-8?B?w6k=?= =?utf-8?B?dMOp?= news\n"
    b"Date: Mon, 11 Mar 2024 10:00:00 -0000\nMessage-ID: <news@example.com>\n\nStandalone.\n"
)


def test_mbox_with_broken_message_bad_dates_and_bad_charsets(tmp_path: Path) -> None:
    path = tmp_path / "mixed.mbox"
    path.write_bytes(MBOX)
    items, errors = scan(path)
    [broken] = errors
    assert broken.path == str(path) and broken.record.startswith("message 1 (byte ")
    assert "no RFC 822 header block" in broken.reason
    threads = {item.title: item for item in items}
    assert set(threads) == {"Plan", "été news"}
    plan = threads["Plan"]
    assert [m.metadata["message_id"] for m in plan.messages] == ["plan-1@example.com", "plan-2@example.com"]
    first, reply = plan.messages
    assert first.timestamp == "2024-03-11T03:45:00.000Z"
    assert "From the desk of Alice" in first.text
    assert first.text.endswith("\nFrom an escaped line.")  # mboxrd ">From" unescaped
    assert reply.timestamp is None and reply.metadata["date_problem"].startswith("unparseable Date header")
    # the body's postmark-like lines stay in the body: its Content-Length ends on the next separator
    assert reply.text.endswith("From x@example.com Mon Mar 11 10:00:00 2024\nSubject: not a new message")
    assert reply.metadata["decode_notes"] == ["unknown charset 'x-bogus-charset'"]
    news = threads["été news"]
    assert news.messages[0].author == "Café <carol@example.com>"
    assert news.messages[0].timestamp == "2024-03-11T10:00:00.000Z"


def test_content_length_is_ignored_when_it_does_not_land_on_a_separator(tmp_path: Path) -> None:
    mbox = (
        b"From a@example.com Mon Mar 11 08:15:00 2024\nFrom: a@example.com\nSubject: one\nContent-Length: 3\n\n"
        b"longer than three bytes\n\nFrom b@example.com Mon Mar 11 08:16:00 2024\nFrom: b@example.com\nSubject: two\n\nb\n"
    )
    (tmp_path / "box.mbox").write_bytes(mbox)
    items, errors = scan(tmp_path / "box.mbox")
    assert errors == []
    assert sorted(m.text for m in messages_of(items)) == ["b", "longer than three bytes"]


def test_bad_files_in_a_mail_folder(tmp_path: Path) -> None:
    (tmp_path / "good.eml").write_bytes(b"From: a@example.com\nSubject: ok\nMessage-ID: <ok@x>\n\nhello\n")
    (tmp_path / "empty.eml").write_bytes(b"")
    (tmp_path / "notmail.eml").write_bytes(b"just some text\nwithout headers\n")
    (tmp_path / "outlook.msg").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    (tmp_path / "README").write_bytes(b"This folder holds mail.\n")
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(100))
    (tmp_path / "notes.md").write_bytes(
        b"Title: a note\nDate: 2024-01-01\n\nMultiMarkdown metadata, not mail\n"
    )
    items, errors = scan(tmp_path)
    assert sorted((Path(e.path).name, e.reason.split(" ")[0]) for e in errors) == [
        ("empty.eml", "empty"),
        ("notmail.eml", "not"),
        ("outlook.msg", "binary"),
    ]
    assert [m.metadata["path"] for m in messages_of(items)] == ["good.eml"]


def test_maildir_tmp_is_skipped_and_flags_are_read(tmp_path: Path) -> None:
    for sub, name, subject in [
        ("cur", "1.host:2,RS", "seen"),
        ("new", "2.host", "new"),
        ("tmp", "3.host", "partial"),
    ]:
        (tmp_path / sub).mkdir()
        (tmp_path / sub / name).write_bytes(
            f"From: a@example.com\nSubject: {subject}\n\nbody {subject}\n".encode()
        )
    assert SOURCE.detect(tmp_path)
    items, errors = scan(tmp_path)
    assert errors == []
    flags = {m.metadata["subject"]: m.metadata.get("maildir_flags") for m in messages_of(items)}
    assert flags == {"seen": "RS", "new": None}


def test_copies_merge_and_keys_are_stable_without_message_ids(tmp_path: Path) -> None:
    raw = b"From: a@example.com\nSubject: no id\nDate: Tue, 2 Jan 2024 10:00:00 +0000\n\nsame text\n"
    for folder in ("inbox", "archive"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.eml").write_bytes(raw)
    (tmp_path / "inbox" / "other.eml").write_bytes(raw.replace(b"same text", b"other text"))
    first, _ = scan(tmp_path)
    second, _ = scan(tmp_path)
    assert [m.key for m in messages_of(first)] == [m.key for m in messages_of(second)]
    assert len(messages_of(first)) == 2
    [merged] = [m for m in messages_of(first) if m.text == "same text"]
    assert merged.metadata["copies"] == ["inbox/m.eml"] and merged.metadata["path"] == "archive/m.eml"
    assert merged.metadata["message_id"] is None
    assert merged.key != next(m for m in messages_of(first) if m.text == "other text").key


def test_threads_fall_back_to_reply_subjects(tmp_path: Path) -> None:
    def mail(name: str, subject: str, day: int) -> None:
        (tmp_path / name).write_bytes(
            f"From: x@example.com\nSubject: {subject}\nDate: Mon, {day} Jan 2024 10:00:00 +0000\n"
            f"Message-ID: <{name}@example.com>\n\n{name}\n".encode()
        )

    mail("a", "[team] Budget 2024", 1)
    mail("b", "RE: [team] AW: Budget 2024", 2)  # a reply whose client dropped References
    mail("c", "Budget 2024", 3)  # same subject, not a reply: its own thread
    items, _ = scan(tmp_path)
    assert sorted(sorted(m.text for m in item.messages) for item in items) == [["a", "b"], ["c"]]
    assert subject_key("Re: [team] AW: Fwd: Budget  2024") == "budget 2024"


def test_html_reply_quotes_and_outlook_blocks(tmp_path: Path) -> None:
    (tmp_path / "html.eml").write_bytes(
        b"From: a@example.com\nSubject: Re: html\nContent-Type: text/html; charset=utf-8\n\n"
        b"<div>My answer is <b>yes</b>.</div><div class=gmail_quote>On Mon, 1 Jan 2024, B wrote:<br>"
        b"<blockquote>the question</blockquote></div>"
    )
    (tmp_path / "outlook.eml").write_bytes(
        b"From: a@example.com\nSubject: RE: numbers\n\nThe numbers are final.\n\n"
        b"-----Original Message-----\nFrom: B\nSent: Monday\nSubject: numbers\n\nAre the numbers final?\n"
    )
    paths = by_path(scan(tmp_path)[0])
    assert paths["html.eml"].text == "My answer is yes."
    assert paths["outlook.eml"].text == "The numbers are final."
    assert paths["outlook.eml"].metadata["original_message_removed"] is True


def test_strip_replies_rules() -> None:
    only_quote = "On Mon, X wrote:\n> everything is quoted\n"
    assert strip_replies(only_quote).text == only_quote.strip()  # nothing would remain: keep it
    wrapped = "Answer first.\n\nOn Tue, 17 Nov 2009 at 11:35 PM, Jan Janak <jan at\nryngle.com> wrote:\n> q\n"
    assert strip_replies(wrapped).text == "Answer first."
    outlook = "Reply.\n\n________________________________\nFrom: B\nSent: Monday\nTo: A\nSubject: x\n\nold"
    assert strip_replies(outlook).text == "Reply."
    footer = (
        "Text.\n_______________________________________________\nnotmuch mailing list\nhttp://x/listinfo\n"
    )
    assert strip_replies(footer).text == "Text."
    long_tail = "Text.\n--\n" + "\n".join(f"line {i}" for i in range(20))
    assert "line 19" in strip_replies(long_tail).text  # a bare "--" before a long text is not a signature


def test_header_and_date_helpers() -> None:
    assert decode_header_value("=?utf-8?q?caf=C3?= =?utf-8?q?=A9?=") == "café"  # split multibyte char
    assert decode_header_value("=?iso-8859-1?Q?caf=E9?= and plain") == "café and plain"
    assert decode_header_value("=?bogus?B?!!!?=") == "=?bogus?B?!!!?="
    assert parse_date("Fri, 23 Aug 2002 2:32:53 -0400") == ("2002-08-23T06:32:53.000Z", None)
    assert parse_date("yesterday")[0] is None


def test_html_to_text() -> None:
    html = (
        "<html><head><title>t</title><style>p{color:red}</style></head><body><p>Hello <b>world</b>,&nbsp;a&amp;b.</p>"
        "<ul><li>one</li><li>two</li></ul><ol><li>first</li></ol><blockquote>quoted</blockquote>"
        "<table><tr><td>a</td><td>b</td></tr></table><pre>x  y\n  z</pre><script>alert(1)</script></body></html>"
    )
    assert (
        html_to_text(html) == "Hello world, a&b.\n\n- one\n- two\n\n1. first\n\n> quoted\n\na | b\n\nx  y\n  z"
    )
    assert html_to_text("<p>unclosed <b>bold<p>next") == "unclosed bold\n\nnext"


def test_large_mbox_streams_with_bounded_memory(tmp_path: Path) -> None:
    """Pass 1 keeps small records, pass 2 one thread at a time: peak memory stays far below the file."""
    path = tmp_path / "big.mbox"
    body = ("lorem ipsum dolor sit amet " * 40 + "\n") * 200  # ~216 KB per message
    with open(path, "w", encoding="ascii") as handle:
        for index in range(60):
            handle.write(
                f"From sender@example.com Mon Jan  1 00:00:{index % 60:02d} 2024\nFrom: s@example.com\n"
                f"Subject: message {index}\nMessage-ID: <m{index}@example.com>\n\n{body}\n"
            )
    size = path.stat().st_size
    assert size > 12_000_000
    tracemalloc.start()
    try:
        count = sum(len(event.messages) for event in SOURCE.scan(path) if isinstance(event, HarvestItem))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 60
    assert peak < size / 4


def test_example_mailbox() -> None:
    mail = Path(__file__).resolve().parents[2] / "examples" / "mail"
    assert plugins.detect_source(mail).kind == "email"
    items, errors = scan(mail)
    assert errors == []
    thread = next(item for item in items if len(item.messages) == 3)
    assert [m.author.split(" <")[0] for m in thread.messages] == [
        "Alice Johnson",
        "Bob Smith",
        "Alice Johnson",
    ]
    assert thread.messages[1].timestamp == "2024-03-11T16:02:00.000Z"  # 11:02 -0500
    assert "would like to move the billing database" not in thread.messages[1].text
    assert thread.messages[1].text.startswith("Done: the initial copy")
    assert "Database engineer" not in thread.messages[1].text  # the signature


def write_maildir_message(folder: Path, name: str, subject: str) -> Path:
    (folder / "cur").mkdir(parents=True, exist_ok=True)
    (folder / "new").mkdir(exist_ok=True)
    message = folder / "cur" / name
    message.write_text(
        f"From: Alice <alice@example.org>\nTo: bob@example.org\nSubject: {subject}\n"
        f"Message-ID: <{name}@example.org>\nDate: Tue, 05 Mar 2024 10:00:00 +0000\n\n"
        "The billing database moves to PostgreSQL in June.\n"
    )
    return message


def test_a_maildir_tree_below_the_path_is_detected_within_bounds(tmp_path: Path) -> None:
    write_maildir_message(tmp_path / "mail" / "archive" / "2024" / "inbox", "1.host:2,S", "Cut-over")
    (tmp_path / "mail" / "notes").mkdir()
    ranked = plugins.rank_sources(tmp_path / "mail")
    assert ranked[0].kind == "email" and plugins.PLAUSIBLE <= ranked[0].confidence < plugins.CONFIDENT
    assert plugins.rank_sources(tmp_path / "mail" / "archive" / "2024" / "inbox")[0].confidence >= plugins.CONFIDENT
    too_deep = tmp_path / "deep" / "a" / "b" / "c" / "d"
    write_maildir_message(too_deep, "2.host:2,S", "Too deep")
    assert not EmailSource().detect(tmp_path / "deep")
    (tmp_path / "empty" / "x").mkdir(parents=True)
    assert not EmailSource().detect(tmp_path / "empty")


def test_the_notmuch_corpus_folder_is_detected_by_its_maildirs_below(shared_data: Path) -> None:
    assert plugins.detect_source(shared_data / "email" / "notmuch-corpus").kind == "email"


def test_an_email_frame_names_its_file_in_its_provenance(tmp_path: Path, capsys) -> None:
    from mind_core.cli import main
    from mind_core.mind import Mind
    from mind_core.store.home import MindHome

    tree = tmp_path / "mail"
    write_maildir_message(tree / "work" / "inbox", "1.host:2,S", "Cut-over")
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q"]
    assert main(["sources", "add", str(tree), "--name", "mail", *base]) == 0
    assert main(["harvest", *base]) == 0
    capsys.readouterr()
    with Mind.open(MindHome(tmp_path / "home").mind_path("default"), readonly=True) as mind:
        paths = [
            row[0]
            for row in mind.db.execute(
                "SELECT json_extract(metadata, '$.provenance.path') FROM memory_frames"
            ).fetchall()
        ]
    assert paths == ["work/inbox/cur/1.host:2,S"]


def test_list_headers_name_the_mailing_lists(tmp_path: Path) -> None:
    (tmp_path / "post.eml").write_text(
        "From: Carl Worth <cworth@cworth.org>\nTo: notmuch@notmuchmail.org\nCc: Keith <keithp@keithp.com>\n"
        "Subject: [notmuch] hi\nMessage-ID: <a@x>\nDate: Tue, 17 Nov 2009 12:00:00 +0000\n"
        'List-Id: "Use and development of the notmuch mail system." <notmuch.notmuchmail.org>\n'
        "Sender: notmuch-bounces+keithp=keithp.com@notmuchmail.org\n\nText.\n"
    )
    (tmp_path / "vger.eml").write_text(
        "From: Joe Perches <joe@perches.com>\nTo: Andrew Morton <akpm@linux-foundation.org>\n"
        "Subject: patch\nMessage-ID: <b@x>\nDate: Tue, 17 Nov 2009 13:00:00 +0000\n"
        "List-Post: <mailto:LKML@vger.kernel.org>\nX-Mailing-List: linux-cifs@vger.kernel.org archive/1\n\nText.\n"
    )
    (tmp_path / "plain.eml").write_text(
        "From: Ann <ann@example.com>\nTo: owner-bob@example.com\nSubject: x\nMessage-ID: <c@x>\n"
        "Date: Tue, 17 Nov 2009 14:00:00 +0000\nSender: owner-bob@example.com\n\nText.\n"
    )
    lists = {m.metadata["path"]: m.metadata["mailing_lists"] for m in messages_of(scan(tmp_path)[0])}
    assert lists == {
        "post.eml": ["notmuch@notmuchmail.org"],  # by List-Id and by the Mailman bounce Sender
        "vger.eml": ["linux-cifs@vger.kernel.org", "lkml@vger.kernel.org"],  # named outright
        "plain.eml": [],  # owner-bob@ names bob@, which is no address of the message
    }


def test_notmuch_list_mail_names_its_list(shared_data: Path) -> None:
    items, _ = scan(shared_data / "email" / "notmuch-corpus")
    posted = [m for m in messages_of(items) if "notmuch@notmuchmail.org" in m.metadata["mailing_lists"]]
    with_header = [
        path
        for path in (shared_data / "email" / "notmuch-corpus").rglob("*")
        if path.is_file() and "List-Post: <mailto:notmuch@notmuchmail.org>" in path.read_text(errors="replace")
    ]
    assert len(posted) == len(with_header) > 10
