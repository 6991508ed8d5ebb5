"""What a person wrote in an email: decoded headers, the body as text, quotes and signatures removed.

Mail in the wild lies about its charsets and breaks its MIME structure, so everything here decodes
with replacement and never raises: a wrong byte becomes U+FFFD, an unknown charset falls back to
UTF-8 (then Windows-1252), and the problem is returned as a note for the message's metadata.

Quoted replies are stripped because the quoted text already lives in its own message (and, when it
does not, the reply without it is still what this author said): ``>`` lines with the attribution
line that introduces them ("On ... wrote:"), Outlook's "-----Original Message-----" and
"From:/Sent:" blocks below a reply, the signature after a ``-- `` line, and mailing-list footers.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from collections import Counter
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage, Message
from email.utils import getaddresses, parsedate_to_datetime

from mind_harvest.plugins.html_text import html_to_text

from mind_core.harvest import format_utc

# Labels that browsers (WHATWG Encoding) read as a superset: mail says gb2312 and sends GBK,
# says iso-8859-1 and sends Windows-1252 quotes.
CHARSET_SUPERSETS = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "gb_2312-80": "gb18030",
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "l1": "cp1252",
    "iso-8859-9": "cp1254",
    "ks_c_5601-1987": "cp949",
    "euc-kr": "cp949",
    "shift_jis": "cp932",
    "x-sjis": "cp932",
    "tis-620": "cp874",
    "big5": "big5hkscs",
}
UNDECLARED = frozenset(
    {"", "us-ascii", "ascii", "ansi_x3.4-1968", "unknown-8bit", "x-unknown", "unknown", "default"}
)

ENCODED_WORD = re.compile(r"=\?([^?\s]+)\?([bBqQ])\?([^?]*)\?=")
ATTRIBUTION_END = re.compile(
    r"(wrote|writes|said|schrieb|a écrit|ha scritto|escribió|escreveu|skrev|napisał|написал\(а\)|написал)\s*:\s*$",
    re.IGNORECASE,
)
ATTRIBUTION_START = re.compile(r"^\s*(On|Le|Am|Il|El|Em|Op|Den)\s", re.IGNORECASE)
ORIGINAL_MESSAGE = re.compile(
    r"^\s*-{2,}\s*(Original Message|Messaggio originale|Ursprüngliche Nachricht|Message d'origine|"
    r"Mensaje original|Oorspronkelijk bericht|Mensagem original|Исходное сообщение)\s*-{2,}\s*$",
    re.IGNORECASE,
)
OUTLOOK_FROM = re.compile(r"^\s*\*?(From|Von|De|Da|От)\*?\s*:", re.IGNORECASE)
OUTLOOK_SENT = re.compile(r"^\s*\*?(Sent|Gesendet|Envoyé|Inviato|Enviado|Отправлено)\*?\s*:", re.IGNORECASE)
FORWARD_MARKER = re.compile(
    r"forwarded message|begin forwarded|weitergeleitete nachricht|message transféré|messaggio inoltrato",
    re.IGNORECASE,
)
# Fwd: / Fw: and the localized forms Outlook writes (I: Italian, TR: French, WG: German, ENC: Portuguese,
# RV: Spanish).
FORWARD_SUBJECT = re.compile(r"^\s*(fwd?|i|tr|wg|enc|rv)\s*:", re.IGNORECASE)
UNDERSCORE_RULE = re.compile(r"^\s*_{10,}\s*$")
LIST_FOOTER_HINT = re.compile(r"mailing list|listinfo|unsubscribe", re.IGNORECASE)
PART_START = re.compile(r"^--(\S{1,70})[ \t]*\r?\n[!-9;-~]+[ \t]*:", re.MULTILINE)
BODY_TYPES = frozenset(
    {"text/plain", "text/html", "text/enriched", "text/richtext", "text/x-patch", "text/x-diff"}
)
QUOTED = re.compile(r"^[ \t]{0,3}>")
LONG_SIGNATURE_LINES = 10  # a bare "--" (trailing space lost) only counts when little follows it


@dataclass
class BodyText:
    """The chosen text of a message and how it was obtained."""

    text: str
    content_type: str | None
    notes: list[str] = field(default_factory=list)
    attachments: list[dict[str, str | None]] = field(default_factory=list)


@dataclass
class StrippedText:
    text: str
    quoted_lines: int
    signature_removed: bool
    original_block_removed: bool


def decode_bytes(data: bytes, charset: str | None) -> tuple[str, str | None]:
    """Text and a problem note; undeclared or unknown charsets try UTF-8, then Windows-1252."""
    label = (charset or "").strip().strip('"').lower().split("*", 1)[0]
    if label not in UNDECLARED:
        codec = CHARSET_SUPERSETS.get(label, label)
        try:
            codecs.lookup(codec)
        except LookupError:
            text, _ = decode_bytes(data, None)
            return text, f"unknown charset {charset!r}"
        try:
            return data.decode(codec), None
        except UnicodeDecodeError:
            pass
        try:
            return data.decode("utf-8"), f"declared {charset} but is UTF-8"
        except UnicodeDecodeError:
            return data.decode(codec, errors="replace"), f"undecodable bytes in {charset}"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace"), None


def raw_to_text(value: str) -> str:
    """A header value as parsed by the stdlib (8-bit bytes kept as surrogate escapes) as real text."""
    try:
        raw = value.encode("ascii", errors="surrogateescape")
    except UnicodeEncodeError:
        return value
    return decode_bytes(raw, None)[0]


def unfold(value: str) -> str:
    return re.sub(r"\r?\n(?=[ \t])", "", value).replace("\r", "").replace("\n", " ")


def decode_header_value(value: str | None) -> str:
    """RFC 2047 decoding with charset supersets; adjacent words of one charset are decoded together
    so a UTF-8 character split across two encoded words survives."""
    if not value:
        return ""
    text = raw_to_text(unfold(value))
    pieces: list[tuple[str, str | None, bytes]] = []  # (plain text, charset, encoded bytes)
    position = 0
    for match in ENCODED_WORD.finditer(text):
        between = text[position : match.start()]
        if between and not (between.isspace() and pieces and pieces[-1][1] is not None):
            pieces.append((between, None, b""))
        decoded = _decode_word(match.group(2), match.group(3))
        if decoded is None:
            pieces.append((match.group(0), None, b""))
        elif pieces and pieces[-1][1] == match.group(1).lower():
            pieces[-1] = ("", pieces[-1][1], pieces[-1][2] + decoded)
        else:
            pieces.append(("", match.group(1).lower(), decoded))
        position = match.end()
    pieces.append((text[position:], None, b""))
    out = "".join(
        plain if charset is None else decode_bytes(data, charset)[0] for plain, charset, data in pieces
    )
    return re.sub(r"\s+", " ", out).strip()


def _decode_word(encoding: str, payload: str) -> bytes | None:
    try:
        if encoding in "bB":
            return base64.b64decode(payload + "=" * (-len(payload) % 4), validate=True)
        return binascii.a2b_qp(payload.encode("ascii", errors="replace"), header=True)
    except (binascii.Error, ValueError):
        return None


def parse_addresses(value: str | None) -> list[tuple[str, str]]:
    """(display name, address) pairs; encoded display names are decoded after the list is split,
    so an encoded comma ("Last, First") cannot split one person in two."""
    if not value:
        return []
    try:
        pairs = getaddresses([raw_to_text(unfold(value))])
    except Exception:  # getaddresses is strict about some hostile inputs on newer Pythons
        pairs = [("", raw_to_text(unfold(value)).strip())]
    people = [(decode_header_value(name), addr.strip()) for name, addr in pairs]
    people = [(name, addr) for name, addr in people if name or addr]
    if any(addr.startswith("@") or addr.endswith("@") for _, addr in people):
        return [("", decode_header_value(value))]  # UUCP bang paths and the like: keep them as written
    return people


def format_person(name: str, address: str) -> str:
    if name and address and name != address:
        return f"{name} <{address}>"
    return name or address


def parse_date(value: str | None) -> tuple[str | None, str | None]:
    """A Date header as UTC ISO, or (None, reason) when it is not a date (never raises)."""
    if not value or not value.strip():
        return None, "no Date header"
    text = unfold(value).strip()
    try:
        moment = parsedate_to_datetime(text)
        return format_utc(moment), None
    except (TypeError, ValueError, IndexError, OverflowError):
        return None, f"unparseable Date header {text[:80]!r}"


def received_date(values: list[str]) -> str | None:
    """The time in the newest Received header (after its last ';'), for mail without a Date."""
    for value in values:
        _, _, when = unfold(value).rpartition(";")
        instant, _ = parse_date(when)
        if instant:
            return instant
    return None


def extract_body(message: EmailMessage) -> BodyText:
    """text/plain preferred (inside multipart/alternative); HTML and enriched text converted; other
    parts listed as attachments by name and type without decoding them."""
    body_parts: list[Message] = []
    attachments: list[dict[str, str | None]] = []
    _visit(message, body_parts, attachments, top=True)
    notes: list[str] = []
    texts: list[str] = []
    types: list[str] = []
    for part in body_parts:
        text, note = _part_text(part)
        if note:
            notes.append(note)
        text = text.strip("\n")
        if text.strip() and text not in texts:  # a broken alternative can surface the same text twice
            texts.append(text)
            types.append(part.get_content_type())
    if not texts:
        forwarded = _first_forwarded(message)
        if forwarded is not None:
            inner = extract_body(forwarded)
            notes.extend(inner.notes)
            if inner.text.strip():
                texts.append(inner.text)
                types.append(inner.content_type or "message/rfc822")
    content_type = "text/plain" if "text/plain" in types else (types[0] if types else None)
    return BodyText("\n\n".join(texts), content_type, notes, attachments)


def _visit(
    part: Message,
    body: list[Message],
    attachments: list[dict[str, str | None]],
    top: bool = False,
    recovered: bool = False,
) -> None:
    content_type = part.get_content_type()
    if content_type == "message/rfc822" and not top:
        attachments.append(
            {"name": _filename(part) or _forwarded_subject(part), "content_type": content_type}
        )
        return
    if part.get_content_maintype() == "multipart":
        if part.is_multipart():
            children = [child for child in part.get_payload() if isinstance(child, Message)]
            if not recovered and isinstance(part.epilogue, str) and PART_START.search(part.epilogue):
                children += _split_parts(part.epilogue)  # parts after a premature closing boundary
        else:  # the declared boundary never occurs: split on the one actually used, else read it as text
            children = [] if recovered else _recover_parts(part)
            if not children:
                body.append(part)
                return
            recovered = True
        if content_type == "multipart/alternative":
            children = _preferred_alternative(children)
        for child in children:
            _visit(child, body, attachments, recovered=recovered)
        return
    disposition = (part.get_content_disposition() or "").lower()
    name = _filename(part)
    if content_type in BODY_TYPES and disposition != "attachment":
        body.append(part)
        return
    attachments.append({"name": name, "content_type": content_type})


def _recover_parts(part: Message) -> list[Message]:
    """Sub-parts of a multipart whose declared boundary never occurs (spam and broken mailers)."""
    payload = part.get_payload()
    return _split_parts(payload) if isinstance(payload, str) else []


def _split_parts(text: str) -> list[Message]:
    """MIME parts in raw text, split on the ``--token`` line most often followed by part headers."""
    tokens = Counter(match.group(1) for match in PART_START.finditer(text))
    if not tokens:
        return []
    token = tokens.most_common(1)[0][0]
    raw = f'Content-Type: multipart/mixed; boundary="{token}"\n\n{text}'
    rebuilt = message_from_bytes(raw.encode("utf-8", errors="surrogateescape"), policy=policy.default)
    if not rebuilt.is_multipart():
        return []
    return [child for child in rebuilt.get_payload() if isinstance(child, Message)]


def _preferred_alternative(children: list[Message]) -> list[Message]:
    """The plain-text alternative unless it is empty; else the richest other one."""
    for child in children:
        if child.get_content_type() == "text/plain":
            text, _ = _part_text(child)
            if text.strip():
                return [child]
    others = [child for child in children if child.get_content_type() != "text/plain"]
    return others[-1:] if others else children[:1]


def _part_text(part: Message) -> tuple[str, str | None]:
    try:
        payload = part.get_payload(decode=True)
    except Exception as exc:  # broken transfer encodings: keep going with what the part holds
        return "", f"undecodable part: {type(exc).__name__}"
    if not isinstance(payload, bytes):
        return "", None
    text, note = decode_bytes(payload, part.get_content_charset())
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    content_type = part.get_content_type()
    if content_type == "text/html":
        text = html_to_text(text)
    elif content_type in ("text/enriched", "text/richtext"):
        text = enriched_to_text(text)
    return text, note


def enriched_to_text(text: str) -> str:
    """text/enriched (RFC 1896) and its ancestor text/richtext, formatting commands dropped."""
    text = re.sub(r"<nl>", "\n", text, flags=re.IGNORECASE)
    text = re.sub(r"</?[A-Za-z][A-Za-z0-9-]*>", "", text)
    text = text.replace("<<", "<").replace("<lt>", "<")
    return re.sub(r"\n{3,}", "\n\n", text)


def _filename(part: Message) -> str | None:
    try:
        name = part.get_filename()
    except Exception:  # malformed RFC 2231 parameters
        return None
    if not name:
        return None
    return decode_header_value(str(name)) or None


def _forwarded_subject(part: Message) -> str | None:
    inner = _first_forwarded(part)
    if inner is None:
        return None
    return decode_header_value(_raw_header(inner, "subject")) or None


def _first_forwarded(message: Message) -> EmailMessage | None:
    for part in message.walk():
        if part is not message and part.get_content_type() == "message/rfc822":
            payload = part.get_payload()
            if isinstance(payload, list) and payload and isinstance(payload[0], EmailMessage):
                return payload[0]
    if message.get_content_type() == "message/rfc822":
        payload = message.get_payload()
        if isinstance(payload, list) and payload and isinstance(payload[0], EmailMessage):
            return payload[0]
    return None


def _raw_header(message: Message, name: str) -> str | None:
    for key, value in message.raw_items():
        if key.lower() == name:
            return value
    return None


def is_forward(subject: str) -> bool:
    return bool(FORWARD_SUBJECT.match(re.sub(r"^\s*\[[^\]]{1,40}\]\s*", "", subject)))


def strip_replies(text: str, forwarded: bool = False) -> StrippedText:
    """Remove quoted text, attribution lines, Outlook original-message blocks, signatures and list footers.

    A forward keeps its original-message block: the forwarded mail is usually not in the mailbox.
    When nothing would remain (a bare forward, a reply that only quotes), the text is kept whole:
    losing a message entirely is worse than repeating a quote.
    """
    lines = text.split("\n")
    original_removed = False
    if not forwarded:
        lines, original_removed = _cut_original_block(lines)
    lines, footer_removed = _cut_list_footer(lines)
    kept: list[str] = []
    quoted = 0
    in_quote = False
    for line in lines:
        if QUOTED.match(line):
            if not in_quote:
                _drop_attribution(kept)
            quoted += 1
            in_quote = True
            continue
        in_quote = in_quote and not line.strip()
        kept.append(line)
    kept, signature_removed = _cut_signature(kept)
    result = re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in kept)).strip()
    if not result and text.strip():
        return StrippedText(text.strip(), 0, False, False)
    return StrippedText(result, quoted, signature_removed or footer_removed, original_removed)


def _drop_attribution(kept: list[str]) -> None:
    """Remove the "On <date>, <name> wrote:" line(s) right above a quote block (blank lines between)."""
    end = len(kept)
    while end and not kept[end - 1].strip():
        end -= 1
    if not end or not ATTRIBUTION_END.search(kept[end - 1]):
        return
    start = end - 1
    if not ATTRIBUTION_START.match(kept[start]) and start and kept[start - 1].strip():
        if ATTRIBUTION_START.match(kept[start - 1]):
            start -= 1  # an attribution wrapped onto two lines
    del kept[start:]


def _cut_original_block(lines: list[str]) -> tuple[list[str], bool]:
    """Outlook-style replies put the whole original below a marker; cut there when a reply is above."""
    for index, line in enumerate(lines):
        starts_block = ORIGINAL_MESSAGE.match(line) is not None
        if not starts_block and OUTLOOK_FROM.match(line):
            following = [candidate for candidate in lines[index + 1 : index + 4] if candidate.strip()]
            starts_block = any(OUTLOOK_SENT.match(candidate) for candidate in following[:2])
            if starts_block and index and UNDERSCORE_RULE.match(lines[index - 1]):
                index -= 1
        if starts_block:
            above = [
                candidate for candidate in lines[:index] if candidate.strip() and not QUOTED.match(candidate)
            ]
            if above and not any(FORWARD_MARKER.search(candidate) for candidate in above[-3:]):
                return lines[:index], True
            return lines, False  # a forward (or nothing above): the original is the content
    return lines, False


def _cut_list_footer(lines: list[str]) -> tuple[list[str], bool]:
    """Mailman's "____ / <list> mailing list / address / listinfo URL" tail."""
    for index in range(len(lines) - 1, max(len(lines) - 10, -1), -1):
        if UNDERSCORE_RULE.match(lines[index]):
            tail = "\n".join(lines[index + 1 :])
            if LIST_FOOTER_HINT.search(tail):
                return lines[:index], True
            break
    return lines, False


def _cut_signature(lines: list[str]) -> tuple[list[str], bool]:
    for index, line in enumerate(lines):
        if line == "-- ":
            return lines[:index], True
        if line.rstrip() == "--":
            tail = [candidate for candidate in lines[index + 1 :] if candidate.strip()]
            if len(tail) <= LONG_SIGNATURE_LINES:
                return lines[:index], True
    return lines, False
