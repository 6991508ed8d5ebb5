import pyarrow.parquet as pq
import pytest

from mind_core.harvest.importer import import_items
from mind_core.harvest.items import HarvestError, HarvestItem, HarvestMessage
from mind_core.harvest.staging import read_staged, stage_scan, staged_scan_info
from mind_core.mind import Mind
from mind_core.plugins import get_source
from mind_core.testing.dump import canonical_dump
from mind_core.testing.exports import write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder


def events():
    yield HarvestItem(
        key="k1",
        kind="conversation",
        title="Lone \ud83d surrogate and emoji 🦅",
        container_key="c1",
        messages=[
            HarvestMessage("m1", "hello \udcff there", role="user", timestamp="2024-01-02T03:04:05.678Z"),
            HarvestMessage(
                "m2", "reply", role="assistant", author="Bot", metadata={"n": 1, "nested": {"a": [1, 2]}}
            ),
        ],
        metadata={"path": "/x/\udcfe.json", "when": None},
        timestamp="2024-01-02T03:04:00Z",
    )
    yield HarvestError(path="/x/conversations.json", reason="not an object", record="#2")
    yield HarvestItem(key="k2", kind="note", title="", container_key="c2", messages=[])


def test_staged_events_read_back_exactly_in_scan_order(tmp_path):
    path = tmp_path / "s" / "scan.parquet"
    staged = stage_scan(events(), path, fingerprint="fp1", labels={"source": "gpt"}, batch_items=1)
    assert path.is_file() and staged.bytes == path.stat().st_size
    assert (staged.items, staged.messages, staged.error_count) == (2, 2, 1)
    assert staged.error_rate == pytest.approx(1 / 3)
    assert list(read_staged(path)) == list(events())
    assert pq.ParquetFile(path).metadata.num_row_groups == 3  # one per batch: memory follows the batch


def test_footer_describes_the_scan_without_reading_rows(tmp_path):
    path = tmp_path / "scan.parquet"
    stage_scan(events(), path, fingerprint="fp1", labels={"workspace": "w", "source": "gpt"})
    info = staged_scan_info(path)
    assert info.fingerprint == "fp1" and info.labels == {"workspace": "w", "source": "gpt"}
    assert (info.items, info.messages, info.error_count) == (2, 2, 1)
    assert info.errors == [HarvestError(path="/x/conversations.json", reason="not an object", record="#2")]
    assert staged_scan_info(tmp_path / "missing.parquet") is None
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    assert staged_scan_info(tmp_path / "junk.parquet") is None


def test_restaging_replaces_and_a_failed_scan_leaves_the_old_file(tmp_path):
    path = tmp_path / "scan.parquet"
    stage_scan(events(), path, fingerprint="old")

    def broken():
        yield from events()
        raise RuntimeError("plugin crashed")

    with pytest.raises(RuntimeError):
        stage_scan(broken(), path, fingerprint="new")
    assert staged_scan_info(path).fingerprint == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["scan.parquet"]  # no partial file left behind
    stage_scan(iter([]), path, fingerprint="empty")
    assert staged_scan_info(path).items == 0 and list(read_staged(path)) == []


def test_importing_a_staged_scan_equals_importing_the_live_scan(tmp_path):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", conversations=3, messages_each=5)
    plugin = get_source("chatgpt")
    staged = stage_scan(plugin.scan(export), tmp_path / "scan.parquet")
    dumps = []
    for name, scan in (("live", plugin.scan(export)), ("staged", read_staged(staged.path))):
        with Mind.open(tmp_path / f"{name}.mind", embedder=HashingEmbedder()) as mind:
            summary = import_items(mind, "gpt", scan, kind="chatgpt")
            assert summary.frames_new == 15
            dumps.append(canonical_dump(mind))
    assert dumps[0] == dumps[1]
