"""Encryption at rest: an encrypted mind is unreadable without its key, works with it (harvest,
recall, forget, snapshots, analytics), converts both ways, and never shows its key."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import keyring
import pyarrow.parquet as pq
import pytest
from keyring.backend import KeyringBackend

from mind_core.analytics.queries import Analytics
from mind_core.analytics.snapshot import write_snapshot
from mind_core.cli import EXIT_FAILED, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, main
from mind_core.embeddings import create_embedding_provider
from mind_core.errors import MindAccessError
from mind_core.mind import Mind
from mind_core.store.cipher import KEY_ENV, MindKey, MindKeyError, is_encrypted, key_variable
from mind_core.store.cipher_migration import REWRITE_SUFFIX, decrypt_mind, encrypt_mind
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder

PASSPHRASE = "s3cret-passphrase-never-printed"
RAW_KEY = "c0ffee" * 10 + "abcd"  # 64 hex digits: a raw 256-bit key
TEXTS = [
    "The quokkabridge migration moves billing to PostgreSQL in March",
    "Zanzibarite retreat planned for the second week of June",
    "Kubernetes orchestrates containers across the cluster",
]
SECRET_WORDS = (b"quokkabridge", b"Zanzibarite")


class MemoryKeyring(KeyringBackend):
    """A keyring in memory, so no test reads (or writes) the machine's own."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.entries.pop((service, username), None)


@pytest.fixture(autouse=True)
def ring(monkeypatch):
    """No key from the test's environment, and an empty in-memory keyring."""
    for variable in (KEY_ENV, key_variable("team"), key_variable("default")):
        monkeypatch.delenv(variable, raising=False)
    previous = keyring.get_keyring()
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    yield memory
    keyring.set_keyring(previous)


def build(path: Path, embedder: Any = None) -> list[tuple[int, float]]:
    """A mind of TEXTS; the ranking of one search on it."""
    with Mind.open(path, embedder=embedder or HashingEmbedder()) as mind:
        mind.sessions.ensure("notes")
        mind.search.index_frames_batch([mind.frames.create_i_frame("notes", t) for t in TEXTS])
        return ranking(mind)


def ranking(mind: Mind) -> list[tuple[int, float]]:
    return [(r.frame.id, round(r.final_score, 9)) for r in mind.search.search("quokkabridge billing June", limit=5)]


def file_bytes(path: Path) -> bytes:
    """The mind file and whatever WAL lies beside it."""
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def plain_sqlite_reads(path: Path) -> bool:
    try:
        sqlite3.connect(path).execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError as exc:
        assert "not a database" in str(exc)
        return False
    return True


@pytest.mark.parametrize("secret", [PASSPHRASE, RAW_KEY], ids=["passphrase", "raw-key"])
def test_an_encrypted_mind_is_unreadable_without_its_key_and_whole_with_it(tmp_path, monkeypatch, secret):
    path = tmp_path / "team.mind"
    monkeypatch.setenv(key_variable("team"), secret)
    with Mind.open(path, embedder=HashingEmbedder()) as mind:  # a new mind, a key named for it
        mind.sessions.ensure("notes")
        mind.search.index_frames_batch([mind.frames.create_i_frame("notes", t) for t in TEXTS])
        assert mind.db.encrypted
        expected = ranking(mind)
        raw = file_bytes(path)  # the WAL too, while it holds the latest pages
    assert is_encrypted(path) and expected[0][0] == 1
    assert not any(word in raw or word in path.read_bytes() for word in SECRET_WORDS)
    assert not plain_sqlite_reads(path)

    with Mind.open(path, embedder=HashingEmbedder(), readonly=True) as mind:
        assert ranking(mind) == expected
        assert mind.search.keyword_search("quokkabridge", 5) == [1]  # FTS5
        assert mind.search.vector_search(TEXTS[1], 1) == [2]  # sqlite-vec

    monkeypatch.delenv(key_variable("team"))
    with pytest.raises(MindKeyError, match=r"encrypted and no key was given.*MIND_HARVEST_KEY_TEAM") as missing:
        Mind.open(path)
    monkeypatch.setenv(KEY_ENV, secret[::-1])
    with pytest.raises(MindKeyError, match=r"the key from \$MIND_HARVEST_KEY does not open it") as wrong:
        Mind.open(path)
    for error in (missing.value, wrong.value):
        assert secret not in str(error) and secret[::-1] not in str(error) and str(path) not in str(error)
    assert secret not in repr(MindKey(secret, "x"))


def test_a_plain_mind_stays_plain_under_a_key_and_a_file_that_is_no_mind_is_still_named_so(tmp_path, monkeypatch):
    build(tmp_path / "old.mind")
    monkeypatch.setenv(KEY_ENV, RAW_KEY)
    with Mind.open(tmp_path / "old.mind") as mind:
        assert not mind.db.encrypted
    assert plain_sqlite_reads(tmp_path / "old.mind")
    monkeypatch.delenv(KEY_ENV)
    junk = tmp_path / "junk.mind"
    junk.write_bytes(b"definitely not SQLite " * 100)
    with pytest.raises(MindAccessError, match="this file is not a mind"):
        Mind.open(junk)


def test_the_keyring_holds_a_mind_s_key_and_the_environment_comes_first(tmp_path, monkeypatch, ring):
    path = tmp_path / "team.mind"
    expected = build(path)
    encrypt_mind(path, MindKey(PASSPHRASE, "the test"))
    with pytest.raises(MindKeyError, match="keyring set mind-harvest team"):
        Mind.open(path)
    ring.set_password("mind-harvest", "team", PASSPHRASE)
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        assert mind.db.key.origin == "the keyring (mind-harvest/team)" and ranking(mind) == expected
    monkeypatch.setenv(KEY_ENV, "not the key")
    with pytest.raises(MindKeyError, match=r"\$MIND_HARVEST_KEY does not open it"):
        Mind.open(path)


def test_encrypt_and_decrypt_round_trip_keeps_every_row_and_the_same_answers(tmp_path):
    path = tmp_path / "team.mind"
    expected = build(path)
    key = MindKey(PASSPHRASE, "the test")
    done = encrypt_mind(path, key)
    assert done.encrypted and done.rows["memory_frames"] == len(TEXTS) and is_encrypted(path)
    assert not any(word in file_bytes(path) for word in SECRET_WORDS) and not plain_sqlite_reads(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["team.mind", "team.mind.writer.lock"]
    with Mind.open(path, embedder=HashingEmbedder(), key=key) as mind:
        assert ranking(mind) == expected and mind.doctor().healthy
        mind.search.index_frames_batch([mind.frames.create_i_frame("notes", "written after encrypting")])
    with pytest.raises(ValueError, match="already encrypted"):
        encrypt_mind(path, key)

    with pytest.raises(MindKeyError, match="does not open it"):
        decrypt_mind(path, MindKey("wrong", "a guess"))
    assert is_encrypted(path)  # a failed decrypt leaves the mind as it was
    undone = decrypt_mind(path, key)
    assert not undone.encrypted and undone.rows["memory_frames"] == len(TEXTS) + 1
    assert plain_sqlite_reads(path) and SECRET_WORDS[0] in file_bytes(path)
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        assert not mind.db.encrypted and ranking(mind)[:3] == expected[:3] and mind.doctor().healthy


def test_a_mind_another_process_holds_open_is_not_swapped_and_stays_as_it_was(tmp_path):
    path = tmp_path / "team.mind"
    build(path)
    before = path.read_bytes()
    holder = subprocess.Popen(  # `mind serve`, say: another process reading the mind
        [sys.executable, "-c", HOLD_OPEN, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(MindAccessError, match="another process has the mind 'team' open"):
            encrypt_mind(path, MindKey(RAW_KEY, "the test"))
    finally:
        holder.communicate("")
    assert path.read_bytes() == before and not is_encrypted(path) and plain_sqlite_reads(path)
    assert not path.with_name(path.name + REWRITE_SUFFIX).exists()
    assert encrypt_mind(path, MindKey(RAW_KEY, "the test")).encrypted  # once it has let go


HOLD_OPEN = """
import sys
from mind_core.store.db import Database
db = Database(sys.argv[1], readonly=True)
db.scalar("SELECT COUNT(*) FROM memory_frames")
print("open", flush=True)
sys.stdin.read()
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


def test_the_commands_encrypt_report_and_decrypt_without_ever_printing_the_key(tmp_path, monkeypatch, capsys):
    home = MindHome(tmp_path / "home")
    build(home.workspace_path("team"), create_embedding_provider("mock"))  # as --embedder mock opens it
    base = ["--home", str(home.root), "-w", "team", "--embedder", "mock"]
    seen: list[str] = []

    def command(*argv: str) -> tuple[int, str]:
        """The exit code and the output (stdout, or stderr when stdout is empty)."""
        code, out, err = run(capsys, *argv, *base)
        seen.append(out + err)
        return code, out or err

    code, out = command("doctor", "--json")
    assert json.loads(out)["encryption"] == {
        "encrypted": False, "key_from": None, "ann_index_plain": False,
        "summary": "no (plain SQLite file; `mind encrypt` encrypts it)",
    }
    code, out = command("encrypt")
    assert code == EXIT_FAILED and "no key to encrypt the mind 'team' with" in out
    monkeypatch.setenv(key_variable("team"), PASSPHRASE)
    code, out = command("encrypt", "--json")
    assert code == EXIT_OK and json.loads(out)["encrypted"] and json.loads(out)["key_from"] == "$MIND_HARVEST_KEY_TEAM"
    code, out = command("doctor")
    assert code == EXIT_OK and "encryption: yes (SQLCipher, key from $MIND_HARVEST_KEY_TEAM)" in out
    code, out = command("recall", "quokkabridge", "--json")
    assert code == EXIT_OK and "quokkabridge" in json.loads(out)["results"][0]["content"]

    monkeypatch.setenv(key_variable("team"), PASSPHRASE + "x")
    code, out = command("recall", "quokkabridge", "--json")
    assert code == EXIT_FAILED and "does not open it" in json.loads(out)["error"]
    code, out = command("doctor", "--json")
    assert code == EXIT_FAILED and "does not open it" in json.loads(out)["error"]
    code, out, err = run(capsys, "doctor", "--all-workspaces", "--json", "--home", str(home.root), "--embedder", "mock")
    seen.append(out + err)
    assert code == EXIT_PROBLEMS and "does not open it" in json.loads(out)[0]["error"]

    monkeypatch.setenv(key_variable("team"), PASSPHRASE)
    code, out = command("encrypt")
    assert code == EXIT_USAGE and "already encrypted" in out
    code, out = command("decrypt", "--json")
    assert code == EXIT_OK and json.loads(out)["encrypted"] is False
    assert not is_encrypted(home.workspace_path("team"))
    assert not any(PASSPHRASE in text for text in seen)


def test_a_harvest_into_an_encrypted_mind_then_recall_and_forget(tmp_path, monkeypatch, capsys, mailbox):
    home = tmp_path / "home"
    base = ["--home", str(home), "--embedder", "mock"]
    monkeypatch.setenv(KEY_ENV, PASSPHRASE)
    assert run(capsys, "sources", "add", "email", str(mailbox), "--name", "mail", "-q", *base)[0] == EXIT_OK
    assert run(capsys, "harvest", "-q", *base)[0] == EXIT_OK
    path = MindHome(str(home)).mind_path("default")
    assert is_encrypted(path)
    assert not any(word in file_bytes(path) for word in (b"lighthouse", b"Quarlesworth", b"zq@quarles.example"))
    code, out, _ = run(capsys, "recall", "lighthouse paint", "--json", *base)
    assert code == EXIT_OK and "lighthouse paint" in json.loads(out)["results"][0]["content"]
    code, out, _ = run(capsys, "forget", "--query", "kite festival", "--yes", "--json", *base)
    assert code == EXIT_OK and json.loads(out)["counts"]["frames_deleted"] == 1
    code, out, _ = run(capsys, "recall", "kite festival northern beach", "--json", *base)
    assert all("kite" not in r["content"] for r in json.loads(out)["results"])
    assert is_encrypted(path)


def test_snapshots_of_an_encrypted_mind_are_encrypted_and_analytics_reads_them_with_the_key(
    tmp_path, monkeypatch
):
    home = MindHome(tmp_path / "home")
    monkeypatch.setenv(key_variable("team"), RAW_KEY)
    build(home.workspace_path("team"))
    build(home.workspace_path("open"))
    assert is_encrypted(home.workspace_path("team")) and not is_encrypted(home.workspace_path("open"))
    taken = write_snapshot(home, out_root=tmp_path / "snapshots", include_embeddings=True)
    team_files = sorted((tmp_path / "snapshots").glob("*/workspace=team/*/*.parquet"))
    open_files = sorted((tmp_path / "snapshots").glob("*/workspace=open/*/*.parquet"))
    assert len(team_files) == len(open_files) >= 8
    assert all(f.read_bytes()[-4:] == b"PARE" for f in team_files)
    assert all(f.read_bytes()[-4:] == b"PAR1" for f in open_files)
    assert not any(word in f.read_bytes() for f in team_files for word in SECRET_WORDS)
    frames = [f for f in team_files + open_files if f.parts[-4] == "frames"]
    assert TEXTS[0] in pq.read_table(frames[1]).column("content").to_pylist()  # the plain mind's
    with pytest.raises(OSError, match="encrypted"):  # the encrypted one's, without its key
        pq.read_table(frames[0])

    with Analytics(taken.root) as engine:
        _, rows = engine.sql("SELECT workspace, COUNT(*), MAX(embedding IS NOT NULL) FROM frames GROUP BY 1 ORDER BY 1")
        assert rows == [("open", 3, True), ("team", 3, True)]
        _, rows = engine.sql("SELECT workspace FROM snapshots_latest ORDER BY 1")
        assert rows == [("open",), ("team",)]
        _, found = engine.sql("SELECT content FROM frames WHERE workspace = 'team' AND content LIKE '%quokka%'")
        assert found == [(TEXTS[0],)]
    monkeypatch.setenv(key_variable("team"), "f" * 64)
    with pytest.raises(MindKeyError, match="the key from \\$MIND_HARVEST_KEY_TEAM does not open them"):
        Analytics(taken.root)
    monkeypatch.delenv(key_variable("team"))
    with pytest.raises(MindKeyError, match="snapshots of workspace 'team' are encrypted and no key was given"):
        Analytics(taken.root)
