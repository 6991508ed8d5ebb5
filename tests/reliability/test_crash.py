"""SIGKILL during import, during cognify and during vector writes; the rerun equals a clean run."""

import pytest

from mind_core.testing.crash import crash_trials

pytestmark = pytest.mark.slow


def test_sigkill_in_each_stage_then_rerun_equals_a_clean_run(tmp_path):
    report = crash_trials(tmp_path, trials=3, seed=11, conversations=20, messages_each=100)
    assert [t.stage for t in report.trials] == ["import", "cognify", "vectors"]
    assert all(t.killed for t in report.trials), report.trials  # each kill landed mid-harvest
    for trial in report.trials:
        assert trial.identical, f"trial {trial} differs from the clean run"
        assert (trial.lost, trial.duplicates, trial.frames) == (0, 0, report.messages)
        assert trial.doctor_exit == 0 and trial.doctor_ok, trial
    assert not report.failures
