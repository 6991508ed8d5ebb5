"""Two harvesting processes and a recalling one share a mind: no lock failure, exact counts."""

import pytest

from mind_core.testing.concurrency import harvest_while_recalling

pytestmark = pytest.mark.slow


def test_two_harvests_and_a_recall_loop_share_one_mind(tmp_path):
    result = harvest_while_recalling(tmp_path, conversations=15, messages_each=100)
    assert result.exit_codes == [0, 0, 0], result.stderr_tail
    assert result.locked_errors == 0, result.stderr_tail
    assert result.exact, result
    assert result.recalls > 0 and result.recall_hits > 0
    assert result.doctor_ok
