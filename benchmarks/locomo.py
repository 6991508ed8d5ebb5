"""Evidence recall@k on LoCoMo (Maharana et al., ACL 2024) through the real harvest path.

Each LoCoMo sample becomes a ChatGPT export (a conversation per session, a message per dialog
turn at the session's date, node id = ``dia_id``; an image turn's text gets its BLIP caption as
``[image: caption]``), is harvested into a fresh mind with the real model, and every question is
asked in each mode: hybrid (the product search), keyword lane only, vector lane only, and a
grep-style substring baseline. Scored as LoCoMo Table 3 (see benchmarks/_memory_eval.py).

    .venv/bin/python benchmarks/locomo.py [--data FILE] [--k 5 10 25 50] [--mode hybrid keyword vector grep]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from _common import SHARED_DATA
from _memory_eval import (
    DEFAULT_KS,
    MODES,
    Conversation,
    Session,
    Turn,
    add_search_arguments,
    image_text,
    make_questions,
    parse_epoch,
    run_from_args,
)

from mind_core.embeddings import InprocessEmbedder
from mind_core.embeddings.inprocess import BACKENDS

DEFAULT_DATA = SHARED_DATA / "benchmarks" / "locomo" / "locomo10_conv1-3.json"
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")
CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
_SESSION = re.compile(r"session_(\d+)")


def load_locomo(path: Path) -> list[Conversation]:
    """Samples of locomo10.json; sessions are the ``session_N`` keys that hold lists (some
    samples have more ``session_N_date_time`` keys than sessions)."""
    conversations = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        name = str(sample["sample_id"])
        conv = sample["conversation"]
        numbers = sorted(
            int(m.group(1))
            for key, value in conv.items()
            if (m := _SESSION.fullmatch(key)) and isinstance(value, list)
        )
        sessions = []
        for number in numbers:
            when = parse_epoch(conv[f"session_{number}_date_time"], DATE_FORMATS)
            turns = [
                Turn(
                    str(t["dia_id"]),
                    str(t["speaker"]),
                    image_text(t.get("text", ""), t.get("blip_caption")),
                    when,
                )
                for t in conv[f"session_{number}"]
            ]
            sessions.append(Session(f"session_{number}", f"{name} session {number}", turns))
        conversation = Conversation(name, sessions)
        conversation.questions = make_questions(sample.get("qa", []), conversation.dia_ids())
        conversations.append(conversation)
    return conversations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a locomo10.json-shaped file")
    parser.add_argument("--k", type=int, nargs="+", default=list(DEFAULT_KS))
    parser.add_argument("--mode", nargs="+", choices=MODES, default=list(MODES))
    add_search_arguments(parser)
    parser.add_argument(
        "--embed-backend", choices=tuple(BACKENDS), help="in-process model backend (default: the product's)"
    )
    parser.add_argument(
        "--dimensions",
        type=int,
        help="store vectors at this width (1024: the original engine's; default: the model's own, 384)",
    )
    parser.add_argument("--name", default="locomo", help="results file name under benchmarks/results/")
    args = parser.parse_args()
    conversations = load_locomo(args.data)
    embedder = InprocessEmbedder(args.dimensions, backend=args.embed_backend)
    print(f"embedding backend: {embedder.backend}, vectors stored at {embedder.dimensions} dims")
    run_from_args(args, str(args.data.name), conversations, embedder, CATEGORIES)


if __name__ == "__main__":
    main()
