"""A source whose messages were already in the mind (another source's identical frames) shows them
as shared frames in the harvest table, in a note naming whose they are, and in --json."""

import json
import shutil

from mind_core.cli import EXIT_OK
from mind_core.harvest.summary import shared_frames_line
from mind_core.testing.exports import write_chatgpt_export
from tests.harvest.test_cli import report_row, run


def test_a_copy_of_an_export_shows_its_frames_as_shared(tmp_path, capsys):
    original = write_chatgpt_export(tmp_path / "a" / "conversations.json", conversations=2, messages_each=3)
    backup = tmp_path / "b" / "conversations.json"
    backup.parent.mkdir()
    shutil.copy(original, backup)
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q", "-w", "team"]
    run(capsys, "sources", "add", str(original), "--name", "main", *base)
    run(capsys, "sources", "add", str(backup), "--name", "copy", *base)
    code, out, _ = run(capsys, "harvest", "main", *base)
    assert code == EXIT_OK and "shared" not in out  # nothing shared: no column, no note
    code, out, _ = run(capsys, "harvest", "copy", *base)
    row = report_row(out.split("\n\n")[0], "copy")
    assert code == EXIT_OK and row["status"] == "harvested" and row["items"] == "2"
    assert (row["new frames"], row["shared frames"], row["vectors"]) == ("0", "6", "0")
    assert "shared frames: messages whose text was already in the mind as a frame" in out
    assert "  team/copy: 6 frames already in the mind from source 'main': shared, not copied" in out

    code, out, _ = run(capsys, "harvest", "copy", "--force", "--json", *base)
    imported = json.loads(out)[0]["imported"]
    assert imported["frames_duplicate"] == 0 and imported["frames_shared_with"] == {}  # now its own ledger's

    run(capsys, "sources", "add", str(backup), "--name", "copy2", *base)
    code, out, _ = run(capsys, "harvest", "copy2", "--json", *base)
    imported = json.loads(out)[0]["imported"]
    assert (imported["frames_new"], imported["frames_duplicate"]) == (0, 6)
    assert imported["frames_shared_with"] == {"main": 6}  # the frames still name the source that wrote them


def test_the_note_names_every_owner_of_the_shared_frames():
    assert shared_frames_line("gpt", {"claude": 1}) == (
        "gpt: 1 frame already in the mind from source 'claude': shared, not copied"
    )
    line = shared_frames_line("gpt", {"notes": 2, "claude": 1, "gpt": 3, "": 1})
    assert line.startswith("gpt: 7 frames already in the mind from sources 'claude', 'notes' and ")
    assert "an identical message of this source" in line and "frames no harvest wrote" in line
