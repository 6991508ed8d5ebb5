"""Who the knowledge graph says the people of the shared mail are, and the duplicates left.

Harvests every mail corpus of ../shared/data/email (one source each, one mind, the mock
embedder: no vectors are needed) and prints the active entities by type, then counts, by rules
independent of the code under test:

- list persons: persons holding an address that some message's ``List-Post`` header names;
- role persons: persons holding a ``noreply@``, ``postmaster@``, ``mailer-daemon@``,
  ``webmaster@`` or ``...-request@`` / ``...-bounces@`` / ``...-admin@`` address;
- first-name duplicates: one-word persons whose word opens another active person's full name;
- spelling duplicates: persons whose names differ only in case and punctuation.

It only uses the harvest API and SQL, so the same script, copied into an older tree's
``benchmarks/``, measures that tree (the "before" of the README's table).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import defaultdict
from pathlib import Path

from _common import SHARED_DATA, write_results

from mind_core.embeddings import create_embedding_provider
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind

MAILTO = re.compile(rb"^List-Post:\s*<mailto:([^<>?\s]+)", re.IGNORECASE | re.MULTILINE)
ROLE = re.compile(r"^(?:noreply|no-reply|postmaster|mailer-daemon|webmaster)@|-(?:request|bounces|admin)@")


def posted_lists(root: Path) -> set[str]:
    found: set[str] = set()
    for path in root.rglob("*"):
        if path.is_file():
            found.update(m.decode(errors="replace").lower() for m in MAILTO.findall(path.read_bytes()))
    return found


def main() -> None:
    corpora = sorted(p for p in (SHARED_DATA / "email").iterdir() if p.is_dir())
    with tempfile.TemporaryDirectory() as folder:
        mind = Mind.open(Path(folder) / "mail.mind", embedder=create_embedding_provider("mock"))
        for corpus in corpora:
            register_source(mind, "email", corpus, corpus.name)
            harvest(mind, corpus.name)
        types = {
            row[0]: row[1]
            for row in mind.db.query(
                "SELECT entity_type, COUNT(*) FROM knowledge_entities WHERE valid_to IS NULL GROUP BY 1"
            )
        }
        people = [
            (r["name"], json.loads(r["properties"]))
            for r in mind.db.query(
                "SELECT name, properties FROM knowledge_entities WHERE entity_type = 'person' AND valid_to IS NULL"
            )
        ]
        merged = mind.db.scalar(
            "SELECT COUNT(*) FROM knowledge_entities WHERE json_type(properties, '$.merged_into') IS NOT NULL"
        )
        mind.close()
    lists = set().union(*(posted_lists(corpus) for corpus in corpora))
    list_people = sorted(n for n, p in people if lists & set(p.get("addresses", [])))
    role_people = sorted(n for n, p in people if any(ROLE.search(a) for a in p.get("addresses", [])))
    first_words = defaultdict(list)
    for name, _ in people:
        if len(name.split()) > 1:
            first_words[name.split()[0].lower()].append(name)
    first_name_dups = sorted(n for n, _ in people if len(n.split()) == 1 and n.lower() in first_words)
    spellings = defaultdict(list)
    for name, _ in people:
        spellings[" ".join(re.findall(r"[^\W_]+", name.casefold()))].append(name)
    spelling_dups = sorted(" / ".join(sorted(v)) for v in spellings.values() if len(v) > 1)
    figures = {
        "corpora": [c.name for c in corpora],
        "active_entities_by_type": dict(sorted(types.items())),
        "persons": len(people),
        "merged_entities": merged,
        "list_persons": list_people,
        "role_persons": role_people,
        "first_name_duplicates": first_name_dups,
        "spelling_duplicates": spelling_dups,
    }
    print(f"corpora: {', '.join(figures['corpora'])}")
    print("active entities: " + ", ".join(f"{t} {n}" for t, n in figures["active_entities_by_type"].items()))
    print(f"persons: {len(people)}; entities merged into another: {merged}")
    for key in ("list_persons", "role_persons", "first_name_duplicates", "spelling_duplicates"):
        print(f"{key.replace('_', ' ')}: {len(figures[key])} {figures[key]}")
    write_results("kg_people", figures)


if __name__ == "__main__":
    main()
