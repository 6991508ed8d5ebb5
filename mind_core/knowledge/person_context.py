"""Names that their context says are people (or, for mailboxes, organizations).

The rule extractor types a capitalised pair as a person only when its first word is a known
first name, so "Joe Perches <joe@perches.com>" and "Bob Smith" were concepts. A text usually says
more than the name itself, and these are the cues used here:

- a display name before a mail address (``Name <addr@host>``: a From line, a Signed-off-by or
  Acked-by tag, a quoted header), at the start of a line or after ``] `` / ``: `` / ``by: ``; a
  role address (``info@``, ``noreply@``, ``sales@`` ...) makes it an organization instead;
- the speaker of a turn: a name before ``:`` opening the text or after its ``[title]``
  (``Maria: ...``, ``[Buy wisely] Steph Ango: ...``), roles such as ``User`` and ``Assistant`` and
  header words such as ``Subject`` excluded;
- a name greeted or thanked (``Hi Maria!``, ``Thanks, Mel!``, ``Hey Gina,``);
- a sign-off: a name alone on the last line after ``--``, ``~`` or ``Thanks,``.

Display names keep hyphens, apostrophes and initials ("Alexander Botero-Lowry", "Mark K. Joseph");
a title (Dr., Mrs., Prof.) and lower-case leading words ("служба ФНС Даниил Суворов") are dropped.
"""

from __future__ import annotations

import re

from mind_core.knowledge.addresses import ROLE_LOCAL_PARTS

PERSON_CONTEXT_CONFIDENCE = 0.9
_WORD = r"[^\W\d_][\w'’.-]*"
_NAME = rf"{_WORD}(?:[ \t]+{_WORD}){{0,4}}"
_ADDRESS = re.compile(
    rf"(?:^|(?<=\] )|(?<=: )|(?<=\n))[ \t>]*\"?({_NAME})\"?[ \t]*<([^<>@\s]+)@[^<>\s]+>",
    re.MULTILINE,
)
_SPEAKER = re.compile(rf"^(?:\[[^\]\n]*\][ \t]+)?({_NAME}):[ \t]")
_GREETING = re.compile(
    r"\b(?:Hi|Hey|Hello|Dear|Thanks|Thank you|Bye|Congrats|Congratulations|Sorry|Welcome)"
    r",?[ \t]+([A-Z][a-z]+)\b(?![ \t]+[A-Z])(?=[ \t]*[!,.?:;)]|[ \t]*$)",
    re.MULTILINE,
)
_SIGN_OFF = re.compile(
    r"(?:^(?:--|~|-)[ \t]*|(?:Thanks|Cheers|Regards|Best|Sincerely|Best regards|Kind regards),?[ \t]*\n+[ \t]*)"
    r"([A-Z][a-z]+)[ \t]*\Z",
    re.MULTILINE,
)
_COMMENT = re.compile(r"\s*\([^()]*\)\s*$")  # "Jean Delvare (PC drivers, core)"
TITLES = frozenset("dr dr. mr mr. mrs mrs. ms ms. prof prof. sir dott. dott.ssa".split())
NOT_NAMES = frozenset(
    "user assistant system tool human ai bot model subject date from to cc bcc re fwd fw note notes"
    " warning tip info example status cause action attachments attachment update edit summary question"
    " answer error file files name content type sender reply everyone all there team guys folks"
    " friend friends sir madam sirs acked signed reviewed tested reported suggested by".split()
)


def _clean(name: str) -> str | None:
    words = [w.strip("'’.-\"") if i == 0 else w.rstrip("'’-\"") for i, w in enumerate(name.split())]
    words = [w for w in words if w]
    while words and (words[0].lower() in TITLES or not words[0][:1].isupper()):
        words.pop(0)
    if len(words) > 2 and words[0].isupper() and len(words[0]) > 1:  # an acronym before the name
        words.pop(0)
    if not words or any(not w[:1].isupper() and w.lower() not in ("de", "van", "von", "der", "da", "di", "la", "le") for w in words):
        return None
    if any(w.lower() in NOT_NAMES for w in words):
        return None
    return " ".join(words)


def person_display_name(name: str) -> str:
    """A mail display name as the text extractor would name the person, so the header's
    "Dr. Mark K. Joseph" and the body's "Mark K. Joseph" are one name: a trailing "(comment)",
    a title and lower-case leading words dropped. A display name that does not read as a
    person's name ("Discussion about the AUR") is kept as given."""
    bare = _COMMENT.sub("", name).strip()
    return _clean(bare) or bare or name


def people_in_context(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """``({lower name: name} of people, {lower name: name} of organizations)`` the text's cues name."""
    people: dict[str, str] = {}
    organizations: dict[str, str] = {}
    for match in _ADDRESS.finditer(text):
        name = _clean(match.group(1))
        if name is None or len(name.split()) < 2:
            continue  # a single word before an address is as often a shop or a bot as a person
        target = organizations if match.group(2).lower() in ROLE_LOCAL_PARTS else people
        target.setdefault(name.lower(), name)
    speaker = _SPEAKER.match(text)
    if speaker:
        name = _clean(speaker.group(1))
        if name is not None and len(name.split()) <= 4:
            people.setdefault(name.lower(), name)
    for pattern in (_GREETING, _SIGN_OFF):
        for match in pattern.finditer(text):
            name = _clean(match.group(1))
            if name is not None:
                people.setdefault(name.lower(), name)
    for key in organizations:
        people.pop(key, None)
    return people, organizations
