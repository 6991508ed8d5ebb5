"""The frames a person the question names said are at graph distance 0 from her, in a chat exported
with roles as in one exported with names (``SearchConfig.speaker_nearness``, issue #35)."""

from mind_core.mind import Mind
from mind_core.search.config import SearchConfig
from mind_core.search.scoring import ScoringContext
from mind_core.search.speakers import with_speakers_near
from mind_core.testing.fakes import HashingEmbedder

# Caroline is the user; the assistant addresses her by name, so a knowledge graph built from the
# text links her entity to the assistant's turns only, never to what she said herself
CHAT = [
    ("user", "Hey Mel! Good to see you, how have you been?"),
    ("assistant", "Hey Caroline! Busy with the kids. What did you paint lately?"),
    ("user", "I painted a sunset over the lake last weekend, my first in oils"),
    ("assistant", "Wow, that's cool, Caroline! I painted a bowl of lemons for my class"),
    ("user", "I painted the harbour at dawn as well"),
    ("assistant", "Thanks, Caroline. Send me a photo of the painting"),
]
QUERY = "What did Caroline paint?"


def role_chat(config: SearchConfig, speakers: dict[str, str] | None = None) -> tuple[Mind, list[int]]:
    """``CHAT`` in a new mind, its roles (or ``speakers``' names for them) as the authors, and
    Caroline's entity linked to the turns that say her name, as extraction from the text links it."""
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.search.config = config
    mind.sessions.ensure("chat")
    frames = []
    for role, text in CHAT:
        author = (speakers or {}).get(role, role)
        frames.append(
            mind.frames.create_i_frame(
                "chat",
                f"[Catching up] {author.capitalize()}: {text}",
                metadata={"provenance": {"role": author, "source": "chatgpt-1"}},
            )
        )
    mind.search.index_frames_batch(frames)
    caroline = mind.knowledge.create_entity("person", "Caroline")
    for frame, (_, text) in zip(frames, CHAT, strict=True):
        if "Caroline" in text:
            mind.knowledge.link_entity_to_frame(caroline.id, frame.id)
    return mind, [frame.id for frame in frames]


def contextual_by_frame(mind: Mind, query: str, limit: int) -> dict[int, float]:
    results = mind.search.search(query, limit=limit, explain=True)
    return {r.frame.id: r.explain["relevance_parts"]["contextual"]["part"] for r in results}


def test_her_roles_turns_are_near_her_not_only_the_turns_addressing_her():
    mind, ids = role_chat(SearchConfig(speaker_weight=0.3))
    with mind:
        contextual = contextual_by_frame(mind, QUERY, len(ids))
        assert len(contextual) == len(ids)
        for frame_id, (role, text) in zip(ids, CHAT, strict=True):
            # her own turns (the user's) at distance 0; the assistant's saying her name still are
            expected = 1.0 if role == "user" or "Caroline" in text else 0.0
            assert contextual[frame_id] == expected, text
    mind, ids = role_chat(SearchConfig(speaker_weight=0.3, speaker_nearness=False))
    with mind:
        contextual = contextual_by_frame(mind, QUERY, len(ids))
        # off: nearness favours the other side, the turns that say her name
        assert {fid for fid, part in contextual.items() if part == 1.0} == {ids[1], ids[3], ids[5]}


def test_a_chat_with_the_speakers_names_reads_the_same():
    """With names, the speaker preference already reads Caroline as the author: her turns are
    near her as they are in the chat with roles."""
    mind, ids = role_chat(SearchConfig(speaker_weight=0.3), speakers={"user": "Caroline", "assistant": "Melanie"})
    with mind:
        contextual = contextual_by_frame(mind, QUERY, len(ids))
        assert {fid for fid, part in contextual.items() if part == 1.0} == set(ids)


def test_without_a_named_person_or_a_speaker_preference_nothing_moves():
    mind, ids = role_chat(SearchConfig(speaker_weight=0.3))
    with mind:
        contextual = contextual_by_frame(mind, "What did you paint?", len(ids))
        assert set(contextual.values()) == {0.0}  # no person asked about: no nearness at all
    mind, ids = role_chat(SearchConfig(speaker_weight=0.0))
    with mind:
        contextual = contextual_by_frame(mind, QUERY, len(ids))
        assert {fid for fid, part in contextual.items() if part == 1.0} == {ids[1], ids[3], ids[5]}


def test_only_frames_the_preference_reads_as_the_named_speakers_move():
    fused = {
        1: {"speaker_score": 1.0, "speaker": "user"},  # said by her
        2: {"speaker_score": 0.0, "speaker": "assistant"},  # said by the other side
        3: {"speaker_score": 1.0},  # left alone (a conversation where no name holds)
        4: {},  # no preference
    }
    context = ScoringContext(recent_entity_ids=[7], graph_distances={2: 0, 3: 2})
    near = with_speakers_near(context, fused, [1, 2, 3, 4])
    assert near.graph_distances == {1: 0, 2: 0, 3: 2}
    assert near.recent_entity_ids == [7]
    assert context.graph_distances == {2: 0, 3: 2}  # the given context is not changed
    assert with_speakers_near(context, {4: {}}, [4]) is context
