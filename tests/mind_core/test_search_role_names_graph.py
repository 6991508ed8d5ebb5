"""A name that stands for a role seeds no graph nearness (``SearchConfig.role_names_out_of_graph``,
issue #35): in a chat exported with roles the graph links the person only to the turns saying her
name, which are the other side's."""

from mind_core.mind import Mind
from mind_core.search.config import SearchConfig
from mind_core.testing.fakes import HashingEmbedder

# Caroline is the user (the assistant addresses her), Kate a friend the user talks about
CHAT = [
    ("user", "Hey Mel! Good to see you, how have you been?"),
    ("assistant", "Hey Caroline! Busy with the kids. What did you paint lately?"),
    ("user", "I painted a sunset over the lake last weekend, my first in oils"),
    ("assistant", "Wow, that's cool, Caroline! I painted a bowl of lemons for my class"),
    ("user", "I painted the harbour at dawn with Kate as well"),
    ("assistant", "Thanks, Caroline. Send me a photo of the painting"),
]


def role_chat(config: SearchConfig, speakers: dict[str, str] | None = None) -> tuple[Mind, list[int]]:
    """``CHAT`` in a new mind, its roles (or ``speakers``' names for them) as the authors, each
    person's entity linked to the turns whose text says her name, as extraction links it."""
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
    for name in ("Caroline", "Kate"):
        entity = mind.knowledge.create_entity("person", name)
        for frame, (_, text) in zip(frames, CHAT, strict=True):
            if name in text:
                mind.knowledge.link_entity_to_frame(entity.id, frame.id)
    return mind, [frame.id for frame in frames]


def near(mind: Mind, query: str, limit: int) -> set[int]:
    """The frames of the results at graph distance 0 (relevance's contextual part 1)."""
    results = mind.search.search(query, limit=limit, explain=True)
    assert len(results) == limit
    return {r.frame.id for r in results if r.explain["relevance_parts"]["contextual"]["part"] == 1.0}


def test_a_name_standing_for_a_role_does_not_draw_the_turns_addressing_her():
    query = "What did Caroline paint?"
    mind, ids = role_chat(SearchConfig())
    with mind:
        assert mind.search.speakers.addressed(query, "auto") == {"Caroline": {"chatgpt-1": "user"}}
        assert near(mind, query, len(ids)) == set()
    mind, ids = role_chat(SearchConfig(role_names_out_of_graph=False))
    with mind:
        # in the graph: nearness prefers the assistant's turns, the ones saying her name
        assert near(mind, query, len(ids)) == {ids[1], ids[3], ids[5]}
    mind, ids = role_chat(SearchConfig(addressed_names=False))
    with mind:
        assert near(mind, query, len(ids)) == {ids[1], ids[3], ids[5]}  # no name stands for a role


def test_other_people_a_question_names_still_seed_nearness():
    mind, ids = role_chat(SearchConfig())
    with mind:
        assert near(mind, "What did Caroline paint with Kate?", len(ids)) == {ids[4]}  # Kate: no role


def test_a_chat_with_the_speakers_names_keeps_its_graph():
    """Caroline is a speaker there, not a name standing for a role: the graph is read as it is."""
    mind, ids = role_chat(SearchConfig(), speakers={"user": "Caroline", "assistant": "Melanie"})
    with mind:
        assert mind.search.speakers.addressed("What did Caroline paint?", "auto") == {}
        assert near(mind, "What did Caroline paint?", len(ids)) == {ids[1], ids[3], ids[5]}
