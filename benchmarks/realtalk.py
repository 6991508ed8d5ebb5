"""Evidence recall@k on REALTALK (Lee et al., 2025: 21-day real messaging-app chats).

Same method as benchmarks/locomo.py (shared code in benchmarks/_memory_eval.py); the format
differs: every turn carries its own ``"DD.MM.YYYY, HH:MM:SS"`` time (used as the message time),
the text is ``clean_text``, speakers come from ``name.speaker_1/2``, and ``dia_id`` prefixes do not
always match the session key, so evidence is matched by the ``dia_id`` string only.

    .venv/bin/python benchmarks/realtalk.py [--data FILE_OR_DIR ...] [--k 5 10 25 50] [--mode ...]
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

DEFAULT_DATA = SHARED_DATA / "benchmarks" / "realtalk"
DATE_FORMATS = ("%d.%m.%Y, %H:%M:%S", "%d.%m.%Y, %H:%M")
CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "commonsense"}
_SESSION = re.compile(r"session_(\d+)")


def load_chat(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    name = path.stem
    numbers = sorted(
        int(m.group(1))
        for key, value in data.items()
        if (m := _SESSION.fullmatch(key)) and isinstance(value, list)
    )
    sessions = []
    for number in numbers:
        turns = []
        for t in data[f"session_{number}"]:
            text = image_text(str(t.get("clean_text") or ""), t.get("blip_caption"))
            if not text and (t.get("img_file") or t.get("img_url")):
                text = "[image]"
            turns.append(
                Turn(str(t["dia_id"]), str(t["speaker"]), text, parse_epoch(t["date_time"], DATE_FORMATS))
            )
        sessions.append(Session(f"session_{number}", f"{name} session {number}", turns))
    conversation = Conversation(name, sessions)
    conversation.questions = make_questions(data.get("qa", []), conversation.dia_ids())
    return conversation


def load_realtalk(paths: list[Path]) -> list[Conversation]:
    files = [f for p in paths for f in (sorted(p.glob("*.json")) if p.is_dir() else [p])]
    return [load_chat(f) for f in files]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, nargs="+", default=[DEFAULT_DATA], help="Chat_*.json files or folders"
    )
    parser.add_argument("--k", type=int, nargs="+", default=list(DEFAULT_KS))
    parser.add_argument("--mode", nargs="+", choices=MODES, default=list(MODES))
    add_search_arguments(parser)
    parser.add_argument(
        "--embed-backend", choices=tuple(BACKENDS), help="in-process model backend (default: the product's)"
    )
    parser.add_argument("--name", default="realtalk", help="results file name under benchmarks/results/")
    args = parser.parse_args()
    conversations = load_realtalk(args.data)
    embedder = InprocessEmbedder(backend=args.embed_backend)
    print(f"embedding backend: {embedder.backend}")
    label = ", ".join(c.name for c in conversations)
    run_from_args(args, label, conversations, embedder, CATEGORIES)


if __name__ == "__main__":
    main()
