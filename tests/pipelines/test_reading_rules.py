"""A Dagster harvest reads a source's files under the source's own reading rules (its size limit,
whether links leading outside its folder are followed), as `mind harvest` does: both from the
mind's registry and from the run config the harvest job carries to a worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from mind_harvest.pipelines.jobs import _scan_run_config

from mind_core.harvest.source_files import ReadingRules
from mind_core.mind import Mind
from tests.pipelines.harness import add_partitions, harvest, materialized, register

pytestmark = pytest.mark.slow


def vault_with_hostile_files(tmp_path: Path) -> Path:
    """Two small notes, one 4 KB note and a link to a note outside the vault."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "kestrel.md").write_text("# Kestrel\n\nKestrel moves billing to Postgres.\n")
    (vault / "heron.md").write_text("# Heron\n\nHeron is the search rewrite.\n")
    (vault / "big.md").write_text("# Big\n\n" + "bulky words here. " * 250)
    outside = tmp_path / "elsewhere" / "secret.md"
    outside.parent.mkdir()
    outside.write_text("# Secret\n\nThe outside note about osprey.\n")
    (vault / "linked.md").symlink_to(outside)
    return vault


def contents(home, workspace: str) -> str:
    with Mind.open(home.mind_path(workspace)) as mind:
        return "\n".join(row[0] for row in mind.db.query("SELECT content FROM memory_frames"))


def test_the_registry_s_rules_limit_what_the_scan_reads(tmp_path, home, instance, resources):
    vault = vault_with_hostile_files(tmp_path)
    key = register(home, "alpha", "markdown", vault, "notes", rules=ReadingRules(max_file_bytes=1024))
    add_partitions(instance, key)
    meta = materialized(harvest(instance, resources, key))["harvest_items"]
    assert meta["items"] == 2 and meta["errors"] == 2
    assert "big.md" in meta["first_errors"] and "over the 1,024-byte limit" in meta["first_errors"]
    assert "linked.md" in meta["first_errors"] and "outside the source" in meta["first_errors"]
    text = contents(home, "alpha")
    assert "Kestrel" in text and "Heron" in text and "bulky" not in text and "osprey" not in text


def test_the_harvest_job_carries_the_rules_to_the_scan_step(tmp_path, home, instance, resources, monkeypatch):
    monkeypatch.setenv("MIND_HOME", str(home.root))
    vault = vault_with_hostile_files(tmp_path)
    rules = ReadingRules(max_file_bytes=1024, follow_outside_links=True, exclude=("never*",))
    (vault / "never.md").write_text("# Never\n\nzqnever\n", encoding="utf-8")
    key = register(home, "alpha", "markdown", vault, "notes", rules=rules)
    add_partitions(instance, key)
    run_config = _scan_run_config(key)
    config = run_config["ops"]["harvest_items"]["config"]
    assert (config["max_file_bytes"], config["follow_outside_links"], config["exclude"]) == (1024, True, ["never*"])
    meta = materialized(harvest(instance, resources, key, run_config=run_config))["harvest_items"]
    assert meta["items"] == 3 and meta["errors"] == 1 and "big.md" in meta["first_errors"]
    assert "osprey" in contents(home, "alpha")  # the outside link is followed: this source allows it
    assert "zqnever" not in contents(home, "alpha")  # an excluded note is passed over, no error
    assert meta["excluded_files"] == 1  # counted, as the command line's "excluded 1 file"
