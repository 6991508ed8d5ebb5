"""High-precision patterns for redaction: secrets whose shape is checkable, and personal data whose
checksum or numbering plan is.

Each detector yields ``(kind, start, end)`` spans of a text. A candidate is kept only when what
can be checked holds: a JWT's header decodes to JSON naming its algorithm, an IBAN has its
country's length and passes the mod-97 check (ISO 13616), a card number passes the Luhn check and
starts like a card network's numbers, a phone number is valid in its country's numbering plan
(Google's libphonenumber data, through ``phonenumbers``). Numbers that fail these (a hash, a UUID,
an order number) stay.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from functools import cache

Span = tuple[str, int, int]

# secrets this module finds itself (whole tokens, where detect-secrets' patterns stop short)
GITHUB_TOKEN = re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})(?![A-Za-z0-9_])")
JWT = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
PRIVATE_KEY = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END \1PRIVATE KEY(?: BLOCK)?-----|(?=\n[ \t]*\n)|\Z)"
    r"|PuTTY-User-Key-File-\d: .*?(?:Private-MAC: [0-9a-f]+|(?=\n[ \t]*\n)|\Z)",
    re.DOTALL,
)
ANTHROPIC_KEY = re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[a-z]+\d{2}-[A-Za-z0-9_-]{40,}")
OPENAI_KEY = re.compile(r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}(?![A-Za-z0-9_-])")
GOOGLE_API_KEY = re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")
AWS_KEY = re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])")
# the password of a URL's user information (``https://user:password@host``)
URL_PASSWORD = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/?#@]+:([^\s/?#@]+)@[\w.-]+", re.IGNORECASE)
STRIPE_KEY = re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{24,}(?![A-Za-z0-9_])")

SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", PRIVATE_KEY),
    ("aws-key", AWS_KEY),
    ("github-token", GITHUB_TOKEN),
    ("anthropic-key", ANTHROPIC_KEY),
    ("openai-key", OPENAI_KEY),
    ("google-api-key", GOOGLE_API_KEY),
    ("stripe-key", STRIPE_KEY),
)

# letters of any script (``danglüe@email.com``, internationalized addresses and domains) and "_"
EMAIL = re.compile(
    r"(?<![\w.%+-])[^\W_][\w.%+-]{0,63}@(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+"
    r"[^\W\d_]{2,24}(?![\w-])"
)
IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])")
CARD = re.compile(r"(?<![\w.,+-])\d(?:[ -]?\d){11,18}(?![\d-]|[.,]\d)")
PHONE = re.compile(r"(?<![\w+./-])(?:\+|00)?\(?\d[\d ().-]{5,20}\d(?![\w/-]|[.,]\d)")

# ISO 13616 lengths of the countries whose IBANs are most often met; others: 15 to 34 characters
IBAN_LENGTHS = {
    "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "EE": 20,
    "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GR": 27, "HR": 21, "HU": 28, "IE": 22, "IS": 26,
    "IT": 27, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MT": 31, "NL": 18, "NO": 15,
    "PL": 28, "PT": 25, "RO": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TR": 26,
}  # fmt: skip
# card networks' leading digits (IIN ranges), and the groups cards print their numbers in
CARD_PREFIXES = re.compile(r"4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|6(?:011|4[4-9]|5|2)|35(?:2[89]|[3-8])|3(?:0[0-5]|[689])")
CARD_GROUPS = {(4, 4, 4, 4), (4, 6, 5), (4, 6, 4), (4, 4, 4, 4, 3), (4, 4, 4, 3), (4, 4, 5)}
# national phone numbers (no + or 00) are checked against these numbering plans
PHONE_REGIONS = ("US", "GB", "DE", "FR", "CH")
MIN_NATIONAL_DIGITS = 9  # shorter national numbers are rarer than dates and references of 7-8 digits
ISO_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}")  # a date with the hour after it
DECIMAL = re.compile(r"\d+[.,]\d+")  # a coordinate, an amount
DATE = re.compile(r"\d{4}[-./ ]\d{1,2}[-./ ]\d{1,2}|\d{1,2}[-./ ]\d{1,2}[-./ ]\d{2,4}")


def luhn_valid(digits: str) -> bool:
    """The Luhn check of a card number (ISO/IEC 7812)."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def iban_valid(text: str) -> bool:
    """An IBAN of its country's length whose mod-97 check (ISO 7064) gives 1."""
    iban = text.replace(" ", "").upper()
    expected = IBAN_LENGTHS.get(iban[:2])
    if not (15 <= len(iban) <= 34) or (expected is not None and len(iban) != expected):
        return False
    rearranged = iban[4:] + iban[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return int(number) % 97 == 1


def card_valid(text: str) -> bool:
    """A card number: a network's leading digits, its Luhn digit, written whole or in the groups
    cards print (4-4-4-4, 4-6-5...)."""
    groups = tuple(len(g) for g in re.split(r"[ -]", text))
    digits = re.sub(r"[ -]", "", text)
    return (
        13 <= len(digits) <= 19
        and (len(groups) == 1 or groups in CARD_GROUPS)
        and CARD_PREFIXES.match(digits) is not None
        and luhn_valid(digits)
    )


def jwt_valid(token: str) -> bool:
    """A JSON Web Token: its header is base64url JSON naming an algorithm or a type."""
    header = token.split(".", 1)[0]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(decoded, dict) and ("alg" in decoded or "typ" in decoded)


@cache
def _phonenumbers():  # type: ignore[no-untyped-def]
    import phonenumbers

    return phonenumbers


def phone_valid(text: str) -> bool:
    """A phone number valid in its numbering plan: an international one (``+`` or ``00``) in its
    country's, a national one, written with separators (a bare run of digits is more often an
    id), of 9 digits or more and not shaped like a date or a decimal number, in one of
    ``PHONE_REGIONS``'."""
    digits = re.sub(r"\D", "", text)
    if not 7 <= len(digits) <= 15:
        return False
    phonenumbers = _phonenumbers()
    international = text.startswith(("+", "00"))
    if not international and (
        text.isdigit()
        or len(digits) < MIN_NATIONAL_DIGITS
        or DATE.fullmatch(text)
        or ISO_DATE.match(text)
        or DECIMAL.fullmatch(text)
    ):
        return False
    candidate = "+" + text[2:] if text.startswith("00") else text
    for region in (None,) if international else PHONE_REGIONS:
        try:
            number = phonenumbers.parse(candidate, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return True
    return False


def secret_spans(text: str) -> Iterator[Span]:
    for kind, pattern in SECRET_PATTERNS:
        for match in pattern.finditer(text):
            yield kind, match.start(), match.end()
    if "://" in text:
        for match in URL_PASSWORD.finditer(text):
            yield "credential", match.start(1), match.end(1)
    if "eyJ" in text:
        for match in JWT.finditer(text):
            if jwt_valid(match.group(0)):
                yield "jwt", match.start(), match.end()


def email_spans(text: str) -> Iterator[Span]:
    if "@" in text:
        for match in EMAIL.finditer(text):
            yield "email", match.start(), match.end()


def iban_spans(text: str) -> Iterator[Span]:
    for match in IBAN.finditer(text):
        if iban_valid(match.group(0)):
            yield "iban", match.start(), match.end()


def card_spans(text: str) -> Iterator[Span]:
    for match in CARD.finditer(text):
        if card_valid(match.group(0)):
            yield "card", match.start(), match.end()


def phone_spans(text: str) -> Iterator[Span]:
    for match in PHONE.finditer(text):
        value = match.group(0).rstrip(" .-(")
        if value.count("(") != value.count(")"):
            value = value.lstrip("(")
        start = match.start() + match.group(0).index(value)
        if phone_valid(value):
            yield "phone", start, start + len(value)
