"""A Dagster harvest redacts as `mind harvest` does: the staged scan already holds only
placeholders, the steps report what they redacted, and a new policy makes the sensor's
fingerprint, and so the next run, read the source again."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict

import pytest
from mind_harvest.pipelines.jobs import _scan_run_config

from mind_core.harvest.catalog import read_catalog
from mind_core.harvest.staging import read_staged
from mind_core.mind import Mind
from mind_core.privacy.redaction_policy import RedactionPolicy, set_workspace_policy
from mind_core.testing.redaction_corpus import redaction_messages, write_redaction_export
from tests.pipelines.harness import add_partitions, harvest, materialized, register

pytestmark = pytest.mark.slow

MESSAGES = redaction_messages(40, seed=9)
SECRETS = Counter(kind for m in MESSAGES for kind, _ in set(m.planted) if kind.startswith("secret:"))


def test_the_staged_scan_and_the_mind_hold_only_placeholders(tmp_path, home, instance, resources, monkeypatch):
    monkeypatch.setenv("MIND_HOME", str(home.root))
    export = write_redaction_export(tmp_path / "export" / "conversations.json", MESSAGES).parent
    key = register(home, "alpha", "chatgpt", export, "gpt")
    with Mind.open(home.mind_path("alpha")) as mind:
        set_workspace_policy(mind.db, RedactionPolicy.parse("secrets"))
    add_partitions(instance, key)
    run_config = _scan_run_config(key)
    assert run_config["ops"]["harvest_items"]["config"]["redact"] == ["secrets"]
    meta = materialized(harvest(instance, resources, key, run_config=run_config))
    scan = meta["harvest_items"]
    assert scan["redaction_policy"] == "secrets" and scan["redacted"] == sum(SECRETS.values())
    assert "secret:aws-key" in scan["redacted_by_kind"]
    assert meta["iframe_imports"]["redacted"] == 0  # the import found it done
    staged = json.dumps([asdict(e) for e in read_staged(resources["mind_home"].scan_url("alpha", "gpt"))])
    assert "[secret:aws-key]" in staged
    with Mind.open(home.mind_path("alpha")) as mind:
        stored = "".join(r[0] + r[1] for r in mind.db.query("SELECT content, metadata FROM memory_frames"))
    secrets = [v for m in MESSAGES for k, v in m.planted if k.startswith("secret:")]
    assert not [v for v in secrets if v in stored or v in staged]
    assert [v for m in MESSAGES for k, v in m.planted if k == "email" and v in stored]  # not in this policy

    (entry,) = read_catalog(home).sources
    assert resources["plugins"].fingerprint(entry.source, entry.redaction) == entry.source.last_fingerprint
    with Mind.open(home.mind_path("alpha")) as mind:
        set_workspace_policy(mind.db, RedactionPolicy.parse("secrets,email"))
    (entry,) = read_catalog(home).sources
    assert resources["plugins"].fingerprint(entry.source, entry.redaction) != entry.source.last_fingerprint
    meta = materialized(harvest(instance, resources, key, run_config=_scan_run_config(key)))
    assert meta["harvest_items"]["redacted"] > sum(SECRETS.values())  # read again, addresses too
    assert meta["vector_index"]["scrubbed_after_policy_change"] is True
