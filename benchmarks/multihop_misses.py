"""Which multi-hop evidence turns the default search misses at k, and why (issue #18).

For every multi-hop question of LoCoMo and REALTALK (the minds kept by ``select_constants.py
--minds DIR``), each evidence turn not in the top k is printed with: its rank in a deeper search
(the result pool a re-ranking could draw on is ``4 x k``), its cosine similarity to the question
and its highest similarity to a frame of the top k (a near-duplicate of a found frame, which a
diversity re-ranking would have to push aside, or a turn unlike everything found), whether its
speaker is named by the question, and how many of the top k are said by the named speaker. The
summary counts the misses by depth, which says what any re-ranking of the pool can reach.

    .venv/bin/python benchmarks/multihop_misses.py --minds DIR [--data locomo realtalk] [--k 10] [--quiet]
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import Counter
from pathlib import Path

import numpy as np
import select_constants
from _memory_eval import harvested

from mind_core.embeddings import InprocessEmbedder
from mind_core.search.config import SearchConfig

MULTI_HOP = "1"


def stored_vectors(mind, frame_ids: list[int]) -> dict[int, np.ndarray]:
    marks = ",".join("?" for _ in frame_ids)
    rows = mind.db.query(f"SELECT rowid, embedding FROM memory_frames_vec WHERE rowid IN ({marks})", frame_ids)
    return {row[0]: np.frombuffer(row[1], dtype=np.float32) for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minds", type=Path, required=True)
    parser.add_argument("--data", nargs="+", default=["locomo", "realtalk"])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--deep", type=int, default=100, help="the deeper search a miss's rank is read from")
    parser.add_argument("--quiet", action="store_true", help="the summary only")
    args = parser.parse_args()
    embedder = InprocessEmbedder()
    depth = Counter()
    duplicate_of_found: list[float] = []
    to_question: list[float] = []
    found_to_question: list[float] = []
    top_duplicates: list[float] = []
    named_share: list[float] = []
    said_by_named = Counter()
    for data in args.data:
        load, _ = select_constants.DATA_SETS[data]
        for conversation in load():
            turns = {t.dia_id: t for s in conversation.sessions for t in s.turns}
            questions = [q for q in conversation.scored_questions() if q.category == MULTI_HOP]
            with harvested(conversation, embedder, args.minds, SearchConfig(), reuse=True) as run:
                by_dia = {d: f for f, ds in run.dia_ids.items() for _, d in ds}
                speakers = {t.speaker.lower() for t in turns.values()}
                for question in questions:
                    ranked = [r.frame.id for r in run.mind.search.search(question.question, limit=args.deep)]
                    top = [r.frame.id for r in run.mind.search.search(question.question, limit=args.k)]
                    asked = question.question.lower()
                    named = {s for s in speakers if re.search(rf"\b{re.escape(s)}\b", asked)}
                    q_vec = np.asarray(embedder.embed(question.question), dtype=np.float32)
                    vectors = stored_vectors(run.mind, list({*top, *(by_dia[e] for e in question.evidence if e in by_dia)}))
                    top_vecs = [vectors[f] for f in top if f in vectors]
                    pairs = [float(a @ b) for i, a in enumerate(top_vecs) for b in top_vecs[i + 1 :]]
                    if pairs:
                        top_duplicates.append(statistics.fmean(pairs))
                    if named:
                        named_share.append(
                            sum(1 for f in top if any(turns[d].speaker.lower() in named for _, d in run.dia_ids[f] if d in turns))
                            / max(1, len(top))
                        )
                    missed = [e for e in question.evidence if by_dia.get(e) not in top]
                    for evidence in question.evidence:
                        frame = by_dia.get(evidence)
                        if frame in top and frame in vectors:
                            found_to_question.append(float(vectors[frame] @ q_vec))
                    if missed and not args.quiet:
                        print(f"\n{conversation.name} Q: {question.question}  ({len(question.evidence) - len(missed)}/{len(question.evidence)} found)")
                    for evidence in missed:
                        frame = by_dia.get(evidence)
                        turn = turns[evidence]
                        rank = ranked.index(frame) + 1 if frame in ranked else None
                        band = (
                            "not harvested" if frame is None
                            else f"pool (<= {4 * args.k})" if rank is not None and rank <= 4 * args.k
                            else f"deeper (<= {args.deep})" if rank is not None
                            else f"beyond {args.deep}"
                        )
                        depth[band] += 1
                        vec = vectors.get(frame)
                        sim_q = float(vec @ q_vec) if vec is not None else float("nan")
                        sim_top = max((float(vec @ v) for v in top_vecs), default=float("nan")) if vec is not None else float("nan")
                        if vec is not None:
                            to_question.append(sim_q)
                            duplicate_of_found.append(sim_top)
                        if named:
                            said_by_named["by named speaker" if turn.speaker.lower() in named else "by another speaker"] += 1
                        if not args.quiet:
                            print(
                                f"  {evidence:8} rank {rank or '-':>4} ({band}), sim to question {sim_q:.2f}, "
                                f"to top {args.k} {sim_top:.2f}, {turn.speaker}: {turn.text[:110]!r}"
                            )
    total = sum(depth.values())
    print(f"\nmissed multi-hop evidence turns at k={args.k}: {total}")
    for band, count in depth.most_common():
        print(f"  {band:22} {count:4} ({100 * count / total:.0f} %)")
    print(
        f"cosine to the question: missed median {statistics.median(to_question):.2f}, "
        f"found median {statistics.median(found_to_question):.2f}"
    )
    print(f"missed turn's highest cosine to a top-{args.k} frame: median {statistics.median(duplicate_of_found):.2f}")
    print(f"mean pairwise cosine within the top {args.k}: median over questions {statistics.median(top_duplicates):.2f}")
    if named_share:
        print(
            f"questions naming a speaker: top {args.k} said by the named speaker, mean share "
            f"{statistics.fmean(named_share):.2f}; missed turns: {dict(said_by_named)}"
        )


if __name__ == "__main__":
    main()
