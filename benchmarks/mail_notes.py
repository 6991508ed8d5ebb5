"""Recall@1/5 on mail and notes: questions generated from the shared mailbox and vaults (issue #35).

The shared mail (``email/notmuch-corpus``: 233 mailing-list messages, long patch threads with
their "Applied." replies) and the two Obsidian vaults (``markdown/obsidian-help-en``,
``markdown/kepano-obsidian``) are registered and harvested into one mind as a user does
(``register_source`` + ``harvest``, what ``mind sources add`` and ``mind harvest`` call), and
every question is asked as ``mind recall`` asks it (``CombinedRetrieval.recall``, the CLI's
defaults). A question has one expected message or note section; a hit is one of its frames in
the top k.

How the questions are made (deterministic: files in sorted order, no randomness), read from the
files themselves with the standard library, not through the importers:

- ``note sentence``: for each section of a note (the text before the first heading, or a heading
  and what follows it up to the next), its first prose sentence of 8 words or more (outside code
  fences, tables and frontmatter), paraphrased by ``paraphrase``: lower case, stop words dropped,
  every third remaining word dropped, the rest in reverse order ("Obsidian stores your notes as
  plain text files in a folder" -> "folder text plain stores obsidian"). Expected: the
  frame of that note holding the sentence (its words in order).
- ``mail sentence``: the same for each message's first prose sentence of 8 words or more (quoted
  lines, "... wrote:" lines, signatures and patches left out). Expected: that message's frame.
- ``mail subject``: the subject of each message that starts a thread (no In-Reply-To), without
  "Re:" and bracketed tags ("[PATCH 03/44]"), as the question. Expected: that message, not the
  replies that share its subject.

Bias, stated: a paraphrase keeps the sentence's own content words, so it favours the keyword lane
(a person's question would use other words); the reversed order costs the vector lane a little.
It measures whether the right message or section wins over its neighbours (the other messages
of a thread, the other sections of a note), the failure the mail and notes misses showed. Every
question is answered by one section or message on its own: none needs a neighbouring section,
so the notes can show what session context costs, not what it gains. The subject questions are
few (one per thread) and ask for the thread's first message, which favours a rule that puts it
first. A question whose sentence no frame holds (the importer rewrote it, or left the message
out as a duplicate) is not asked and is counted.

Printed side by side from one harvested mind: recall@k per kind with the defaults, the mail kinds
with replies not yielding, every kind as before issue #35's item 4 (``BEFORE``), a recall's CPU
time before and after (query vectors made beforehand, so both time the search), and the note
context weight chosen leave-one-fold-out: the notes are split into ``FOLDS`` folds by note (a
note's questions in one fold), each fold's weight is the best recall@1 (then @5) on the other
folds, and the held-out fold's figures are reported; then the misses of each kind.

    .venv/bin/python benchmarks/mail_notes.py [--k 1 5] [--failures 20] [--embedder inprocess|hashing]
        [--mind DIR] [--note-weights 0 0.1 0.2 0.3 0.4]
"""

from __future__ import annotations

import argparse
import email
import email.policy
import re
import statistics
import tempfile
import time
import zlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from _common import SHARED_DATA, machine, percentile, write_results
from _memory_eval import QueryVectorCache, recall_ids

from mind_core.embeddings.base import Embedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.search.config import SearchConfig

MAIL = SHARED_DATA / "email" / "notmuch-corpus"
VAULTS = (SHARED_DATA / "markdown" / "obsidian-help-en", SHARED_DATA / "markdown" / "kepano-obsidian")
MIN_WORDS = 8
MIN_QUESTION_WORDS = 3
KINDS = ("note sentence", "mail sentence", "mail subject")
FOLDS = 3  # the notes are split into folds by note for the note context weight
# the search before thread- and note-aware ranking: replies never yield, notes take the chats' context
BEFORE = SearchConfig(note_context_weight=SearchConfig().context_weight, replies_yield=False)
STOP_WORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from as is are was were be been
    being it its this that these those you your we our i me my he she they them their his her not no
    do does did can could will would should may might must have has had so than too very just also
    into out up down over about there here what which who whom when where why how all any each
    some such more most other""".split()
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'_-]*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SUBJECT_TAGS = re.compile(r"^\s*(?:(?:re|fwd?|aw)\s*:\s*|\[[^\]]*\]\s*)+", re.IGNORECASE)


@dataclass(frozen=True)
class Question:
    kind: str
    question: str
    source: str  # the file the question was made from (relative to the shared data)
    where: str  # the message id, or the note's path and section heading
    sentence: str  # the original sentence or subject


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def paraphrase(sentence: str) -> str:
    """Lower case, stop words dropped, every third remaining word dropped, the rest reversed."""
    kept = [w for w in words(sentence) if w not in STOP_WORDS]
    return " ".join(reversed([w for i, w in enumerate(kept) if i % 3 != 2]))


def first_sentence(lines: list[str]) -> str | None:
    """The first prose sentence of ``MIN_WORDS`` words or more: mostly words, not code."""
    text = " ".join(line.strip() for line in lines if line.strip())
    for sentence in _SENTENCE_END.split(text):
        tokens = sentence.split()
        wordy = sum(1 for t in tokens if re.fullmatch(r"[A-Za-z'(),.:;!?\"-]+", t))
        if len(tokens) >= MIN_WORDS and wordy >= 0.8 * len(tokens):
            return sentence.strip()
    return None


# -- notes ----------------------------------------------------------------------------------------
def note_sections(text: str) -> Iterator[tuple[str, list[str]]]:
    """(heading, prose lines) per section; frontmatter, code fences, tables, embeds left out."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        lines = lines[end + 1 :]
    heading, body, fenced = "", [], False
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        if match := _HEADING.match(line):
            yield heading, body
            heading, body = match.group(2), []
        elif not line.lstrip().startswith(("|", "![[", ">", "<")):
            body.append(line)
    yield heading, body


def note_questions(vaults: tuple[Path, ...]) -> Iterator[Question]:
    for vault in vaults:
        for path in sorted(vault.rglob("*.md")):
            if any(part.startswith(".") for part in path.relative_to(vault).parts):
                continue
            relative = str(path.relative_to(SHARED_DATA))
            for heading, body in note_sections(path.read_text(encoding="utf-8", errors="replace")):
                sentence = first_sentence(body)
                if sentence and len(paraphrase(sentence).split()) >= MIN_QUESTION_WORDS:
                    yield Question(
                        "note sentence", paraphrase(sentence), relative, heading or "(top)", sentence
                    )


# -- mail -----------------------------------------------------------------------------------------
def message_prose(message: email.message.EmailMessage) -> list[str]:
    """The body's own lines: up to a signature or a patch, without quotes or "wrote:" lines."""
    part = message.get_body(preferencelist=("plain",))
    if part is None:
        return []
    try:
        body = part.get_content()
    except (LookupError, ValueError):
        return []
    lines = []
    for line in body.splitlines():
        if line.rstrip() in ("--", "---") or line.startswith(("diff --git", "Signed-off-by:")):
            break
        if line.lstrip().startswith(">") or line.rstrip().endswith("wrote:"):
            continue
        lines.append(line)
    return lines


def mail_questions(folder: Path) -> Iterator[Question]:
    seen_subjects: set[str] = set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.parent.name in ("cur", "new")):
        with path.open("rb") as handle:
            message = email.message_from_binary_file(handle, policy=email.policy.default)
        message_id = str(message.get("Message-ID") or "").strip().strip("<>")
        if not message_id:
            continue
        relative = str(path.relative_to(SHARED_DATA))
        sentence = first_sentence(message_prose(message))
        if sentence and len(paraphrase(sentence).split()) >= MIN_QUESTION_WORDS:
            yield Question("mail sentence", paraphrase(sentence), relative, message_id, sentence)
        subject = _SUBJECT_TAGS.sub("", str(message.get("Subject") or "")).strip()
        if (
            not message.get("In-Reply-To")
            and len(words(subject)) >= 2
            and subject.lower() not in seen_subjects
        ):
            seen_subjects.add(subject.lower())
            yield Question("mail subject", subject, relative, message_id, str(message.get("Subject")))


# -- the expected frames --------------------------------------------------------------------------
def expected_frames(mind: Mind, questions: list[Question]) -> dict[Question, set[int]]:
    """Per question, the frames that answer it: the message's frame (by its Message-ID), or the
    note's frames that hold the sentence's words in order. Questions without one are left out."""
    by_message: dict[str, set[int]] = defaultdict(set)
    by_path: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for row in mind.db.query(
        "SELECT id, content, json_extract(metadata, '$.source.message.message_id'),"
        " json_extract(metadata, '$.provenance.path'), json_extract(metadata, '$.provenance.plugin')"
        " FROM memory_frames"
    ):
        if row[4] == "email" and row[2]:
            by_message[str(row[2]).strip("<>")].add(row[0])
        elif row[4] == "markdown" and row[3]:
            by_path[row[3]].append((row[0], " ".join(words(row[1]))))
    found: dict[Question, set[int]] = {}
    for question in questions:
        if question.kind == "note sentence":
            note = question.source.split("/", 2)[-1]  # markdown/<vault>/<path in the vault>
            phrase = " ".join(words(question.sentence))
            frames = {frame for frame, text in by_path.get(note, ()) if phrase in text}
        else:
            frames = by_message.get(question.where, set())
        if frames:
            found[question] = frames
    return found


def harvest_mind(path: Path, embedder: Embedder) -> tuple[Mind, float]:
    """The mail and both vaults harvested into the mind at ``path``; a mind this function finished
    there before (its marker names the same model) is opened as it is (0 s)."""
    done = path.with_suffix(".harvested")
    if done.is_file() and done.read_text(encoding="utf-8") == embedder.model_name and path.is_file():
        return Mind.open(path, embedder=embedder), 0.0
    for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), done):
        stale.unlink(missing_ok=True)
    mind = Mind.open(path, embedder=embedder)
    began = time.process_time()
    register_source(mind, "email", MAIL, "mail")
    for vault in VAULTS:
        register_source(mind, "markdown", vault, vault.name)
    for name in ("mail", *(vault.name for vault in VAULTS)):
        report = harvest(mind, name)
        if report.imported is None:
            raise RuntimeError(f"{name}: nothing imported")
    done.write_text(embedder.model_name, encoding="utf-8")
    return mind, time.process_time() - began


class BatchVectorCache(QueryVectorCache):
    """Query vectors remembered per batch of texts: each question is asked once per setting."""

    def embed_batch(self, texts: Sequence[str]) -> Any:
        key = tuple(texts)
        if key not in self.vectors:
            self.vectors[key] = self.inner.embed_batch(texts)
        return self.vectors[key]


def frame_label(mind: Mind, frame_id: int) -> str:
    row = mind.db.query(
        "SELECT content, json_extract(metadata, '$.provenance.path') FROM memory_frames WHERE id = ?",
        (frame_id,),
    )[0]
    return f"{row[1]}: {' '.join(str(row[0]).split())[:90]}"


def fold_of(question: Question) -> int:
    """The fold of a note question: by its note (all of a note's questions in one fold)."""
    return zlib.crc32(question.source.encode()) % FOLDS


def ask(
    mind: Mind, expected: dict[Question, set[int]], config: SearchConfig, k: int, label: bool = False
) -> list[dict[str, Any]]:
    """Each question asked as ``mind recall`` asks it, under ``config``: the expected frame's rank."""
    mind.search.config = config
    rows = []
    for question, frames in expected.items():
        began = time.process_time()
        ranked = recall_ids(mind, question.question, k)
        cpu = time.process_time() - began
        rank = next((i for i, frame in enumerate(ranked) if frame in frames), None)
        row = {"kind": question.kind, "question": question.question, "sentence": question.sentence}
        row |= {"source": question.source, "where": question.where, "rank": rank, "cpu_s": cpu}
        if question.kind == "note sentence":
            row["fold"] = fold_of(question)
        if label:
            row["first"] = frame_label(mind, ranked[0]) if ranked and rank != 0 else None
        rows.append(row)
    return rows


def recall_at(rows: list[dict[str, Any]], ks: list[int]) -> dict[str, Any]:
    return {
        "questions": len(rows),
        **{f"recall@{k}": 100 * statistics.fmean(r["rank"] is not None and r["rank"] < k for r in rows) for k in ks},
    }


def by_kind(rows: list[dict[str, Any]], ks: list[int]) -> dict[str, dict[str, Any]]:
    return {kind: recall_at(kind_rows, ks) for kind in KINDS if (kind_rows := [r for r in rows if r["kind"] == kind])}


def held_out_note_weights(
    mind: Mind, expected: dict[Question, set[int]], weights: list[float], ks: list[int]
) -> dict[str, Any]:
    """The note context weight chosen on the other folds' notes (best recall@1, then @5), and its
    figures on the held-out fold; every weight's figures per fold are kept."""
    notes = {q: frames for q, frames in expected.items() if q.kind == "note sentence"}
    per_weight = {}
    for weight in weights:
        rows = ask(mind, notes, replace(SearchConfig(), note_context_weight=weight), max(ks))
        per_weight[weight] = [recall_at([r for r in rows if r["fold"] == fold], ks) for fold in range(FOLDS)]
    folds = []
    for fold in range(FOLDS):
        def trained(weight: float, fold: int = fold) -> tuple[float, ...]:
            others = [figures for f, figures in enumerate(per_weight[weight]) if f != fold]
            return tuple(sum(f[f"recall@{k}"] * f["questions"] for f in others) for k in ks)

        chosen = max(weights, key=trained)
        folds.append({"fold": fold, "chosen": chosen, **per_weight[chosen][fold]})
    return {"weights": {str(w): figures for w, figures in per_weight.items()}, "held_out": folds}


def run(
    embedder: Embedder, ks: list[int], failures: int, workdir: Path, note_weights: list[float]
) -> dict[str, Any]:
    questions = list(note_questions(VAULTS)) + list(mail_questions(MAIL))
    mind, harvest_cpu = harvest_mind(workdir / "mail-notes.mind", embedder)
    with mind:
        mind.search.vectors.embedder = BatchVectorCache(embedder)
        expected = expected_frames(mind, questions)
        for question in expected:  # every question's vectors embedded once, so both timings below skip it
            recall_ids(mind, question.question, max(ks))
        before = ask(mind, expected, BEFORE, max(ks))
        rows = ask(mind, expected, SearchConfig(), max(ks), label=True)
        mail = {q: frames for q, frames in expected.items() if q.kind != "note sentence"}
        without_yield = ask(mind, mail, replace(SearchConfig(), replies_yield=False), max(ks))
        folds = held_out_note_weights(mind, expected, note_weights, ks) if note_weights else None
    unasked = {kind: sum(1 for q in questions if q.kind == kind and q not in expected) for kind in KINDS}
    return {
        "by_kind": by_kind(rows, ks),
        "mail_without_reply_yield": by_kind(without_yield, ks),
        "before": by_kind(before, ks),
        "note_context_folds": folds,
        "unasked": unasked,
        "harvest_cpu_s": harvest_cpu,
        "recall_cpu_ms": {"after": cpu_ms(rows), "before": cpu_ms(before)},
        "rows": rows,
        "failures_shown": failures,
    }


def cpu_ms(rows: list[dict[str, Any]]) -> dict[str, float]:
    """A recall's CPU time over the questions, p50 and p95, in ms (the query vectors already made)."""
    times = [1000 * r["cpu_s"] for r in rows]
    return {"p50": percentile(times, 50), "p95": percentile(times, 95)}


def kind_line(kind: str, figures: dict[str, Any], ks: list[int], unasked: int | str = "") -> str:
    return (
        f"  {kind:34}{figures['questions']:7d}"
        + "".join(f"{figures[f'recall@{k}']:8.1f}" for k in ks)
        + f"{unasked:>11}"
    )


def report(result: dict[str, Any], ks: list[int], embedder: Embedder) -> None:
    print(f"mail_notes: recall@k (%) through `mind recall`, {embedder.model_name}, {machine()}")
    print(f"  {'questions':34}{'asked':>7}" + "".join(f"{f'R@{k}':>8}" for k in ks) + f"{'not asked':>11}")
    for kind, figures in result["by_kind"].items():
        print(kind_line(kind, figures, ks, result["unasked"][kind]))
    for kind, figures in result["mail_without_reply_yield"].items():
        print(kind_line(f"{kind}, replies not yielding", figures, ks))
    for kind, figures in result["before"].items():
        print(kind_line(f"{kind}, before #35 item 4", figures, ks))
    after, before = result["recall_cpu_ms"]["after"], result["recall_cpu_ms"]["before"]
    print(
        f"harvest {result['harvest_cpu_s']:.1f} s CPU (0: the kept mind reused); a recall's CPU p50 / p95"
        f" {after['p50']:.1f} / {after['p95']:.1f} ms (before #35 item 4: {before['p50']:.1f} / {before['p95']:.1f})"
    )
    if folds := result["note_context_folds"]:
        print(f"\nnote sentence by note context weight, R@{'/'.join(map(str, ks))} per fold (notes in {FOLDS} folds):")
        for weight, per_fold in folds["weights"].items():
            cells = "  ".join("/".join(f"{f[f'recall@{k}']:.1f}" for k in ks) + f" ({f['questions']})" for f in per_fold)
            print(f"  weight {weight:4}  {cells}")
        for fold in folds["held_out"]:
            figures = "/".join(f"{fold[f'recall@{k}']:.1f}" for k in ks)
            print(f"  fold {fold['fold']}: weight {fold['chosen']} chosen on the other folds, held out {figures}")
    for kind in result["by_kind"]:
        missed = [r for r in result["rows"] if r["kind"] == kind and r["rank"] != 0]
        print(f"\n{kind}: {len(missed)} not first; the first {result['failures_shown']}:")
        for row in missed[: result["failures_shown"]]:
            rank = "not in top" if row["rank"] is None else f"rank {row['rank'] + 1}"
            print(f"  [{rank}] {row['question']!r} <- {row['where']} ({row['source']})")
            print(f"      first: {row['first']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--failures", type=int, default=20, help="misses listed per kind")
    parser.add_argument(
        "--embedder", choices=("inprocess", "hashing"), default="inprocess", help="hashing: the tests' fake"
    )
    parser.add_argument("--name", default="mail_notes", help="results file name under benchmarks/results/")
    parser.add_argument("--mind", type=Path, help="keep the harvested mind in this folder and reuse it")
    parser.add_argument(
        "--note-weights", type=float, nargs="*", default=[0.0, 0.1, 0.2, 0.3, 0.4],
        help="note context weights compared, leave-one-fold-out (none: skip)",
    )
    args = parser.parse_args()
    if args.embedder == "hashing":
        from mind_core.testing.fakes import HashingEmbedder

        embedder: Embedder = HashingEmbedder()
    else:
        from mind_core.embeddings import InprocessEmbedder

        embedder = InprocessEmbedder()
    ks = sorted(set(args.k))
    with tempfile.TemporaryDirectory() as tmp:
        result = run(embedder, ks, args.failures, args.mind or Path(tmp), args.note_weights)
    report(result, ks, embedder)
    write_results(args.name, {"ks": ks, "embedder": embedder.model_name, **result})


if __name__ == "__main__":
    main()
