"""How a search turns its lanes into one ranking: ``SearchConfig`` and the fixed constants of the
fusion (RRF's K, lane depths, the relevance pool, the scale that score thresholds compare on)."""

from __future__ import annotations

from dataclasses import dataclass

from mind_core.errors import InvalidInputError
from mind_core.search.keyword_index import PARAMETERS as KEYWORD_INDEX_PARAMETERS
from mind_core.search.keyword_index import KeywordIndexParameters
from mind_core.search.vector_index import PRESCAN_MIN_VECTORS

RRF_K = 60
MAX_RRF_SCORE = 2.0 / RRF_K  # rank 0 in both lanes
LANE_DEPTH_FACTOR = 2  # rrf: each lane returns limit * 2 candidates, as the original
RELEVANCE_POOL_FACTOR = 2 * LANE_DEPTH_FACTOR  # fused candidates that relevance may reorder, per result
RELEVANCE_POOL_LIMIT = 10  # the pool is never smaller than for this many results (the default limit)
FUSIONS = ("convex", "rrf")
ADDRESSED_SCOPES = ("auto", "session", "session-exclusive", "source")  # where a name that stands for a role holds
# The fusion weights the score thresholds (linker 0.6, coverage 0.7, conflict 0.6) were calibrated
# on: ``match_score`` reads the lanes at these, so equal lane weights keep "one lane alone gives at
# most 0.5" whatever ``SearchConfig.vector_weight`` and ``context_weight`` order the results by.
MATCH_SCALE_VECTOR_WEIGHT = 0.5
MATCH_SCALE_CONTEXT_WEIGHT = 0.4
# The keyword lane in a large mind: BM25 is computed for every frame that holds any query word, so
# one word in a quarter of the frames (a speaker's name, "make") costs 50-170 ms at 100,000
# frames. There, the frames are those holding one of the query's rarer words (in at most
# ``COMMON_WORD_SHARE`` of the frames), still ranked by every word (``KeywordLane.match_expression``).
KEYWORD_SPLIT_FRAMES = 20_000


def relevance_pool_size(limit: int) -> int:
    """How many of the best-matching candidates relevance may reorder: ``RELEVANCE_POOL_FACTOR``
    per result, and never fewer than for ``RELEVANCE_POOL_LIMIT`` results, so every limit up to
    that one reorders the same pool: a longer list extends a shorter one, never reorders its head."""
    return max(limit, RELEVANCE_POOL_LIMIT) * RELEVANCE_POOL_FACTOR


@dataclass(frozen=True)
class SearchConfig:
    """How the two lanes become one ranking (``mind_core.search.fusion``).

    The weights are the setting best over the six LoCoMo and REALTALK conversations together, the
    one leave-one-conversation-out chose most often (context 0.4, vector 0.5, time 0.6, speaker 0.3;
    benchmarks/README.md);
    they order the results only: the score thresholds read ``match_score``, whose weights are fixed.
    """

    fusion: str = "convex"
    vector_weight: float = 0.5
    lane_depth: int = 100
    context_window: int = 2
    context_weight: float = 0.4
    # the context weight for a note's sections (``mind_core.search.threads``): a note's next
    # section is another topic more often than a conversation's next turn is the answer (chosen
    # leave-one-fold-out on the notes benchmark: 0.1 in two folds of three, 0 in the third)
    note_context_weight: float = 0.1
    # a mail reply whose own words hold fewer of the question's than the message it answers (or
    # none: "Applied.", "Thanks!") ranks just under that message when it matched too (``threads``)
    replies_yield: bool = True
    time_weight: float = 0.6  # share of the match that depends on nearness to the question's dates
    speaker_weight: float = 0.3  # share that depends, for a question naming a speaker, on who said the frame
    # the lanes search the question without the names of the mind's speakers: a name says who said
    # it, which the speaker preference reads, not what was said (a lane choice: it moves match_score)
    drop_speaker_names: bool = True
    # in a chat exported with roles (user/assistant), a name one side keeps addressing stands for
    # the other side: the speaker preference and the names out of the lanes apply to it
    # (``mind_core.search.addressed``)
    addressed_names: bool = True
    # where such a name's role holds: "source" (every conversation of the export), "session" (each
    # conversation where it is addressed; the others left alone), "session-exclusive" (the same,
    # and the frames of every other conversation count as said by someone else) or "auto": per
    # source while the source calls each role by one person's name, session-exclusive when it
    # calls the same role by other people's names in other conversations (several people's
    # role-only chats in one export; ``AddressedNames.split``). Measured held out
    # (benchmarks/README.md): per source loses with several people's conversations in one mind
    # (77.2 against 78.7), session-exclusive where a pair rarely says each other's name (REALTALK
    # 61.8 against 63.6); "auto" gets both (78.7, 63.6)
    addressed_scope: str = "auto"
    # a name that stands for a role seeds no graph nearness (relevance's contextual part): in a
    # chat exported with roles the graph links the person only to the turns saying her name, the
    # other side's, so nearness would prefer the turns the speaker preference puts after hers
    # (with the speakers' names, she is linked to her own messages as well). Held out
    # (benchmarks/README.md, "Multi-hop, seventh round"): LoCoMo 83.8 against 82.4, multi-hop 56.8
    # against 53.8, one mind 79.8 against 78.9, REALTALK 68.7 against 68.8
    role_names_out_of_graph: bool = True
    # a capitalized question word no turn talks about (every turn saying it addresses it, or none
    # does; not a month or weekday) stands for the role a source leaves without a name when the
    # source names the other one ("Paola" where the assistant calls the user Kevin and nobody
    # calls the assistant anything); one such word per question. Held out: REALTALK 68.8 against
    # 63.6, LoCoMo unchanged in both settings (benchmarks/README.md)
    addressed_unnamed: bool = True
    # the vector lane searches the mean direction of the question's vector and its topic words'
    # ("What activities does Melanie partake in?" + "activities partake"): a question's vector lies
    # near other questions, its topic's near the statements that answer it
    topic_blend: bool = True
    # a question joining several people it names ("What do Jon and Gina both have in common?") is
    # also asked once per person, the lists merged (``mind_core.search.question_parts``): chosen by
    # every joint held-out fold (benchmarks/README.md, "Multi-hop, fifth round")
    question_parts: bool = True
    time_scale_days: float = 1.0  # the time boost's shortest decay scale: a day's window reaches the next day
    # how much of the shown score the relevance profile (recency, importance, graph nearness,
    # popularity) may take away from the match: 1 = all of it, 0 = relevance only breaks ties
    relevance_share: float = 1.0
    # from how many frames the keyword lane leaves frames holding only common words out, and the
    # vector lane pre-scans quantized vectors (benchmarks force these to 0 to measure the effect)
    keyword_split_frames: int = KEYWORD_SPLIT_FRAMES
    prescan_min_vectors: int = PRESCAN_MIN_VECTORS
    # the keyword lane's top-k index (``mind_core.search.keyword_index``), read when the mind has
    # one built with these parameters; None: the lane always asks FTS5 (the exact lane)
    keyword_index: KeywordIndexParameters | None = KEYWORD_INDEX_PARAMETERS

    def __post_init__(self) -> None:
        if self.addressed_scope not in ADDRESSED_SCOPES:
            raise InvalidInputError(f"addressed_scope must be one of {', '.join(ADDRESSED_SCOPES)}")
        if self.fusion not in FUSIONS:
            raise InvalidInputError(f"unknown fusion {self.fusion!r}; expected one of {', '.join(FUSIONS)}")
        if not 0.0 <= self.vector_weight <= 1.0:
            raise InvalidInputError(f"vector_weight must be within 0..1, got {self.vector_weight}")
        shares = (self.time_weight, self.speaker_weight, self.relevance_share)
        if not all(0.0 <= share <= 1.0 for share in shares):
            raise InvalidInputError("time_weight, speaker_weight, relevance_share: within 0..1")
        if self.time_scale_days <= 0:
            raise InvalidInputError(f"time_scale_days must be > 0, got {self.time_scale_days}")
        context_weights = (self.context_weight, self.note_context_weight)
        if self.lane_depth < 1 or self.context_window < 0 or not all(0.0 <= w <= 1.0 for w in context_weights):
            raise InvalidInputError(
                "lane_depth must be >= 1, context_window >= 0, context_weight and note_context_weight within 0..1"
            )
