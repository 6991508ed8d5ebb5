"""A name one side of a role-only chat keeps addressing stands for the other side (issue #35)."""

from mind_core.mind import Mind
from mind_core.search.addressed import AddressedNames, addressed_words, capitalized_words, said_to
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


def build(
    config: SearchConfig, chat=CHAT, source: str = "chatgpt-1", mind: Mind | None = None, session: str = "chat"
) -> tuple[Mind, list[int]]:
    """``chat`` as one conversation (session) of ``source``, in a new mind or added to ``mind``."""
    if mind is None:
        mind = Mind.open(":memory:", embedder=HashingEmbedder())
        mind.search.config = config
    mind.sessions.ensure(session)
    frames = [
        mind.frames.create_i_frame(
            session, f"[Catching up] {role.capitalize()}: {text}", metadata={"provenance": {"role": role, "source": source}}
        )
        for role, text in chat
    ]
    mind.search.index_frames_batch(frames)
    return mind, [frame.id for frame in frames]


def test_a_vocative_is_a_name_said_to_someone():
    for text in ("Hey Caroline! Busy", "Caroline, look at this", "that's cool, Caroline!", "Thanks, caroline."):
        assert said_to(text, "Caroline"), text
    for text in ("Caroline said the studio is open", "I met Caroline's sister", "with Caroline and Kate", "Carolines!"):
        assert not said_to(text, "Caroline"), text
    assert capitalized_words("What did Caroline paint in June?") == ["Caroline", "June"]
    assert capitalized_words("Caroline painted what?") == []  # a question's first word is no name
    assert capitalized_words("Did José meet Zoë at NASA?") == ["José", "Zoë"]


def test_the_addressed_name_is_the_other_roles_and_a_person_talked_about_is_no_ones():
    mind, _ = build(SearchConfig())
    with mind:
        names = AddressedNames(mind.db)
        assert names.roles("Caroline") == {"chatgpt-1": "user"}  # per source, the default
        assert names.roles("Caroline", scope="session") == {"chat": "user"}
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


# a second conversation of the same export: Jon is the user, Gina the assistant, and the user's
# paintings are Jon's; Caroline is never addressed here
OTHER = [
    ("user", "Hey Gina! I painted a sunset over the harbour this weekend"),
    ("assistant", "Nice one, Jon! I painted nothing, the studio was closed"),
    ("user", "Next time then. The oils were a gift from my dad"),
    ("assistant", "Thanks, Jon. Can't wait to see it"),
]


def two_conversations(config: SearchConfig) -> tuple[Mind, list[int], list[int]]:
    mind, caroline = build(config, session="chat-caroline")
    mind, jon = build(config, chat=OTHER, mind=mind, session="chat-jon")
    return mind, caroline, jon


def test_in_one_mind_an_addressed_name_holds_in_its_own_conversation_only():
    query = "What did Caroline paint?"
    mind, caroline, jon = two_conversations(SearchConfig(speaker_weight=0.5, addressed_scope="session"))
    with mind:
        names = AddressedNames(mind.db)
        assert names.roles("Caroline", scope="session") == {"chat-caroline": "user"}
        assert names.roles("Jon", scope="session") == {}  # addressed twice: too few to tell
        scores = mind.search.speakers.scores(query, caroline + jon, addressed=True, scope="session")
        # her conversation: the user's turns preferred; Jon's conversation: left alone
        assert scores == {fid: (1.0 if role == "user" else 0.0) for fid, (role, _) in zip(caroline, CHAT, strict=True)}
        results = mind.search.search(query, limit=len(caroline) + len(jon), explain=True)
        ranked = [result.frame.id for result in results]
        assert ranked.index(caroline[2]) < ranked.index(caroline[3])  # her own painting, not the assistant's


def test_per_source_the_addressed_name_favours_every_conversations_user():
    query = "What did Caroline paint?"
    mind, caroline, jon = two_conversations(SearchConfig(speaker_weight=0.5))
    with mind:
        assert AddressedNames(mind.db).roles("Caroline") == {"chatgpt-1": "user"}
        scores = mind.search.speakers.scores(query, caroline + jon, addressed=True)
        assert {fid for fid, score in scores.items() if score == 1.0} >= {jon[0], jon[2]}  # Jon's turns too


def test_exclusive_per_session_counts_the_other_conversations_as_someone_elses():
    query = "What did Caroline paint?"
    mind, caroline, jon = two_conversations(SearchConfig(speaker_weight=0.5, addressed_scope="session-exclusive"))
    with mind:
        scores = mind.search.speakers.scores(query, caroline + jon, addressed=True, scope="session-exclusive")
        assert scores == {
            **{fid: (1.0 if role == "user" else 0.0) for fid, (role, _) in zip(caroline, CHAT, strict=True)},
            **dict.fromkeys(jon, 0.0),
        }
        results = mind.search.search(query, limit=len(caroline) + len(jon))
        assert results[0].frame.id == caroline[2]  # her painting over Jon's conversation


def test_the_names_a_turn_says_to_someone():
    assert addressed_words("Hey Jon! Thanks, Gina. That's cool, Maria!") == ["Jon", "Gina", "Maria"]
    # a clause's first word, a name talked about, a name followed by more of the clause: said to no one
    assert addressed_words("Absolutely, I agree. I met Jon at the lake, Kate and I went") == []


# the same export's third conversation, of a third pair: the assistant keeps calling the user Jon
JON = [
    ("user", "Hey Gina! I painted a sunset over the harbour this weekend"),
    ("assistant", "Nice one, Jon! I painted nothing, the studio was closed"),
    ("user", "Next time then. The oils were a gift from my dad"),
    ("assistant", "Thanks, Jon. Can't wait to see it"),
    ("user", "I'll bring it to the dance studio"),
    ("assistant", "Sounds great, Jon!"),
]
# one person's export: a conversation where the assistant never says the user's name
PLAIN = [
    ("user", "How do I stretch a canvas for oil painting?"),
    ("assistant", "Staple the canvas to the frame, starting from the middle of each side"),
]


def test_auto_holds_a_name_per_session_where_the_export_calls_the_role_by_other_names():
    query = "What did Caroline paint?"
    mind, caroline = build(SearchConfig(speaker_weight=0.5, addressed_scope="auto"), session="chat-caroline")
    mind, jon = build(mind.search.config, chat=JON, mind=mind, session="chat-jon")
    with mind:
        names = AddressedNames(mind.db)
        assert names.roles("Jon", scope="session") == {"chat-jon": "user"}
        assert names.split("Caroline") and names.split("Jon")  # the user is Caroline here, Jon there
        speakers = mind.search.speakers
        assert speakers.resolved_scope(query, "auto") == "session-exclusive"
        exclusive = speakers.scores(query, caroline + jon, addressed=True, scope="session-exclusive")
        assert speakers.scores(query, caroline + jon, addressed=True, scope="auto") == exclusive
        assert exclusive[jon[0]] == 0.0  # Jon's painting is not Caroline's
        assert mind.search.search(query, limit=3)[0].frame.id == caroline[2]


def test_auto_holds_a_name_per_source_where_the_export_is_one_persons():
    query = "What did Caroline paint?"
    mind, caroline = build(SearchConfig(speaker_weight=0.5, addressed_scope="auto"), session="chat-caroline")
    mind, plain = build(mind.search.config, chat=PLAIN, mind=mind, session="chat-canvas")
    with mind:
        speakers = mind.search.speakers
        assert not AddressedNames(mind.db).split("Caroline")
        assert speakers.resolved_scope(query, "auto") == "source"
        scores = speakers.scores(query, caroline + plain, addressed=True, scope="auto")
        assert scores == speakers.scores(query, caroline + plain, addressed=True, scope="source")
        assert scores[plain[0]] == 1.0  # the user of the other conversation is Caroline too
        # a word that stands for no role, and a mind without roles, resolve without reading frames
        assert speakers.resolved_scope("What did Kate paint?", "auto") == "source"


def test_a_nickname_said_in_the_same_sessions_is_the_same_person():
    # the user calls the assistant "Mel" in one conversation and "Melanie" and "Mel" in the other
    first = [
        ("user", "Hey Mel! How are the kids?"),
        ("assistant", "Busy!"),
        ("user", "Thanks, Mel."),
        ("user", "See you, Mel!"),
    ]
    second = [
        ("user", "Hey Melanie! The lake was lovely"),
        ("assistant", "Glad to hear"),
        ("user", "Thanks, Mel!"),
        ("user", "Bye, Melanie!"),
        ("user", "Wow, Melanie!"),
    ]
    mind, _ = build(SearchConfig(addressed_scope="auto"), chat=first, session="chat-1")
    mind, _ = build(mind.search.config, chat=second, mind=mind, session="chat-2")
    with mind:
        names = AddressedNames(mind.db)
        assert names.roles("Melanie", scope="session") == {"chat-2": "assistant"}
        assert names.roles("Mel", scope="session") == {"chat-1": "assistant", "chat-2": "assistant"}
        assert not names.split("Melanie")


# the assistant calls the user Kevin; nobody calls the assistant anything, and Kate is talked about
KEVIN = [
    ("assistant", "Hi Kevin! How was the game?"),
    ("user", "We won! I scored twice"),
    ("assistant", "Congrats, Kevin! I baked a lemon cake for my class"),
    ("user", "Sounds delicious, my sister Kate loves lemon"),
    ("assistant", "Thanks, Kevin."),
    ("user", "I baked bread once, it was a brick"),
]


def test_a_name_no_turn_talks_about_stands_for_the_role_left_without_a_name():
    mind, ids = build(SearchConfig(speaker_weight=0.5), chat=KEVIN)
    with mind:
        speakers = mind.search.speakers
        assert speakers.addressed("What did Kevin bake?") == {"Kevin": {"chatgpt-1": "user"}}
        assert speakers.addressed("What did Paola bake?") == {"Paola": {"chatgpt-1": "assistant"}}
        assert speakers.addressed("What did Kate bake?") == {}  # talked about: someone else
        assert speakers.addressed("What did Paola bake in June?") == {"Paola": {"chatgpt-1": "assistant"}}
        assert speakers.addressed("Did Paola bake for Zed?") == {}  # two unsaid words: which one?
        results = mind.search.search("What did Paola bake?", limit=2, explain=True)
        assert results[0].frame.id == ids[2]  # the assistant's cake, not the user's bread
        assert results[0].explain["lanes_without"] == ["Paola"]
    mind, _ = build(SearchConfig(addressed_unnamed=False), chat=KEVIN)
    with mind:
        assert mind.search.speakers.addressed("What did Paola bake?") == {}


def test_no_role_is_left_without_a_name_where_both_are_named():
    both = [*KEVIN, ("user", "Thanks, Gina!"), ("user", "Bye, Gina!"), ("user", "Hey Gina, one more thing")]
    mind, _ = build(SearchConfig(), chat=both)
    with mind:
        assert AddressedNames(mind.db).named_roles() == {"chatgpt-1": {"user", "assistant"}}
        assert mind.search.speakers.addressed("What did Paola bake?") == {}
