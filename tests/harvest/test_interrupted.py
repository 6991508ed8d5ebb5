"""A harvest stopped after its import (killed while embedding) says so: the source is
"interrupted" until a later harvest finishes the work, and `mind doctor` names it."""

from __future__ import annotations

import pytest

from mind_core.harvest import pipeline
from mind_core.harvest.health import source_problems
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.harvest.stores import HarvestSourceStore
from mind_core.mind import Mind
from mind_core.testing.exports import write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder


class Killed(BaseException):
    """What a SIGKILL leaves behind, as far as the mind file can tell: nothing ran after it."""


def test_a_harvest_stopped_while_embedding_is_interrupted_until_the_next_one_finishes(tmp_path, monkeypatch):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 4)
    with Mind.open(tmp_path / "m.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, "chatgpt", export, "gpt")

        def killed(*args, **kwargs):
            raise Killed

        with monkeypatch.context() as patch:
            patch.setattr(pipeline, "index_vectors", killed)
            with pytest.raises(Killed):
                harvest(mind, "gpt", cognify=False)
        source = HarvestSourceStore(mind.db).get_by_source("gpt")
        assert source.last_status == "interrupted" and "next `mind harvest`" in source.last_status_reason
        assert [(p.source, p.status) for p in source_problems(mind.db)] == [("gpt", "interrupted")]
        report = harvest(mind, "gpt")  # not skipped: no fingerprint was recorded
        assert not report.skipped and report.status == "ok"
        assert HarvestSourceStore(mind.db).get_by_source("gpt").last_status == "ok"
        assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec") == 8
        assert harvest(mind, "gpt").skipped
