"""A large conversational corpus built deterministically from the real benchmark turns.

The ingest and search benchmarks need tens of thousands of messages that read like real chat
(lengths, vocabulary, speakers, sessions), not generated word salad. The 2,802 dialog turns of the
shared LoCoMo and REALTALK files are recombined: each chat gets two speakers and
``per_conversation`` messages, each message one turn's text, or two turns' texts joined (about a
third of them), drawn with a fixed seed. Titles are unique per chat, so no two frames share
content and nothing is deduplicated away. Without ../shared/data the turns come from a fixed
synthetic vocabulary (mind_core/testing/exports.py), and the result says so.
"""

from __future__ import annotations

import random
from pathlib import Path

from _chat_exports import write_export
from _common import SHARED_DATA
from _memory_eval import Conversation, Session, Turn

from mind_core.testing.exports import WORDS

SEED = 20_240_503
DAY = 86_400.0
START_EPOCH = 1_672_531_200.0  # 2023-01-01


def benchmark_turns() -> tuple[list[tuple[str, str]], str]:
    """(speaker, text) of every shared LoCoMo and REALTALK turn, and where they came from."""
    from locomo import DEFAULT_DATA as LOCOMO_DATA
    from locomo import load_locomo
    from realtalk import DEFAULT_DATA as REALTALK_DATA
    from realtalk import load_realtalk

    if LOCOMO_DATA.is_file() and REALTALK_DATA.is_dir():
        conversations = load_locomo(LOCOMO_DATA) + load_realtalk([REALTALK_DATA])
        turns = [(t.speaker, t.text) for c in conversations for s in c.sessions for t in s.turns if t.text]
        return turns, "LoCoMo conv 1-3 + REALTALK chats 1-3 turns, recombined"
    rng = random.Random(SEED)
    speakers = ["Alice", "Bob", "Carol", "Dan"]
    turns = [
        (speakers[i % 4], " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 40)))) for i in range(3000)
    ]
    return turns, f"synthetic vocabulary ({SHARED_DATA} not present)"


def recombined_corpus(messages: int, per_conversation: int = 25) -> tuple[Conversation, str]:
    """One Conversation whose sessions are the chats of the corpus (``messages`` turns in all)."""
    turns, origin = benchmark_turns()
    names = sorted({speaker.capitalize() for speaker, _ in turns})
    rng = random.Random(SEED)
    sessions = []
    made = 0
    chat = 0
    while made < messages:
        size = min(per_conversation, messages - made)
        first, second = rng.sample(names, 2)
        start = START_EPOCH + chat * DAY / 4
        chat_turns = []
        for i in range(size):
            text = rng.choice(turns)[1]
            if rng.random() < 1 / 3:
                text = f"{text} {rng.choice(turns)[1]}"
            chat_turns.append(Turn(f"m{i}", first if i % 2 == 0 else second, text, start + 45 * i))
        sessions.append(Session(f"chat-{chat}", f"Chat {chat}: {first} and {second}", chat_turns))
        made += size
        chat += 1
    return Conversation("corpus", sessions), origin


def write_corpus_export(path: Path, messages: int, per_conversation: int = 25) -> tuple[Path, str]:
    """The corpus as a ChatGPT conversations.json at ``path`` (the shape the memory benchmarks
    harvest: the corpus's first speaker is the user, every other one the assistant)."""
    corpus, origin = recombined_corpus(messages, per_conversation)
    written, _ = write_export([corpus], "chatgpt", path.parent)
    if written != path:
        written.replace(path)
    return path, origin
