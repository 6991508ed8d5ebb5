"""A name one side of a role-only chat keeps addressing stands for the other side (issue #35)."""

from mind_core.mind import Mind
from mind_core.search.addressed import AddressedNames, capitalized_words, vocative
from mind_core.search.config import SearchConfig
from mind_core.testing.fakes import HashingEmbedder

# a chat exported with roles, as the ChatGPT importer stores it: "[title] Role: text"; Caroline is
# the user (the assistant greets her), Kate a friend the user only talks about
CHAT = [
    ("user", "Hey Mel! Good to see you, how have you been?"),
    ("assistant", "Hey Caroline! Busy with the kids. What have you been up to?"),
    ("user", "I painted a sunset over the lake last weekend, my first in oils"),
    ("assistant", "Wow, that's cool, Caroline! I painted a bowl of lemons for my class"),
    ("user", "My friend Kate says Kate's studio has room for both of us"),
    ("assistant", "Thanks, Caroline. Kate sounds great"),
    ("user", "Kate took me hiking again"),
]


def build(config: SearchConfig, chat=CHAT, source: str = "chatgpt-1") -> tuple[Mind, list[int]]:
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.search.config = config
    mind.sessions.ensure("chat")
    frames = [
        mind.frames.create_i_frame(
            "chat", f"[Catching up] {role.capitalize()}: {text}", metadata={"provenance": {"role": role, "source": source}}
        )
        for role, text in chat
    ]
    mind.search.index_frames_batch(frames)
    return mind, [frame.id for frame in frames]


def test_a_vocative_is_a_name_said_to_someone():
    said_to = vocative("Caroline")
    for text in ("Hey Caroline! Busy", "Caroline, look at this", "that's cool, Caroline!", "Thanks, Caroline."):
        assert said_to.search(text), text
    for text in ("Caroline said the studio is open", "I met Caroline's sister", "with Caroline and Kate"):
        assert not said_to.search(text), text
    assert capitalized_words("What did Caroline paint in June?") == ["Caroline", "June"]
    assert capitalized_words("Caroline painted what?") == []  # a question's first word is no name
    assert capitalized_words("Did José meet Zoë at NASA?") == ["José", "Zoë"]


def test_the_addressed_name_is_the_other_roles_and_a_person_talked_about_is_no_ones():
    mind, _ = build(SearchConfig())
    with mind:
        names = AddressedNames(mind.db)
        assert names.roles("Caroline") == {"chatgpt-1": "user"}
        assert names.roles("Kate") == {}  # talked about by the user, never addressed
        assert names.roles("Mel") == {}  # addressed once: too few to tell
        assert mind.search.speakers.addressed("What did Caroline paint?") == {"Caroline": {"chatgpt-1": "user"}}
        assert mind.search.speakers.spoken("What did Caroline paint?", addressed=True) == {"Caroline"}
        assert mind.search.speakers.spoken("What did Caroline paint?") == set()


def test_a_question_naming_the_addressed_person_prefers_her_roles_turns():
    query = "What did Caroline paint?"
    mind, ids = build(SearchConfig(speaker_weight=0.5))
    with mind:
        scores = mind.search.speakers.scores(query, ids, addressed=True)
        assert scores == {fid: (1.0 if role == "user" else 0.0) for fid, (role, _) in zip(ids, CHAT, strict=True)}
        assert mind.search.speakers.scores(query, ids) == {}  # the option off
        results = mind.search.search(query, limit=3, explain=True)
        assert results[0].frame.id == ids[2]  # her own painting, not the assistant's
        assert results[0].explain["lanes_without"] == ["Caroline"]
    mind, ids = build(SearchConfig(speaker_weight=0.5, addressed_names=False))
    with mind:
        results = mind.search.search(query, limit=3, explain=True)
        assert "speaker_score" not in results[0].explain
        assert "lanes_without" not in results[0].explain


def test_no_role_is_read_into_a_chat_with_named_speakers_or_without_addressing():
    named = [(("Caroline" if role == "user" else "Melanie"), text) for role, text in CHAT]
    mind, ids = build(SearchConfig(speaker_weight=0.5), chat=named)
    with mind:
        assert mind.search.speakers.addressed("What did Caroline paint?") == {}
    plain = [(role, text.replace("Caroline", "you")) for role, text in CHAT]
    mind, ids = build(SearchConfig(speaker_weight=0.5), chat=plain)
    with mind:
        assert mind.search.speakers.scores("What did Caroline paint?", ids, addressed=True) == {}
