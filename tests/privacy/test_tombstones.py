"""The harvest's guard: it knows forgotten people only by keyed hashes, and still finds them."""

from __future__ import annotations

from mind_core.mind import Mind
from mind_core.privacy.keys import mind_key, person_term
from mind_core.privacy.tombstones import PLACEHOLDER, HarvestGuard, lay


def _guard_for(*values: str) -> HarvestGuard:
    mind = Mind.open()
    with mind.db.transaction():
        key = mind_key(mind.db, create=True)
        lay(mind.db, key, "selector", "person", [person_term(v) for v in values])
    guard = HarvestGuard.load(mind.db)
    stored = [row[0] for row in mind.db.query("SELECT digest FROM privacy_tombstones")]
    mind.close()
    assert stored and not any("zeph" in digest for digest in stored)
    return guard


def test_a_name_is_found_in_any_case_spacing_and_punctuation_and_an_address_anywhere():
    guard = _guard_for("Zephyrine Quarlesworth", "zq@quarles.example")
    text = "Ask ZEPHYRINE\n quarlesworth, or mail <ZQ@quarles.example>; Zephyrine alone stays."
    assert guard.redact_text(text) == (f"Ask {PLACEHOLDER}, or mail <{PLACEHOLDER}>; Zephyrine alone stays.")
    assert guard.redact_value({"to": ["Zephyrine Quarlesworth <zq@quarles.example>"], "n": 3}) == {
        "to": [f"{PLACEHOLDER} <{PLACEHOLDER}>"],
        "n": 3,
    }


def test_what_a_forgotten_person_wrote_is_buried_and_nobody_elses():
    guard = _guard_for("Zephyrine Quarlesworth", "zq@quarles.example")
    assert guard.buries("k1", "text", ["Zephyrine Quarlesworth"])
    assert guard.buries("k2", "text", [None, '"Someone" <zq@quarles.example>'])
    assert not guard.buries("k3", "text", ["Bob Smith", "Bob Smith <bob@example.com>"])


def test_a_mind_without_tombstones_has_an_inactive_guard():
    mind = Mind.open()
    guard = HarvestGuard.load(mind.db)
    mind.close()
    assert not guard.active and guard.redact_text("Zephyrine Quarlesworth") == "Zephyrine Quarlesworth"
