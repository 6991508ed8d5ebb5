"""A scan redacted as it is read: for a harvest that stores its scan before importing it.

Dagster's harvest stages each scan in a staging store (Parquet) before the import step reads it
into the mind; the staged items must not hold what the policy redacts either. ``redacted_scan``
puts each item through the redactor on the way (its title, each message's text and author, and
what the plugin read about both), so the import step finds it already redacted and stores the
same frames as a harvest from the command line. Names of known people need the mind, which the
scan step does not open: the import step redacts those.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace

from mind_core.harvest.items import HarvestItem, ScanEvent
from mind_core.privacy.redaction import Finding, Redactor, count_findings


def redacted_scan(events: Iterable[ScanEvent], redactor: Redactor, counts: Counter[str]) -> Iterator[ScanEvent]:
    """``events`` with every item redacted; ``counts`` gathers, per kind, the values replaced
    (each distinct value once per message, as the import counts them)."""
    for event in events:
        if not isinstance(event, HarvestItem) or not redactor.active:
            yield event
            continue
        item_found: list[Finding] = []
        title = redactor.redact_value(event.title, item_found)
        item_metadata = redactor.redact_value(event.metadata, item_found)
        messages = []
        for message in event.messages:
            found = list(item_found)
            messages.append(
                replace(
                    message,
                    text=redactor.redact_value(message.text, found),
                    author=redactor.redact_value(message.author, found),
                    metadata=redactor.redact_value(message.metadata, found),
                )
            )
            counts.update(count_findings(found))
        yield replace(event, title=title, metadata=item_metadata, messages=messages)
