"""The redaction detectors: every planted kind found and typed, every decoy left, nothing shown."""

from __future__ import annotations

import random

import pytest

from mind_core.errors import InvalidInputError
from mind_core.privacy.patterns import card_valid, iban_valid, jwt_valid, luhn_valid, phone_valid
from mind_core.privacy.redaction import Redactor, mask, preview
from mind_core.privacy.redaction_policy import RedactionPolicy
from mind_core.testing.redaction_corpus import PLANTED, _decoy, redaction_messages

EVERYTHING = RedactionPolicy.parse("all")


def test_checksums_accept_the_real_thing_and_refuse_one_digit_off():
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert card_valid("4111 1111 1111 1111") and card_valid("378282246310005")
    assert not card_valid("4111 1111 1111 1112")  # Luhn fails
    assert not card_valid("1234 5678 9012 3452")  # no card network starts with 1
    assert not card_valid("4100 3877 4977 0228 36")  # not grouped as a card prints (an IBAN's tail)
    assert iban_valid("DE89 3704 0044 0532 0130 00") and iban_valid("GB82WEST12345698765432")
    assert not iban_valid("DE88 3704 0044 0532 0130 00")  # check digits off by one
    assert not iban_valid("DE89 3704 0044 0532 0130 0")  # a German IBAN has 22 characters
    assert jwt_valid("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln") and not jwt_valid("eyJub3QganNvbg.eyJ4.sig")
    assert phone_valid("+41 44 668 18 00") and phone_valid("(415) 555-0132")
    assert not phone_valid("2024-01-15") and not phone_valid("4155550132")  # a date; a bare digit run


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_each_planted_kind_is_found_whole_and_typed(kind):
    rng = random.Random(kind)
    maker, sentence = PLANTED[kind]
    for _ in range(20):
        value = maker(rng)
        text = "before it. " + sentence.format(v=value) + " and after"
        redacted, findings = Redactor(EVERYTHING).redact(text)
        assert [f.kind for f in findings] == [kind], (value, findings)
        assert value not in redacted and f"[{kind}]" in redacted
        assert redacted.startswith("before it. ") and redacted.endswith(" and after")


def test_decoys_and_ordinary_words_are_left_alone():
    rng = random.Random(3)
    redactor = Redactor(EVERYTHING)
    for _ in range(400):
        decoy = _decoy(rng)
        assert redactor.find(f"we talked about {decoy} today") == [], decoy
    prose = "The password reset link expired; the api key rotation and the token ring are on the roadmap."
    assert redactor.find(prose) == []


def test_a_policy_redacts_only_its_kinds():
    text = "mail ada@example.com, key AKIAABCDEFGHIJKLMNOP, card 4111 1111 1111 1111"
    assert Redactor(RedactionPolicy.parse("email")).redact(text)[0] == (
        "mail [email], key AKIAABCDEFGHIJKLMNOP, card 4111 1111 1111 1111"
    )
    assert Redactor(RedactionPolicy.parse("secrets")).redact(text)[0] == (
        "mail ada@example.com, key [secret:aws-key], card 4111 1111 1111 1111"
    )
    assert Redactor(RedactionPolicy.parse("none")).find(text) == []


def test_addresses_in_any_script_and_with_underscores_are_found_whole():
    email = Redactor(RedactionPolicy.parse("email"))
    text = "To: danglüe@email.com, john_doe@example.com, ada@bücher.de; Грüße, ref 1.2@3.4, file@2x"
    assert email.redact(text)[0] == "To: [email], [email], [email]; Грüße, ref 1.2@3.4, file@2x"
    assert [f.value for f in email.find("<дмитрий.п@почта.рф>")] == ["дмитрий.п@почта.рф"]


def test_known_people_are_redacted_by_their_full_name_only():
    redactor = Redactor(RedactionPolicy.parse("people"), ["Zephyrine Quarlesworth"])
    text, findings = redactor.redact("Ask zephyrine  QUARLESWORTH or Zephyrine herself.")
    assert text == "Ask [person] or Zephyrine herself." and findings[0].kind == "person"


def test_policies_parse_groups_and_refuse_unknown_kinds():
    assert RedactionPolicy.parse("all").kinds == {"secrets", "email", "phone", "iban", "card"}
    assert RedactionPolicy.parse("personal, people").kinds == {"email", "phone", "iban", "card", "people"}
    assert RedactionPolicy.parse("none").mark == ""  # no redaction: fingerprints as before
    assert RedactionPolicy.parse("secrets").mark != RedactionPolicy.parse("secrets,email").mark
    with pytest.raises(InvalidInputError, match="unknown redaction kind 'passwords'"):
        RedactionPolicy.parse("secrets,passwords")


def test_a_masked_preview_never_holds_the_value():
    redactor = Redactor(EVERYTHING)
    for message in redaction_messages(300, seed=11):
        findings = redactor.find(message.text)
        for finding in findings:
            shown = preview(message.text, finding, findings)
            for _, value in message.planted:
                assert value not in shown and value not in mask(finding)
    assert mask(Redactor(EVERYTHING).find("card 4111 1111 1111 1111")[0]) == "•••• •••• •••• 1111"
