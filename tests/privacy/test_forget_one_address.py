"""One address is one person: a sender whose headers give two names ("Alex Botero-Lowry" and
"Alexander Botero-Lowry", as in the notmuch corpus) is one entity, and forgetting either name or
the address forgets every mail they wrote and leaves nothing of the name or the address; a first
name alone stays, and no name is ever replaced inside an e-mail address."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.privacy.forget import forget, plan_forget
from mind_core.privacy.person import Person
from mind_core.privacy.selection import Selector
from mind_core.testing.exports import SyntheticMail, write_mbox
from mind_core.testing.fakes import HashingEmbedder
from tests.privacy.conftest import raw_bytes

ADDRESS = "alex.boterolowry@example.com"
SHORT, LONG = ("Alex Botero-Lowry", ADDRESS), ("Alexander Botero-Lowry", ADDRESS)
CARL = ("Carl Worth", "cworth@example.org")
OTHER_ALEX = ("Alex Smith", "alex.smith@example.net")
LIST = "notmuch@lists.example.org"
TRACES = (b"botero", b"boterolowry", ADDRESS.encode())


def _mail(n: int, sender: tuple[str, str], recipient: tuple[str, str], subject: str, text: str) -> SyntheticMail:
    return SyntheticMail(f"m{n}@example.com", n, sender, recipient, subject, datetime(2009, 11, 17 + n, 19, 0, tzinfo=UTC), text)


MAILS = [
    _mail(0, SHORT, CARL, "preliminary FreeBSD support", "I saw the announcement and ported it to FreeBSD."),
    _mail(1, CARL, SHORT, "Re: preliminary FreeBSD support", "Hi Alex, great to hear about FreeBSD."),
    _mail(2, LONG, CARL, "Darwin compatibility issues", "I got that too on Darwin, strndup is missing."),
    _mail(3, LONG, CARL, "request for pull", "The following changes since commit e8c9c3e are available."),
    _mail(4, CARL, OTHER_ALEX, "Emacs keys", f"Alex, ask Alex Botero-Lowry ({ADDRESS}) about the show hook."),
    _mail(5, OTHER_ALEX, CARL, "Re: Emacs keys", "Will do, the word-wrap hook looks fine to me."),
    # a list rewriting its senders' From: the list's address is not theirs, Keith's mail stays
    _mail(6, (SHORT[0], LIST), CARL, "[notmuch] tags", "Tags could be stored in the database."),
    _mail(7, ("Keith Packard", LIST), CARL, "[notmuch] vim", "The vim client is coming along nicely."),
]


def _harvested(tmp_path) -> tuple:
    path = tmp_path / "mind.db"
    mind = Mind.open(path, embedder=HashingEmbedder())
    register_source(mind, "email", write_mbox(tmp_path / "mail" / "inbox.mbox", MAILS), "mail")
    assert harvest(mind, "mail").imported.frames_new == len(MAILS)
    return path, mind


def test_one_address_under_two_names_is_one_person_with_both_names(tmp_path):
    _, mind = _harvested(tmp_path)
    rows = mind.db.query(
        "SELECT name, properties FROM knowledge_entities WHERE entity_type = 'person' AND valid_to IS NULL"
    )
    persons = {r["name"]: json.loads(r["properties"]) for r in rows}
    holders = [name for name, properties in persons.items() if ADDRESS in properties.get("addresses", [])]
    assert len(holders) == 1, persons
    assert {holders[0], *persons[holders[0]].get("aliases", [])} >= {SHORT[0], LONG[0]}
    stated = [name for name, properties in persons.items() if properties.get("addresses")]
    assert sorted(stated) == sorted([holders[0], CARL[0], OTHER_ALEX[0]])  # one person per address
    mind.close()


def _forget_leaves_nothing(tmp_path, given: str) -> None:
    path, mind = _harvested(tmp_path)
    plan = plan_forget(mind.db, Selector(person=given))
    assert len(plan.frame_ids) == 4  # all four mails they wrote, under either name or through the list
    forget(mind, plan, "tester")
    texts = " ".join(r[0] + r[1] for r in mind.db.query("SELECT content, metadata FROM memory_frames")).lower()
    assert not [trace for trace in TRACES if trace.decode() in texts]
    assert "[forgotten person]" in texts and "hi alex," in texts and "alex smith" in texts  # first names stay
    assert "alex.smith@example.net" in texts  # another person's address is never touched
    assert "keith packard" in texts and LIST in texts
    assert not plan_forget(mind.db, Selector(person=ADDRESS)).frame_ids
    mind.close()
    assert not [trace for trace in TRACES if trace in raw_bytes(path)]


def test_forgetting_the_short_name_forgets_the_long_one_and_the_address(tmp_path):
    _forget_leaves_nothing(tmp_path, SHORT[0])


def test_forgetting_the_address_forgets_both_names(tmp_path):
    _forget_leaves_nothing(tmp_path, ADDRESS)


def test_a_mail_they_wrote_states_their_other_name_even_without_the_graph(tmp_path):
    _, mind = _harvested(tmp_path)
    for table in ("kg_relation_frames", "knowledge_relations", "kg_entity_frames", "knowledge_entities"):
        mind.db.execute(f"DELETE FROM {table}")  # nothing known: only the headers link the names
    plan = plan_forget(mind.db, Selector(person=SHORT[0]))
    assert len(plan.frame_ids) == 4 and plan.person is not None and LIST not in plan.person.addresses
    assert LONG[0] in plan.person.names and ADDRESS in plan.person.addresses
    mind.close()


def test_a_name_is_never_replaced_inside_an_address_and_a_first_name_alias_stays():
    person = Person(SHORT[0], names={SHORT[0], "Alex", "Botero Lowry"})
    pattern = person.pattern()
    assert pattern is not None
    text = "Alex wrote to botero.lowry@example.org, cc Alex Botero-Lowry <alex.b@example.org>; Botero-Lowryx"
    assert pattern.sub(text) == (
        "Alex wrote to botero.lowry@example.org, cc [forgotten person] <alex.b@example.org>; Botero-Lowryx"
    )
    theirs = Person(ADDRESS, names={"Alex", SHORT[0]}, addresses={ADDRESS}).pattern()
    assert theirs is not None
    assert theirs.sub(f"{SHORT[0]} <{ADDRESS}>, Alex") == "[forgotten person] <[forgotten person]>, Alex"
    assert Person("Alex", names={"Alex", SHORT[0]}).terms == {"alex", "alex botero lowry"}  # given: theirs
