"""The conversations of LoCoMo and REALTALK written as the export files a user harvests (issue #35).

A benchmark conversation is a dialog between two named people. No shipped importer reads a
speaker's name from an AI chat export, so the benchmarks write each conversation in the two real
shapes a user could have it in, and nothing else:

- ``chatgpt``: a ChatGPT ``conversations.json``, one conversation per session, one message per
  dialog turn. As a real export, the author is a role: the conversation's first speaker is
  ``user`` and the other ``assistant`` (``name`` null); a message id is a UUID (derived from the
  conversation and dialog id, so a rerun writes the same file), the title the session's.
- ``telegram``: a Telegram Desktop account export (``result.json``), one personal chat per
  conversation holding all of its sessions in order (a real chat is not cut into sessions), the
  chat named after the second speaker (the first is the exporting account), one message per turn
  with the sender's name in ``from``; message ids run through the export as Telegram's do.

Both take the turn's text as the data set gives it (an image turn carries its caption as
``[image: caption]``: the data sets ship no images) and the turn's time. ``ExportKeys`` maps a
message id of the written export back to its conversation and dialog id, which is all scoring
needs: the harvest records each frame's message id as ``provenance.message_key``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _memory_eval import Conversation, Session

FORMATS = ("chatgpt", "telegram")
EXPORT_FILES = {"chatgpt": "conversations.json", "telegram": "result.json"}
_IDS = uuid.UUID("6f1c1f4e-35a1-4c8e-9a55-0b3f5e0d2a35")  # the namespace of the derived message ids

# message id in the export -> (conversation name, dialog id)
ExportKeys = dict[str, tuple[str, str]]


def speakers(conversation: Conversation) -> list[str]:
    """The conversation's speakers in the order they first speak."""
    return list(dict.fromkeys(t.speaker for s in conversation.sessions for t in s.turns))


def chatgpt_role(conversation: Conversation, speaker: str) -> str:
    """``user`` for the first speaker, ``assistant`` for any other, as a ChatGPT export has them."""
    return "user" if speaker == speakers(conversation)[0] else "assistant"


def _chatgpt_session(conversation: Conversation, session: Session, keys: ExportKeys) -> dict[str, Any]:
    root = str(uuid.uuid5(_IDS, f"{conversation.name}/{session.key}/root"))
    mapping: dict[str, Any] = {root: {"id": root, "message": None, "parent": None, "children": []}}
    parent = root
    for turn in session.turns:
        node = str(uuid.uuid5(_IDS, f"{conversation.name}/{turn.dia_id}"))
        keys[node] = (conversation.name, turn.dia_id)
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [],
            "message": {
                "id": node,
                "author": {"role": chatgpt_role(conversation, turn.speaker), "name": None, "metadata": {}},
                "create_time": turn.epoch,
                "update_time": None,
                "content": {"content_type": "text", "parts": [turn.text]},
                "status": "finished_successfully",
                "end_turn": None,
                "weight": 1.0,
                "metadata": {},
                "recipient": "all",
            },
        }
        mapping[parent]["children"].append(node)
        parent = node
    return {
        "id": str(uuid.uuid5(_IDS, f"{conversation.name}/{session.key}")),
        "title": session.title,
        "create_time": session.turns[0].epoch,
        "update_time": session.turns[-1].epoch,
        "current_node": parent,
        "mapping": mapping,
    }


def _telegram_time(epoch: float) -> dict[str, str]:
    moment = datetime.fromtimestamp(epoch, UTC)
    return {"date": moment.strftime("%Y-%m-%dT%H:%M:%S"), "date_unixtime": str(int(epoch))}


def _telegram_chat(
    conversation: Conversation, chat_id: int, first_id: int, keys: ExportKeys
) -> dict[str, Any]:
    names = speakers(conversation)
    user_ids = {name: f"user{chat_id * 10 + number}" for number, name in enumerate(names, 1)}
    messages = []
    for number, turn in enumerate((t for s in conversation.sessions for t in s.turns), first_id):
        keys[str(number)] = (conversation.name, turn.dia_id)
        messages.append(
            {
                "id": number,
                "type": "message",
                **_telegram_time(turn.epoch),
                "from": turn.speaker,
                "from_id": user_ids[turn.speaker],
                "text": turn.text,
                "text_entities": [{"type": "plain", "text": turn.text}],
            }
        )
    return {"name": names[-1], "type": "personal_chat", "id": chat_id, "messages": messages}


def write_export(conversations: Sequence[Conversation], kind: str, folder: Path) -> tuple[Path, ExportKeys]:
    """The conversations as one export of ``kind`` in ``folder``; its path and message keys."""
    keys: ExportKeys = {}
    if kind == "chatgpt":
        data: Any = [
            _chatgpt_session(conversation, session, keys)
            for conversation in conversations
            for session in conversation.sessions
            if session.turns
        ]
    elif kind == "telegram":
        chats, first_id = [], 1
        for chat_id, conversation in enumerate(conversations, 1):
            chats.append(_telegram_chat(conversation, 1000 + chat_id, first_id, keys))
            first_id += conversation.turn_count
        data = {
            "about": "Here is the data you requested. Remember: Telegram is ad free, it doesn't sell your data.",
            "personal_information": {"user_id": 1, "first_name": speakers(conversations[0])[0]},
            "chats": {"about": "This page lists all chats from this export.", "list": chats},
        }
    else:
        raise ValueError(f"unknown export format {kind!r}; expected one of {', '.join(FORMATS)}")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / EXPORT_FILES[kind]
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path, keys
