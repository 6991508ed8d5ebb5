"""Small deterministic chat exports for tests and benchmarks (written here, not copied)."""

from __future__ import annotations

import json
import random
from pathlib import Path

WORDS = (
    "project falcon database migration postgres sqlite release budget meeting alice bob carol dashboard "
    "latency cache index query vector embedding harvest mailbox vault note deadline review design api "
    "customer invoice report sprint roadmap hiring onboarding laptop travel berlin lisbon kubernetes docker"
).split()


def chatgpt_conversation(
    conv_id: str, title: str, texts: list[str], start_epoch: float = 1_700_000_000.0
) -> dict:
    """A linear ChatGPT conversation (root → alternating user/assistant) in the export's shape."""
    mapping: dict = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for i, text in enumerate(texts):
        node_id = f"{conv_id}-m{i}"
        mapping[node_id] = {
            "id": node_id,
            "parent": parent,
            "children": [],
            "message": {
                "id": node_id,
                "author": {"role": "user" if i % 2 == 0 else "assistant"},
                "create_time": start_epoch + 60 * i,
                "content": {"content_type": "text", "parts": [text]},
                "metadata": {},
            },
        }
        mapping[parent]["children"].append(node_id)
        parent = node_id
    return {
        "id": conv_id,
        "title": title,
        "create_time": start_epoch,
        "current_node": parent,
        "mapping": mapping,
    }


def generated_texts(rng: random.Random, count: int, low: int = 8, high: int = 30) -> list[str]:
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))) + f" (#{i})" for i in range(count)
    ]


def write_chatgpt_export(path: Path, conversations: int, messages_each: int, seed: int = 7) -> Path:
    """conversations.json with ``conversations`` x ``messages_each`` unique messages."""
    rng = random.Random(seed)
    data = [
        chatgpt_conversation(
            f"conv-{c}",
            f"Conversation {c} about {rng.choice(WORDS)}",
            generated_texts(rng, messages_each),
            1_700_000_000.0 + 86_400 * c,
        )
        for c in range(conversations)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path
