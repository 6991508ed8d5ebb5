"""Index reconciliation: make FTS and vectors agree with memory_frames again, and report.

A crash between a frame write and its indexing, an update, or a compaction can leave frames
that are not searchable, rows for frames that are gone, or vectors made from old content.
Everything here is idempotent and safe to run on a schedule.

Both passes are incremental by default: they ask their questions of the frames the change log
(``change_log``) names since their last pass (``changed_rows``), so the daily upkeep costs what
the day changed; ``full=True`` (``mind doctor --full``) asks them of every frame, and a pass
with no usable watermark (the first one, or a log pruned past it) is full anyway.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from mind_core.embeddings.base import Embedder
from mind_core.errors import FingerprintMismatchError
from mind_core.search import ann, keyword_index, vector_codes
from mind_core.search.keyword_index import KeywordIndexParameters
from mind_core.search.vector_index import LONG_FRAME_WORDS, VectorIndex, split_chunks
from mind_core.store import change_log, changed_rows
from mind_core.store.change_log import Changes
from mind_core.store.db import IN_LIST, Database, in_list

_MISSING_FTS = (
    "SELECT f.id, f.content FROM memory_frames f WHERE f.id NOT IN (SELECT rowid FROM memory_frames_fts)"
)
_STALE_FTS = "SELECT f.id, f.content FROM memory_frames f JOIN memory_frames_fts t ON t.rowid = f.id WHERE t.content != f.content"
_ORPHAN_FTS = "SELECT rowid FROM memory_frames_fts WHERE rowid NOT IN (SELECT id FROM memory_frames)"
_MISSING_VEC = (
    "SELECT f.id, f.content FROM memory_frames f WHERE f.id NOT IN (SELECT rowid FROM memory_frames_vec)"
)
_STALE_VEC = (
    "SELECT f.id, f.content FROM memory_frames f WHERE f.id IN (SELECT rowid FROM memory_frames_vec) "
    "AND (f.embedded_hash IS NULL OR f.embedded_hash != f.content_hash)"
)
_ORPHAN_VEC = "SELECT rowid FROM memory_frames_vec WHERE rowid NOT IN (SELECT id FROM memory_frames)"
_CHUNK_WITHOUT_VEC = (
    "SELECT DISTINCT f.id, f.content FROM memory_frames f JOIN memory_frame_chunks c ON c.frame_id = f.id "
    "WHERE c.id NOT IN (SELECT rowid FROM memory_frame_chunks_vec)"
)
_EMBEDDED_LONG_WITHOUT_CHUNKS = (
    "SELECT f.id, f.content FROM memory_frames f WHERE f.embedded_hash = f.content_hash "
    "AND length(f.content) >= ? AND f.id NOT IN (SELECT frame_id FROM memory_frame_chunks)"
)
_MISSING_VEC_IDS = "SELECT f.id FROM memory_frames f WHERE f.id NOT IN (SELECT rowid FROM memory_frames_vec)"
_STALE_VEC_IDS = (
    "SELECT f.id FROM memory_frames f WHERE f.id IN (SELECT rowid FROM memory_frames_vec) "
    "AND (f.embedded_hash IS NULL OR f.embedded_hash != f.content_hash)"
)
_CHUNK_WITHOUT_VEC_IDS = (
    "SELECT DISTINCT c.frame_id FROM memory_frame_chunks c "
    "WHERE c.id NOT IN (SELECT rowid FROM memory_frame_chunks_vec)"
)
_EMBEDDED_LONG_WITHOUT_CHUNKS_PAGE = (
    "SELECT f.id, f.content FROM memory_frames f WHERE f.id > ? AND f.embedded_hash = f.content_hash "
    "AND length(f.content) >= ? AND f.id NOT IN (SELECT frame_id FROM memory_frame_chunks) ORDER BY f.id LIMIT ?"
)
PAGE_ROWS = 2_000  # frames (with their text) read at a time by what walks all frames needing a vector
_ORPHAN_CHUNK_VEC = (
    "SELECT rowid FROM memory_frame_chunks_vec WHERE rowid NOT IN (SELECT id FROM memory_frame_chunks)"
)


def frames_missing_chunk_vectors(db: Database, changes: Changes | None = None) -> list[Any]:
    """Embedded frames whose later text is not fully searchable: a chunk row without its vector,
    or a long frame with no chunk rows at all (the frame vector alone covers only its start);
    among ``changes`` only when given."""
    if not db.table_exists("memory_frame_chunks_vec"):
        return []
    if changes is not None:
        missing = {row["id"]: row for row in changed_rows.rows(db, "chunk_without_vec", changes)}
        long_rows = changed_rows.long_frames_without_chunks(db, changes, 2 * LONG_FRAME_WORDS)
    else:
        missing = {row["id"]: row for row in db.query(_CHUNK_WITHOUT_VEC)}
        long_rows = db.query(_EMBEDDED_LONG_WITHOUT_CHUNKS, (2 * LONG_FRAME_WORDS,))
    for row in long_rows:
        if split_chunks(row["content"]):
            missing[row["id"]] = row
    return list(missing.values())


def ids_needing_vectors(db: Database, changes: Changes | None = None) -> list[int]:
    """The ids of the frames with no vector, a stale one or missing chunk vectors, ascending:
    ids only (a few bytes a frame), so a million pending frames never sit in memory with their text.
    Among ``changes`` only when given."""
    if not db.table_exists("memory_frames_vec"):
        return []
    if changes is not None:
        ids = {row[0] for check in ("vec_missing", "vec_stale") for row in changed_rows.rows(db, check, changes)}
        return sorted(ids | {row["id"] for row in frames_missing_chunk_vectors(db, changes)})
    ids = {row[0] for row in db.query(_MISSING_VEC_IDS)}
    ids.update(row[0] for row in db.query(_STALE_VEC_IDS))
    if db.table_exists("memory_frame_chunks_vec"):
        ids.update(row[0] for row in db.query(_CHUNK_WITHOUT_VEC_IDS))
        after = 0
        while rows := db.query(_EMBEDDED_LONG_WITHOUT_CHUNKS_PAGE, (after, 2 * LONG_FRAME_WORDS, PAGE_ROWS)):
            ids.update(row["id"] for row in rows if split_chunks(row["content"]))
            after = rows[-1]["id"]
    return sorted(ids)


def pending_vector_batches(
    db: Database, ids: Sequence[int], batch_rows: int = PAGE_ROWS
) -> Iterator[list[tuple[int, str, str]]]:
    """(id, content, content hash) of these frames (``ids_needing_vectors``), ``batch_rows`` at a
    time in id order: what the staging and the reconcile embed, in memory one batch at a time."""
    for start in range(0, len(ids), batch_rows):
        rows = db.query(
            f"SELECT id, content, content_hash FROM memory_frames WHERE id IN ({IN_LIST}) ORDER BY id",
            (in_list(ids[start : start + batch_rows]),),
        )
        yield [(row["id"], row["content"], row["content_hash"]) for row in rows]


@dataclass(frozen=True)
class ReconcileResult:
    """What one reconcile repaired: FTS rows (re)written, frames (re)embedded, orphan rows removed."""

    fts_fixed: int = 0
    vectors_fixed: int = 0
    orphans_removed: int = 0
    ann_rebuilt: int = 0  # vectors in the ANN index when this pass (re)built it, else 0
    keyword_index_rebuilt: int = 0  # word lists in the keyword lane's top-k index when this pass (re)built it
    # how the pass went, not what it repaired (left out of comparisons)
    full: bool = field(default=True, compare=False)  # every frame examined; else those changed since
    frames_examined: int = field(default=0, compare=False)  # frames (and deleted chunks) checked


@dataclass(frozen=True)
class Finding:
    """One thing doctor checked: ``count`` rows (or 1 for a yes/no check) are wrong, 0 when fine.

    Doctor's report is a list of these so that further checks (e.g. of sources) add findings
    without changing the report's shape.
    """

    check: str
    count: int
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.count == 0


@dataclass
class DoctorReport:
    """The health of one mind; ``repaired`` and ``after`` are set when doctor was asked to repair."""

    frames: int
    findings: list[Finding] = field(default_factory=list)
    full: bool = True  # every frame checked; else only those changed since the last clean check
    frames_examined: int = 0  # frames (and deleted chunks) whose index rows were checked
    stored_fingerprint: dict[str, Any] | None = None
    repaired: ReconcileResult | None = None
    after: DoctorReport | None = None

    @property
    def problems(self) -> list[str]:
        return [finding.check for finding in self.findings if not finding.ok]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def healthy(self) -> bool:
        """Fine now: either nothing was wrong or the repair fixed it."""
        return self.ok or (self.after is not None and self.after.ok)

    def finding(self, check: str) -> Finding:
        """The finding of one check; a check that did not run found nothing."""
        return next((f for f in self.findings if f.check == check), Finding(check, 0))

    def count(self, check: str) -> int:
        return self.finding(check).count

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the fields plus ``problems`` and ``ok``."""
        return {
            "frames": self.frames,
            "full": self.full,
            "frames_examined": self.frames_examined,
            "findings": [asdict(finding) for finding in self.findings],
            "stored_fingerprint": self.stored_fingerprint,
            "problems": self.problems,
            "ok": self.ok,
            "repaired": asdict(self.repaired) if self.repaired is not None else None,
            "after": self.after.to_dict() if self.after is not None else None,
        }


def reconcile_fts_index(db: Database, changes: Changes | None = None) -> int:
    """Index frames missing from FTS5 (and rewrite rows whose text is out of date), among
    ``changes`` when given; the frames repaired are logged (a snapshot shows whether a frame is
    indexed)."""
    if changes is not None:
        rows = changed_rows.rows(db, "fts_missing", changes) + changed_rows.rows(db, "fts_stale", changes)
    else:
        rows = db.query(_MISSING_FTS) + db.query(_STALE_FTS)
    with db.transaction():
        for row in rows:
            db.execute("DELETE FROM memory_frames_fts WHERE rowid = ?", (row["id"],))
            db.execute(
                "INSERT INTO memory_frames_fts (rowid, content) VALUES (?, ?)", (row["id"], row["content"])
            )
        change_log.note_frames(db, [row["id"] for row in rows])
    return len(rows)


def reconcile_vec_index(
    db: Database, embedder: Embedder, progress: Any = None, changes: Changes | None = None
) -> int:
    """Embed frames with no vector, a stale one or missing chunk vectors (among ``changes`` when
    given), EMBED_BATCH at a time (the original: 50); re-indexing a frame rewrites its chunks."""
    if not db.table_exists("memory_frames_vec"):
        return 0
    index, ids, fixed = VectorIndex(db, embedder), ids_needing_vectors(db, changes), 0
    for batch in pending_vector_batches(db, ids):
        fixed += index.index_frames([(frame_id, content) for frame_id, content, _ in batch])
        if progress is not None:
            progress(fixed, len(ids))
    refresh_vector_codes(db)  # rows deleted behind the index's back leave their codes behind
    return fixed


def clean_orphan_fts(db: Database, changes: Changes | None = None) -> int:
    """Delete full-text rows of deleted frames (those ``changes`` names when given)."""
    found = changed_rows.rows(db, "fts_orphans", changes) if changes is not None else db.query(_ORPHAN_FTS)
    ids = [r[0] for r in found]
    with db.transaction():
        db.executemany("DELETE FROM memory_frames_fts WHERE rowid = ?", [(i,) for i in ids])
    return len(ids)


def clean_orphan_vectors(db: Database, changes: Changes | None = None) -> int:
    """Delete vectors of deleted frames and chunks (those ``changes`` names when given)."""
    if not db.table_exists("memory_frames_vec"):
        return 0
    if changes is not None:
        ids = [r[0] for r in changed_rows.rows(db, "vec_orphans", changes)]
        chunk_ids = [r[0] for r in changed_rows.rows(db, "chunk_vec_orphans", changes)]
    else:
        ids = [r[0] for r in db.query(_ORPHAN_VEC)]
        chunk_ids = [r[0] for r in db.query(_ORPHAN_CHUNK_VEC)]
    with db.transaction():
        db.executemany("DELETE FROM memory_frames_vec WHERE rowid = ?", [(i,) for i in ids])
        db.executemany("DELETE FROM memory_frame_chunks_vec WHERE rowid = ?", [(i,) for i in chunk_ids])
        vector_codes.remove(db, "memory_frames_vec", ids)
        vector_codes.remove(db, "memory_frame_chunks_vec", chunk_ids)
    return len(ids) + len(chunk_ids)


def refresh_vector_codes(db: Database) -> int:
    """Rebuild the sign bits of a vector table that a writer bypassing them (the original engine)
    left behind; returns the vectors whose bits were rewritten."""
    rewritten = 0
    for table in vector_codes.VECTOR_TABLES:
        if db.table_exists(table) and not vector_codes.is_current(db, table):
            with db.transaction():
                rewritten += vector_codes.rebuild(db, table)
    return rewritten


def ann_needed(db: Database, min_vectors: int = ann.ANN_MIN_VECTORS) -> bool:
    """Whether this mind should keep an ANN index: it already keeps one, or it holds
    ``min_vectors`` frame vectors or more (and lives in a file)."""
    if ann.ann_dir(db) is None or not db.table_exists("memory_frames_vec"):
        return False
    return ann.enabled(db) or ann.vector_counts(db)["memory_frames_vec"] >= min_vectors


def ann_problem(db: Database, min_vectors: int = ann.ANN_MIN_VECTORS) -> str | None:
    """What is wrong with the mind's ANN index (None when it is fine or not needed): missing,
    made for another state, embedder or parameters, too far behind, or not counting what the
    vector tables hold."""
    if not ann_needed(db, min_vectors):
        return None
    fingerprint = VectorIndex(db, None).stored_fingerprint()
    found = ann.problem(db, ann.read_manifest(db), fingerprint)
    if found is not None:
        return found
    loaded = ann.load(db, fingerprint)
    if loaded is None:
        return "its counts differ from the vector tables"
    return None


def ann_waiting(db: Database, min_vectors: int = ann.ANN_MIN_VECTORS) -> str | None:
    """Why a mind that should keep an ANN index has none usable (a harvest leaves it to the next
    reconcile): "missing", or how far behind; None when it needs none or has one. Reads only the
    manifest and the log, never the graph."""
    if not ann_needed(db, min_vectors):
        return None
    return ann.problem(db, ann.read_manifest(db), VectorIndex(db, None).stored_fingerprint())


def refresh_ann_index(db: Database, min_vectors: int = ann.ANN_MIN_VECTORS) -> int:
    """Build the ANN index of a mind that needs one and has none usable, or whose removals wore
    it (``AnnGraphs.worn``), and return the vectors it holds; otherwise fold the change log into
    the files (returns 0)."""
    if not ann_needed(db, min_vectors):
        return 0
    fingerprint = VectorIndex(db, None).stored_fingerprint()
    loaded = ann.load(db, fingerprint)
    if loaded is None or loaded.worn():
        return sum(ann.build(db, fingerprint).counts().values())
    if ann.pending(db, 0):
        ann.save(db, loaded)
    return 0


FULL_PASS_SHARE = 0.5  # of the frames: more changed than this, and one full pass is cheaper


def changes_to_check(
    db: Database, upkeep_pass: str, full: bool, trusted: tuple[str, ...] = ()
) -> tuple[Changes | None, change_log.Position]:
    """What ``upkeep_pass`` examines: the changes since its watermark (or the later one of a
    ``trusted`` pass), or None for every frame (asked for, no usable watermark, or so many changes
    that the set operations cost less); and how far into the mind's changes the pass reaches (its
    next watermark)."""
    end = change_log.position(db)
    marks = [m for m in (change_log.watermark(db, name) for name in (upkeep_pass, *trusted)) if m is not None]
    since = max(marks, key=lambda mark: (mark.seq, mark.frame_id), default=None)
    changes = None if full else change_log.changes_since(db, since)
    if changes is not None and len(changes.frames) > FULL_PASS_SHARE * _frame_count_estimate(db):
        changes = None
    return changes, changes.end if changes is not None else end


def _frame_count_estimate(db: Database) -> int:
    return int(db.scalar("SELECT coalesce(max(id), 0) FROM memory_frames") or 0)


def _examined(db: Database, changes: Changes | None) -> int:
    if changes is None:
        return _frame_count_estimate(db)
    return len(changes.frames) + len(changes.chunks)


def reconcile_indexes(
    db: Database,
    embedder: Embedder | None = None,
    ann_min_vectors: int = ann.ANN_MIN_VECTORS,
    full: bool = False,
    keyword_params: KeywordIndexParameters = keyword_index.PARAMETERS,
) -> ReconcileResult:
    """FTS repair, vector repair (when an embedder is given), orphan sweeps, then the ANN index
    of a large mind brought up to date (``ann_min_vectors``: the size from which a mind keeps one)
    and the keyword lane's top-k index (re)built when missing or worn (``keyword_params``).
    Only the frames changed since the last reconcile unless ``full``; without an embedder the
    vectors are not repaired and the watermark stays (the next pass with one looks again)."""
    changes, end = changes_to_check(db, change_log.RECONCILE, full)
    result = repair_indexes(db, embedder, changes, ann_min_vectors, keyword_params)
    if embedder is not None:
        record_reconciled(db, end)
    return result


def record_reconciled(db: Database, through: change_log.Position) -> None:
    """Record that the indexes (vectors included) agree with the frames up to ``through``, and
    drop the change log's oldest entries."""
    if change_log.enabled(db):
        with db.transaction():
            change_log.set_watermark(db, change_log.RECONCILE, through)
        change_log.prune(db)


def repair_indexes(
    db: Database,
    embedder: Embedder | None,
    changes: Changes | None,
    ann_min_vectors: int = ann.ANN_MIN_VECTORS,
    keyword_params: KeywordIndexParameters = keyword_index.PARAMETERS,
) -> ReconcileResult:
    """One reconcile pass over ``changes`` (every frame when None), recording no watermark."""
    fts_fixed = reconcile_fts_index(db, changes)
    vectors_fixed = reconcile_vec_index(db, embedder, changes=changes) if embedder is not None else 0
    orphans = clean_orphan_fts(db, changes) + clean_orphan_vectors(db, changes)
    refresh_vector_codes(db)
    return ReconcileResult(
        fts_fixed=fts_fixed,
        vectors_fixed=vectors_fixed,
        orphans_removed=orphans,
        ann_rebuilt=refresh_ann_index(db, ann_min_vectors),
        keyword_index_rebuilt=keyword_index.refresh(db, keyword_params),
        full=changes is None,
        frames_examined=_examined(db, changes),
    )


# The index checks: finding name, SQL listing the rows at fault (full pass), the same questions
# asked of the changed frames (``changed_rows.CHECKS``), what a non-zero count means.
INDEX_CHECKS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], str], ...] = (
    ("fts_missing", (_MISSING_FTS,), ("fts_missing",), "frames not in the full-text index"),
    ("fts_stale", (_STALE_FTS,), ("fts_stale",), "full-text rows with out-of-date text"),
    ("fts_orphans", (_ORPHAN_FTS,), ("fts_orphans",), "full-text rows of deleted frames"),
    ("vec_missing", (_MISSING_VEC,), ("vec_missing",), "frames without a vector"),
    ("vec_stale", (_STALE_VEC,), ("vec_stale",), "vectors made from out-of-date text"),
    (
        "vec_orphans",
        (_ORPHAN_VEC, _ORPHAN_CHUNK_VEC),
        ("vec_orphans", "chunk_vec_orphans"),
        "vectors of deleted frames or chunks",
    ),
)


def _index_findings(db: Database, changes: Changes | None) -> list[Finding]:
    if changes is None:
        return [
            Finding(name, sum(len(db.query(sql)) for sql in queries), meaning)
            for name, queries, _, meaning in INDEX_CHECKS
        ]
    return [
        Finding(name, sum(len(changed_rows.rows(db, check, changes)) for check in checks), meaning)
        for name, _, checks, meaning in INDEX_CHECKS
    ]


def doctor(
    db: Database,
    embedder: Embedder | None = None,
    repair: bool = False,
    ann_min_vectors: int = ann.ANN_MIN_VECTORS,
    full: bool = False,
    keyword_params: KeywordIndexParameters = keyword_index.PARAMETERS,
) -> DoctorReport:
    """Check the indexes against memory_frames; with ``repair`` fix what can be fixed.

    Only the frames changed since the last check that found the mind healthy, or the last
    reconcile, whichever is later, unless ``full`` (the first check of a mind is full); ``PRAGMA quick_check`` reads the whole file, so only a
    full check runs it. A writable mind found healthy records how far it was checked."""
    index = VectorIndex(db, embedder)
    # a reconcile leaves every index agreeing with the frames up to its watermark: nothing to check there
    changes, end = changes_to_check(db, change_log.DOCTOR, full, trusted=(change_log.RECONCILE,))
    findings = _index_findings(db, changes)
    findings.append(
        Finding(
            "vec_chunks_missing", len(frames_missing_chunk_vectors(db, changes)), "long frames missing chunk vectors"
        )
    )
    # a mind not yet migrated (opened read-only since the upgrade) gets them at its first writable open
    migrated = db.table_exists("vector_bit_blocks")
    stale_bits = [
        t for t in vector_codes.VECTOR_TABLES if migrated and db.table_exists(t) and not vector_codes.is_current(db, t)
    ]
    findings.append(
        Finding("vec_bits", len(stale_bits), "vector tables whose sign bits (the vector lane's pre-scan) lag behind")
    )
    findings.append(_ann_finding(db, ann_min_vectors))
    findings.append(_keyword_index_finding(db, keyword_params))
    try:
        index.check_fingerprint()
        findings.append(Finding("fingerprint", 0, "the embedder matches the mind's vectors"))
    except FingerprintMismatchError as exc:
        findings.append(Finding("fingerprint", 1, str(exc)))
    if changes is None:
        integrity = str(db.scalar("PRAGMA quick_check"))
        findings.append(Finding("integrity", 0 if integrity == "ok" else 1, f"PRAGMA quick_check: {integrity}"))
    else:
        findings.append(Finding("integrity", 0, "not read: an incremental check (mind doctor --full runs quick_check)"))
    report = DoctorReport(
        frames=db.scalar("SELECT COUNT(*) FROM memory_frames"),
        findings=findings,
        stored_fingerprint=index.stored_fingerprint(),
        full=changes is None,
        frames_examined=_examined(db, changes),
    )
    if repair and not report.ok:
        can_embed = embedder is not None and report.count("fingerprint") == 0
        report.repaired = repair_indexes(db, embedder if can_embed else None, changes, ann_min_vectors, keyword_params)
        report.after = doctor(
            db, embedder, repair=False, ann_min_vectors=ann_min_vectors, full=full, keyword_params=keyword_params
        )
    elif report.ok and not db.readonly and change_log.enabled(db):
        with db.transaction():
            change_log.set_watermark(db, change_log.DOCTOR, end)
    return report


def _ann_finding(db: Database, min_vectors: int) -> Finding:
    if not ann_needed(db, min_vectors):
        return Finding("ann_index", 0, f"not kept below {min_vectors:,} frame vectors: the vector lane scans exactly")
    found = ann_problem(db, min_vectors)
    if found is not None:
        return Finding("ann_index", 1, f"the ANN index beside the mind is unusable: {found}")
    manifest = ann.read_manifest(db) or {}
    return Finding(
        "ann_index",
        0,
        f"{manifest.get('library')}, {manifest.get('counts')} vectors of {manifest.get('indexed_dims')} values, "
        f"{manifest.get('parameters')}",
    )


def _keyword_index_finding(db: Database, params: KeywordIndexParameters) -> Finding:
    if not keyword_index.needed(db, params):
        return Finding("keyword_index", 0, f"not kept below {params.min_frames:,} frames: the keyword lane asks FTS5")
    found = keyword_index.problem(db, params)
    if found is not None:
        return Finding("keyword_index", 1, f"the keyword lane's top-k index is unusable: {found}")
    manifest = keyword_index.read_manifest(db) or {}
    return Finding(
        "keyword_index", 0, f"{manifest.get('words')} word lists of {manifest.get('frames')} frames, {manifest.get('parameters')}"
    )
