"""Redaction on harvest: precision and recall per kind on a generated corpus, and its cost.

A ChatGPT export of generated messages (``mind_core.testing.redaction_corpus``): about half hold
one or two planted values (AWS keys, GitHub / Slack / OpenAI / Stripe tokens, JWTs, PEM private
keys, passwords assigned in a config line, e-mail addresses, phone numbers valid in their
numbering plan, IBANs with their mod-97 digits, card numbers with their Luhn digit), a third a
decoy (a number failing the Luhn or mod-97 check, a git hash, a UUID, a date, an order number, a
version, "password" or "token" in a sentence). It is harvested as a user does (``harvest``: scan,
import, cognify, vectors, reconcile) into a mind whose workspace redacts ``all``; then each frame
is compared with the message it came from (the provenance's message key): a planted value gone
and its kind's placeholder there is found (true positive), a placeholder no planted value
accounts for is a false positive, a planted value still there is missed.

Real text (when ``../shared/data`` is there): the dialogue turns of LoCoMo and REALTALK and the
paragraphs of the two Obsidian vaults hold no planted value; every finding there is listed
(masked) with its count per kind, for a reader to judge: most would be false positives.

Cost: the same export harvested side by side into a mind without a policy and one with ``all``
(CPU time of the whole harvest and of its scan + import stages, with the hashing embedder so
the model does not drown the difference), and the redactor alone over every message.

    .venv/bin/python benchmarks/redaction.py [--messages 5000] [--seed 7] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import SHARED_DATA, machine, write_results

from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.privacy.redaction import PLACEHOLDER, Redactor, preview
from mind_core.privacy.redaction_policy import RedactionPolicy, set_workspace_policy
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.redaction_corpus import PLANTED, Message, redaction_messages, write_redaction_export

PER_CONVERSATION = 20


def _harvested(folder: Path, export: Path, policy: str | None, cognify: bool = True) -> tuple[Mind, dict, float]:
    mind = Mind.open(folder / f"{policy or 'none'}-{cognify}.mind", embedder=HashingEmbedder())
    if policy:
        set_workspace_policy(mind.db, RedactionPolicy.parse(policy))
    register_source(mind, "chatgpt", export, "chat")
    began = time.process_time()
    report = harvest(mind, "chat", cognify=cognify)
    cpu = time.process_time() - began
    assert report.status == "ok", report.reason
    return mind, report.to_dict(), cpu


def _frames_by_message(mind: Mind) -> dict[str, str]:
    rows = mind.db.query(
        "SELECT json_extract(metadata, '$.provenance.message_key') AS key, content FROM memory_frames"
    )
    return {row["key"]: row["content"] for row in rows}


def quality(messages: list[Message], frames: dict[str, str]) -> dict[str, dict[str, float]]:
    tp, fp, fn, decoys_kept, decoys = Counter(), Counter(), Counter(), 0, 0
    for index, message in enumerate(messages):
        conversation, position = divmod(index, PER_CONVERSATION)
        content = frames[f"conv-{conversation}-m{position}"]
        placeholders = Counter(m.group(0)[1:-1] for m in PLACEHOLDER.finditer(content))
        planted = Counter(kind for kind, value in message.planted if value not in content)
        for kind, value in message.planted:
            if value in content:
                fn[kind] += 1
        for kind in set(placeholders) | set(planted):
            hits = min(placeholders[kind], planted[kind])
            tp[kind] += hits
            fp[kind] += placeholders[kind] - hits
            fn[kind] += planted[kind] - hits
        decoys += len(message.decoys)
        decoys_kept += sum(decoy in content for decoy in message.decoys)
    table = {}
    for kind in sorted(set(tp) | set(fn) | set(fp), key=lambda k: (not k.startswith("secret:"), k)):
        found = tp[kind] + fp[kind]
        table[kind] = {
            "planted": tp[kind] + fn[kind],
            "redacted": found,
            "true_positives": tp[kind],
            "precision": tp[kind] / found if found else 1.0,
            "recall": tp[kind] / (tp[kind] + fn[kind]) if tp[kind] + fn[kind] else 1.0,
        }
    table["decoys kept"] = {"planted": decoys, "redacted": decoys - decoys_kept, "true_positives": 0,
                            "precision": 0.0, "recall": decoys_kept / decoys if decoys else 1.0}
    return table


def _strings_under(value: object, key: str) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in ([v] if k == key and isinstance(v, str) else _strings_under(v, key))]
    if isinstance(value, list):
        return [s for v in value for s in _strings_under(v, key)]
    return []


def real_texts(data: Path) -> dict[str, list[str]]:
    """Dialogue turns and note paragraphs of the shared data, which plant nothing."""
    import json

    if not data.is_dir():
        return {}
    turns = []
    for path in sorted((data / "benchmarks").glob("*/*.json")):
        data_set = json.loads(path.read_text(encoding="utf-8"))
        turns += _strings_under(data_set, "text") or _strings_under(data_set, "clean_text")
    paragraphs = [
        block
        for path in sorted((data / "markdown").rglob("*.md"))
        for block in path.read_text(encoding="utf-8", errors="replace").split("\n\n")
        if block.strip()
    ]
    return {"dialogue turns (LoCoMo, REALTALK)": turns, "note paragraphs (Obsidian vaults)": paragraphs}


def real_text_findings(redactor: Redactor, data: Path) -> dict[str, dict]:
    results = {}
    for name, texts in real_texts(data).items():
        counts: Counter[str] = Counter()
        shown: list[str] = []
        for text in texts:
            findings = redactor.find(text)
            for finding in findings:
                counts[finding.kind] += 1
                if counts[finding.kind] <= 3:
                    shown.append(f"{finding.kind}: {preview(text, finding, findings, 30)}")
        results[name] = {"texts": len(texts), "findings": dict(counts), "examples": shown}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data", type=Path, default=SHARED_DATA, help="the shared data folder (real text)")
    args = parser.parse_args()
    messages = redaction_messages(args.messages, seed=args.seed)
    planted = sum(len(m.planted) for m in messages)
    print(f"{machine()}; load {Path('/proc/loadavg').read_text().split()[:3]}")
    print(f"{len(messages):,} messages, {planted:,} planted values of {len(PLANTED)} kinds, "
          f"{sum(len(m.decoys) for m in messages):,} decoys")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        export = write_redaction_export(folder / "export" / "conversations.json", messages, PER_CONVERSATION).parent
        plain, _, plain_cpu = _harvested(folder, export, None)
        redacting, report, cpu = _harvested(folder, export, "all")
        table = quality(messages, _frames_by_message(redacting))
        bare, _, bare_cpu = _harvested(folder, export, None, cognify=False)
        bare_redacting, _, bare_redacting_cpu = _harvested(folder, export, "all", cognify=False)
        for mind in (plain, redacting, bare, bare_redacting):
            mind.close()

    redactor = Redactor(RedactionPolicy.parse("all"))
    plain_messages = [m for m in messages if not m.planted and not m.decoys]
    began = time.process_time()
    for message in messages:
        redactor.redact(message.text)
    alone = time.process_time() - began
    fresh = Redactor(RedactionPolicy.parse("all"))  # its cache of short strings empty
    began = time.process_time()
    for message in plain_messages:
        fresh.redact(message.text)
    alone_plain = time.process_time() - began

    print(f"\n{'kind':22} {'planted':>8} {'redacted':>9} {'precision':>10} {'recall':>8}")
    for kind, row in table.items():
        if kind == "decoys kept":
            print(f"{'decoys left as they are':22} {row['planted']:>8,} {row['redacted']:>9,} {'':>10} {row['recall']:>8.3f}")
            continue
        print(f"{kind:22} {row['planted']:>8,} {row['redacted']:>9,} {row['precision']:>10.3f} {row['recall']:>8.3f}")

    n = len(messages)
    rates = {
        "harvest_without": n / plain_cpu,
        "harvest_with": n / cpu,
        "harvest_no_cognify_without": n / bare_cpu,
        "harvest_no_cognify_with": n / bare_redacting_cpu,
        "redactor_alone": n / alone,
        "redactor_alone_words_only": len(plain_messages) / alone_plain,
    }
    print("\nthroughput, messages/s of CPU time (the hashing embedder, so the model does not drown the difference):")
    print(f"  harvest                      without {rates['harvest_without']:8,.0f}   with {rates['harvest_with']:8,.0f}"
          f"   ({rates['harvest_with'] / rates['harvest_without']:.2f}x)")
    print(f"  harvest without cognify      without {rates['harvest_no_cognify_without']:8,.0f}   with "
          f"{rates['harvest_no_cognify_with']:8,.0f}   ({rates['harvest_no_cognify_with'] / rates['harvest_no_cognify_without']:.2f}x)")
    print(f"  the redactor alone (all kinds)        {rates['redactor_alone']:8,.0f}   "
          f"({1e6 * alone / n:.0f} µs a message, {sum(len(m.text) for m in messages) / n:.0f} characters on average; "
          f"{1e6 * alone_plain / len(plain_messages):.0f} µs for one of words only)")
    real = real_text_findings(redactor, args.data)
    for name, found in real.items():
        kinds = ", ".join(f"{n} {k}" for k, n in Counter(found["findings"]).most_common()) or "nothing"
        print(f"\n{name}: {found['texts']:,} texts, redacted {kinds}")
        for line in found["examples"]:
            print(f"  {line}")
    counted = report["imported"]["redacted"]
    print(f"\nthe harvest report counted {sum(counted.values()):,} redactions in {report['imported']['messages_redacted']:,} messages")
    write_results("redaction", {"messages": n, "seed": args.seed, "quality": table, "messages_per_second": rates,
                                "report_counts": counted, "real_text": real})


if __name__ == "__main__":
    main()
