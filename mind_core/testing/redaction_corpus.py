"""A chat corpus with planted secrets and personal data, and decoys that look like them, for the
redaction tests and ``benchmarks/redaction.py``.

Every planted value is made here, at random from a seed, in the shape the real thing has (an
AWS access key id, a GitHub token, a JWT, a PEM private key, an IBAN with its mod-97 check
digits, a card number with its Luhn digit, a phone number valid in its numbering plan...). The
decoys are what a careless detector takes for them: numbers failing the Luhn or mod-97 check,
git hashes, UUIDs, dates, order numbers, version strings, and the words "password", "token" and
"key" in ordinary sentences. ``Message.planted`` says what a correct redactor must find.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mind_core.testing.exports import WORDS, chatgpt_conversation, write_json

ALNUM = string.ascii_letters + string.digits
BASE32 = string.ascii_uppercase + "234567"
FIRST = ("ada", "bruno", "chiara", "dmitri", "elena", "farid", "greta", "hugo", "ines", "jonas")
LAST = ("lovelace", "moreau", "rossi", "petrov", "garcia", "haddad", "berg", "weber", "silva", "novak")
DOMAINS = ("example.com", "mail.example.org", "corp.example.net", "uni-example.edu")


@dataclass
class Message:
    text: str
    planted: list[tuple[str, str]] = field(default_factory=list)  # (kind, value) a redactor must find
    decoys: list[str] = field(default_factory=list)


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def luhn_digit(body: str) -> str:
    total = 0
    for index, char in enumerate(reversed(body)):
        value = int(char)
        if index % 2 == 0:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return str((10 - total % 10) % 10)


def iban_with_check(country: str, bban: str) -> str:
    number = "".join(str(int(c, 36)) for c in bban + country + "00")
    return f"{country}{98 - int(number) % 97:02d}{bban}"


def grouped(value: str, size: int = 4) -> str:
    return " ".join(value[i : i + size] for i in range(0, len(value), size))


# --- secrets ------------------------------------------------------------------------------------
def aws_key(rng: random.Random) -> str:
    return "AKIA" + _rand(rng, BASE32, 16)


def github_token(rng: random.Random) -> str:
    return rng.choice(("ghp_", "gho_", "ghs_")) + _rand(rng, ALNUM, 36)


def slack_token(rng: random.Random) -> str:
    return f"xoxb-{_rand(rng, string.digits, 12)}-{_rand(rng, string.digits, 13)}-{_rand(rng, ALNUM, 24)}"


def jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64url(json.dumps({"sub": _rand(rng, string.digits, 8), "name": rng.choice(FIRST)}).encode())
    return f"{header}.{payload}.{_b64url(rng.randbytes(32))}"


def private_key(rng: random.Random) -> str:
    body = _b64url(rng.randbytes(240)).replace("-", "+").replace("_", "/")
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{lines}\n-----END RSA PRIVATE KEY-----"


def openai_key(rng: random.Random) -> str:
    return "sk-proj-" + _rand(rng, ALNUM, 48)


def stripe_key(rng: random.Random) -> str:
    return "sk_live_" + _rand(rng, ALNUM, 24)


def credential(rng: random.Random) -> str:
    return rng.choice(("Tr0mbone", "Blue-Falcon", "quiet_river", "Lisbon")) + _rand(rng, string.digits, 4) + "!"


# --- personal data ------------------------------------------------------------------------------
def email(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)}.{rng.choice(LAST)}{rng.randint(1, 99)}@{rng.choice(DOMAINS)}"


def phone(rng: random.Random) -> str:
    import phonenumbers

    while True:
        region = rng.choice(("US", "GB", "DE", "FR", "CH"))
        example = phonenumbers.example_number_for_type(region, rng.choice((0, 1)))  # fixed line, mobile
        national = str(example.national_number)
        candidate = national[:-4] + _rand(rng, string.digits, 4)
        number = phonenumbers.parse(f"+{example.country_code}{candidate}")
        if phonenumbers.is_valid_number(number):
            formats = phonenumbers.PhoneNumberFormat
            style = rng.choice((formats.INTERNATIONAL, formats.INTERNATIONAL, formats.NATIONAL, formats.E164))
            return phonenumbers.format_number(number, style)


def iban(rng: random.Random) -> str:
    country, digits = rng.choice((("DE", 18), ("FR", 23), ("CH", 17), ("NL", 14), ("IT", 23)))
    if country == "NL":
        bban = _rand(rng, string.ascii_uppercase, 4) + _rand(rng, string.digits, 10)
    elif country == "IT":
        bban = _rand(rng, string.ascii_uppercase, 1) + _rand(rng, string.digits, 22)
    else:
        bban = _rand(rng, string.digits, digits)
    value = iban_with_check(country, bban)
    return grouped(value) if rng.random() < 0.7 else value


def card(rng: random.Random) -> str:
    prefix, length = rng.choice((("4", 16), ("51", 16), ("55", 16), ("37", 15), ("6011", 16)))
    body = prefix + _rand(rng, string.digits, length - len(prefix) - 1)
    value = body + luhn_digit(body)
    if len(value) == 15:  # American Express prints 4-6-5
        return rng.choice((value, f"{value[:4]} {value[4:10]} {value[10:]}"))
    return rng.choice((value, grouped(value), grouped(value).replace(" ", "-")))


PLANTED: dict[str, tuple[Callable[[random.Random], str], str]] = {
    # kind -> (maker, sentence with {v})
    "secret:aws-key": (aws_key, "the deploy user has access key {v} for now"),
    "secret:github-token": (github_token, "use this token {v} in the CI settings"),
    "secret:slack-token": (slack_token, "the bot posts with {v}"),
    "secret:jwt": (jwt, "curl -H 'Authorization: Bearer {v}' the staging api"),
    "secret:private-key": (private_key, "here is the key file:\n{v}\nkeep it safe"),
    "secret:openai-key": (openai_key, "set OPENAI_API_KEY to {v} before running"),
    "secret:stripe-key": (stripe_key, "the billing service reads {v}"),
    "secret:credential": (credential, 'in the config: password = "{v}"'),
    "email": (email, "write to {v} about the invoice"),
    "phone": (phone, "call me at {v} after the meeting"),
    "iban": (iban, "please transfer it to {v} by friday"),
    "card": (card, "the company card is {v}, expiry next year"),
}
# other ways the same kinds are written, used for a third of their plantings
VARIANTS: dict[str, tuple[str, ...]] = {
    "secret:credential": ('"db_password": "{v}",', "DATABASE_PASSWORD={v}", "clone https://deploy:{v}@git.example.com/repo"),
    "email": ("From: Ada Moreau <{v}>", "mailto:{v}", "({v})"),
    "phone": ("tel. {v}.", "my number: {v}"),
    "card": ("paid with {v} yesterday",),
}


def _decoy(rng: random.Random) -> str:
    choice = rng.randrange(11)
    if choice == 0:  # a card number whose Luhn digit is wrong
        body = "4" + _rand(rng, string.digits, 14)
        return grouped(body + str((int(luhn_digit(body)) + 1) % 10))
    if choice == 1:  # an IBAN whose check digits are wrong
        good = iban_with_check("DE", _rand(rng, string.digits, 18))
        return grouped(f"{good[:2]}{2 + (int(good[2:4]) - 1) % 97:02d}{good[4:]}")
    if choice == 2:
        return _rand(rng, "0123456789abcdef", rng.choice((40, 64)))  # a git or sha-256 hash
    if choice == 3:
        h = _rand(rng, "0123456789abcdef", 32)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"  # a UUID
    if choice == 4:
        return f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if choice == 5:
        return f"order #{_rand(rng, string.digits, 8)}"
    if choice == 6:
        return f"version {rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 99)}"
    if choice == 7:
        return "the password reset link expired, ask for a new token"
    if choice == 8:
        return "the api key rotation is on the roadmap"
    if choice == 9:
        return f"ticket {_rand(rng, string.digits, 10)} is closed"
    return f"user@localhost and @{rng.choice(FIRST)} on the thread"


def redaction_messages(count: int, seed: int = 7, planted_share: float = 0.5) -> list[Message]:
    """``count`` chat messages: about ``planted_share`` of them with one or two planted values,
    about a third with a decoy, every one with ordinary words around."""
    rng = random.Random(seed)
    kinds = list(PLANTED)
    messages = []
    for _ in range(count):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 24)))
        message = Message(words)
        if rng.random() < planted_share:
            for kind in rng.sample(kinds, rng.choice((1, 1, 2))):
                maker, sentence = PLANTED[kind]
                if kind in VARIANTS and rng.random() < 1 / 3:
                    sentence = rng.choice(VARIANTS[kind])
                value = maker(rng)
                message.planted.append((kind, value))
                message.text += ". " + sentence.format(v=value)
        if rng.random() < 0.35:
            decoy = _decoy(rng)
            message.decoys.append(decoy)
            message.text += f". also {decoy}"
        messages.append(message)
    return messages


def write_redaction_export(path: Path, messages: list[Message], per_conversation: int = 20) -> Path:
    """The messages as a ChatGPT ``conversations.json``, ``per_conversation`` to a conversation."""
    conversations = [
        chatgpt_conversation(
            f"conv-{c}", f"Conversation {c}", [m.text for m in messages[start : start + per_conversation]],
            1_700_000_000.0 + 86_400 * c,
        )
        for c, start in enumerate(range(0, len(messages), per_conversation))
    ]
    return write_json(path, conversations)
