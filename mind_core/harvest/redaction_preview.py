"""The redaction dry run: what a harvest of a source would redact, read from its files, nothing written.

The source is scanned as a harvest scans it and each message is put through the redactor the
harvest would use (the source's policy, or one given to try), over what a frame would store: its
text (title, speaker, words) and what the plugin read about it (a mail's headers, a note's
frontmatter). Each finding is listed with its kind, the message it lies in (file, item, message
key) and a masked preview (``mind_core.privacy.redaction.preview``): never the value itself, and
around it every secret and personal datum of any kind as its placeholder, whatever the policy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from mind_core.harvest.importer import REDACTED_PROVENANCE, frame_content, ledger_key, speaker_of
from mind_core.harvest.items import HarvestError
from mind_core.harvest.pipeline import get_registered, scan_source
from mind_core.harvest.source_metadata import source_metadata
from mind_core.harvest.stores import HarvestSourceStore
from mind_core.mind import Mind
from mind_core.privacy.redaction import IDENTIFIER_KEYS, Finding, Redactor, known_people, preview
from mind_core.privacy.redaction_policy import RedactionPolicy, effective_policy


@dataclass(frozen=True)
class RedactionHit:
    """One value a harvest would redact, located and masked."""

    source: str
    kind: str
    file: str
    item: str
    message: str
    field: str  # "text", or the metadata it lies in ("message.from", "title")
    preview: str


@dataclass
class RedactionPreview:
    source: str
    policy: str
    messages: int = 0
    messages_redacted: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    hits: list[RedactionHit] = field(default_factory=list)
    hits_not_listed: int = 0
    errors: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "hits": [asdict(h) for h in self.hits]}


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string of a JSON-like value with where it lies, identifier keys left out."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            if key not in IDENTIFIER_KEYS:
                yield from _strings(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner, path)


def _with_the_rest(findings: list[Finding], others: list[Finding]) -> list[Finding]:
    """``findings`` and those of ``others`` that overlap none of them, in order."""
    rest = [o for o in others if all(o.end <= f.start or o.start >= f.end for f in findings)]
    return sorted([*findings, *rest], key=lambda f: f.start)


def preview_redaction(
    mind: Mind, name: str, policy: RedactionPolicy | None = None, limit: int | None = 100
) -> RedactionPreview:
    """What harvesting source ``name`` under ``policy`` (default: its own) would redact; at most
    ``limit`` findings listed (None: all), every one counted."""
    source = get_registered(mind, name)
    policy = effective_policy(mind.db, name) if policy is None else policy
    redactor = Redactor(policy, known_people(mind.db) if "people" in policy.kinds else ())
    everything = Redactor(RedactionPolicy.parse("all"))  # a preview's context shows no secret of any kind
    result = RedactionPreview(name, policy.describe())
    if not redactor.active:
        return result
    for event in scan_source(source, HarvestSourceStore(mind.db).reading_rules(name)):
        if isinstance(event, HarvestError):
            result.errors += 1
            continue
        for message in event.messages:
            if not isinstance(message.text, str) or not message.text.strip():
                continue
            result.messages += 1
            texts = [("text", frame_content(event, message))]
            texts += list(_strings(source_metadata(event, message), ""))
            origin = {"title": event.title, "author": speaker_of(message)}
            texts += [(key, origin[key]) for key in REDACTED_PROVENANCE if isinstance(origin[key], str)]
            seen: set[tuple[str, str]] = set()
            for where, text in texts:
                findings = redactor.find(text)
                around = _with_the_rest(findings, everything.find(text) if findings else [])
                for finding in findings:
                    if (finding.kind, finding.value) in seen:
                        continue
                    seen.add((finding.kind, finding.value))
                    result.counts[finding.kind] = result.counts.get(finding.kind, 0) + 1
                    if limit is not None and len(result.hits) >= limit:
                        result.hits_not_listed += 1
                        continue
                    result.hits.append(
                        RedactionHit(
                            name,
                            finding.kind,
                            str(message.metadata.get("path") or event.metadata.get("path") or source.source_path),
                            redactor.redact(event.title)[0],  # a title may hold what is redacted
                            ledger_key(event, message),
                            where,
                            preview(text, finding, around),
                        )
                    )
            result.messages_redacted += bool(seen)
    result.counts = dict(Counter(result.counts).most_common())
    return result
