"""The keyword lane's top-k index for a large mind: each frequent word's frames with its count
in each, so a question's best matches are found without FTS5 scoring every frame that holds one
of its words.

Why: FTS5's ``bm25()`` scores every frame that matches, a row at a time (at a million frames, a
question's rarer words can hold 50,000 frames each), and it cannot stop early. BM25 is a sum over
the question's words of ``idf(word) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |frame| / avgdl))``;
the second factor (the word's *impact* on a frame) needs only the word's count in the frame and
the frame's length. For each word held by more than ``list_min_frames`` frames the index keeps
its frames' ids (ascending) and counts (table ``keyword_top_frames``, one row per word, arrays as
blobs), and each frame's length (``keyword_frame_lengths``). A question then:

- adds up its listed words' impacts times their IDF and their weight in the lane's expression (a
  rarer word counts twice where the lane splits, ``KeywordLane``) in numpy, over one array per
  frame id (``best_frames``);
- reads its other (rare) words through FTS5 as before (``bm25()`` over at most
  ``list_min_frames`` frames a word: cheap);
- takes as candidates the frames holding a required word (the lane's ``(rarer) AND (every)``),
  at most ``kept`` of a word's frames (its best by impact) when it brings candidates alone;
- reads frames written, edited or deleted since the build (the change log after the build's
  position) through FTS5 exactly, or leaves them out when gone.

Tried first, and why the lists are whole: a top list per word (its best frames by impact) lost
half of FTS5's top 10 on the benchmark archive, whose frames tie on the rarer words while a
common word (a speaker's name, in a quarter of the frames) decides among them: a frame missing
from the common word's list lost its part (benchmarks/README.md, fourth round).

FTS5's own BM25 is matched: k1 1.2, b 0.75, one column of weight 1, ``idf = log((N - n + 0.5) /
(n + 0.5))`` (at least 1e-6), with N, n and avgdl of the build; the same top 100 as FTS5 for every
benchmark question at 100k and 1M frames (``benchmarks/archive.py``).

Built by a reconcile (``refresh``: ``mind doctor --repair``, the daily upkeep) for a mind of ``min_frames`` frames or more, in bounded
memory (one word's frames at a time, plus one frame length per frame id as int32); its format,
parameters and the build's position are recorded in ``meta``; ``mind doctor`` reports it
missing, of another format or parameters, or worn (too many frames changed since,
``MAX_EDITED`` and ``MAX_ADDED_SHARE``: then the lane is exact until the next reconcile rebuilds
it).
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from mind_core.store import change_log
from mind_core.store.db import Database
from mind_core.store.schema import get_meta, set_meta

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
TABLE = "keyword_top_frames"
META_KEY = "keyword_index"
# Frames changed since the build that a question reads exactly (FTS5) before the index counts as
# worn (the lane is exact until the next reconcile rebuilds it): an edited or deleted frame costs
# a query of its own; frames added after the build are read by one query, whose cost grows with them.
MAX_EDITED = 200
MAX_ADDED_SHARE = 0.05  # of the frames at the build
BUILD_CACHE_KIB = 8 * 1024
FETCH_ROWS = 50_000
# A question's common words are read from memory: a searching process keeps the word lists it
# read lately (at most CACHE_BYTES, ``WordListCache``); a word held by more than DENSE_SHARE of
# the frames is kept as one impact per frame id as well (8 bytes a frame), so its part of a
# question's candidates' scores is a lookup, not a pass over its hundreds of thousands of frames.
CACHE_BYTES = 192 * 2**20
DENSE_SHARE = 1 / 16
_IDS = np.dtype("<i4")
_COUNTS = np.dtype("<u2")  # a word's occurrences in a frame (at most 65,535 counted)
FORMAT = 2  # of the stored lists: an index of another format is rebuilt
LENGTHS_TABLE = "keyword_frame_lengths"  # one row: each frame id's length in tokens at the build (int32)


@dataclass(frozen=True)
class KeywordIndexParameters:
    """``min_frames``: from how many frames a mind keeps the index; ``list_min_frames``: a word
    held by more frames than this gets a list; ``kept``: how many of a listed word's frames (its
    best by impact) a question considers as candidates (all, when it holds fewer)."""

    min_frames: int = 20_000
    list_min_frames: int = 1_000
    kept: int = 50_000


PARAMETERS = KeywordIndexParameters()


def idf(frames: int, holding: int) -> float:
    """FTS5's IDF of a word held by ``holding`` of ``frames`` frames."""
    value = math.log((frames - holding + 0.5) / (holding + 0.5))
    return value if value > 0 else MIN_IDF


def impacts(counts: np.ndarray, lengths: np.ndarray, average_length: float) -> np.ndarray:
    """The word's part of BM25 on each frame, without its IDF: ``tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl))``."""
    tf = counts.astype(np.float64)
    return tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * lengths.astype(np.float64) / average_length))


def read_manifest(db: Database) -> dict[str, Any] | None:
    """The build's record (parameters, position, N, avgdl), or None when the mind has no index."""
    value = get_meta(db, META_KEY)
    if value is None or not db.table_exists(TABLE):
        return None
    return dict(json.loads(value))


def needed(db: Database, params: KeywordIndexParameters = PARAMETERS) -> bool:
    """Whether the mind should keep the index: it holds ``min_frames`` frames (ids issued) or more."""
    return int(db.scalar("SELECT coalesce(max(id), 0) FROM memory_frames") or 0) >= params.min_frames


def changed_since_build(db: Database, manifest: dict[str, Any]) -> tuple[list[int], int] | None:
    """(frames of the build edited or deleted since, frames added since); None when the log
    cannot say (pruned past the build)."""
    built = change_log.Position.parse(manifest["position"])
    changes = change_log.changes_since(db, built)
    if changes is None:
        return None
    edited = [frame_id for frame_id in changes.frames if frame_id <= built.frame_id]
    return edited, len(changes.frames) - len(edited)


def _wear(manifest: dict[str, Any], changed: tuple[list[int], int] | None) -> str | None:
    if changed is None:
        return "worn: the change log no longer reaches the build"
    edited, added = changed
    if len(edited) > MAX_EDITED:
        return f"worn: {len(edited)} frames edited or deleted since the build (at most {MAX_EDITED})"
    if added > MAX_ADDED_SHARE * manifest["frames"]:
        return f"worn: {added} frames added since the build (at most {MAX_ADDED_SHARE:.0%} of {manifest['frames']})"
    return None


def problem(db: Database, params: KeywordIndexParameters = PARAMETERS) -> str | None:
    """Why the mind's index is unusable (None when fine or not needed): missing, other parameters,
    or worn (too many frames changed since the build for a question to read them exactly)."""
    if not needed(db, params):
        return None
    manifest = read_manifest(db)
    if manifest is None:
        return "missing"
    if manifest.get("format") != FORMAT:
        return "made by another version"
    if manifest.get("parameters") != asdict(params):
        return f"made with other parameters ({manifest.get('parameters')})"
    return _wear(manifest, changed_since_build(db, manifest))


def refresh(db: Database, params: KeywordIndexParameters = PARAMETERS) -> int:
    """Build the index when the mind needs one and has none usable; the number of word lists
    written (0 when nothing was done)."""
    if db.readonly or problem(db, params) is None:
        return 0
    with db.memory_bounds(0, BUILD_CACHE_KIB):  # one pass over the index: no map, a small cache
        return build(db, params)


def _varint(blob: bytes) -> int:
    value = 0
    for i, byte in enumerate(blob):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


def frame_lengths(db: Database) -> tuple[np.ndarray, int, int]:
    """(tokens per frame id as FTS5 counts them, frames indexed, tokens in all): FTS5's docsize."""
    top = int(db.scalar("SELECT coalesce(max(id), 0) FROM memory_frames_fts_docsize") or 0)
    lengths = np.zeros(top + 1, dtype=np.int32)
    frames = 0
    for frame_id, size in db.conn.execute("SELECT id, sz FROM memory_frames_fts_docsize"):
        lengths[frame_id] = size[0] if size and size[0] < 0x80 else _varint(size)
        frames += 1
    return lengths, frames, int(lengths.sum(dtype=np.int64))


def _word_lists(
    db: Database, lengths: np.ndarray, through_id: int, params: KeywordIndexParameters
) -> Iterator[tuple[str, int, bytes, bytes]]:
    """(word, frames holding it, their ids ascending, its occurrences in each) of each word with a list;
    frames above ``through_id`` (written while it builds) are left to the questions' exact read."""
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.keyword_rows USING fts5vocab(main, memory_frames_fts, row)")
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.keyword_instances USING fts5vocab(main, memory_frames_fts, instance)")
    words = [(str(w), int(n)) for w, n in db.conn.execute("SELECT term, doc FROM temp.keyword_rows WHERE doc > ?", (params.list_min_frames,))]
    for word, holding in words:
        cursor = db.conn.execute(
            "SELECT doc, count(*) FROM temp.keyword_instances WHERE term = ? GROUP BY doc ORDER BY doc", (word,)
        )
        parts = [np.empty((0, 2), dtype=np.int64)]
        while chunk := cursor.fetchmany(FETCH_ROWS):  # a word of every frame: never a million tuples at once
            parts.append(np.array(chunk, dtype=np.int64).reshape(-1, 2))
        rows = np.concatenate(parts)
        ids = rows[:, 0]
        inside = (ids < len(lengths)) & (ids <= through_id)
        ids, counts = ids[inside], rows[inside, 1]
        yield word, holding, ids.astype(_IDS).tobytes(), np.minimum(counts, 65_535).astype(_COUNTS).tobytes()


def build(db: Database, params: KeywordIndexParameters = PARAMETERS) -> int:
    """Write the index anew (into a new table, swapped in at the end with the manifest) and
    return the number of word lists. The position is read first: frames changed while it builds
    are after it, so questions read them exactly."""
    position = change_log.position(db)
    lengths, frames, tokens = frame_lengths(db)
    average = tokens / frames if frames else 1.0
    staging = f"{TABLE}_new"
    db.execute(f"DROP TABLE IF EXISTS {staging}")
    db.execute(f"CREATE TABLE {staging} (word TEXT PRIMARY KEY, frames INTEGER NOT NULL, ids BLOB NOT NULL, counts BLOB NOT NULL) WITHOUT ROWID")
    written = 0
    batch: list[tuple[str, int, bytes, bytes]] = []
    for row in _word_lists(db, lengths, position.frame_id, params):
        batch.append(row)
        if len(batch) >= 200:
            with db.transaction():
                db.executemany(f"INSERT INTO {staging} VALUES (?, ?, ?, ?)", batch)
            written += len(batch)
            batch = []
    manifest = {"format": FORMAT, "parameters": asdict(params), "position": str(position), "frames": frames, "average_length": average}
    with db.transaction():
        db.executemany(f"INSERT INTO {staging} VALUES (?, ?, ?, ?)", batch)
        db.execute(f"DROP TABLE IF EXISTS {TABLE}")
        db.execute(f"ALTER TABLE {staging} RENAME TO {TABLE}")
        db.execute(f"DROP TABLE IF EXISTS {LENGTHS_TABLE}")
        db.execute(f"CREATE TABLE {LENGTHS_TABLE} (lengths BLOB NOT NULL)")
        db.execute(f"INSERT INTO {LENGTHS_TABLE} VALUES (?)", (lengths[: position.frame_id + 1].astype(_IDS).tobytes(),))
        set_meta(db, META_KEY, json.dumps({**manifest, "words": written + len(batch)}))
    return written + len(batch)


@dataclass
class WordList:
    """A listed word as a question reads it: how many frames held it at the build, their ids
    (ascending) and its impacts on them; for a word held by more than ``DENSE_SHARE`` of the
    frames, also its impacts by frame id (``dense``), so scoring a question's candidates reads
    only theirs."""

    holding: int
    ids: np.ndarray
    impacts: np.ndarray
    dense: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        return self.ids.nbytes + self.impacts.nbytes + (0 if self.dense is None else self.dense.nbytes)


class WordListCache:
    """The word lists a searching process read lately, for one build of the index (a rebuild
    empties it; other changes of the mind do not touch the lists): at most ``CACHE_BYTES``, least
    recently used dropped first, plus the build's frame lengths."""

    def __init__(self) -> None:
        self.build: str | None = None
        self.lengths: np.ndarray | None = None
        self.lists: OrderedDict[str, WordList | None] = OrderedDict()
        self.nbytes = 0
        self.lock = threading.Lock()

    def word(self, db: Database, top: TopFrames, word: str) -> WordList | None:
        with self.lock:
            if self.build != top.build:
                self.build, self.lengths, self.nbytes = top.build, None, 0
                self.lists.clear()
            if word in self.lists:
                self.lists.move_to_end(word)
                return self.lists[word]
            if self.lengths is None:
                self.lengths = np.frombuffer(db.scalar(f"SELECT lengths FROM {LENGTHS_TABLE}") or b"", dtype=_IDS)
            lengths = self.lengths
        row = db.query(f"SELECT frames, ids, counts FROM {TABLE} WHERE word = ?", (word,))
        found = None
        if row:
            holding, ids, counts = row[0]
            frame_ids = np.frombuffer(ids, dtype=_IDS).astype(np.intp)
            word_impacts = impacts(np.frombuffer(counts, dtype=_COUNTS), lengths[frame_ids], top.average_length)
            found = WordList(int(holding), frame_ids, word_impacts)
            if found.holding > DENSE_SHARE * top.frames:
                found.dense = np.zeros(top.after_id + 1, dtype=np.float64)
                found.dense[frame_ids] = word_impacts
        with self.lock:
            if self.build == top.build and word not in self.lists:
                self.lists[word] = found
                self.nbytes += 0 if found is None else found.nbytes
                while self.nbytes > CACHE_BYTES and len(self.lists) > 1:
                    _, dropped = self.lists.popitem(last=False)
                    self.nbytes -= 0 if dropped is None else dropped.nbytes
        return found


@dataclass
class TopFrames:
    """What a question reads of a usable index: the build's figures and the frames to read exactly."""

    build: str  # the build's position: what the word lists were made from
    frames: int
    average_length: float
    kept: int
    list_min_frames: int
    after_id: int  # frames above this id were written after the build
    changed: frozenset[int]  # frames at or below it edited or deleted since
    cache: WordListCache = field(default_factory=WordListCache)

    def word(self, db: Database, word: str) -> WordList | None:
        """The word's list, or None when the word has none (it is rare: FTS5 scores it)."""
        return self.cache.word(db, self, word)


def usable(db: Database, params: KeywordIndexParameters = PARAMETERS, cache: WordListCache | None = None) -> TopFrames | None:
    """The index as a question reads it (its lists through ``cache``, kept across questions),
    or None when the lane must be exact (no index, or not usable)."""
    manifest = read_manifest(db)
    if manifest is None or manifest.get("parameters") != asdict(params) or manifest.get("format") != FORMAT:
        return None
    changed = changed_since_build(db, manifest)
    if changed is None or _wear(manifest, changed) is not None:
        return None
    return TopFrames(
        build=str(manifest["position"]),
        frames=int(manifest["frames"]),
        average_length=float(manifest["average_length"]),
        kept=params.kept,
        list_min_frames=params.list_min_frames,
        after_id=change_log.Position.parse(manifest["position"]).frame_id,
        changed=frozenset(changed[0]),
        cache=cache or WordListCache(),
    )


@dataclass(frozen=True)
class QuestionWord:
    """One keyword of a question as the lane's expression holds it: the token, its term's list in
    the index (None for a rare word), its weight (2 for a rarer word where the lane splits) and whether a
    frame must hold one such word to be found (the lane's ``(rarer) AND (every)``)."""

    token: str
    listed: WordList | None  # ``TopFrames.word`` of its term
    weight: int
    required: bool


def _quoted(tokens: list[str]) -> str:
    return " OR ".join(f'"{token}"' for token in tokens)


def _fts_scores(db: Database, expression: str, extra: str = "", params: tuple[Any, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    rows = db.query(
        f"SELECT rowid, bm25(memory_frames_fts) FROM memory_frames_fts WHERE memory_frames_fts MATCH ?{extra}",
        (expression, *params),
    )
    found = np.array(rows, dtype=np.float64).reshape(-1, 2)
    return found[:, 0].astype(np.int64), -found[:, 1]


def best_frames(db: Database, top: TopFrames, words: list[QuestionWord], expression: str, limit: int) -> list[tuple[int, float]]:
    """(frame id, BM25 negated as FTS5 ranks it) of the best frames for ``words`` (at least
    ``limit``, more when frames may be gone), the lane's ``expression`` being what FTS5 would have
    been sent. Candidates: the frames of the rare words (FTS5) and each listed word's best
    ``kept`` frames (only those holding a required word, where some are); each scored exactly:
    the rare words by FTS5, the listed words by their impacts (summed over one array per frame id
    of the build, no sorting); frames changed since the build by FTS5 with ``expression``."""
    scores = np.zeros(top.after_id + 1, dtype=np.float64)
    candidate = np.zeros(top.after_id + 1, dtype=bool)
    required = any(word.required for word in words)
    by_weight: dict[tuple[int, bool], list[str]] = {}
    for word in words:
        if word.listed is None:
            by_weight.setdefault((word.weight, word.required), []).append(word.token)
    for (weight, needed_word), tokens in by_weight.items():
        found, bm25 = _fts_scores(db, _quoted(tokens))
        inside = found <= top.after_id
        scores[found[inside]] += weight * bm25[inside]
        if needed_word or not required:
            candidate[found[inside]] = True
    for word in words:
        listed = word.listed
        if listed is None:
            continue
        if listed.dense is None:
            scores[listed.ids] += word.weight * idf(top.frames, listed.holding) * listed.impacts
        if word.required or not required:
            frame_ids = listed.ids
            if len(frame_ids) > top.kept:
                frame_ids = frame_ids[np.argpartition(-listed.impacts, top.kept - 1)[: top.kept]]
            candidate[frame_ids] = True
    if top.changed:
        candidate[np.fromiter(top.changed, dtype=np.int64, count=len(top.changed))] = False
    frames = np.flatnonzero(candidate)
    total = scores[frames]
    for word in words:
        if word.listed is not None and word.listed.dense is not None:
            total += word.weight * idf(top.frames, word.listed.holding) * word.listed.dense[frames]
    newest = int(db.scalar("SELECT coalesce(max(id), 0) FROM memory_frames") or 0)
    if newest > top.after_id:
        found, bm25 = _fts_scores(db, expression, " AND rowid > ?", (top.after_id,))
        frames, total = np.concatenate([frames, found]), np.concatenate([total, bm25])
    for frame_id in sorted(top.changed):
        found, bm25 = _fts_scores(db, expression, " AND rowid = ?", (frame_id,))
        frames, total = np.concatenate([frames, found]), np.concatenate([total, bm25])
    total = np.round(total, 9)  # sums in another order than FTS5's: equal scores stay equal (ties by id)
    wanted = min(len(frames), max(limit, 0) * 2 + 10)
    if wanted < len(frames):  # the best ``wanted`` and every frame tied with the last (ties go by id)
        floor = -np.partition(-total, wanted - 1)[wanted - 1]
        best = total >= floor
        frames, total = frames[best], total[best]
    order = np.lexsort((frames, -total))
    return [(int(frames[i]), -float(total[i])) for i in order]
