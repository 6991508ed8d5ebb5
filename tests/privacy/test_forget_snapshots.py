"""After a person is forgotten, no snapshot that is read as current holds them: analytics leaves
the earlier snapshots out at once, and the next snapshot run deletes them; their name and address
are then nowhere in the bytes of the mind, its WAL or the snapshot root, nor after a re-harvest."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from mind_core.analytics.queries import Analytics
from mind_core.analytics.snapshot import write_snapshot
from mind_core.cli import EXIT_OK, main
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.privacy.requests import ForgetRequest, forget_in
from mind_core.privacy.snapshots import FORGOTTEN_MARKER, stale_before
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder
from tests.privacy.conftest import ADDRESS, NAME, raw_bytes

TRACES = (NAME.lower(), ADDRESS, "quarlesworth", "zephyrine")
EARLIER_DAYS = ("2027-01-10", "2027-01-14")  # the tests' clock stands at 2027-01-15


def _snapshot_text(root: Path) -> str:
    """Every file under the snapshot root: its raw bytes (Parquet keeps column statistics
    uncompressed) and every value of every Parquet file, decoded, lower-cased."""
    parts = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        parts.append(path.read_bytes().decode("latin-1"))
        if path.suffix == ".parquet":
            parts.append(str(pq.read_table(path).to_pylist()))
    return "\n".join(parts).lower()


def _traces(text: str) -> list[str]:
    return [trace for trace in TRACES if trace in text]


def _harvest(home: MindHome, mailbox: Path, **options) -> int:
    with Mind.open(home.mind_path("default"), embedder=HashingEmbedder()) as mind:
        if not options:
            register_source(mind, "email", mailbox, "mail")
        return harvest(mind, "mail", **options).imported.frames_new


def test_no_current_snapshot_holds_a_forgotten_person(tmp_path, mailbox, capsys):
    home = MindHome(tmp_path / "home")
    root = home.root / "snapshots"
    assert _harvest(home, mailbox) == 5
    for day in EARLIER_DAYS:
        write_snapshot(home, "default", date=day)
    assert _traces(_snapshot_text(root)) == list(TRACES)

    done = forget_in(home, "default", ForgetRequest(person=NAME, apply=True), "tester", HashingEmbedder())
    assert done["counts"]["frames_deleted"] == 1 and done["snapshot_marker"] == str(root / FORGOTTEN_MARKER)
    assert stale_before(root, "default") is not None
    assert _traces(raw_bytes(home.mind_path("default")).decode("latin-1")) == []

    # read now: the snapshots taken before the forget are left out of every view
    with Analytics(root) as analytics:
        assert analytics.stale_snapshots() == [("default", day) for day in EARLIER_DAYS]
        assert analytics.sql("SELECT COUNT(*) FROM frames")[1] == [(0,)]
        assert analytics.sql("SELECT COUNT(*) FROM latest_snapshots")[1] == [(0,)]
        stored = analytics.sql("SELECT COUNT(*) FROM _stored_frames")[1][0][0]
        assert stored == 10  # still on disk until the next snapshot run
    assert main(["analytics", "list", "--home", str(home.root)]) == EXIT_OK
    assert "left out, they hold forgotten data (`mind snapshot` deletes them): default 2027-01-10, default 2027-01-14" in (
        capsys.readouterr().out
    )

    # the next snapshot run writes today's from the mind and deletes the earlier ones
    assert main(["snapshot", "--home", str(home.root), "--json"]) == EXIT_OK
    taken = json.loads(capsys.readouterr().out)["minds"]["default"]
    assert taken["stale_removed"] == list(EARLIER_DAYS) and taken["rows"]["frames"] == 4
    assert not (root / FORGOTTEN_MARKER).exists()
    assert _traces(_snapshot_text(root)) == []
    with Analytics(root) as analytics:
        assert analytics.stale_snapshots() == []
        assert analytics.sql("SELECT snapshot_date::VARCHAR, COUNT(*) FROM frames GROUP BY ALL")[1] == [
            ("2027-01-15", 4)
        ]

    # a re-harvest brings nothing of her back, and the snapshot after it holds nothing of her
    assert _harvest(home, mailbox, force=True) == 0
    write_snapshot(home, "default")
    assert _traces(_snapshot_text(root)) == []
    assert _traces(raw_bytes(home.mind_path("default")).decode("latin-1")) == []


def test_a_snapshot_root_the_forget_did_not_mark_is_cleaned_by_its_next_run(tmp_path, mailbox):
    """Snapshots written elsewhere (``--root``): the mind's audit log tells the run of the forget."""
    home = MindHome(tmp_path / "home")
    elsewhere = tmp_path / "elsewhere"
    _harvest(home, mailbox)
    write_snapshot(home, "default", elsewhere, date=EARLIER_DAYS[0])
    forget_in(home, "default", ForgetRequest(query="kite festival", apply=True), "tester")
    assert not (elsewhere / FORGOTTEN_MARKER).exists()  # the forget marked only the home's root
    taken = write_snapshot(home, "default", elsewhere).minds["default"]
    assert taken.stale_removed == (EARLIER_DAYS[0],)
    assert "northern beach" not in _snapshot_text(elsewhere)
    later = write_snapshot(home, "default", elsewhere, date="2027-01-16").minds["default"]
    assert later.stale_removed == ()  # today's was taken after the forget: kept
