"""Entity and relation extraction: the original's rule-based extractor, fixed, behind a registry.

``extract(text)`` runs every extractor and merges their output: the rule-based extractor
(reference-behaviour §6, registered by default), any added with ``register_extractor``, and every
extractor that a plugin (built-in or an entry point) registers through the ``register_extractors``
hook of ``mind_core.plugins``. Entities merge by type and lower-cased name; each merged entity
and relation names the extractors that found it (``extractors``), and cognify stores those names.

Technology terms. The original matched its ``TECH_TERMS`` anywhere, so "let's go", "some rest"
and "the express train" became technologies. Terms that are also ordinary English words
(``AMBIGUOUS_TECH_TERMS``) now count only when the text marks them as technology:

1. written in the technology's own spelling ("Go", "Rust", "Express", "REST"), neither as the
   first word of a sentence or after a colon ("Go for it", "Gina: Go for it") nor inside a
   multi-word capitalised name ("Ruby Johnson", "Hey Ruby"); an all-caps spelling counts only
   where that is the real spelling ("REST" anywhere, but not "GO");
2. or, in any case, directly followed by a software noun (``TECH_CONTEXT_WORDS``:
   "rest api", "Express middleware", "react app", "node server");
3. or, for the programming languages (``LANGUAGE_TERMS``), directly after a word such as
   "using"/"learning" or after "written/coded/... in" ("we wrote it in python").

Unambiguous terms ("postgresql", "kubernetes", "golang", "node.js") count in any case.
Technologies are named by their usual spelling ("PostgreSQL", "Node.js", "REST"), and
spelling variants fold into one name ("postgres" -> PostgreSQL, "nodejs" -> Node.js).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from mind_core.knowledge.person_context import PERSON_CONTEXT_CONFIDENCE, people_in_context

log = logging.getLogger(__name__)

MIN_ENTITY_TEXT_LENGTH = 10
MIN_RELATION_TEXT_LENGTH = 20
MIN_NAME_LENGTH = 3
TECH_CONFIDENCE = 0.9
PROPER_NOUN_CONFIDENCE = 0.7

ENTITY_TYPES = ("person", "project", "technology", "organization", "tool", "concept")

# The original's list, verbatim (reference-behaviour §6).
TECH_TERMS = frozenset(
    "javascript typescript python rust go java ruby react vue angular svelte nextjs nuxt node nodejs deno bun"
    " postgresql postgres sqlite mysql mongodb redis qdrant docker kubernetes aws gcp azure git github gitlab"
    " fastify express flask django tauri electron graphql rest grpc openai anthropic litellm claude gpt vitest"
    " jest pytest drizzle prisma sequelize bullmq clerk stripe webpack vite esbuild rollup".split()
)

# How each technology is written; a term absent here is written with its first letter capitalised.
TECH_DISPLAY_NAMES = {
    "javascript": "JavaScript",
    "typescript": "TypeScript",
    "nextjs": "Next.js",
    "node": "Node.js",
    "postgresql": "PostgreSQL",
    "sqlite": "SQLite",
    "mysql": "MySQL",
    "mongodb": "MongoDB",
    "aws": "AWS",
    "gcp": "GCP",
    "github": "GitHub",
    "gitlab": "GitLab",
    "graphql": "GraphQL",
    "rest": "REST",
    "grpc": "gRPC",
    "openai": "OpenAI",
    "litellm": "LiteLLM",
    "gpt": "GPT",
    "pytest": "pytest",
    "bullmq": "BullMQ",
    "webpack": "webpack",
    "esbuild": "esbuild",
}

# Other spellings of a term; all of them are unambiguous.
TECH_ALIASES = {
    "postgres": "postgresql",
    "nodejs": "node",
    "golang": "go",
    "rustlang": "rust",
    "node.js": "node",
    "next.js": "nextjs",
    "nuxt.js": "nuxt",
    "react.js": "react",
    "reactjs": "react",
    "vue.js": "vue",
    "vuejs": "vue",
    "express.js": "express",
    "expressjs": "express",
}

# Terms that are also ordinary English words; they need the cues described in the module doc.
AMBIGUOUS_TECH_TERMS = frozenset(
    "go rust java ruby python react angular node bun express rest electron jest drizzle clerk stripe rollup"
    " flask azure svelte".split()
)
# Terms whose real spelling is all capitals.
ACRONYM_TERMS = frozenset({"rest"})
LANGUAGE_TERMS = frozenset({"go", "rust", "java", "ruby", "python"})
TECH_CONTEXT_WORDS = frozenset(
    "api apis app apps server servers code codebase library libraries lib framework sdk runtime module"
    " modules package packages crate crates middleware backend frontend component components hooks script"
    " scripts compiler endpoint endpoints programming developer developers dev devs toolchain cli router"
    " native gem gems binary binaries stack".split()
)
LANGUAGE_LEAD_WORDS = frozenset(
    "using use uses used learn learning learned learnt know knows program programming coding code".split()
)
WRITING_VERBS = frozenset(
    "write writes writing wrote written rewrite rewrote rewritten code coded coding implemented implement"
    " built build programmed program scripted".split()
)

# Two or more TitleCase words (the original's PROPER_NOUN_RE, ASCII like JS). Unlike the
# original, the words are joined by spaces or tabs only (a line break ends a name), and a word may
# be TitleCase parts joined by hyphens ("Alex Botero-Lowry", not "Alex Botero").
_TITLE_WORD = r"[A-Z][a-z]+(?:-[A-Z][a-z]+)*"
PROPER_NOUN_RE = re.compile(rf"\b({_TITLE_WORD}(?:[ \t]+{_TITLE_WORD})+)\b", re.ASCII)

SKIP_WORDS = frozenset(
    "The This That These What When Where Which Who How Why And But For Not You Your They Has Have Was Were"
    " Are Will Would Could Should Can May Let Use Set Get Run Add See Also Just Now Here Then All Any Each"
    " Some Yes Hi Hey Thanks Please Sorry Sure Switch Error".split()
)

# Ours: chat openers that the original's SKIP_WORDS miss, so "Yeah John" or "Wow Maria Lopez"
# (LoCoMo-style chat) do not become concepts; stripped like SKIP_WORDS at the start of a name.
INTERJECTIONS = frozenset(
    "Yeah Yep Yup Nope Wow Whoa Oh Ooh Aww Aw Ah Ahh Hmm Um Uh Well Okay Ok Cool Great Nice Awesome Amazing"
    " Absolutely Totally Congrats Congratulations Bye Goodbye Hello Howdy Woohoo Yay Haha Lol Dear Welcome"
    " Remember Definitely Exactly Indeed Right Really Thank Cheers Omg".split()
)
# Ours: words that open a sentence or a heading but never a name, so "After Obsidian starts",
# "Show Obsidian version", "Meet Attachmate" and "Acked By" give no entity (a heading is its own
# line, so its first word is always sentence-initial).
SENTENCE_OPENERS = frozenset(
    "After Before Once Since While If Or In On At To From With Without Via Into Onto Upon About During"
    " Under Over Between Across Through Within Unless Until Although Though Because So As Like Per"
    " Show Meet Register Click Open Select Enter Choose View Buy Try Update Create Delete Remove Install"
    " Enable Disable Learn Read Find Make Keep Move Copy Check Download Upload Start Stop Go Upcoming New"
    " Troubleshoot Manage Configure Acked Signed Reviewed Tested Reported Suggested Cc Re Fwd Dear".split()
)
_LEADING_NOISE = SKIP_WORDS | INTERJECTIONS | SENTENCE_OPENERS

CONCEPT_INDICATORS = re.compile(
    r"\b(analysis|assessment|review|strategy|planning|framework|methodology|approach|decision|pattern"
    r"|principle|design|optimization|evaluation|implementation|migration|integration|configuration"
    r"|architecture|pipeline|workflow|summary|overview|comparison|benchmark|audit|standard|guideline"
    r"|requirement|specification|matrix|model|protocol|phase|milestone|roadmap)\b",
    re.IGNORECASE | re.ASCII,
)
ORG_INDICATORS = re.compile(
    r"\b(inc|corp|ltd|llc|gmbh|group|company|foundation|institute|university|team|department|ministry"
    r"|agency|council|board|association|partnership|venture|capital|labs?|studio|consulting"
    r"|software|industries|corporation|systems|technologies|solutions|networks|srl|plc|bank)\b",
    re.IGNORECASE | re.ASCII,
)
PROJECT_INDICATORS = re.compile(
    r"^(project|initiative|program|campaign|operation|mission|sprint|milestone|phase|version)\b"
    r"|\b(sync|publish|cli|api|sdk|app|cloud|server|desktop|mobile|plugin)$",
    re.IGNORECASE | re.ASCII,
)
PERSON_FIRST_NAMES = frozenset(
    "james john robert michael david william richard joseph thomas charles mary patricia jennifer linda"
    " elizabeth barbara susan jessica sarah karen daniel matthew anthony mark donald steven paul andrew"
    " joshua kenneth maria anna lisa nancy betty margaret sandra ashley emily donna alice alex sam chris"
    " jordan taylor casey morgan riley jamie drew marko ana mia stefan nikola elena ivan peter georg hans".split()
)


@dataclass(frozen=True)
class ExtractedEntity:
    name: str
    type: str
    confidence: float
    # who found it (filled in by ``extract``); provenance, not part of what the fact is
    extractors: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class ExtractedRelation:
    source: str
    target: str
    relation_type: str
    confidence: float
    extractors: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Extraction:
    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()


@runtime_checkable
class Extractor(Protocol):
    """Anything with a unique ``name`` and ``extract(text) -> Extraction`` (plugins implement this)."""

    name: str

    def extract(self, text: str) -> Extraction: ...


# -- technology terms ---------------------------------------------------------------------------
_LOOKUP: dict[str, tuple[str, bool]] = {term: (term, term in AMBIGUOUS_TECH_TERMS) for term in TECH_TERMS}
_LOOKUP.update({alias: (term, False) for alias, term in TECH_ALIASES.items()})
# Whole words only; a preceding "." excludes file names ("main.go") and a following ".x" excludes
# "node.json", while "node.js" is its own alias.
_TECH_RE = re.compile(
    r"(?<![A-Za-z0-9_.])("
    + "|".join(sorted((re.escape(k) for k in _LOOKUP), key=len, reverse=True))
    + r")(?![A-Za-z0-9_]|\.[A-Za-z0-9_])",
    re.IGNORECASE | re.ASCII,
)
_NEXT_WORD = re.compile(r"[ \t]*-?[ \t]*([A-Za-z]+)", re.ASCII)
_NEXT_CAPITALISED = re.compile(r"[ \t]+[A-Z][a-z]", re.ASCII)
_PREV_CAPITALISED = re.compile(r"([A-Z][a-z]+)[ \t]+$", re.ASCII)
# A capitalised word before a term makes the pair a name ("Hey Ruby"), unless it is one of these.
_NON_NAME_LEADS = frozenset("In With Using Use Learn Try Like From On Of By For And Or".split())
_SENTENCE_LEAD_CHARS = " \t\r\n\"'`([{*#>-\u2022\u2018\u201c"


def tech_display_name(term: str) -> str:
    return TECH_DISPLAY_NAMES.get(term, term[:1].upper() + term[1:])


def _sentence_initial(text: str, start: int) -> bool:
    index = start - 1
    while index >= 0 and text[index] in _SENTENCE_LEAD_CHARS:
        if text[index] == "\n":
            return True
        index -= 1
    return index < 0 or text[index] in ".!?:"


def _previous_words(text: str, start: int) -> list[str]:
    """The two words before ``start`` (lower-cased), nearest last; stops at punctuation."""
    words = text[max(0, start - 48) : start].split()[-2:]
    if not words or not text[start - 1 : start].isspace():
        return []
    cleaned: list[str] = []
    for word in reversed(words):
        if not word.isalpha():
            break
        cleaned.insert(0, word.lower())
    return cleaned


def _inside_name(text: str, start: int, end: int) -> bool:
    """Whether the word at ``start:end`` is part of a multi-word capitalised name."""
    if _NEXT_CAPITALISED.match(text, end):
        return True
    previous = _PREV_CAPITALISED.search(text, max(0, start - 32), start)
    return previous is not None and previous.group(1) not in _NON_NAME_LEADS


def _marked_as_technology(text: str, start: int, end: int, term: str) -> bool:
    token = text[start:end]
    proper = term.upper() if term in ACRONYM_TERMS else term[:1].upper() + term[1:]
    if token == proper:
        if term in ACRONYM_TERMS:
            return True
        if not _sentence_initial(text, start) and not _inside_name(text, start, end):
            return True
    following = _NEXT_WORD.match(text, end)
    if following and following.group(1).lower() in TECH_CONTEXT_WORDS:
        return True
    if term in LANGUAGE_TERMS:
        before = _previous_words(text, start)
        if before and before[-1] in LANGUAGE_LEAD_WORDS:
            return True
        if len(before) == 2 and before[-1] == "in" and before[0] in WRITING_VERBS:
            return True
    return False


def extract_technologies(text: str) -> list[ExtractedEntity]:
    found: dict[str, ExtractedEntity] = {}
    for match in _TECH_RE.finditer(text):
        term, ambiguous = _LOOKUP[match.group(1).lower()]
        if ambiguous and not _marked_as_technology(text, match.start(), match.end(), term):
            continue
        name = tech_display_name(term)
        found.setdefault(name.lower(), ExtractedEntity(name, "technology", TECH_CONFIDENCE))
    return list(found.values())


# -- proper nouns ---------------------------------------------------------------------------------
def clean_proper_noun(phrase: str) -> str | None:
    """Collapse whitespace and drop leading SKIP_WORDS and INTERJECTIONS; None unless 2+ words remain.

    The original dropped the whole match when its first word was a skip word, losing
    "Thanks Alice Johnson" and "The Falcon Project".
    """
    words = phrase.split()
    while words and words[0] in _LEADING_NOISE:
        words.pop(0)
    if len(words) < 2:
        return None
    name = " ".join(words)
    return name if len(name) >= MIN_NAME_LENGTH else None


def classify_proper_noun(name: str) -> str:
    """person > organization > project > concept when several indicators fire; concept when none."""
    first_word = name.split(maxsplit=1)[0].split("-")[0].lower() if name.strip() else ""
    if first_word in PERSON_FIRST_NAMES:
        return "person"
    if ORG_INDICATORS.search(name):
        return "organization"
    if PROJECT_INDICATORS.search(name):
        return "project"
    return "concept"


def extract_entities(text: str) -> list[ExtractedEntity]:
    """Technologies, then names their context types (``mind_core.knowledge.person_context``), then other
    multi-word proper nouns, deduplicated by (type, lower name)."""
    if len(text) < MIN_ENTITY_TEXT_LENGTH:
        return []
    entities: dict[tuple[str, str], ExtractedEntity] = {}
    for entity in extract_technologies(text):
        entities.setdefault((entity.type, entity.name.lower()), entity)
    people, organizations = people_in_context(text)
    for entity_type, found in (("person", people), ("organization", organizations)):
        for key, name in found.items():
            entities.setdefault((entity_type, key), ExtractedEntity(name, entity_type, PERSON_CONTEXT_CONFIDENCE))
    named = [*people, *organizations]
    for match in PROPER_NOUN_RE.finditer(text):
        name = clean_proper_noun(match.group(1))
        if name is None or any(known.startswith(name.lower()) for known in named):
            continue  # its context already typed it ("Joe Perches <joe@...>"), or cut it ("Botero-Lowry")
        entity_type = classify_proper_noun(name)
        entities.setdefault(
            (entity_type, name.lower()), ExtractedEntity(name, entity_type, PROPER_NOUN_CONFIDENCE)
        )
    return list(entities.values())


# -- relations ------------------------------------------------------------------------------------
_P = r"\b[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)+"
# A relation end is a multi-word proper noun or one capitalised token; a single token only
# counts when it names an extracted entity (in practice a technology such as "PostgreSQL").
_END = rf"(?:{_P}|\b[A-Z][A-Za-z0-9]*(?:\.js)?)"


@dataclass(frozen=True)
class RelationPattern:
    relation_type: str
    regex: re.Pattern[str]
    confidence: float
    keywords: tuple[str, ...]  # the pattern is only run when one of these occurs (lower-cased)
    reverse: bool = False  # True: the match's second end is the relation's source


def _pattern(
    relation_type: str, verbs: str, confidence: float, keywords: Sequence[str], *, reverse: bool = False
) -> RelationPattern:
    regex = re.compile(rf"({_END})\s+(?:{verbs})\s+(?:the\s+)?({_END})", re.ASCII)
    return RelationPattern(relation_type, regex, confidence, tuple(keywords), reverse)


RELATION_PATTERNS: tuple[RelationPattern, ...] = (
    _pattern("led_by", r"is led by|is managed by|managed by", 0.9, ("led by", "managed by")),
    # Active voice: "Alice Johnson leads Project Falcon" means Falcon is led by Alice.
    _pattern("led_by", r"leads?|manages?", 0.9, ("lead", "manage"), reverse=True),
    _pattern("reports_to", r"reports? to|works? (?:for|under)", 0.9, ("report", "work")),
    _pattern(
        "depends_on", r"depends? on|requires?|relies? on", 0.85, ("depend", "require", "relies", "rely")
    ),
    _pattern(
        "maintained_by",
        r"(?:(?:is|are|was|were)\s+)?(?:maintained|built|created|owned) by",
        0.85,
        ("maintained", "built", "created", "owned"),
    ),
    _pattern("affiliated_with", r"from|at|works? at", 0.75, ("from", "at")),
    # The original's pattern had no object group and never fired: approved(approver, thing).
    _pattern("approved", r"approved|signed|confirmed", 0.8, ("approved", "signed", "confirmed")),
)


def _relation_end(raw: str, entity_names: dict[str, str]) -> str | None:
    """The relation end's name as the extracted entities spell it, or None when unusable."""
    if len(raw.split()) > 1:
        name = clean_proper_noun(raw)
        if name is None:
            return None
        return entity_names.get(name.lower(), name)
    lowered = raw.lower()
    known = _LOOKUP.get(lowered)
    if known is not None:
        lowered = tech_display_name(known[0]).lower()
    return entity_names.get(lowered)


def extract_relations(text: str, entities: Sequence[ExtractedEntity]) -> list[ExtractedRelation]:
    """Typed relations between named things; at least one end must be an extracted entity."""
    if len(entities) < 2 or len(text) < MIN_RELATION_TEXT_LENGTH:
        return []
    entity_names = {e.name.lower(): e.name for e in entities}
    lowered = text.lower()
    relations: dict[tuple[str, str, str], ExtractedRelation] = {}
    for pattern in RELATION_PATTERNS:
        if not any(keyword in lowered for keyword in pattern.keywords):
            continue
        for match in pattern.regex.finditer(text):
            first = _relation_end(match.group(1), entity_names)
            second = _relation_end(match.group(2), entity_names)
            if first is None or second is None or first.lower() == second.lower():
                continue
            if first.lower() not in entity_names and second.lower() not in entity_names:
                continue
            source, target = (second, first) if pattern.reverse else (first, second)
            key = (pattern.relation_type, source.lower(), target.lower())
            if key not in relations or relations[key].confidence < pattern.confidence:
                relations[key] = ExtractedRelation(source, target, pattern.relation_type, pattern.confidence)
    return list(relations.values())


class RuleBasedExtractor:
    """The original's regex extractor with its bugs fixed (see docs/deviations.md)."""

    name = "rules"

    def extract(self, text: str) -> Extraction:
        entities = extract_entities(text)
        return Extraction(tuple(entities), tuple(extract_relations(text, entities)))


# -- registry -------------------------------------------------------------------------------------
_registry_lock = threading.Lock()
_extractors: dict[str, Extractor] = {}


def register_extractor(extractor: Extractor) -> None:
    """Add an extractor (the plugin hook calls this); one with the same name is replaced."""
    name = getattr(extractor, "name", None)
    if not isinstance(name, str) or not name or not callable(getattr(extractor, "extract", None)):
        raise TypeError(
            f"an extractor needs a non-empty str `name` and an `extract(text)` method: {extractor!r}"
        )
    with _registry_lock:
        _extractors[name] = extractor


def get_extractors() -> tuple[Extractor, ...]:
    """The registered extractors, then the plugins' (a plugin's extractor named like a registered
    one is left out; an object without ``name`` and ``extract`` is logged and left out)."""
    from mind_core.plugins import get_extractors as plugin_extractors

    with _registry_lock:
        chosen = dict(_extractors)
    for extractor in plugin_extractors():
        name = getattr(extractor, "name", None)
        if not isinstance(name, str) or not name or not callable(getattr(extractor, "extract", None)):
            log.warning("ignoring plugin extractor %r: it needs a str `name` and `extract(text)`", extractor)
            continue
        chosen.setdefault(name, extractor)
    return tuple(chosen.values())


def reset_extractors() -> None:
    """Back to the default set: the rule-based extractor only."""
    with _registry_lock:
        _extractors.clear()
        _extractors[RuleBasedExtractor.name] = RuleBasedExtractor()


reset_extractors()


def _clamp(confidence: object) -> float | None:
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or confidence != confidence:
        return None
    return min(1.0, max(0.0, float(confidence)))


def merge_extractions(extractions: Iterable[Extraction]) -> Extraction:
    """One extraction: entities by (type, lower name), relations by (type, lower ends); max confidence.

    The first spelling seen wins; malformed items (empty names, non-numeric confidence) are dropped.
    """
    entities: dict[tuple[str, str], ExtractedEntity] = {}
    relations: dict[tuple[str, str, str], ExtractedRelation] = {}
    for extraction in extractions:
        for entity in extraction.entities:
            confidence = _clamp(entity.confidence)
            name = entity.name.strip() if isinstance(entity.name, str) else ""
            entity_type = entity.type.strip() if isinstance(entity.type, str) else ""
            if not name or not entity_type or confidence is None:
                continue
            key = (entity_type, name.lower())
            held = entities.get(key)
            found_by = _union(held.extractors if held else (), entity.extractors)
            entities[key] = ExtractedEntity(
                held.name if held else name,
                entity_type,
                max(confidence, held.confidence) if held else confidence,
                found_by,
            )
        for relation in extraction.relations:
            confidence = _clamp(relation.confidence)
            ends = [v.strip() if isinstance(v, str) else "" for v in (relation.source, relation.target)]
            rtype = relation.relation_type.strip() if isinstance(relation.relation_type, str) else ""
            if not all(ends) or not rtype or confidence is None:
                continue
            key = (rtype, ends[0].lower(), ends[1].lower())
            held_rel = relations.get(key)
            source, target = (held_rel.source, held_rel.target) if held_rel else (ends[0], ends[1])
            relations[key] = ExtractedRelation(
                source,
                target,
                rtype,
                max(confidence, held_rel.confidence) if held_rel else confidence,
                _union(held_rel.extractors if held_rel else (), relation.extractors),
            )
    return Extraction(tuple(entities.values()), tuple(relations.values()))


def extract(text: str) -> Extraction:
    """Run every registered extractor on ``text`` and merge the results.

    An extractor that raises or returns something other than an ``Extraction`` is logged and
    skipped, so one faulty plugin cannot stop a cognify run.
    """
    if not isinstance(text, str) or not text:
        return Extraction()
    results: list[Extraction] = []
    for extractor in get_extractors():
        try:
            result = extractor.extract(text)
        except Exception:
            log.exception("extractor %r failed; its output is skipped", extractor.name)
            continue
        if not isinstance(result, Extraction):
            log.warning(
                "extractor %r returned %r instead of an Extraction; skipped", extractor.name, type(result)
            )
            continue
        results.append(_credited(result, extractor.name))
    return merge_extractions(results)


def _credited(extraction: Extraction, name: str) -> Extraction:
    """The extraction with ``name`` recorded on each entity and relation (malformed ones kept as
    they are: merging drops them)."""
    return Extraction(
        tuple(
            replace(e, extractors=_union(e.extractors, (name,))) if isinstance(e, ExtractedEntity) else e
            for e in extraction.entities
        ),
        tuple(
            replace(r, extractors=_union(r.extractors, (name,))) if isinstance(r, ExtractedRelation) else r
            for r in extraction.relations
        ),
    )


def _union(first: Iterable[str], second: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*first, *second]))
