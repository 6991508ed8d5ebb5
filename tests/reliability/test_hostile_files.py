"""Each input that once hung, exhausted or silently truncated a harvest, harvested for real in a
process of its own: it finishes within a bound, keeps every good record, names every bad one and
stays under 1 GB of peak memory (a FIFO, a link to /dev/zero or a 100 MB note would otherwise
hang the harvest or grow it until the kernel kills it). Every kind of importer is covered: chat
exports, vaults and mail, and the WhatsApp, plain-text, PDF, web, iCalendar and vCard folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import mind_core
from mind_core.testing.hostile_files import HOSTILE_FILES, JSON_DAMAGE, remove_deep

FINISHES_WITHIN = 120  # seconds, the interpreter's start included; each case takes about one
PEAK_MEMORY_MB = 1024
REPOSITORY = Path(mind_core.__file__).resolve().parents[1]  # the child imports this code, not an installed copy


def harvest_in_child(name: str, tmp_path: Path) -> dict:
    root, home = tmp_path / "inputs", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mind_core.testing.hostile_files", name, str(root), str(home)],
            cwd=REPOSITORY,
            capture_output=True,
            text=True,
            timeout=FINISHES_WITHIN,
            check=False,
        )
    finally:
        if (root / "vault-deep").exists():
            remove_deep(root / "vault-deep")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_a_hostile_input_costs_only_itself(name: str, tmp_path: Path) -> None:
    outcome = harvest_in_child(name, tmp_path)
    assert outcome["finished"] and outcome["exception"] is None
    assert outcome["good_missing"] == [] and outcome["kept"] == outcome["good"]
    assert outcome["refused_found"] == []
    assert outcome["bad_unreported"] == [] and outcome["unreported"] == [] and outcome["unlocated"] == []
    assert outcome["status"] in ("partial", "failed")  # never "ok": something was left out
    assert outcome["peak_rss_mb"] < PEAK_MEMORY_MB
    if name in JSON_DAMAGE:
        assert outcome["lost_records"] == len(JSON_DAMAGE[name])


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("whatsapp-fifo", "pipe.txt: a named pipe (FIFO), not a regular file"),
        ("pdf-zero", "x.pdf: a symlink to /dev/zero, outside the source's folder"),
        ("plaintext-zero-followed", "x.txt: a character device, not a regular file"),
        ("vcard-limit", "everyone.vcf: cannot read: 13,033 bytes, over the 4,096-byte limit"),
    ],
)
def test_the_bad_file_is_named_with_what_is_wrong_with_it(name: str, reason: str, tmp_path: Path) -> None:
    errors = harvest_in_child(name, tmp_path)["errors"]
    assert len(errors) == 1 and reason in errors[0]
