from datetime import timedelta

import pytest

from mind_core.errors import InvalidInputError
from mind_core.mind import Mind
from mind_core.store.awareness import MAX_ITEMS
from mind_core.timestamps import format_utc, utc_now


def test_identity_is_a_single_row():
    mind = Mind.open(":memory:")
    assert mind.identity.get() is None
    with pytest.raises(InvalidInputError):
        mind.identity.set(role="no name yet")
    mind.identity.set(name="Ada", role="assistant")
    mind.identity.set(department="research")
    identity = mind.identity.get()
    assert identity["name"] == "Ada" and identity["department"] == "research" and identity["role"] == "assistant"
    assert mind.db.scalar("SELECT COUNT(*) FROM identity") == 1
    assert "Name: Ada" in mind.identity.to_context()
    with pytest.raises(InvalidInputError):
        mind.identity.set(favourite_colour="blue")


def test_awareness_caps_active_items_and_expires():
    mind = Mind.open(":memory:")
    past = format_utc(utc_now() - timedelta(minutes=1))
    mind.awareness.add("flag", "expired flag", priority=99, expires_at=past)
    for n in range(MAX_ITEMS + 2):
        mind.awareness.add("task", f"task {n}", priority=n)
    active = mind.awareness.get_active()
    assert len(active) == MAX_ITEMS
    assert "expired flag" not in [i["content"] for i in active]
    assert active[0]["content"] == f"task {MAX_ITEMS + 1}"  # highest priority first
    assert "task 0" not in [i["content"] for i in active]  # lowest priority dropped
    assert mind.awareness.get_by_category("flag") == []


def test_awareness_validation_update_and_clear():
    mind = Mind.open(":memory:")
    with pytest.raises(InvalidInputError):
        mind.awareness.add("mood", "happy")
    with pytest.raises(InvalidInputError):
        mind.awareness.add("task", "x", expires_at="someday")
    item = mind.awareness.add("pending", "review PR", metadata={"pr": 7})
    assert item["metadata"] == {"pr": 7}
    assert mind.awareness.update(item["id"], content="review PR #7")["content"] == "review PR #7"
    mind.awareness.add("action", "deployed")
    assert mind.awareness.clear("action") == 1
    assert mind.awareness.clear() == 1


def test_adding_an_already_expired_item_does_not_evict_a_live_one():
    mind = Mind.open(":memory:")
    for n in range(MAX_ITEMS):
        mind.awareness.add("task", f"task {n}", priority=n)
    past = format_utc(utc_now() - timedelta(minutes=1))
    mind.awareness.add("flag", "already expired", priority=99, expires_at=past)
    active = [i["content"] for i in mind.awareness.get_active()]
    assert len(active) == MAX_ITEMS and "task 0" in active and "already expired" not in active
