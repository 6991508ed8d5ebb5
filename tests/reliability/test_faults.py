"""Resource faults through the real `mind` command: one clear error line, an intact mind."""

import json
import os
import shutil

import pytest

from mind_core.testing import faults


@pytest.fixture
def root():
    with faults.shared_folder() as folder:
        yield folder


def check(outcome: faults.FaultOutcome) -> None:
    assert outcome.exit_code != 0, outcome
    assert outcome.error_line.startswith("error:") and not outcome.traceback, outcome
    assert outcome.integrity == "ok" and outcome.intact, outcome
    assert outcome.hint and outcome.recovered is not False, outcome
    assert outcome.ok


@pytest.mark.slow
def test_read_only_mind_file(root):
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("root ignores chmod 444 and setpriv (util-linux) is missing to drop to nobody")
    outcome = faults.readonly_file(root)
    check(outcome)
    assert "read-only" in outcome.error_line


@pytest.mark.slow
def test_read_only_folder(root):
    outcome = faults.readonly_folder(root)
    check(outcome)
    assert "read-only" in outcome.error_line


@pytest.mark.slow
def test_a_read_only_mind_is_still_recalled_and_checked(root):
    if os.geteuid() == 0 and not faults.can_mount():
        pytest.skip("root writes into a 555 folder and mounting a read-only tmpfs is not permitted here")
    with faults.readonly_home(root) as (home, path, _):
        before = faults._dump(path)
        recall = faults.run_cli(home, "recall", "conversation", "--json", "--record-access")
        doctor = faults.run_cli(home, "doctor")
        assert recall.returncode == 0, recall.stderr
        assert json.loads(recall.stdout)["results"]  # found, not touched: the mind cannot be written
        assert doctor.returncode == 0 and "status: ok" in doctor.stdout, doctor.stderr
        assert faults._dump(path) == before


@pytest.mark.parametrize("method", ["tmpfs", "rlimit"])
@pytest.mark.slow
def test_full_disk_then_space_freed(root, method):
    if method == "tmpfs" and not faults.can_mount():
        pytest.skip("mounting a tmpfs is not permitted here; the rlimit variant covers the full disk")
    outcome = faults.full_disk(root, method)
    check(outcome)
    assert outcome.recovered  # the rerun with space equals a clean run


def test_missing_model_package(root):
    outcome = faults.missing_model(root)
    check(outcome)


def test_a_file_that_is_not_a_mind_is_refused_clearly(tmp_path):
    from mind_core.errors import MindAccessError
    from mind_core.mind import Mind

    path = tmp_path / "w.mind"
    path.write_bytes(b"definitely not SQLite " * 400)
    with pytest.raises(MindAccessError, match="this file is not a mind"):
        Mind.open(path)
    assert path.read_bytes() == b"definitely not SQLite " * 400
